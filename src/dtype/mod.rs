//! Element types: the safetensors dtypes (this file) and the ggml type table (`ggml`).
//! `decode` turns stored bytes into values; `quant` and `iquant` dequantize ggml block types
//! (`grids`: ggml's i-quant lookup tables); `quantize` goes the other way for the types a
//! converter writes deterministically.

mod block;
pub mod decode;
pub mod grids;
pub mod iquant;
pub mod quant;

pub mod ggml;

pub mod quantize;

use ggml::GgmlType;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::borrow::Cow;

/// The type decoded values are written as: f32 where every value of the element type is
/// an f32 ([`decode::Codec::exact_in_f32`]: F32, F16, BF16, the F8/F6/F4 types, the small
/// integers, every ggml block type — ggml dequantizes in f32), f64 otherwise (F64, the
/// 32/64-bit integers, C64 magnitudes). Statistics widen each value to f64 before any
/// arithmetic, so both give the same results; f32 halves the memory traffic.
pub trait Value: Copy + 'static {
    /// Whether sums of these values need compensation: f64 values can differ by 2^2000,
    /// f32 values widened to f64 sum with an error far below their own precision.
    const COMPENSATE: bool;
    fn from_f32(v: f32) -> Self;
    /// The values as f32, when they are.
    fn as_f32(values: &[Self]) -> Option<&[f32]>;
    /// Rounds to the nearest f32 for f32 (exact for the values of the f32-exact types).
    fn from_f64(v: f64) -> Self;
    fn wide(self) -> f64;
}

impl Value for f32 {
    const COMPENSATE: bool = false;
    #[inline(always)]
    fn as_f32(values: &[Self]) -> Option<&[f32]> {
        Some(values)
    }
    #[inline(always)]
    fn from_f32(v: f32) -> Self {
        v
    }
    #[inline(always)]
    fn from_f64(v: f64) -> Self {
        v as f32
    }
    #[inline(always)]
    fn wide(self) -> f64 {
        f64::from(self)
    }
}

impl Value for f64 {
    const COMPENSATE: bool = true;
    #[inline(always)]
    fn as_f32(_: &[Self]) -> Option<&[f32]> {
        None
    }
    #[inline(always)]
    fn from_f32(v: f32) -> Self {
        f64::from(v)
    }
    #[inline(always)]
    fn from_f64(v: f64) -> Self {
        v
    }
    #[inline(always)]
    fn wide(self) -> f64 {
        self
    }
}

/// A tensor's element type, typed: a safetensors dtype (also what PyTorch files are
/// described in), a ggml type id (GGUF; unknown ids are kept so that they can be named), or
/// a name no format defines (kept as read, for the finding and the table).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TensorDtype {
    Safetensors(Dtype),
    Ggml(u32),
    Unknown(String),
}

impl TensorDtype {
    /// The name the file uses: `BF16`, `Q4_K`, `type 99` for an unknown ggml id.
    pub fn name(&self) -> Cow<'_, str> {
        match self {
            TensorDtype::Safetensors(d) => Cow::Borrowed(d.name()),
            TensorDtype::Ggml(id) => match GgmlType::from_id(*id) {
                Some(t) => Cow::Borrowed(t.name),
                None => Cow::Owned(format!("type {id}")),
            },
            TensorDtype::Unknown(s) => Cow::Borrowed(s.as_str()),
        }
    }

    /// The ggml type row (GGUF tensors of a known id, also removed ids).
    pub fn ggml(&self) -> Option<GgmlType> {
        match self {
            TensorDtype::Ggml(id) => GgmlType::from_id(*id),
            _ => None,
        }
    }

    /// Reads a name back: safetensors names first, then ggml names and `type N`. The two
    /// families share F16, BF16, F32, F64 and I8–I64, which decode the same either way.
    pub fn from_name(name: &str) -> TensorDtype {
        if let Some(d) = Dtype::from_name(name) {
            return TensorDtype::Safetensors(d);
        }
        if let Some(t) = GgmlType::from_name(name) {
            return TensorDtype::Ggml(t.id);
        }
        match name.strip_prefix("type ").and_then(|n| n.parse::<u32>().ok()) {
            Some(id) => TensorDtype::Ggml(id),
            None => TensorDtype::Unknown(name.to_string()),
        }
    }
}

impl std::fmt::Display for TensorDtype {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(&self.name())
    }
}

/// The lossless form of a [`TensorDtype`], for binary transport (the page's worker).
#[derive(Serialize, Deserialize)]
enum DtypeRepr {
    Safetensors(String),
    Ggml(u32),
    Unknown(String),
}

