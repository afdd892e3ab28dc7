//! (De)serializes a moment order k as a number or the string "inf" (JSON and TOML specs have no
//! portable infinity): `#[serde(with = "crate::k_serde")]`.

use serde::{Deserialize, Deserializer, Serializer, de::Error};

/// Writes a finite k as a number and k = inf as "inf".
pub fn serialize<S: Serializer>(k: &f64, s: S) -> Result<S::Ok, S::Error> {
    if k.is_infinite() {
        s.serialize_str("inf")
    } else {
        s.serialize_f64(*k)
    }
}

#[derive(Deserialize)]
#[serde(untagged)]
enum NumOrStr {
    Num(f64),
    Str(String),
}

/// Reads a number, "inf" or "infinity".
pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    match NumOrStr::deserialize(d)? {
        NumOrStr::Num(k) => Ok(k),
        NumOrStr::Str(s) if s == "inf" || s == "infinity" => Ok(f64::INFINITY),
        NumOrStr::Str(s) => Err(D::Error::custom(format!(
            "k must be a number or \"inf\", but is \"{s}\""
        ))),
    }
}
