//! tidy: the repository's own structure rules, checked on every `cargo test` (as rustc's `tidy`
//! checks rust-lang/rust). Each rule prints what to do when it fails, and each checker is itself
//! tested on a planted violation below.
//!
//! Rules:
//! 1. no file in `src/` over [`MAX_FILE_LINES`] lines (split it by concept);
//! 2. no function over [`MAX_FN_LINES`] lines outside tests, except [`LONG_FN_ALLOWLIST`] (each
//!    entry says why; shrink it);
//! 3. no import circle between the top-level modules, nor between the files (and subfolders) of
//!    one folder, computed from the `crate::`, `super::` and `self::` paths of non-test code;
//! 4. no `.unwrap()` outside tests (a value that cannot be missing gets `.expect("why")`), and every
//!    `.expect` states its reason in a string;
//! 5. no internal issue references ("issue 16", "privacy-3") in the user docs (README.md, docs/,
//!    paper_refs/, data/README.md): the tracker is not part of the repository;
//! 6. the layer diagram in `src/lib.rs` ("# Layers") is true: every top-level module is on it
//!    once, and each imports only modules on rows below its own or to its left on its row;
//! 7. no test writes to a shared fixed path: only the helpers of [`TEMP_DIR_HELPERS`], which make a
//!    fresh folder per call, name the system's temporary folder (`temp_dir()`, `"/tmp/..."`), in
//!    `src/`, `tests/`, `benches/` and `examples/`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const MAX_FILE_LINES: usize = 700;
const MAX_FN_LINES: usize = 120;

/// Functions allowed over [`MAX_FN_LINES`] for now: (file, function, why). Shrink to zero.
const LONG_FN_ALLOWLIST: &[(&str, &str, &str)] = &[];

/// Every `.rs` file below `dir`, sorted.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// A file that only holds tests (`tests.rs`, `*_tests.rs`, declared under `#[cfg(test)]`).
fn is_test_file(p: &Path) -> bool {
    let name = p.file_name().unwrap().to_string_lossy();
    name == "tests.rs" || name.ends_with("_tests.rs")
}

/// The code without comments, string contents and `#[cfg(test)]` items, line structure kept (a
/// removed character becomes a space), so line counts and brace matching still hold.
fn code_only(text: &str) -> String {
    let b: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == '/' && b.get(i + 1) == Some(&'/') {
            while i < b.len() && b[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if b[i] == '/' && b.get(i + 1) == Some(&'*') {
            while i < b.len() && !(b[i] == '*' && b.get(i + 1) == Some(&'/')) {
                out.push(if b[i] == '\n' { '\n' } else { ' ' });
                i += 1;
            }
            out.push_str("  ");
            i += 2;
        } else if b[i] == '"' {
            // A string literal: keep the quotes, blank the contents.
            out.push('"');
            i += 1;
            while i < b.len() && b[i] != '"' {
                if b[i] == '\\' {
                    out.push(' ');
                    i += 1;
                }
                if i < b.len() {
                    out.push(if b[i] == '\n' { '\n' } else { ' ' });
                    i += 1;
                }
            }
            out.push('"');
            i += 1;
        } else if b[i] == '\'' && b.get(i + 2) == Some(&'\'') {
            // A char literal such as '{' (lifetimes have no closing quote two places on).
            out.push_str("' '");
            i += 3;
        } else if b[i] == '\'' && b.get(i + 1) == Some(&'\\') && b.get(i + 3) == Some(&'\'') {
            out.push_str("'  '");
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    strip_cfg_test(&out)
}

/// Blanks every item that follows `#[cfg(test)]` (up to its matching closing brace or `;`).
fn strip_cfg_test(code: &str) -> String {
    let mut b: Vec<char> = code.chars().collect();
    let pat: Vec<char> = "#[cfg(test)]".chars().collect();
    let mut i = 0;
    while i + pat.len() <= b.len() {
        if b[i..i + pat.len()] == pat[..] {
            let mut j = i + pat.len();
            let mut depth = 0usize;
            while j < b.len() {
                match b[j] {
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    ';' if depth == 0 => break,
                    _ => {}
                }
                j += 1;
            }
            for c in b.iter_mut().take((j + 1).min(code.len())).skip(i) {
                if *c != '\n' {
                    *c = ' ';
                }
            }
            i = j + 1;
        } else {
            i += 1;
        }
    }
    b.into_iter().collect()
}

/// (name, lines) of every function in `code` (comment- and test-free), from its `fn` line to
/// its closing brace.
fn functions(code: &str) -> Vec<(String, usize)> {
    let lines: Vec<&str> = code.lines().collect();
    let mut out = Vec::new();
    for (k, line) in lines.iter().enumerate() {
        let t = line.trim_start();
        let Some(pos) = t.find("fn ") else { continue };
        let before = &t[..pos];
        let ok = before.split_whitespace().all(|w| {
            [
                "pub",
                "pub(crate)",
                "pub(super)",
                "const",
                "async",
                "unsafe",
                "extern",
            ]
            .contains(&w)
        });
        if !ok {
            continue;
        }
        let name: String = t[pos + 3..]
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if name.is_empty() {
            continue;
        }
        // The body: from the first '{' after the signature to its match (none: a declaration).
        let mut depth = 0usize;
        let mut opened = false;
        let mut end = None;
        'scan: for (m, l) in lines.iter().enumerate().skip(k) {
            for c in l.chars() {
                match c {
                    '{' => {
                        depth += 1;
                        opened = true;
                    }
                    '}' => {
                        depth = depth.saturating_sub(1);
                        if opened && depth == 0 {
                            end = Some(m);
                            break 'scan;
                        }
                    }
                    ';' if !opened => break 'scan,
                    _ => {}
                }
            }
        }
        if let Some(e) = end {
            out.push((name, e - k + 1));
        }
    }
    out
}

/// The module path of a file below `src/` (`src/a/b.rs` -> [a, b]; `src/a/mod.rs` -> [a]).
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).unwrap();
    let mut parts: Vec<String> = rel
        .iter()
        .map(|s| s.to_string_lossy().trim_end_matches(".rs").to_string())
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts
}

