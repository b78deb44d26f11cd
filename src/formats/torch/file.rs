//! A pickle-based file as the rest of the crate sees it: the reader's [`Inspection`] (safety
//! verdict, inventory with strides and storages) plus its tensors in the shared vocabulary
//! ([`TensorEntry`], typed dtype, absolute offsets), so that the summary, the tables, the
//! totals, the values and the report treat it like any other model file.

use super::{Container, Inspection, Tensor};
use crate::dtype::{Dtype, TensorDtype};
use crate::vocab::{Format, TensorEntry};
use serde::{Deserialize, Serialize};

/// One pickle-based file, read.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TorchFile {
    /// What the reader found (its tensors are in the same order as `entries`).
    pub inspection: Inspection,
    /// The tensors as vocabulary entries: `start`/`end` absolute (the data section starts at
    /// byte 0), `abs_start = start`.
    #[serde(deserialize_with = "crate::formats::tensor_list::deserialize")]
    pub entries: Vec<TensorEntry>,
    /// Bytes of the file that tensors occupy, each byte once (tensors sharing a storage,
    /// overlapping views): the file's real tensor data, where `Totals::bytes` counts every
    /// tensor whole.
    pub data_bytes: u64,
}

impl TorchFile {
    /// Wraps an inspection of the file `file_name`. A file that is one unnamed tensor
    /// (`torch.save(tensor)`, an `.npy`) gets the file's name without its extension, so
    /// that it can be selected, reported and converted.
    pub fn new(mut inspection: Inspection, file_name: &str) -> TorchFile {
        if let [only] = inspection.tensors.as_mut_slice() {
            if only.name.is_empty() {
                only.name = stem(file_name).to_string();
            }
        }
        let entries: Vec<TensorEntry> = inspection.tensors.iter().map(entry).collect();
        let data_bytes = union_len(
            entries
                .iter()
                .filter_map(|e| Some((e.abs_start?, e.abs_start?.checked_add(e.bytes?)?))),
        );
        TorchFile {
            inspection,
            entries,
            data_bytes,
        }
    }

    /// The report's `files[].format`.
    pub fn format(&self) -> Format {
        match self.inspection.format {
            Container::PytorchZip => Format::PytorchZip,
            Container::PytorchLegacy => Format::PytorchLegacy,
            Container::Pickle => Format::Pickle,
            Container::Npy => Format::Npy,
            Container::Npz => Format::Npz,
            Container::Unknown => Format::Unknown,
        }
    }

    /// The reader's view of tensor `index` (stride, storage, contiguity).
    pub fn layout(&self, index: usize) -> Option<&Tensor> {
        self.inspection.tensors.get(index)
    }
}

/// The file name without folders and without its last extension ("ckpt/w.npy" → "w").
fn stem(name: &str) -> &str {
    let base = name.rsplit(['/', '\\']).next().unwrap_or(name);
    match base.rsplit_once('.') {
        Some((s, _)) if !s.is_empty() => s,
        _ => base,
    }
}

fn entry(t: &Tensor) -> TensorEntry {
    let dtype = match Dtype::from_name(&t.dtype) {
        Some(d) if t.dtype_known => TensorDtype::Safetensors(d),
        _ => TensorDtype::Unknown(t.dtype.clone()),
    };
    let start = t.start.unwrap_or(0);
    let end = t.end.unwrap_or(start);
    TensorEntry {
        name: t.name.clone(),
        dtype,
        shape: t.shape.clone(),
        ggml_dims: None,
        params: t.params,
        start,
        end,
        abs_start: t.start,
        bytes: t.start.zip(t.end).and_then(|(s, e)| e.checked_sub(s)),
        header_offset: None,
    }
}

/// Total length of the union of `[start, end)` ranges.
fn union_len(ranges: impl Iterator<Item = (u64, u64)>) -> u64 {
    let mut r: Vec<(u64, u64)> = ranges.filter(|(s, e)| e > s).collect();
    r.sort_unstable();
    let mut total = 0u64;
    let mut cur: Option<(u64, u64)> = None;
    for (s, e) in r {
        cur = match cur {
            Some((cs, ce)) if s <= ce => Some((cs, ce.max(e))),
            Some((cs, ce)) => {
                total = total.saturating_add(ce - cs);
                Some((s, e))
            }
            None => Some((s, e)),
        };
    }
    if let Some((cs, ce)) = cur {
        total = total.saturating_add(ce - cs);
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stems_and_unions() {
        assert_eq!(stem("dir/f32.npy"), "f32");
        assert_eq!(stem("a\\b.c.pt"), "b.c");
        assert_eq!(stem(".hidden"), ".hidden");
        assert_eq!(stem("noext"), "noext");
        assert_eq!(
            union_len([(0, 10), (5, 12), (20, 30), (30, 31), (40, 40)].into_iter()),
            23
        );
        assert_eq!(union_len([(5, 6), (0, 100)].into_iter()), 100);
    }
}
