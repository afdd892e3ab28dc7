//! Run configurations read from TOML: plain serde structs with unknown keys rejected, validated
//! once, up front. This is where specs are assembled from the layers below (data sources,
//! losses, Algorithm 1, the Appendix L instance).

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::data::Dataset;
use crate::data::csv::CsvSpec;
use crate::data::generator::GeneratorSpec;
use crate::dpsgd::DpSgdConfig;
use crate::error::{Error, Result};
use crate::loss::LossSpec;
use crate::lower_bound::AppendixLSpec;
use crate::rng::SimRng;

/// One DP-SGD run: `dpsgd-lab train --config FILE`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrainConfig {
    /// Base seed; every random stream derives from it (see [`crate::rng`]).
    pub seed: u64,
    /// Replicate index (default 0).
    #[serde(default)]
    pub replicate: u64,
    /// The reproducible research mode (default false): DP-SGD on a CSV draws its batches and
    /// noise from the seeded streams, so the same seed gives the same run, and anyone who knows
    /// the seed can replay the noise: NOT a private release. By default a run on a CSV with
    /// noise draws them from the operating system's CSPRNG ([`crate::rng::ReleaseRng`]);
    /// generated data (a simulation) is always seeded.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reproducible: bool,
    /// The data.
    pub data: DataSpec,
    /// The loss family.
    pub loss: LossSpec,
    /// Algorithm 1's hyperparameters.
    pub dpsgd: DpSgdConfig,
    /// The per-row transform applied to the training and test rows before training (public
    /// ranges, or a privately released standardization): `[preprocess]`.
    #[serde(default)]
    pub preprocess: Option<crate::data::preprocess::Preprocess>,
    /// The whole privacy budget, when this run is one step of a larger private pipeline
    /// (`clipnorm recommend --write-config` writes it).
    #[serde(default)]
    pub privacy: Option<BudgetSpec>,
}

/// `[privacy]`: the data set's privacy ledger ([`crate::privacy::ledger`]), e.g. the one
/// `clipnorm recommend` made and spent from. `train` refuses a run whose DP-SGD spend the ledger
/// cannot hold, and records the spend there before it trains, so that reruns and other commands
/// count against the same budget (basic composition, Dwork & Roth 2014, Theorem 3.16).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BudgetSpec {
    /// Path of the ledger file (JSON lines; its first line states the total budget).
    pub ledger: String,
}

/// Parses TOML text into `T`, turning the parser's multi-line report into one line that names
/// the file, the line, the key (its dotted path from the top of the file, as the user writes
/// it: "missing field `data.split.seed`") and the problem. `origin` names the file; "" or
/// "config" (a table passed from Python) is not repeated after the `config:` label, nor is the
/// line of its TOML rendering given.
pub fn from_toml_str<T: serde::de::DeserializeOwned>(text: &str, origin: &str) -> Result<T> {
    let de = toml::de::Deserializer::parse(text).map_err(|e| toml_error(text, origin, &e, "."))?;
    serde_path_to_error::deserialize(de).map_err(|e| {
        let mut path = e.path().to_string();
        if path == "data"
            && let Some(inner) = data_path(text)
        {
            path = format!("data.{inner}");
        }
        toml_error(text, origin, e.inner(), &path)
    })
}

/// One line for a TOML error at the dotted key `path` ("." for the top of the file).
fn toml_error(text: &str, origin: &str, e: &toml::de::Error, path: &str) -> Error {
    let line = e
        .span()
        .map(|s| text[..s.start.min(text.len())].matches('\n').count() + 1);
    let at = match (origin, line) {
        // A table from Python: its line numbers are those of its TOML rendering; the key says it.
        ("" | "config", _) => String::new(),
        (o, Some(l)) => format!("{o}:{l}: "),
        (o, None) => format!("{o}: "),
    };
    let msg = crate::error::readable_numbers(e.message().replace('\n', " ").trim());
    let field = msg
        .strip_prefix("missing field `")
        .and_then(|r| r.split_once('`'));
    let msg = match (field, path) {
        (Some((f, rest)), ".") => format!("missing field `{f}`{rest}"),
        (Some((f, rest)), p) => format!("missing field `{p}.{f}`{rest}"),
        (None, ".") => msg,
        (None, p) => format!("{p}: {msg}"),
    };
    Error::Config(format!("{at}{msg}"))
}