/// The paths after `crate::`, `super::` or `self::` in `code`, made absolute from `module` (a
/// `use` tree's braces are expanded one level deep per group).
fn references(code: &str, module: &[String]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let chars: Vec<char> = code.chars().collect();
    let word_at = |i: usize, w: &str| -> bool {
        let w: Vec<char> = w.chars().collect();
        chars.get(i..i + w.len()) == Some(&w[..])
            && (i == 0 || !(chars[i - 1].is_alphanumeric() || chars[i - 1] == '_'))
    };
    let mut i = 0;
    while i < chars.len() {
        let (mut base, mut j): (Vec<String>, usize) = if word_at(i, "crate::") {
            (Vec::new(), i + 7)
        } else if word_at(i, "super::") {
            // In a/b.rs (module a::b) and in a/b/mod.rs (module a::b), super is a.
            let mut m = module.to_vec();
            m.pop();
            (m, i + 7)
        } else if word_at(i, "self::") {
            // In a/b.rs and in a/b/mod.rs alike, self is a::b.
            (module.to_vec(), i + 6)
        } else {
            i += 1;
            continue;
        };
        while word_at(j, "super::") {
            base.pop();
            j += 7;
        }
        collect_tree(&chars, j, base, &mut out);
        i = j;
    }
    out
}

/// Collects the paths of a use tree starting at `i` under `prefix`.
fn collect_tree(chars: &[char], mut i: usize, mut prefix: Vec<String>, out: &mut Vec<Vec<String>>) {
    loop {
        if chars.get(i) == Some(&'{') {
            // A group: each comma-separated item at depth 1.
            let mut depth = 0;
            let mut start = i + 1;
            let mut k = i;
            while k < chars.len() {
                match chars[k] {
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            collect_tree(chars, skip_ws(chars, start), prefix.clone(), out);
                            return;
                        }
                    }
                    ',' if depth == 1 => {
                        collect_tree(chars, skip_ws(chars, start), prefix.clone(), out);
                        start = k + 1;
                    }
                    _ => {}
                }
                k += 1;
            }
            return;
        }
        let seg: String = chars[i..]
            .iter()
            .take_while(|c| c.is_alphanumeric() || **c == '_')
            .collect();
        if seg.is_empty() {
            break;
        }
        i += seg.len();
        prefix.push(seg);
        if chars.get(i) == Some(&':') && chars.get(i + 1) == Some(&':') {
            i += 2;
        } else {
            break;
        }
    }
    if !prefix.is_empty() {
        out.push(prefix);
    }
}

