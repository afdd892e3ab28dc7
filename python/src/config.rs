//! Configs from Python: dicts (the TOML's keys) or TOML files, as the CLI reads them, with the
//! config's errors worded as the CLI's (one `config:` prefix, the file and line where known).

use std::path::PathBuf;

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

use dpsgd::config::from_toml_str;
use dpsgd::data::generator::GeneratorSpec;
use dpsgd::loss::LossSpec;

use crate::{err, value_error};

/// A Python value as TOML: dicts become tables (keys with value None are left out), lists and
/// tuples arrays; bool, int, float and str as themselves.
pub(crate) fn to_toml(obj: &Bound<'_, PyAny>) -> PyResult<Option<toml::Value>> {
    if obj.is_none() {
        return Ok(None);
    }
    if obj.is_instance_of::<PyBool>() {
        return Ok(Some(toml::Value::Boolean(obj.extract()?)));
    }
    if obj.is_instance_of::<PyInt>() {
        return Ok(Some(toml::Value::Integer(obj.extract()?)));
    }
    if obj.is_instance_of::<PyFloat>() {
        return Ok(Some(toml::Value::Float(obj.extract()?)));
    }
    if obj.is_instance_of::<PyString>() {
        return Ok(Some(toml::Value::String(obj.extract()?)));
    }
    if let Ok(d) = obj.cast::<PyDict>() {
        let mut t = toml::Table::new();
        for (k, v) in d.iter() {
            let key: String = k
                .extract()
                .map_err(|_| value_error(format!("config keys must be strings, but got {k}")))?;
            if let Some(v) = to_toml(&v)? {
                t.insert(key, v);
            }
        }
        return Ok(Some(toml::Value::Table(t)));
    }
    if obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>() {
        let mut a = Vec::new();
        for v in obj.try_iter()? {
            if let Some(v) = to_toml(&v?)? {
                a.push(v);
            }
        }
        return Ok(Some(toml::Value::Array(a)));
    }
    // numpy scalars and other numbers: integers have __index__, floats do not.
    if obj.hasattr("__index__")?
        && let Ok(i) = obj.extract::<i64>()
    {
        return Ok(Some(toml::Value::Integer(i)));
    }
    if let Ok(x) = obj.extract::<f64>() {
        return Ok(Some(toml::Value::Float(x)));
    }
    Err(value_error(format!(
        "cannot use a {} in a config: use dicts, lists, str, int, float or bool",
        obj.get_type().name()?
    )))
}

/// A config given as a dict (the TOML's keys) or as the path of a TOML file.
pub(crate) struct ConfigSource {
    /// The config's top-level table.
    pub(crate) table: toml::Table,
    /// The file's text (None for a dict).
    text: Option<String>,
    /// The file's path as given, which errors cite ("" for a dict: the error's `config:` prefix
    /// says enough).
    origin: String,
}

impl ConfigSource {
    pub(crate) fn new(config: &Bound<'_, PyAny>) -> PyResult<Self> {
        if config.is_instance_of::<PyDict>() {
            let Some(toml::Value::Table(table)) = to_toml(config)? else {
                unreachable!("a dict is a table")
            };
            return Ok(ConfigSource {
                table,
                text: None,
                origin: String::new(),
            });
        }
        let path: PathBuf = config
            .extract()
            .map_err(|_| value_error("config must be a dict or the path of a TOML file"))?;
        let origin = path.display().to_string();
        let text = std::fs::read_to_string(&path).map_err(|e| err(dpsgd::Error::io(&origin, e)))?;
        let table = from_toml_str(&text, &origin).map_err(err)?;
        Ok(ConfigSource {
            table,
            text: Some(text),
            origin,
        })
    }

