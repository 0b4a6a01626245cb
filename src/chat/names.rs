//! The name serde gives a unit variant, so a type's `as_str` reads the one spelling its
//! `#[serde(rename…)]` defines instead of repeating it by hand. Only unit variants have one.

use std::fmt;

use serde::Serialize;
use serde::ser::{self, Impossible, Serializer};

/// The serde name of `value`, a unit variant (`"timed_out"` for `SubagentStatus::TimedOut`);
/// `""` for anything else, which no caller passes.
pub(crate) fn serde_name<T: Serialize>(value: &T) -> &'static str {
    value.serialize(VariantName).unwrap_or_default()
}

/// A serializer that only accepts a unit variant and answers with its name.
struct VariantName;

#[derive(Debug)]
struct NotUnitVariant;

impl fmt::Display for NotUnitVariant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("not a unit variant")
    }
}

impl std::error::Error for NotUnitVariant {}

impl ser::Error for NotUnitVariant {
    fn custom<M: fmt::Display>(_: M) -> Self {
        NotUnitVariant
    }
}

/// Methods that refuse their value.
macro_rules! refuse {
    ($($method:ident($($arg:ty),*) -> $ok:ty;)*) => {
        $(fn $method(self, $(_: $arg),*) -> Result<$ok, NotUnitVariant> {
            Err(NotUnitVariant)
        })*
    };
}

type No = Impossible<&'static str, NotUnitVariant>;

impl Serializer for VariantName {
    type Ok = &'static str;
    type Error = NotUnitVariant;
    type SerializeSeq = No;
    type SerializeTuple = No;
    type SerializeTupleStruct = No;
    type SerializeTupleVariant = No;
    type SerializeMap = No;
    type SerializeStruct = No;
    type SerializeStructVariant = No;

    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
    ) -> Result<&'static str, NotUnitVariant> {
        Ok(variant)
    }

    refuse! {
        serialize_bool(bool) -> &'static str;
        serialize_i8(i8) -> &'static str;
        serialize_i16(i16) -> &'static str;
        serialize_i32(i32) -> &'static str;
        serialize_i64(i64) -> &'static str;
        serialize_u8(u8) -> &'static str;
        serialize_u16(u16) -> &'static str;
        serialize_u32(u32) -> &'static str;
        serialize_u64(u64) -> &'static str;
        serialize_f32(f32) -> &'static str;
        serialize_f64(f64) -> &'static str;
        serialize_char(char) -> &'static str;
        serialize_str(&str) -> &'static str;
        serialize_bytes(&[u8]) -> &'static str;
        serialize_none() -> &'static str;
        serialize_unit() -> &'static str;
        serialize_unit_struct(&'static str) -> &'static str;
        serialize_seq(Option<usize>) -> No;
        serialize_tuple(usize) -> No;
        serialize_tuple_struct(&'static str, usize) -> No;
        serialize_tuple_variant(&'static str, u32, &'static str, usize) -> No;
        serialize_map(Option<usize>) -> No;
        serialize_struct(&'static str, usize) -> No;
        serialize_struct_variant(&'static str, u32, &'static str, usize) -> No;
    }

    fn serialize_some<T: ?Sized + Serialize>(self, _: &T) -> Result<&'static str, NotUnitVariant> {
        Err(NotUnitVariant)
    }

    fn serialize_newtype_struct<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        _: &T,
    ) -> Result<&'static str, NotUnitVariant> {
        Err(NotUnitVariant)
    }

    fn serialize_newtype_variant<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<&'static str, NotUnitVariant> {
        Err(NotUnitVariant)
    }
}