fn skip_ws(chars: &[char], mut i: usize) -> usize {
    while chars.get(i).is_some_and(|c| c.is_whitespace()) {
        i += 1;
    }
    i
}

/// The longest prefix of `path` that names a module in `modules`.
fn resolve(path: &[String], modules: &BTreeSet<Vec<String>>) -> Option<Vec<String>> {
    (1..=path.len())
        .rev()
        .map(|k| path[..k].to_vec())
        .find(|p| modules.contains(p))
}

/// The module graph edges (from module, to module) of the non-test files below `src`.
fn module_edges(src: &Path) -> Vec<(Vec<String>, Vec<String>)> {
    let files: Vec<PathBuf> = rust_files(src)
        .into_iter()
        .filter(|p| !is_test_file(p))
        .collect();
    let modules: BTreeSet<Vec<String>> = files.iter().map(|f| module_of(src, f)).collect();
    let mut edges = Vec::new();
    for f in &files {
        let m = module_of(src, f);
        let code = code_only(&std::fs::read_to_string(f).unwrap());
        for r in references(&code, &m) {
            if let Some(to) = resolve(&r, &modules)
                && to != m
            {
                edges.push((m.clone(), to));
            }
        }
    }
    edges
}

/// The circles of a directed graph: its strongly connected components of two or more nodes.
fn circles(edges: &[(String, String)]) -> Vec<Vec<String>> {
    let mut nodes: BTreeSet<String> = BTreeSet::new();
    let mut adj: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (a, b) in edges {
        nodes.insert(a.clone());
        nodes.insert(b.clone());
        adj.entry(a.clone()).or_default().insert(b.clone());
    }
    let reach = |from: &String| -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut stack = vec![from.clone()];
        while let Some(n) = stack.pop() {
            for m in adj.get(&n).into_iter().flatten() {
                if seen.insert(m.clone()) {
                    stack.push(m.clone());
                }
            }
        }
        seen
    };
    let reaches: BTreeMap<String, BTreeSet<String>> =
        nodes.iter().map(|n| (n.clone(), reach(n))).collect();
    let mut done = BTreeSet::new();
    let mut out = Vec::new();
    for n in &nodes {
        if done.contains(n) {
            continue;
        }
        let comp: Vec<String> = nodes
            .iter()
            .filter(|m| *m == n || (reaches[n].contains(*m) && reaches[*m].contains(n)))
            .cloned()
            .collect();
        for c in &comp {
            done.insert(c.clone());
        }
        if comp.len() > 1 {
            out.push(comp);
        }
    }
    out
}

/// The circles at every level: between top-level modules, and between the children of each
/// folder (a reference to a child's descendant counts for the child; references between a module
/// and its own ancestors are containment, not an arrow).
fn all_circles(edges: &[(Vec<String>, Vec<String>)]) -> Vec<(String, Vec<String>)> {
    let mut by_level: BTreeMap<Vec<String>, Vec<(String, String)>> = BTreeMap::new();
    for (a, b) in edges {
        let common = a.iter().zip(b).take_while(|(x, y)| x == y).count();
        if common == a.len() || common == b.len() {
            continue;
        }
        by_level
            .entry(a[..common].to_vec())
            .or_default()
            .push((a[common].clone(), b[common].clone()));
    }
    let mut out = Vec::new();
    for (level, es) in by_level {
        for c in circles(&es) {
            let name = if level.is_empty() {
                "crate".to_string()
            } else {
                level.join("::")
            };
            out.push((name, c));
        }
    }
    out
}