/// The dotted path inside `[data]` of the error in `text`'s data table. Serde reads a tagged
/// enum (the data's `source`) through a buffer that loses the path below it, so the table is
/// read again as the struct its source names. None where that finds no deeper path.
fn data_path(text: &str) -> Option<String> {
    let mut top: toml::Table = toml::from_str(text).ok()?;
    let toml::Value::Table(mut data) = top.remove("data")? else {
        return None;
    };
    let source = data.remove("source")?;
    let data = toml::Value::Table(data);
    let path = match source.as_str()? {
        "generated" => error_path::<GeneratorSpec>(data),
        "csv" => error_path::<CsvSpec>(data),
        "appendix_l" => error_path::<AppendixLSpec>(data),
        _ => None,
    }?;
    (path != ".").then_some(path)
}

/// The dotted path of the error of reading `v` as `V`, if any.
fn error_path<V: serde::de::DeserializeOwned>(v: toml::Value) -> Option<String> {
    serde_path_to_error::deserialize::<_, V>(v)
        .err()
        .map(|e| e.path().to_string())
}

/// Reads and parses a TOML file.
pub fn load_toml<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T> {
    let text =
        std::fs::read_to_string(path).map_err(|e| Error::io(path.display().to_string(), e))?;
    from_toml_str(&text, &path.display().to_string())
}

impl TrainConfig {
    /// Reads a train config file; a relative `[data] path` is read from the file's folder
    /// ([`DataSpec::resolve_against`]).
    pub fn load(path: &Path) -> Result<TrainConfig> {
        let mut cfg: TrainConfig = load_toml(path)?;
        cfg.resolve_against(path)?;
        Ok(cfg)
    }

    /// The config's relative paths (`[data] path`, `[privacy] ledger`) read from the folder of
    /// the file at `path` (the ledger need not exist yet to be named).
    pub fn resolve_against(&mut self, path: &Path) -> Result<()> {
        self.data.resolve_against(path)?;
        if let Some(b) = self.privacy.as_mut()
            && Path::new(&b.ledger).is_relative()
        {
            let folder = path.parent().unwrap_or(Path::new(""));
            b.ledger = join_lexically(folder, Path::new(&b.ledger))
                .display()
                .to_string();
        }
        Ok(())
    }
}

/// The TOML text of a config about to be written to `config`, its `[data] path` (given relative
/// to the working directory) rewritten relative to the config file's folder, which is where
/// [`DataSpec::resolve_against`] reads it from: so a written config works from any directory.
/// Text without such a line, or with an absolute path, is returned as it is.
pub fn rebase_data_path(text: &str, config: &Path) -> String {
    // (table, key) pairs whose value is a path: the data and the privacy ledger.
    let mut table = String::new();
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let t = line.trim();
        if t.starts_with('[') {
            table = t.to_string();
        }
        let key = match table.as_str() {
            "[data]" => "path",
            "[privacy]" => "ledger",
            _ => "",
        };
        let given = (!key.is_empty())
            .then(|| toml::from_str::<toml::Table>(t).ok())
            .flatten()
            .and_then(|tb| tb.get(key)?.as_str().map(str::to_string))
            .filter(|p| Path::new(p).is_relative());
        match (given, std::env::current_dir()) {
            (Some(p), Ok(cwd)) => {
                let folder = join_lexically(&cwd, config.parent().unwrap_or(Path::new("")));
                let target = join_lexically(&cwd, Path::new(&p));
                let rel = relative_path(&target, &folder);
                out.push_str(&format!(
                    "{key} = {}\n",
                    toml::Value::String(rel.display().to_string())
                ));
            }
            _ => out.push_str(line),
        }
    }
    out
}

