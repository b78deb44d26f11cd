//! Element types: the safetensors dtypes (this file) and the ggml type table (`ggml`).
//! `decode` turns stored bytes into values; `quant` and `iquant` dequantize ggml block types
//! (`grids`: ggml's i-quant lookup tables).

pub mod decode;
pub mod grids;
pub mod iquant;
pub mod quant;

pub mod ggml;

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
    fn sub_byte_sizes() {
        assert_eq!(Dtype::F4.byte_size(2), Some(1));
        assert_eq!(Dtype::F4.byte_size(3), None);
        assert_eq!(Dtype::F6E2m3.byte_size(4), Some(3));
        assert_eq!(Dtype::F6E3m2.byte_size(5), None);
        assert_eq!(Dtype::F64.byte_size(u64::MAX), None);
        assert_eq!(Dtype::Bf16.byte_size(3_212_749_824), Some(6_425_499_648));
    }
}
