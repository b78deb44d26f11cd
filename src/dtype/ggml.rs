//! The ggml type table: every tensor type id a GGUF file can name, with its block size
//! (elements per block) and bytes per block, so that any tensor — also one of a type that
//! ggml has since removed — can be sized from its dims alone.
//!
//! Sources (facts only): `ggml/include/ggml.h` (`enum ggml_type`) and the `type_traits`
//! table in `ggml/src/ggml.c` of ggml-org/llama.cpp; `GGML_QUANT_SIZES` and
//! `LlamaFileType` in gguf-py 0.19 `gguf/constants.py`. The removed types keep the sizes
//! they had when they were last written: Q4_2/Q4_3 (ids 4, 5; removed May 2023, before GGUF:
//! 16-element blocks of an f16 scale (+ f16 min for Q4_3) and 8 bytes of nibbles), the
//! repacked Q4_0_x_y (31–33) and IQ4_NL_x_y (36–38), removed from files in late 2024 (the
//! same bytes per 32 elements as Q4_0 / IQ4_NL).

/// Whether ggml still defines a type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Status {
    Current,
    /// The id was used once and removed from ggml; files that use it no longer load.
    Removed,
}

/// One row of the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct GgmlType {
    pub id: u32,
    pub name: &'static str,
    /// Elements per block.
    pub block_size: u64,
    /// Bytes per block.
    pub type_size: u64,
    pub status: Status,
}

/// `GGML_TYPE_COUNT` in ggml.h today: ids at or above it are unknown.
pub const GGML_TYPE_COUNT: u32 = 43;

const QK_K: u64 = 256;

use Status::{Current as C, Removed as R};

const fn t(id: u32, name: &'static str, block_size: u64, type_size: u64, status: Status) -> GgmlType {
    GgmlType {
        id,
        name,
        block_size,
        type_size,
        status,
    }
}

/// Ids 0..GGML_TYPE_COUNT, in id order (the index is the id).
pub const GGML_TYPES: [GgmlType; GGML_TYPE_COUNT as usize] = [
    t(0, "F32", 1, 4, C),
    t(1, "F16", 1, 2, C),
    t(2, "Q4_0", 32, 2 + 16, C),
    t(3, "Q4_1", 32, 2 + 2 + 16, C),
    t(4, "Q4_2", 16, 2 + 8, R),
    t(5, "Q4_3", 16, 2 + 2 + 8, R),
    t(6, "Q5_0", 32, 2 + 4 + 16, C),
    t(7, "Q5_1", 32, 2 + 2 + 4 + 16, C),
    t(8, "Q8_0", 32, 2 + 32, C),
    // block_q8_1 { ggml_half d; ggml_half s; int8_t qs[32]; } in today's ggml-common.h and
    // gguf-py 0.19 alike (36 bytes); older ggml stored d and s as f32 (40 bytes).
    t(9, "Q8_1", 32, 2 + 2 + 32, C),
    t(10, "Q2_K", QK_K, 2 + 2 + QK_K / 16 + QK_K / 4, C),
    t(11, "Q3_K", QK_K, 2 + QK_K / 4 + QK_K / 8 + 12, C),
    t(12, "Q4_K", QK_K, 2 + 2 + QK_K / 2 + 12, C),
    t(13, "Q5_K", QK_K, 2 + 2 + QK_K / 2 + QK_K / 8 + 12, C),
    t(14, "Q6_K", QK_K, 2 + QK_K / 2 + QK_K / 4 + QK_K / 16, C),
    t(15, "Q8_K", QK_K, 4 + QK_K + QK_K / 8, C),
    t(16, "IQ2_XXS", QK_K, 2 + QK_K / 4, C),
    t(17, "IQ2_XS", QK_K, 2 + QK_K / 4 + QK_K / 32, C),
    t(18, "IQ3_XXS", QK_K, 2 + QK_K / 4 + QK_K / 8, C),
    t(19, "IQ1_S", QK_K, 2 + QK_K / 8 + QK_K / 16, C),
    t(20, "IQ4_NL", 32, 2 + 16, C),
    t(21, "IQ3_S", QK_K, 2 + QK_K / 4 + QK_K / 8 + QK_K / 32 + 4, C),
    t(22, "IQ2_S", QK_K, 2 + QK_K / 4 + QK_K / 16, C),
    t(23, "IQ4_XS", QK_K, 2 + 2 + QK_K / 2 + QK_K / 64, C),
    t(24, "I8", 1, 1, C),
    t(25, "I16", 1, 2, C),
    t(26, "I32", 1, 4, C),
    t(27, "I64", 1, 8, C),
    t(28, "F64", 1, 8, C),
    t(29, "IQ1_M", QK_K, QK_K / 8 + QK_K / 16 + QK_K / 32, C),
    t(30, "BF16", 1, 2, C),
    t(31, "Q4_0_4_4", 32, 18, R),
    t(32, "Q4_0_4_8", 32, 18, R),
    t(33, "Q4_0_8_8", 32, 18, R),
    t(34, "TQ1_0", QK_K, 2 + 4 * 13, C),
    t(35, "TQ2_0", QK_K, 2 + 64, C),
    t(36, "IQ4_NL_4_4", 32, 18, R),
    t(37, "IQ4_NL_4_8", 32, 18, R),
    t(38, "IQ4_NL_8_8", 32, 18, R),
    t(39, "MXFP4", 32, 1 + 16, C),
    t(40, "NVFP4", 64, 4 + 32, C),
    t(41, "Q1_0", 128, 2 + 16, C),
    // Mainline ggml's 2-bit ternary type: block_q2_0 { ggml_half d; uint8_t qs[QK2_0/4]; },
    // QK2_0 = 64 → 2 + 16 bytes per 64 elements.
    t(42, "Q2_0", 64, 2 + 16, C),
];

