//! docs/config.md cannot drift from the config types: every ```toml block tagged `train`,
//! `spec` or `clipnorm` parses into its type (the types refuse unknown keys), and every key of
//! those examples as the types serialize them (defaults filled in, so a new field with a
//! default appears too) is named in the document's prose, in an inline code span (`key`,
//! `[key]`, `{ kind = "x", key }`); the examples themselves do not count.

use std::collections::BTreeSet;

use dpsgd_lab::clipnorm::config::StudyConfig;
use dpsgd_lab::config::TrainConfig;
use dpsgd_lab::experiment::spec::ExperimentSpec;

use crate::common::ROOT;

/// The fenced blocks whose info string is "toml TAG", as (tag, text).
fn tagged_blocks(md: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut cur: Option<(String, String)> = None;
    for line in md.lines() {
        match (&mut cur, line.strip_prefix("```")) {
            (None, Some(info)) => {
                cur = Some((info.trim().to_string(), String::new()));
            }
            (Some(_), Some(_)) => {
                let (info, text) = cur.take().unwrap();
                if let Some(tag) = info.strip_prefix("toml ") {
                    out.push((tag.trim().to_string(), text));
                }
            }
            (Some((_, text)), None) => {
                text.push_str(line);
                text.push('\n');
            }
            (None, None) => {}
        }
    }
    out
}

/// Every object key of a JSON value, recursively.
fn keys(v: &serde_json::Value, out: &mut BTreeSet<String>) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, x) in m {
                out.insert(k.clone());
                keys(x, out);
            }
        }
        serde_json::Value::Array(a) => a.iter().for_each(|x| keys(x, out)),
        _ => {}
    }
}

/// Parses one tagged example into its type and returns the keys it serializes to.
fn example_keys(tag: &str, text: &str) -> Result<BTreeSet<String>, String> {
    fn parse<T: serde::de::DeserializeOwned + serde::Serialize>(
        text: &str,
    ) -> Result<serde_json::Value, String> {
        let v: T = toml::from_str(text).map_err(|e| e.to_string())?;
        serde_json::to_value(&v).map_err(|e| e.to_string())
    }
    let v = match tag {
        "train" => parse::<TrainConfig>(text)?,
        "spec" => parse::<ExperimentSpec>(text)?,
        "clipnorm" => parse::<StudyConfig>(text)?,
        other => return Err(format!("unknown block tag `toml {other}`")),
    };
    let mut out = BTreeSet::new();
    keys(&v, &mut out);
    Ok(out)
}

/// The words (identifiers) inside the inline code spans of the text outside fenced blocks.
fn documented_words(md: &str) -> BTreeSet<String> {
    let mut prose = String::new();
    let mut fenced = false;
    for line in md.lines() {
        if line.starts_with("```") {
            fenced = !fenced;
        } else if !fenced {
            prose.push_str(line);
            prose.push('\n');
        }
    }
    prose
        .split('`')
        .skip(1)
        .step_by(2)
        .flat_map(|span| span.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')))
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect()
}

/// The problems of a config reference: examples that do not parse, and keys not named.
fn problems(md: &str) -> Vec<String> {
    let blocks = tagged_blocks(md);
    let words = documented_words(md);
    let mut problems = Vec::new();
    for tag in ["train", "spec", "clipnorm"] {
        if !blocks.iter().any(|(t, _)| t == tag) {
            problems.push(format!("no ```toml {tag} example"));
        }
    }
    for (i, (tag, text)) in blocks.iter().enumerate() {
        match example_keys(tag, text) {
            Err(e) => problems.push(format!("example {i} (toml {tag}) does not parse: {e}")),
            Ok(ks) => {
                for k in ks {
                    if !words.contains(&k) {
                        problems.push(format!("key `{k}` (toml {tag}) is not documented"));
                    }
                }
            }
        }
    }
    problems
}

#[test]
fn config_reference_examples_parse_and_every_key_is_documented() {
    let md = std::fs::read_to_string(format!("{ROOT}/docs/config.md")).unwrap();
    let p = problems(&md);
    assert!(p.is_empty(), "docs/config.md:\n{}", p.join("\n"));
}

#[test]
fn a_misspelled_or_undocumented_key_is_caught() {
    let md = "```toml train\nseed = 1\n[data]\nsource = \"csv\"\npath = \"a.csv\"\n\
              label = \"y\"\n[loss]\nfamily = \"robust\"\n[dpsgd]\nsteps = 1\n\
              batch_size = 1\nlearning_rate = 0.1\nclip_norm = 1\nnoise = { kind = \"none\" }\n```\n";
    // Undocumented: every key is missing from this text but the example's own lines, which
    // are not in backticks.
    let p = problems(md);
    assert!(p.iter().any(|l| l.contains("key `seed`")), "{p:?}");
    assert!(p.iter().any(|l| l.contains("key `standardize`")), "{p:?}");
    assert!(p.iter().any(|l| l.contains("no ```toml spec")), "{p:?}");
    // A misspelled key does not parse.
    let bad = md.replace("clip_norm", "clipnorm");
    assert!(problems(&bad).iter().any(|l| l.contains("does not parse")));
}
