//! The GGUF metadata value model: the 13 value types and a value as read (arrays keep a
//! head of their elements and their full length). Serialized as it is (lossless, for the
//! page's worker); the report's JSON form of a value is [`ValueJson`].

use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Deserialize, Serialize, Serializer};

/// The 13 metadata value types (spec `gguf_metadata_value_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ValueType {
    U8,
    I8,
    U16,
    I16,
    U32,
    I32,
    F32,
    Bool,
    String,
    Array,
    U64,
    I64,
    F64,
}

impl ValueType {
    pub fn from_id(id: u32) -> Option<ValueType> {
        use ValueType::*;
        Some(match id {
            0 => U8,
            1 => I8,
            2 => U16,
            3 => I16,
            4 => U32,
            5 => I32,
            6 => F32,
            7 => Bool,
            8 => String,
            9 => Array,
            10 => U64,
            11 => I64,
            12 => F64,
            _ => return None,
        })
    }

    pub fn id(self) -> u32 {
        use ValueType::*;
        match self {
            U8 => 0,
            I8 => 1,
            U16 => 2,
            I16 => 3,
            U32 => 4,
            I32 => 5,
            F32 => 6,
            Bool => 7,
            String => 8,
            Array => 9,
            U64 => 10,
            I64 => 11,
            F64 => 12,
        }
    }

    pub fn name(self) -> &'static str {
        use ValueType::*;
        match self {
            U8 => "U8",
            I8 => "I8",
            U16 => "U16",
            I16 => "I16",
            U32 => "U32",
            I32 => "I32",
            F32 => "F32",
            Bool => "BOOL",
            String => "STRING",
            Array => "ARRAY",
            U64 => "U64",
            I64 => "I64",
            F64 => "F64",
        }
    }

    /// Size of a fixed-size value, `None` for strings and arrays.
    pub fn fixed_size(self) -> Option<u64> {
        use ValueType::*;
        match self {
            U8 | I8 | Bool => Some(1),
            U16 | I16 => Some(2),
            U32 | I32 | F32 => Some(4),
            U64 | I64 | F64 => Some(8),
            String | Array => None,
        }
    }

    /// The fewest bytes one value of this type can take (for checking counts).
    pub(super) fn min_size(self, v1: bool) -> u64 {
        let len = if v1 { 4 } else { 8 };
        match self {
            ValueType::String => len,
            ValueType::Array => 4 + len,
            t => t.fixed_size().unwrap_or(1),
        }
    }
}

/// A metadata value. Arrays keep a head of their elements and their full length.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Value {
    U8(u8),
    I8(i8),
    U16(u16),
    I16(i16),
    U32(u32),
    I32(i32),
    F32(f32),
    /// A BOOL byte: 0 or 1 are true booleans; anything else is kept raw (and a finding).
    Bool(u8),
    String(String),
    Array(Array),
    U64(u64),
    I64(i64),
    F64(f64),
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Array {
    pub elem_type: ValueType,
    pub len: u64,
    /// The first elements (all of them when `head.len() == len`).
    pub head: Vec<Value>,
}

impl Value {
    pub fn value_type(&self) -> ValueType {
        match self {
            Value::U8(_) => ValueType::U8,
            Value::I8(_) => ValueType::I8,
            Value::U16(_) => ValueType::U16,
            Value::I16(_) => ValueType::I16,
            Value::U32(_) => ValueType::U32,
            Value::I32(_) => ValueType::I32,
            Value::F32(_) => ValueType::F32,
            Value::Bool(_) => ValueType::Bool,
            Value::String(_) => ValueType::String,
            Value::Array(_) => ValueType::Array,
            Value::U64(_) => ValueType::U64,
            Value::I64(_) => ValueType::I64,
            Value::F64(_) => ValueType::F64,
        }
    }

    /// An integer value (any width, non-negative) as u64.
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            Value::U8(v) => Some(u64::from(v)),
            Value::U16(v) => Some(u64::from(v)),
            Value::U32(v) => Some(u64::from(v)),
            Value::U64(v) => Some(v),
            Value::I8(v) => u64::try_from(v).ok(),
            Value::I16(v) => u64::try_from(v).ok(),
            Value::I32(v) => u64::try_from(v).ok(),
            Value::I64(v) => u64::try_from(v).ok(),
            _ => None,
        }
    }

    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            Value::F32(v) => Some(f64::from(v)),
            Value::F64(v) => Some(v),
            _ => self.as_u64().map(|v| v as f64),
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    /// Short display text (strings quoted; arrays as `[TYPE; len]`).
    pub fn display(&self) -> String {
        match self {
            Value::String(s) => format!("{s:?}"),
            Value::Array(a) => format!("[{}; {}]", a.elem_type.name(), a.len),
            Value::Bool(0) => "false".into(),
            Value::Bool(1) => "true".into(),
            Value::Bool(v) => v.to_string(),
            Value::U8(v) => v.to_string(),
            Value::I8(v) => v.to_string(),
            Value::U16(v) => v.to_string(),
            Value::I16(v) => v.to_string(),
            Value::U32(v) => v.to_string(),
            Value::I32(v) => v.to_string(),
            Value::U64(v) => v.to_string(),
            Value::I64(v) => v.to_string(),
            Value::F32(v) => v.to_string(),
            Value::F64(v) => v.to_string(),
        }
    }
}

/// A value in the report's JSON: scalars as JSON scalars (a BOOL byte other than 0/1 as its
/// number); an array whole when all of it was kept, otherwise `{"type", "len", "head"}`.
pub struct ValueJson<'a>(pub &'a Value);

impl Serialize for ValueJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Value::U8(v) => s.serialize_u8(*v),
            Value::I8(v) => s.serialize_i8(*v),
            Value::U16(v) => s.serialize_u16(*v),
            Value::I16(v) => s.serialize_i16(*v),
            Value::U32(v) => s.serialize_u32(*v),
            Value::I32(v) => s.serialize_i32(*v),
            Value::F32(v) => s.serialize_f32(*v),
            Value::Bool(0) => s.serialize_bool(false),
            Value::Bool(1) => s.serialize_bool(true),
            Value::Bool(v) => s.serialize_u8(*v),
            Value::String(v) => s.serialize_str(v),
            Value::U64(v) => s.serialize_u64(*v),
            Value::I64(v) => s.serialize_i64(*v),
            Value::F64(v) => s.serialize_f64(*v),
            Value::Array(a) if a.head.len() as u64 == a.len => {
                let mut seq = s.serialize_seq(Some(a.head.len()))?;
                for e in &a.head {
                    seq.serialize_element(&ValueJson(e))?;
                }
                seq.end()
            }
            Value::Array(a) => {
                let mut m = s.serialize_map(Some(3))?;
                m.serialize_entry("type", a.elem_type.name())?;
                m.serialize_entry("len", &a.len)?;
                m.serialize_entry("head", &a.head.iter().map(ValueJson).collect::<Vec<_>>())?;
                m.end()
            }
        }
    }
}