    /// The config as `T`. A file is parsed as the CLI parses it (errors cite its line), unless
    /// it lacks a top-level `seed` and `seed` is given: then, as for a dict, `T` is read from
    /// the table with `seed` filled in, and errors cite the file without a line. The caller
    /// still sets `seed` over the config's own, as the CLI's `--seed` does.
    pub(crate) fn parse<T: serde::de::DeserializeOwned>(&self, seed: Option<u64>) -> PyResult<T> {
        if let Some(text) = &self.text
            && (seed.is_none() || self.table.contains_key("seed"))
        {
            return from_toml_str(text, &self.origin).map_err(err);
        }
        let mut table = self.table.clone();
        if let Some(s) = seed
            && !table.contains_key("seed")
        {
            let s = i64::try_from(s).map_err(|_| value_error(format!("seed {s} is too large")))?;
            table.insert("seed".into(), toml::Value::Integer(s));
        }
        self.parse_table(table)
    }

    /// The file's path, for a config given as one.
    pub(crate) fn path(&self) -> Option<&std::path::Path> {
        self.text
            .as_ref()
            .map(|_| std::path::Path::new(self.origin.as_str()))
    }

    /// What errors outside the parser call the config: its path, or `config` for a dict.
    pub(crate) fn name(&self) -> &str {
        if self.origin.is_empty() {
            "config"
        } else {
            &self.origin
        }
    }

    /// `T` from a (possibly edited) table of this config, errors prefixed by the origin.
    pub(crate) fn parse_table<T: serde::de::DeserializeOwned>(
        &self,
        table: toml::Table,
    ) -> PyResult<T> {
        toml::Value::Table(table)
            .try_into()
            .map_err(|e: toml::de::Error| {
                let msg = dpsgd::error::readable_numbers(e.message().replace('\n', " ").trim());
                let msg = if self.origin.is_empty() {
                    msg
                } else {
                    format!("{}: {msg}", self.origin)
                };
                err(dpsgd::Error::Config(msg))
            })
    }
}

/// A loss by family name (parsed as the CLI parses `--loss`, so the defaults agree) or as a dict
/// with the TOML's keys.
pub(crate) fn loss_spec(loss: &Bound<'_, PyAny>) -> PyResult<LossSpec> {
    if !loss.is_instance_of::<PyDict>() {
        let name: String = loss
            .extract()
            .map_err(|_| value_error("loss must be a family name or a dict"))?;
        return name.parse::<LossSpec>().map_err(err);
    }
    // Errors read "config: loss: ..." (a dict has no lines to cite).
    let mut src = ConfigSource::new(loss)?;
    src.origin = "loss".into();
    let table = std::mem::take(&mut src.table);
    src.parse_table(table)
}

/// The loss given, or the logistic loss (the default of every function taking one).
pub(crate) fn loss_or_logistic(
    py: Python<'_>,
    loss: Option<&Bound<'_, PyAny>>,
) -> PyResult<LossSpec> {
    match loss {
        Some(l) => loss_spec(l),
        None => loss_spec(&PyString::new(py, "logistic").into_any()),
    }
}

/// A generator spec from a dict or a TOML file: the bare spec, or a train config whose [data]
/// is `source = "generated"`; with the file's seed, if any.
pub(crate) fn generator_spec(spec: &Bound<'_, PyAny>) -> PyResult<(GeneratorSpec, Option<u64>)> {
    let src = ConfigSource::new(spec)?;
    let origin = src.name();
    let mut value = src.table.clone();
    let seed = match value.get("seed") {
        Some(toml::Value::Integer(s)) if *s >= 0 => Some(*s as u64),
        Some(v) => {
            return Err(value_error(format!(
                "{origin}: seed must be a non-negative integer, but is {v}"
            )));
        }
        None => None,
    };
    let table = match value.remove("data") {
        Some(toml::Value::Table(mut t)) => {
            match t.remove("source") {
                Some(toml::Value::String(s)) if s == "generated" => {}
                other => {
                    return Err(value_error(format!(
                        "{origin}: [data] must have source = \"generated\" to be used as a \
                         generator, but has source = {}",
                        other.map_or("(none)".to_string(), |v| v.to_string())
                    )));
                }
            }
            t
        }
        Some(_) => return Err(value_error(format!("{origin}: data must be a table"))),
        None => {
            value.remove("seed");
            value
        }
    };
    Ok((src.parse_table(table)?, seed))
}