/// In the report (JSON, human-readable) a dtype is its name (docs/report.md); in a binary
/// encoding it keeps its family, so a GGUF `BF16` stays a ggml type.
impl Serialize for TensorDtype {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if s.is_human_readable() {
            return s.serialize_str(&self.name());
        }
        match self {
            TensorDtype::Safetensors(d) => DtypeRepr::Safetensors(d.name().to_string()),
            TensorDtype::Ggml(id) => DtypeRepr::Ggml(*id),
            TensorDtype::Unknown(n) => DtypeRepr::Unknown(n.clone()),
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for TensorDtype {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        if d.is_human_readable() {
            let name = Cow::<str>::deserialize(d)?;
            return Ok(TensorDtype::from_name(&name));
        }
        Ok(match DtypeRepr::deserialize(d)? {
            DtypeRepr::Safetensors(n) => Dtype::from_name(&n).map_or(TensorDtype::Unknown(n), TensorDtype::Safetensors),
            DtypeRepr::Ggml(id) => TensorDtype::Ggml(id),
            DtypeRepr::Unknown(n) => TensorDtype::Unknown(n),
        })
    }
}

/// A safetensors dtype, as named in the header. Sizes are in bits so that the sub-byte
/// types (F4, F6_*) are exact.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Dtype {
    Bool,
    U8,
    I8,
    I16,
    U16,
    F16,
    Bf16,
    I32,
    U32,
    F32,
    F64,
    I64,
    U64,
    C64,
    F8E5m2,
    F8E4m3,
    F8E8m0,
    F8E4m3Fnuz,
    F8E5m2Fnuz,
    F4,
    F6E2m3,
    F6E3m2,
}

/// (dtype, header name, bits per element). The names and sizes are those of the
/// safetensors format (`safetensors/src/tensor.rs`, `Dtype`).
const DTYPES: &[(Dtype, &str, u64)] = &[
    (Dtype::Bool, "BOOL", 8),
    (Dtype::U8, "U8", 8),
    (Dtype::I8, "I8", 8),
    (Dtype::I16, "I16", 16),
    (Dtype::U16, "U16", 16),
    (Dtype::F16, "F16", 16),
    (Dtype::Bf16, "BF16", 16),
    (Dtype::I32, "I32", 32),
    (Dtype::U32, "U32", 32),
    (Dtype::F32, "F32", 32),
    (Dtype::F64, "F64", 64),
    (Dtype::I64, "I64", 64),
    (Dtype::U64, "U64", 64),
    (Dtype::C64, "C64", 64),
    (Dtype::F8E5m2, "F8_E5M2", 8),
    (Dtype::F8E4m3, "F8_E4M3", 8),
    (Dtype::F8E8m0, "F8_E8M0", 8),
    (Dtype::F8E4m3Fnuz, "F8_E4M3FNUZ", 8),
    (Dtype::F8E5m2Fnuz, "F8_E5M2FNUZ", 8),
    (Dtype::F4, "F4", 4),
    (Dtype::F6E2m3, "F6_E2M3", 6),
    (Dtype::F6E3m2, "F6_E3M2", 6),
];

impl Dtype {
    /// Every dtype, in the order of the format's enum.
    pub fn all() -> impl Iterator<Item = Dtype> {
        DTYPES.iter().map(|(d, _, _)| *d)
    }

    /// Looks a header dtype name up (case-sensitive, as the reference reader does).
    pub fn from_name(name: &str) -> Option<Dtype> {
        DTYPES.iter().find(|(_, n, _)| *n == name).map(|(d, _, _)| *d)
    }

    pub fn name(self) -> &'static str {
        DTYPES
            .iter()
            .find(|(d, _, _)| *d == self)
            .map_or("?", |(_, n, _)| n)
    }

    pub fn bits(self) -> u64 {
        DTYPES
            .iter()
            .find(|(d, _, _)| *d == self)
            .map_or(8, |(_, _, b)| *b)
    }

    /// Byte size of `elements` elements, or `None` when the bit count overflows u64 or is
    /// not a whole number of bytes (sub-byte types).
    pub fn byte_size(self, elements: u64) -> Option<u64> {
        let bits = elements.checked_mul(self.bits())?;
        if bits % 8 == 0 {
            Some(bits / 8)
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for d in Dtype::all() {
            assert_eq!(Dtype::from_name(d.name()), Some(d));
        }
        assert_eq!(Dtype::all().count(), 22);
        assert_eq!(Dtype::from_name("bf16"), None);
    }

    #[test]
    fn tensor_dtype_names() {
        assert_eq!(TensorDtype::Safetensors(Dtype::Bf16).name(), "BF16");
        assert_eq!(TensorDtype::Ggml(12).name(), "Q4_K");
        assert_eq!(TensorDtype::Ggml(99).name(), "type 99");
        assert_eq!(TensorDtype::from_name("type 99"), TensorDtype::Ggml(99));
        assert_eq!(TensorDtype::from_name("Q4_K"), TensorDtype::Ggml(12));
        assert_eq!(TensorDtype::from_name("F8_E4M3"), TensorDtype::Safetensors(Dtype::F8E4m3));
        assert_eq!(TensorDtype::from_name("F128"), TensorDtype::Unknown("F128".into()));
        let json = serde_json::to_string(&TensorDtype::Ggml(12)).unwrap();
        assert_eq!(json, "\"Q4_K\"");
        assert_eq!(serde_json::from_str::<TensorDtype>(&json).unwrap(), TensorDtype::Ggml(12));
    }

    #[test]
    fn sub_byte_sizes() {
        assert_eq!(Dtype::F4.byte_size(2), Some(1));
        assert_eq!(Dtype::F4.byte_size(3), None);
        assert_eq!(Dtype::F6E2m3.byte_size(4), Some(3));
        assert_eq!(Dtype::F6E3m2.byte_size(5), None);
        assert_eq!(Dtype::F64.byte_size(u64::MAX), None);
        assert_eq!(Dtype::Bf16.byte_size(3_212_749_824), Some(6_425_499_648));
    }
}