/// The rows of the layer diagram in lib.rs's doc (the ```text block after "# Layers"), top row
/// first, each its modules left to right. A row starts at a line whose first column (the
/// [`LAYER_COLUMN`] characters before the description) names modules; a line indented by two
/// spaces continues the row above; names are separated by commas or "->".
fn layer_rows(lib: &str) -> Vec<Vec<String>> {
    let mut rows: Vec<Vec<String>> = Vec::new();
    let mut inside = false;
    let mut after_heading = false;
    for line in lib.lines() {
        let line = line.strip_prefix("//!").unwrap_or(line);
        let line = line.strip_prefix(' ').unwrap_or(line);
        if line.trim() == "# Layers" {
            after_heading = true;
            continue;
        }
        if after_heading && line.trim() == "```text" {
            inside = true;
            continue;
        }
        if inside && line.trim() == "```" {
            break;
        }
        if !inside {
            continue;
        }
        let column: String = line.chars().take(LAYER_COLUMN).collect();
        let names: Vec<String> = column
            .split([',', ' '])
            .map(str::trim)
            .filter(|s| !s.is_empty() && *s != "->")
            .map(str::to_string)
            .collect();
        if names.is_empty() {
            continue;
        }
        if line.starts_with("  ") && !line.starts_with("   ") {
            if let Some(last) = rows.last_mut() {
                last.extend(names);
            }
        } else {
            rows.push(names);
        }
    }
    rows
}

/// Width of the diagram's module column (the description starts after it).
const LAYER_COLUMN: usize = 31;

/// The imports between top-level modules that break the diagram `rows` (a module using one on a
/// row above, or to its right on its own row), and the modules of `declared` missing from it or
/// on it twice.
fn layer_breaks(
    rows: &[Vec<String>],
    edges: &[(Vec<String>, Vec<String>)],
    declared: &BTreeSet<String>,
) -> Vec<String> {
    let mut place: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    let mut out = Vec::new();
    for (r, row) in rows.iter().enumerate() {
        for (c, m) in row.iter().enumerate() {
            if place.insert(m.as_str(), (r, c)).is_some() {
                out.push(format!("{m} is on the diagram twice"));
            }
        }
    }
    for m in declared {
        if !place.contains_key(m.as_str()) {
            out.push(format!(
                "module {m} is not on the diagram: add it to the row it belongs to"
            ));
        }
    }
    let mut seen = BTreeSet::new();
    for (a, b) in edges {
        let (Some(a), Some(b)) = (a.first(), b.first()) else {
            continue;
        };
        if a == b || !seen.insert((a.clone(), b.clone())) {
            continue;
        }
        let (Some(&(ra, ca)), Some(&(rb, cb))) = (place.get(a.as_str()), place.get(b.as_str()))
        else {
            continue;
        };
        if rb < ra || (rb == ra && cb > ca) {
            out.push(format!(
                "{a} imports {b}, which the diagram puts {}",
                if rb < ra {
                    "on a row above"
                } else {
                    "to its right on its row"
                }
            ));
        }
    }
    out
}

/// Lines of `text` that name an internal issue ("issue 16", "issues 12, 33", "issue privacy-2",
/// "(privacy-3)"): (line number, line).
fn issue_references(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (k, line) in text.lines().enumerate() {
        let l = line.to_lowercase();
        let words: Vec<&str> = l
            .split(|c: char| !(c.is_alphanumeric() || c == '-'))
            .filter(|w| !w.is_empty())
            .collect();
        let hit = words.windows(2).any(|w| {
            matches!(w[0], "issue" | "issues")
                && (w[1].chars().all(|c| c.is_ascii_digit())
                    || w[1]
                        .split_once('-')
                        .is_some_and(|(a, b)| !a.is_empty() && !b.is_empty()))
        }) || words.iter().any(|w| {
            w.rsplit_once('-').is_some_and(|(a, n)| {
                ["privacy", "users", "architecture", "pipeline", "worstcase"].contains(&a)
                    && !n.is_empty()
                    && n.chars().all(|c| c.is_ascii_digit())
            })
        });
        if hit {
            out.push((k + 1, line.trim().to_string()));
        }
    }
    out
}

/// `.unwrap()` calls, and `.expect(` calls whose argument is not a string literal, in code.
fn bare_unwraps(code: &str) -> Vec<usize> {
    code.lines()
        .enumerate()
        .filter(|(_, l)| {
            l.contains(".unwrap()")
                || l.match_indices(".expect(").any(|(i, _)| {
                    !l[i + 8..].trim_start().starts_with('"') && !l[i + 8..].trim().is_empty()
                })
        })
        .map(|(k, _)| k + 1)
        .collect()
}

