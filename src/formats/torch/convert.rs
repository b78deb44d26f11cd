//! Conversion planning: the safetensors file a pickle-based checkpoint would become, as a
//! plan — the header bytes plus an ordered list of byte ranges of the input file. No
//! tensor byte is read or copied here; whoever applies the plan streams the ranges.
//!
//! The header is written as the safetensors writer (`safetensors/src/tensor.rs`,
//! `prepare`) writes it: `{"__metadata__":{"format":"pt"}, …}` as compact JSON, tensors
//! sorted by dtype (the writer's `Dtype` order, largest alignment first) then by name,
//! `data_offsets` packed in that order, the JSON padded with spaces to a multiple of 8.
//! Tensors sharing a storage are each written whole, once per tensor: safetensors has no
//! aliasing.

use super::{Inspection, Tensor};
use crate::error::{Code, Finding};
use crate::formats::pickle::Verdict;
use serde::Serialize;

/// The safetensors writer's `Dtype` enum order (`safetensors/src/tensor.rs`); the writer
/// sorts by it descending, then by name.
pub const WRITER_DTYPE_ORDER: [&str; 22] = [
    "BOOL",
    "F4",
    "F6_E2M3",
    "F6_E3M2",
    "U8",
    "I8",
    "F8_E5M2",
    "F8_E4M3",
    "F8_E8M0",
    "F8_E4M3FNUZ",
    "F8_E5M2FNUZ",
    "I16",
    "U16",
    "F16",
    "BF16",
    "I32",
    "U32",
    "F32",
    "C64",
    "F64",
    "I64",
    "U64",
];

/// One tensor of the output.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Piece {
    pub name: String,
    /// Absolute offset in the input file.
    pub src_start: u64,
    pub len: u64,
    /// Offset in the output file.
    pub dst_start: u64,
}

/// The plan.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    /// The first bytes of the output: the u64 header length N, then N bytes of JSON.
    pub header: Vec<u8>,
    /// The tensors' bytes, in output order, right after the header.
    pub pieces: Vec<Piece>,
    /// Total output length.
    pub len: u64,
    /// Tensors left out, one finding each.
    pub refused: Vec<Finding>,
}

#[derive(Serialize)]
struct Info<'a> {
    dtype: &'a str,
    shape: &'a [u64],
    data_offsets: [u64; 2],
}

fn rank(dtype: &str) -> usize {
    WRITER_DTYPE_ORDER
        .iter()
        .position(|d| *d == dtype)
        .unwrap_or(0)
}

/// Plans the conversion. Refuses the whole file when it is dangerous or unreadable;
/// otherwise leaves out (with a finding) every tensor that cannot be written as is: not
/// contiguous, a dtype without a safetensors name, or without a known byte range.
pub fn plan(i: &Inspection) -> Result<Plan, Finding> {
    if matches!(i.safety.verdict, Verdict::Dangerous | Verdict::Error) {
        return Err(Finding::error(
            Code::NotConvertible,
            format!(
                "the file is {}: it is not converted",
                i.safety.verdict.name()
            ),
        ));
    }
    let mut refused = Vec::new();
    let mut keep: Vec<(&Tensor, u64, u64)> = Vec::new();
    for t in &i.tensors {
        let why = if !t.contiguous {
            Some("not contiguous (a strided view): write a contiguous copy first".to_string())
        } else if !t.dtype_known {
            Some(super::inventory::no_safetensors_dtype(&t.dtype))
        } else {
            None
        };
        let range = t.start.zip(t.end).filter(|(s, e)| e >= s);
        match (why, range) {
            (None, Some((s, e))) => keep.push((t, s, e - s)),
            (why, _) => refused.push(
                Finding::warning(
                    Code::NotConvertible,
                    why.unwrap_or_else(|| "its bytes are not located in the file".into()),
                )
                .at_opt(t.start)
                .tensor(t.name.clone()),
            ),
        }
    }
    keep.sort_by(|(a, ..), (b, ..)| {
        rank(&b.dtype)
            .cmp(&rank(&a.dtype))
            .then_with(|| a.name.cmp(&b.name))
    });
    let mut map = serde_json::Map::new();
    let mut meta = serde_json::Map::new();
    meta.insert("format".into(), serde_json::Value::String("pt".into()));
    map.insert("__metadata__".into(), serde_json::Value::Object(meta));
    let mut pieces = Vec::with_capacity(keep.len());
    let mut off = 0u64;
    for (t, s, len) in &keep {
        let end = off
            .checked_add(*len)
            .ok_or_else(|| Finding::error(Code::ShapeOverflow, "output size overflows u64"))?;
        let info = Info {
            dtype: &t.dtype,
            shape: &t.shape,
            data_offsets: [off, end],
        };
        let v = serde_json::to_value(&info)
            .map_err(|e| Finding::error(Code::NotConvertible, e.to_string()))?;
        map.insert(t.name.clone(), v);
        pieces.push(Piece {
            name: t.name.clone(),
            src_start: *s,
            len: *len,
            dst_start: off,
        });
        off = end;
    }
    let mut json = serde_json::to_vec(&serde_json::Value::Object(map))
        .map_err(|e| Finding::error(Code::NotConvertible, e.to_string()))?;
    while json.len() % 8 != 0 {
        json.push(b' ');
    }
    let n = json.len() as u64;
    let mut header = n.to_le_bytes().to_vec();
    header.extend_from_slice(&json);
    let head_len = header.len() as u64;
    for p in &mut pieces {
        p.dst_start += head_len;
    }
    Ok(Plan {
        header,
        len: head_len.saturating_add(off),
        pieces,
        refused,
    })
}

impl Plan {
    /// Applies the plan to an in-memory input (tests, small files).
    pub fn apply(&self, input: &[u8]) -> Option<Vec<u8>> {
        // never more than the input can fill, whatever the plan says
        let cap = self.len.min((input.len() as u64).saturating_add(self.header.len() as u64));
        let mut out = Vec::with_capacity(usize::try_from(cap).ok()?);
        out.extend_from_slice(&self.header);
        for p in &self.pieces {
            let s = usize::try_from(p.src_start).ok()?;
            let e = s.checked_add(usize::try_from(p.len).ok()?)?;
            out.extend_from_slice(input.get(s..e)?);
        }
        Some(out)
    }
}