/// `target` relative to the folder `base` (both absolute and folded): `..` for each of base's
/// components past their common prefix, then the rest of target.
fn relative_path(target: &Path, base: &Path) -> std::path::PathBuf {
    let (t, b): (Vec<_>, Vec<_>) = (target.components().collect(), base.components().collect());
    let common = t.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let mut out = std::path::PathBuf::new();
    for _ in common..b.len() {
        out.push("..");
    }
    for c in &t[common..] {
        out.push(c);
    }
    out
}

/// `base` joined with `rel`, with `.` and `..` folded where a named folder precedes them
/// (lexically: no file system access), so `simulations/../data/x.csv` reads `data/x.csv`.
fn join_lexically(base: &Path, rel: &Path) -> std::path::PathBuf {
    use std::path::Component;
    let mut out = std::path::PathBuf::new();
    for c in base.components().chain(rel.components()) {
        match c {
            Component::CurDir => {}
            Component::ParentDir
                if matches!(out.components().next_back(), Some(Component::Normal(_))) =>
            {
                out.pop();
            }
            c => out.push(c),
        }
    }
    out
}

/// Where a run's data comes from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "source", rename_all = "snake_case")]
pub enum DataSpec {
    /// A synthetic generator (see [`GeneratorSpec`]).
    Generated(GeneratorSpec),
    /// A CSV file (see [`CsvSpec`]).
    Csv(CsvSpec),
    /// The hard distribution Q_v of Thm L.1 (see [`AppendixLSpec`]).
    AppendixL(AppendixLSpec),
}

impl DataSpec {
    /// Reads a relative CSV path from the folder of the config file `config` that names it (so
    /// a config works from any directory), and checks that the file opens; the error says that
    /// the path came from the config's `[data]` table.
    pub fn resolve_against(&mut self, config: &Path) -> Result<()> {
        let DataSpec::Csv(c) = self else {
            return Ok(());
        };
        let given = std::path::PathBuf::from(&c.path);
        if given.is_relative() {
            let folder = config.parent().unwrap_or(Path::new(""));
            c.path = join_lexically(folder, &given).display().to_string();
        }
        std::fs::File::open(&c.path).map_err(|e| {
            Error::Config(format!(
                "{}: [data] path = {:?} ({}; a relative path is read from the config file's \
                 folder): {e}",
                config.display(),
                given.display().to_string(),
                c.path
            ))
        })?;
        Ok(())
    }

    /// Builds the data set; `rng` is the data stream and is only used by generators.
    pub fn build(&self, rng: &mut SimRng) -> Result<Dataset> {
        match self {
            DataSpec::Generated(g) => g.generate(rng),
            DataSpec::Csv(c) => c.load(),
            DataSpec::AppendixL(a) => a.build(rng),
        }
    }
}