fn src() -> PathBuf {
    Path::new(ROOT).join("src")
}

fn rel(p: &Path) -> String {
    p.strip_prefix(ROOT).unwrap().display().to_string()
}

#[test]
fn no_file_in_src_is_over_700_lines() {
    let long: Vec<String> = rust_files(&src())
        .iter()
        .filter_map(|f| {
            let n = std::fs::read_to_string(f).unwrap().lines().count();
            (n > MAX_FILE_LINES).then(|| format!("{} ({n} lines)", rel(f)))
        })
        .collect();
    assert!(
        long.is_empty(),
        "files over {MAX_FILE_LINES} lines: {long:?}; split each by concept (one concept per \
         file), as docs/architecture.md describes"
    );
}

#[test]
fn no_function_is_over_120_lines_but_the_allowlisted() {
    let mut long = Vec::new();
    let mut seen = BTreeSet::new();
    for f in rust_files(&src()).iter().filter(|f| !is_test_file(f)) {
        let code = code_only(&std::fs::read_to_string(f).unwrap());
        for (name, n) in functions(&code) {
            if n <= MAX_FN_LINES {
                continue;
            }
            let file = rel(f);
            if LONG_FN_ALLOWLIST
                .iter()
                .any(|(af, an, _)| *af == file && *an == name)
            {
                seen.insert((file, name));
            } else {
                long.push(format!("{file}: fn {name} ({n} lines)"));
            }
        }
    }
    assert!(
        long.is_empty(),
        "functions over {MAX_FN_LINES} lines: {long:?}; split each into named steps (as \
         clipnorm::recommend's stages), or, with a reason, add it to LONG_FN_ALLOWLIST in \
         tests/tidy.rs"
    );
    let stale: Vec<String> = LONG_FN_ALLOWLIST
        .iter()
        .filter(|(f, n, _)| !seen.contains(&(f.to_string(), n.to_string())))
        .map(|(f, n, _)| format!("{f}: fn {n}"))
        .collect();
    assert!(
        stale.is_empty(),
        "LONG_FN_ALLOWLIST names functions that are no longer over {MAX_FN_LINES} lines (or \
         gone): {stale:?}; remove them from the list"
    );
}

#[test]
fn no_import_circle_at_any_level() {
    let found = all_circles(&module_edges(&src()));
    assert!(
        found.is_empty(),
        "import circles (level: members): {found:?}; cut each by moving the shared item down to \
         the module both use (docs/architecture.md: dependencies point down the layers)"
    );
}

#[test]
fn imports_follow_the_layer_diagram_of_lib_rs() {
    let lib = std::fs::read_to_string(src().join("lib.rs")).unwrap();
    let rows = layer_rows(&lib);
    assert!(
        rows.len() >= 5,
        "no layer diagram found in src/lib.rs: {rows:?}"
    );
    let declared: BTreeSet<String> = lib
        .lines()
        .filter_map(|l| {
            let l = l.trim();
            let rest = l
                .strip_prefix("pub mod ")
                .or_else(|| l.strip_prefix("pub(crate) mod "))?;
            Some(rest.trim_end_matches(';').to_string())
        })
        .collect();
    let breaks = layer_breaks(&rows, &module_edges(&src()), &declared);
    assert!(
        breaks.is_empty(),
        "the layer diagram in src/lib.rs is not true: {breaks:?}; move the shared item down to a \
         module both may use, or, if the design really changed, redraw the diagram (and \
         docs/architecture.md) in the same change"
    );
}