impl GgmlType {
    /// The row for an id, or `None` for an unknown id.
    pub fn from_id(id: u32) -> Option<GgmlType> {
        usize::try_from(id).ok().and_then(|i| GGML_TYPES.get(i)).copied()
    }

    pub fn from_name(name: &str) -> Option<GgmlType> {
        GGML_TYPES.iter().find(|t| t.name == name).copied()
    }

    pub fn is_removed(self) -> bool {
        self.status == Status::Removed
    }

    /// Bytes of a row of `ne0` elements, `None` when `ne0` is not a whole number of
    /// blocks or the size overflows.
    pub fn row_bytes(self, ne0: u64) -> Option<u64> {
        if self.block_size == 0 || !ne0.is_multiple_of(self.block_size) {
            return None;
        }
        (ne0 / self.block_size).checked_mul(self.type_size)
    }

    /// Bytes of a tensor of `elements` elements (a whole number of blocks), `None` on a
    /// partial block or overflow.
    pub fn byte_size(self, elements: u64) -> Option<u64> {
        self.row_bytes(elements)
    }

    /// Bits per weight of the type (type_size * 8 / block_size).
    pub fn bits_per_weight(self) -> f64 {
        (self.type_size as f64) * 8.0 / (self.block_size.max(1) as f64)
    }
}

/// `general.file_type` values (`llama_ftype` in llama.h, `LlamaFileType` in gguf-py),
/// including the ids that were removed. 1024 is "guessed" (not stored in real files).
pub fn file_type_name(id: u64) -> Option<&'static str> {
    Some(match id {
        0 => "ALL_F32",
        1 => "MOSTLY_F16",
        2 => "MOSTLY_Q4_0",
        3 => "MOSTLY_Q4_1",
        4 => "MOSTLY_Q4_1_SOME_F16",
        5 => "MOSTLY_Q4_2 (removed)",
        6 => "MOSTLY_Q4_3 (removed)",
        7 => "MOSTLY_Q8_0",
        8 => "MOSTLY_Q5_0",
        9 => "MOSTLY_Q5_1",
        10 => "MOSTLY_Q2_K",
        11 => "MOSTLY_Q3_K_S",
        12 => "MOSTLY_Q3_K_M",
        13 => "MOSTLY_Q3_K_L",
        14 => "MOSTLY_Q4_K_S",
        15 => "MOSTLY_Q4_K_M",
        16 => "MOSTLY_Q5_K_S",
        17 => "MOSTLY_Q5_K_M",
        18 => "MOSTLY_Q6_K",
        19 => "MOSTLY_IQ2_XXS",
        20 => "MOSTLY_IQ2_XS",
        21 => "MOSTLY_Q2_K_S",
        22 => "MOSTLY_IQ3_XS",
        23 => "MOSTLY_IQ3_XXS",
        24 => "MOSTLY_IQ1_S",
        25 => "MOSTLY_IQ4_NL",
        26 => "MOSTLY_IQ3_S",
        27 => "MOSTLY_IQ3_M",
        28 => "MOSTLY_IQ2_S",
        29 => "MOSTLY_IQ2_M",
        30 => "MOSTLY_IQ4_XS",
        31 => "MOSTLY_IQ1_M",
        32 => "MOSTLY_BF16",
        33 => "MOSTLY_Q4_0_4_4 (removed)",
        34 => "MOSTLY_Q4_0_4_8 (removed)",
        35 => "MOSTLY_Q4_0_8_8 (removed)",
        36 => "MOSTLY_TQ1_0",
        37 => "MOSTLY_TQ2_0",
        38 => "MOSTLY_MXFP4_MOE",
        39 => "MOSTLY_NVFP4",
        40 => "MOSTLY_Q1_0",
        1024 => "GUESSED",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_indexed_by_id() {
        for (i, t) in GGML_TYPES.iter().enumerate() {
            assert_eq!(t.id as usize, i);
            assert!(t.block_size > 0 && t.type_size > 0);
            assert_eq!(GgmlType::from_name(t.name), Some(*t));
        }
        assert_eq!(GgmlType::from_id(42).map(|t| (t.name, t.block_size, t.type_size)), Some(("Q2_0", 64, 18)));
        assert_eq!(GgmlType::from_id(43), None);
        assert_eq!(GGML_TYPES.len(), 43, "ids 0–42");
        assert_eq!(GgmlType::from_id(u32::MAX), None);
        let removed: Vec<u32> = GGML_TYPES.iter().filter(|t| t.is_removed()).map(|t| t.id).collect();
        assert_eq!(removed, vec![4, 5, 31, 32, 33, 36, 37, 38]);
    }

    #[test]
    fn known_sizes() {
        // Values of GGML_QUANT_SIZES in gguf-py, spelled out.
        let q4k = GgmlType::from_name("Q4_K").unwrap();
        assert_eq!((q4k.block_size, q4k.type_size), (256, 144));
        assert_eq!(GgmlType::from_name("Q6_K").unwrap().type_size, 210);
        assert_eq!(GgmlType::from_name("Q8_0").unwrap().type_size, 34);
        assert_eq!(GgmlType::from_name("IQ1_M").unwrap().type_size, 56);
        assert_eq!(GgmlType::from_name("TQ1_0").unwrap().type_size, 54);
        assert_eq!(q4k.byte_size(3072 * 256), Some(3072 * 144));
        assert_eq!(q4k.byte_size(100), None);
        assert_eq!(GgmlType::from_name("F32").unwrap().byte_size(u64::MAX), None);
        assert_eq!(file_type_name(15), Some("MOSTLY_Q4_K_M"));
        assert_eq!(file_type_name(99), None);
    }
}