/// The exact (E[G(x, y)^k])^(1/k) of `loss` under the generator `generator` (Assumption 6.1), where
/// it has a closed form: the generator fixes a moment of ||x|| (or of the label) and the loss
/// states G as a function of it. `None` where there is no closed form.
pub fn exact_lipschitz_k_norm(generator: &GeneratorSpec, loss: &LossSpec) -> Result<Option<f64>> {
    let m = generator.controlled_moment()?;
    Ok(loss
        .lipschitz_form()
        .and_then(|f| f.k_norm(m.k, m.g, m.r_is_label)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_written_config_names_its_data_relative_to_itself() {
        let cwd = std::env::current_dir().unwrap();
        let text =
            "seed = 1\n[data]\nsource = \"csv\"\npath = \"data/x.csv\"\n[dpsgd]\npath = \"k\"\n";
        let out = rebase_data_path(text, Path::new("out/sub/rec.toml"));
        assert!(out.contains("path = \"../../data/x.csv\"\n"), "{out}");
        assert!(out.ends_with("[dpsgd]\npath = \"k\"\n"), "{out}");
        assert_eq!(rebase_data_path(text, Path::new("rec.toml")), text);
        let abs = cwd.join("elsewhere/rec.toml");
        assert!(rebase_data_path(text, &abs).contains("path = \"../data/x.csv\""));
        assert_eq!(
            relative_path(Path::new("/a/b/c.csv"), Path::new("/a/d/e")),
            Path::new("../../b/c.csv")
        );
    }

    #[test]
    fn relative_paths_fold_lexically_onto_the_config_folder() {
        let j = |b: &str, r: &str| join_lexically(Path::new(b), Path::new(r));
        assert_eq!(j("simulations", "../data/x.csv"), Path::new("data/x.csv"));
        assert_eq!(
            j("simulations/cliplaw", "../../data/x.csv"),
            Path::new("data/x.csv")
        );
        assert_eq!(j("", "./x.csv"), Path::new("x.csv"));
        assert_eq!(j("", "../x.csv"), Path::new("../x.csv"));
        assert_eq!(j("/a/b", "../c.csv"), Path::new("/a/c.csv"));
    }

    /// `DpSgdConfig::new` gives a config file's defaults (no projection, the random iterate,
    /// w_0 = 0), and each `with_*` sets its one field.
    #[test]
    fn dpsgd_config_new_has_the_file_defaults() {
        use crate::dpsgd::{DpSgdConfig, Init, NoiseSpec, OutputRule, Projection, StepSchedule};
        let text = "steps = 20\nbatch_size = 10\nlearning_rate = 0.5\nclip_norm = 1.0\n\
                    noise = { kind = \"multiplier\", z = 1.5 }\n";
        let read: DpSgdConfig = from_toml_str(text, "dpsgd.toml").unwrap();
        let built = DpSgdConfig::new(
            20,
            10.0,
            StepSchedule::Constant(0.5),
            StepSchedule::Constant(1.0),
            NoiseSpec::Multiplier { z: 1.5 },
        );
        assert_eq!(built, read);
        let ball = Projection::L2Ball { radius: 2.0 };
        let init = Init::Constant { value: 0.25 };
        let full = built
            .clone()
            .with_projection(ball)
            .with_output(OutputRule::AverageIterate)
            .with_init(init.clone());
        assert_eq!(full.projection, ball);
        assert_eq!(full.output, OutputRule::AverageIterate);
        assert_eq!(full.init, init);
        assert_eq!(
            (full.steps, full.batch_size, &full.noise),
            (built.steps, built.batch_size, &built.noise)
        );
    }

    /// A table passed from Python is named "config": the message is not labelled twice, and it
    /// names the key to add as a dotted path.
    #[test]
    fn an_unnamed_config_is_labelled_once() {
        let text = "seed = 1\n[data]\nsource = \"csv\"\npath = \"a.csv\"\nlabel = \"y\"\n\
                    split = { test_fraction = 0.2 }\n";
        for origin in ["config", ""] {
            let e = from_toml_str::<TrainConfig>(text, origin)
                .unwrap_err()
                .to_string();
            assert_eq!(e, "config: missing field `data.split.seed`", "{origin}");
        }
    }

    /// A bad accountant name fails when the config is read, before any data is built (the CSV
    /// named here does not exist), as one line naming the file and the line.
    #[test]
    fn a_bad_accountant_fails_when_the_config_is_read() {
        let text = "seed = 1\n[data]\nsource = \"csv\"\npath = \"/nonexistent/a2.csv\"\n\
                    label = \"label\"\n[loss]\nfamily = \"logistic\"\n[dpsgd]\nsteps = 20\n\
                    batch_size = 10\nlearning_rate = 0.5\nclip_norm = 1.0\n\
                    noise = { kind = \"target\", epsilon = 1.5, delta = 1e-5, accountant = \"moments\" }\n";
        let e = from_toml_str::<TrainConfig>(text, "run.toml")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("config: run.toml:13: dpsgd.noise: unknown accountant 'moments'"),
            "{e}"
        );
        assert!(!e.contains('\n'), "{e}");
        let ok = text.replace("moments", "prv");
        let cfg: TrainConfig = from_toml_str(&ok, "run.toml").unwrap();
        assert!(matches!(
            cfg.dpsgd.noise,
            crate::dpsgd::NoiseSpec::Target {
                accountant: crate::dpsgd::AccountantKind::Pld,
                ..
            }
        ));
    }
}