#[test]
fn planted_layer_breaks_are_found() {
    let lib = "//! # Layers\n//!\n//! ```text\n//! cli, main                      the command line\n\
               //! train, clipnorm,               runs; the study\n//!   audit                          \
               and audit\n//!                                  (a description line)\n//! loss -> \
               privacy                bottom\n//! ```\n";
    let rows = layer_rows(lib);
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    assert_eq!(
        rows,
        vec![
            s(&["cli", "main"]),
            s(&["train", "clipnorm", "audit"]),
            s(&["loss", "privacy"])
        ]
    );
    let m = |x: &str| vec![x.to_string()];
    let declared: BTreeSet<String> = ["train", "clipnorm", "audit", "loss", "privacy", "plot"]
        .iter()
        .map(|x| x.to_string())
        .collect();
    let ok = vec![
        (m("clipnorm"), m("train")),
        (m("privacy"), m("loss")),
        (m("audit"), m("loss")),
    ];
    assert_eq!(
        layer_breaks(&rows, &ok, &declared),
        vec!["module plot is not on the diagram: add it to the row it belongs to"]
    );
    // train -> clipnorm (to its right on its row) and loss -> audit (a row above).
    let bad = vec![(m("train"), m("clipnorm")), (m("loss"), m("audit"))];
    assert_eq!(layer_breaks(&rows, &bad, &declared).len(), 3);
}

#[test]
fn no_unwrap_outside_tests_and_every_expect_says_why() {
    let mut bad = Vec::new();
    for f in rust_files(&src()).iter().filter(|f| !is_test_file(f)) {
        let code = code_only(&std::fs::read_to_string(f).unwrap());
        // code_only blanks string contents, but keeps the quotes: `.expect("")` stays a literal.
        for line in bare_unwraps(&code) {
            bad.push(format!("{}:{line}", rel(f)));
        }
    }
    assert!(
        bad.is_empty(),
        "`.unwrap()` (or `.expect` without a reason) outside tests: {bad:?}; return an error \
         that says what is wrong (bad input gets one `error:` line), or, where the value cannot \
         be missing, `.expect(\"why it cannot\")`"
    );
}

#[test]
fn user_docs_name_no_internal_issue() {
    let mut docs = vec![
        Path::new(ROOT).join("README.md"),
        Path::new(ROOT).join("data/README.md"),
    ];
    for dir in ["docs", "paper_refs"] {
        for e in std::fs::read_dir(Path::new(ROOT).join(dir)).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "md") {
                docs.push(p);
            }
        }
    }
    docs.sort();
    let mut found = Vec::new();
    for d in &docs {
        for (k, line) in issue_references(&std::fs::read_to_string(d).unwrap()) {
            found.push(format!("{}:{k}: {line}", rel(d)));
        }
    }
    assert!(
        found.is_empty(),
        "user docs name internal issues, which a reader of the repository cannot look up:\n{}\n\
         say what changed and why instead",
        found.join("\n")
    );
}

/// The files that may name the system's temporary folder: the two helpers that make a fresh,
/// uniquely named folder per call and remove nothing (`tests/it/common.rs`'s `tmpdir` for the
/// integration tests, `src/test_dir.rs` for the unit tests).
const TEMP_DIR_HELPERS: &[&str] = &["tests/it/common.rs", "src/test_dir.rs"];

/// Files not moved to the helpers yet: (file, why). Shrink to zero.
const TEMP_DIR_PENDING: &[(&str, &str)] = &[];

/// Lines (1-based) of `text` outside `//` comments that name the system's temporary folder: a
/// call of `temp_dir()` or a string literal starting `"/tmp`. A test that builds a fixed name
/// there (even with its pid in it) shares the path with every other test and every other copy of
/// the suite that builds the same name, and removing it first wipes their files.
fn shared_temp_paths(text: &str) -> Vec<usize> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| {
            let code = l.split("//").next().unwrap_or("");
            code.contains("temp_dir()") || code.contains("\"/tmp")
        })
        .map(|(i, _)| i + 1)
        .collect()
}

#[test]
fn no_test_writes_to_a_shared_fixed_path() {
    let mut bad = Vec::new();
    let mut pending_seen = BTreeSet::new();
    for dir in ["src", "tests", "benches", "examples"] {
        let dir = Path::new(ROOT).join(dir);
        if !dir.exists() {
            continue;
        }
        for f in rust_files(&dir) {
            let file = rel(&f);
            if TEMP_DIR_HELPERS.contains(&file.as_str()) || file == "tests/tidy.rs" {
                continue;
            }
            let lines = shared_temp_paths(&std::fs::read_to_string(&f).unwrap());
            if lines.is_empty() {
                continue;
            }
            if TEMP_DIR_PENDING.iter().any(|(p, _)| *p == file) {
                pending_seen.insert(file);
                continue;
            }
            bad.extend(lines.iter().map(|l| format!("{file}:{l}")));
        }
    }
    assert!(
        bad.is_empty(),
        "tests naming the system's temporary folder themselves: {bad:?}; take a fresh folder \
         from `crate::common::tmpdir` (integration tests) or `crate::test_dir::tmpdir` (unit \
         tests), unique per call, and never remove a path another test could be using"
    );
    let stale: Vec<&str> = TEMP_DIR_PENDING
        .iter()
        .map(|(p, _)| *p)
        .filter(|p| !pending_seen.contains(*p))
        .collect();
    assert!(
        stale.is_empty(),
        "TEMP_DIR_PENDING names files that no longer use the temporary folder: {stale:?}; \
         remove them from the list"
    );
}

