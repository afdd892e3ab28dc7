//! The `--json` line of every command. JSON has no infinity or NaN, and serde_json writes them
//! as `null`, which reads back as "missing". Here a non-finite float is written as the string
//! "inf", "-inf" or "nan" (the convention of `k_serde` for k = inf), so that every line is valid
//! JSON and no number silently turns into a null. Everything else is serde_json's output.

use serde::ser::{self, Serialize, Serializer};

/// `v` as one line of JSON, non-finite floats as "inf" / "-inf" / "nan".
pub fn to_string<T: Serialize + ?Sized>(v: &T) -> serde_json::Result<String> {
    let mut buf = Vec::new();
    Wrap(v).serialize(&mut serde_json::Serializer::new(&mut buf))?;
    // serde_json writes only valid UTF-8.
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

/// The string written for a non-finite float.
fn non_finite(x: f64) -> &'static str {
    if x.is_nan() {
        "nan"
    } else if x > 0.0 {
        "inf"
    } else {
        "-inf"
    }
}

/// Serializes the wrapped value through [`Adapter`].
struct Wrap<'a, T: ?Sized>(&'a T);

impl<T: Serialize + ?Sized> Serialize for Wrap<'_, T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(Adapter(s))
    }
}

/// A serializer that forwards everything to `S`, except non-finite floats (as strings); its
/// compound serializers wrap every element, so nested floats are caught too.
struct Adapter<S>(S);

/// A compound serializer of `S` whose elements go through [`Wrap`].
struct Compound<C>(C);

macro_rules! forward {
    ($($name:ident($t:ty)),* $(,)?) => {
        $(fn $name(self, v: $t) -> Result<S::Ok, S::Error> { self.0.$name(v) })*
    };
}

impl<S: Serializer> Serializer for Adapter<S> {
    type Ok = S::Ok;
    type Error = S::Error;
    type SerializeSeq = Compound<S::SerializeSeq>;
    type SerializeTuple = Compound<S::SerializeTuple>;
    type SerializeTupleStruct = Compound<S::SerializeTupleStruct>;
    type SerializeTupleVariant = Compound<S::SerializeTupleVariant>;
    type SerializeMap = Compound<S::SerializeMap>;
    type SerializeStruct = Compound<S::SerializeStruct>;
    type SerializeStructVariant = Compound<S::SerializeStructVariant>;