// The checkers, each on a planted violation.

#[test]
fn planted_shared_temp_paths_are_found() {
    let text = "let a = std::env::temp_dir().join(\"x\");\n// std::env::temp_dir() in a comment\n\
                let b = Path::new(\"/tmp/dpsgd-test\");\nlet c = common::tmpdir(\"x\");\n";
    assert_eq!(shared_temp_paths(text), [1, 3]);
}

#[test]
fn planted_long_function_is_found() {
    let body: String = (0..130).map(|i| format!("    let x{i} = {i};\n")).collect();
    let code = code_only(&format!("pub fn big() {{\n{body}}}\nfn small() {{ }}\n"));
    let f = functions(&code);
    assert_eq!(f, vec![("big".to_string(), 132), ("small".to_string(), 1)]);
}

#[test]
fn planted_circle_is_found_at_its_level() {
    let m = |s: &str| s.split("::").map(str::to_string).collect::<Vec<_>>();
    // experiment::replicate -> experiment::cliplaw::mod -> experiment::results -> replicate.
    let edges = vec![
        (m("experiment::replicate"), m("experiment::cliplaw")),
        (
            m("experiment::cliplaw::analysis"),
            m("experiment::replicate"),
        ),
        (m("experiment::cliplaw::analysis"), m("experiment::cliplaw")),
        (m("privacy::ledger"), m("error")),
    ];
    let c = all_circles(&edges);
    assert_eq!(
        c,
        vec![(
            "experiment".to_string(),
            vec!["cliplaw".to_string(), "replicate".to_string()]
        )]
    );
    // A child using its parent's items is containment, not a circle.
    assert!(all_circles(&[(m("a::b"), m("a")), (m("a"), m("a::b"))]).is_empty());
}

#[test]
fn references_resolve_use_trees_and_super() {
    let code = code_only(
        "use super::{plan::AdvicePlan, values::read};\nuse crate::privacy::{ledger::Ledger, \
         calibrate};\nfn f() { let z = super::super::x::y(); }\n// crate::not::this\n",
    );
    let m = vec![
        "clipnorm".to_string(),
        "recommend".to_string(),
        "stages".to_string(),
    ];
    let r = references(&code, &m);
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    assert!(
        r.contains(&s(&["clipnorm", "recommend", "plan", "AdvicePlan"])),
        "{r:?}"
    );
    assert!(r.contains(&s(&["clipnorm", "recommend", "values", "read"])));
    assert!(r.contains(&s(&["privacy", "ledger", "Ledger"])));
    assert!(r.contains(&s(&["privacy", "calibrate"])));
    assert!(r.contains(&s(&["clipnorm", "x", "y"])));
    assert!(!r.iter().any(|p| p.contains(&"not".to_string())));
}

#[test]
fn planted_unwrap_and_issue_reference_are_found() {
    let code = code_only(
        "fn f() { a.unwrap(); b.expect(\"checked\"); c.expect(msg); }\n#[cfg(test)]\nmod t { \
         fn g() { x.unwrap(); } }\n",
    );
    assert_eq!(bare_unwraps(&code), vec![1]);
    let hits = issue_references(
        "fine\n(issue 16) done\nsee issues 12, 33\nper privacy-3\nissue clip-law\nthe issue was \
         the noise\n",
    );
    let lines: Vec<usize> = hits.iter().map(|h| h.0).collect();
    assert_eq!(lines, vec![2, 3, 4, 5]);
}