    forward!(
        serialize_bool(bool),
        serialize_i8(i8),
        serialize_i16(i16),
        serialize_i32(i32),
        serialize_i64(i64),
        serialize_i128(i128),
        serialize_u8(u8),
        serialize_u16(u16),
        serialize_u32(u32),
        serialize_u64(u64),
        serialize_u128(u128),
        serialize_char(char),
        serialize_str(&str),
        serialize_bytes(&[u8]),
        serialize_unit_struct(&'static str),
    );

    fn serialize_f32(self, v: f32) -> Result<S::Ok, S::Error> {
        self.serialize_f64(f64::from(v))
    }
    fn serialize_f64(self, v: f64) -> Result<S::Ok, S::Error> {
        if v.is_finite() {
            self.0.serialize_f64(v)
        } else {
            self.0.serialize_str(non_finite(v))
        }
    }
    fn serialize_none(self) -> Result<S::Ok, S::Error> {
        self.0.serialize_none()
    }
    fn serialize_some<T: Serialize + ?Sized>(self, v: &T) -> Result<S::Ok, S::Error> {
        self.0.serialize_some(&Wrap(v))
    }
    fn serialize_unit(self) -> Result<S::Ok, S::Error> {
        self.0.serialize_unit()
    }
    fn serialize_unit_variant(
        self,
        name: &'static str,
        index: u32,
        variant: &'static str,
    ) -> Result<S::Ok, S::Error> {
        self.0.serialize_unit_variant(name, index, variant)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        name: &'static str,
        v: &T,
    ) -> Result<S::Ok, S::Error> {
        self.0.serialize_newtype_struct(name, &Wrap(v))
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        name: &'static str,
        index: u32,
        variant: &'static str,
        v: &T,
    ) -> Result<S::Ok, S::Error> {
        self.0
            .serialize_newtype_variant(name, index, variant, &Wrap(v))
    }
    fn serialize_seq(self, len: Option<usize>) -> Result<Self::SerializeSeq, S::Error> {
        self.0.serialize_seq(len).map(Compound)
    }
    fn serialize_tuple(self, len: usize) -> Result<Self::SerializeTuple, S::Error> {
        self.0.serialize_tuple(len).map(Compound)
    }
    fn serialize_tuple_struct(
        self,
        name: &'static str,
        len: usize,
    ) -> Result<Self::SerializeTupleStruct, S::Error> {
        self.0.serialize_tuple_struct(name, len).map(Compound)
    }
    fn serialize_tuple_variant(
        self,
        name: &'static str,
        index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Self::SerializeTupleVariant, S::Error> {
        self.0
            .serialize_tuple_variant(name, index, variant, len)
            .map(Compound)
    }
    fn serialize_map(self, len: Option<usize>) -> Result<Self::SerializeMap, S::Error> {
        self.0.serialize_map(len).map(Compound)
    }
    fn serialize_struct(
        self,
        name: &'static str,
        len: usize,
    ) -> Result<Self::SerializeStruct, S::Error> {
        self.0.serialize_struct(name, len).map(Compound)
    }
    fn serialize_struct_variant(
        self,
        name: &'static str,
        index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Self::SerializeStructVariant, S::Error> {
        self.0
            .serialize_struct_variant(name, index, variant, len)
            .map(Compound)
    }
}

macro_rules! compound {
    ($tr:ident, $elem:ident $(, $key:ident)?) => {
        impl<C: ser::$tr> ser::$tr for Compound<C> {
            type Ok = C::Ok;
            type Error = C::Error;
            fn $elem<T: Serialize + ?Sized>(&mut self, $($key: &'static str,)? v: &T) -> Result<(), C::Error> {
                self.0.$elem($($key,)? &Wrap(v))
            }
            fn end(self) -> Result<C::Ok, C::Error> {
                self.0.end()
            }
        }
    };
}

compound!(SerializeSeq, serialize_element);
compound!(SerializeTuple, serialize_element);
compound!(SerializeTupleStruct, serialize_field);
compound!(SerializeTupleVariant, serialize_field);
compound!(SerializeStruct, serialize_field, key);
compound!(SerializeStructVariant, serialize_field, key);

impl<C: ser::SerializeMap> ser::SerializeMap for Compound<C> {
    type Ok = C::Ok;
    type Error = C::Error;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, k: &T) -> Result<(), C::Error> {
        self.0.serialize_key(&Wrap(k))
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), C::Error> {
        self.0.serialize_value(&Wrap(v))
    }
    fn end(self) -> Result<C::Ok, C::Error> {
        self.0.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Serialize)]
    struct Out {
        a: f64,
        b: Vec<f64>,
        c: Option<f64>,
        d: std::collections::BTreeMap<String, f32>,
    }

    #[test]
    fn non_finite_floats_are_strings_at_any_depth() {
        let out = Out {
            a: f64::INFINITY,
            b: vec![1.5, f64::NEG_INFINITY, f64::NAN],
            c: None,
            d: [("x".to_string(), f32::INFINITY)].into_iter().collect(),
        };
        let s = to_string(&out).unwrap();
        assert_eq!(
            s,
            r#"{"a":"inf","b":[1.5,"-inf","nan"],"c":null,"d":{"x":"inf"}}"#
        );
        // Finite values are exactly serde_json's.
        let finite = [0.1, 1e300, -2.5e-300];
        assert_eq!(
            to_string(&finite).unwrap(),
            serde_json::to_string(&finite).unwrap()
        );
        let v = serde_json::json!({"e": 2.5, "f": [1, 2]});
        assert_eq!(to_string(&v).unwrap(), serde_json::to_string(&v).unwrap());
    }
}
