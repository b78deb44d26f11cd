//! The tensor inventory of a torch pickle: its named tensor rebuilds placed in the file
//! (dtype from the rebuild or the storage class, layout, span, the checks against the
//! storage), tensors over one storage naming each other; with torch's storage classes and
//! dtypes and the stride helpers the `.npy` reader shares.

use super::Tensor;
use crate::error::{push_bounded, Code, Finding};
use crate::formats::pickle::eval::{self, StorageRef, Value, Walk};
use std::collections::HashMap;

/// Other tensors a tensor's `shares_storage_with` names (in name order): tied weights
/// share a storage two or three at a time; n views of one storage listing all the others
/// were n² names (a 1 MB pickle of 45,000 views: two billion).
pub const MAX_SHARED_NAMES: usize = 16;
/// Bytes of the names all `shares_storage_with` lists hold (each name + its 24-byte
/// `String`): this + the bytes of every tensor's name, shared evenly by the tensors that
/// share a storage; a tensor whose share cannot afford a name lists one, clipped to
/// [`SHARED_NAME_CLIP`] bytes. Tied pairs list each other whole; a storage with a
/// hundred thousand views lists fewer names for each (the rest counted where shown).
pub const SHARED_NAMES_SLACK: u64 = 4 << 20;
/// See [`SHARED_NAMES_SLACK`].
pub const SHARED_NAME_CLIP: usize = 64;

/// Where a storage's bytes are.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct StoragePlace {
    pub(super) data: u64,
    pub(super) bytes: u64,
    pub(super) member: Option<String>,
}

/// The strings of a walk's root list or tuple (a legacy file's storage keys).
pub(super) fn string_list(w: &Walk) -> Vec<String> {
    let items = match &w.root {
        Value::Obj(id) => match w.arena.get(*id as usize) {
            Some(eval::Obj::List(items) | eval::Obj::Tuple(items)) => items.clone(),
            _ => Vec::new(),
        },
        _ => Vec::new(),
    };
    items
        .into_iter()
        .filter_map(|v| match v {
            Value::Str(s) => Some(s.to_string()),
            _ => None,
        })
        .collect()
}

/// (torch storage class, safetensors name or torch's name, known to safetensors, bytes
/// per element), from torch's `_dtype_to_storage_type_map` and element sizes. complex128
/// is `C128`, in the style of the others (`C64` for complex64), though safetensors has no
/// such dtype (`dtype_known: false`, not converted).
const STORAGE_TYPES: [(&str, &str, bool, u64); 17] = [
    ("DoubleStorage", "F64", true, 8),
    ("FloatStorage", "F32", true, 4),
    ("HalfStorage", "F16", true, 2),
    ("LongStorage", "I64", true, 8),
    ("IntStorage", "I32", true, 4),
    ("ShortStorage", "I16", true, 2),
    ("CharStorage", "I8", true, 1),
    ("ByteStorage", "U8", true, 1),
    ("BoolStorage", "BOOL", true, 1),
    ("BFloat16Storage", "BF16", true, 2),
    ("ComplexDoubleStorage", "C128", false, 16),
    ("ComplexFloatStorage", "C64", true, 8),
    ("QInt8Storage", "qint8", false, 1),
    ("QInt32Storage", "qint32", false, 4),
    ("QUInt8Storage", "quint8", false, 1),
    ("QUInt4x2Storage", "quint4x2", false, 1),
    ("QUInt2x4Storage", "quint2x4", false, 1),
];

/// (torch dtype attribute, safetensors name or torch's, known, bytes per element): the
/// dtype argument of `_rebuild_tensor_v3`.
const TORCH_DTYPES: [(&str, &str, bool, u64); 24] = [
    ("float64", "F64", true, 8),
    ("float32", "F32", true, 4),
    ("float16", "F16", true, 2),
    ("bfloat16", "BF16", true, 2),
    ("int64", "I64", true, 8),
    ("int32", "I32", true, 4),
    ("int16", "I16", true, 2),
    ("int8", "I8", true, 1),
    ("uint8", "U8", true, 1),
    ("uint16", "U16", true, 2),
    ("uint32", "U32", true, 4),
    ("uint64", "U64", true, 8),
    ("bool", "BOOL", true, 1),
    ("complex64", "C64", true, 8),
    ("complex128", "C128", false, 16),
    ("complex32", "complex32", false, 4),
    ("float8_e4m3fn", "F8_E4M3", true, 1),
    ("float8_e5m2", "F8_E5M2", true, 1),
    ("float8_e4m3fnuz", "F8_E4M3FNUZ", true, 1),
    ("float8_e5m2fnuz", "F8_E5M2FNUZ", true, 1),
    ("float8_e8m0fnu", "F8_E8M0", true, 1),
    ("float4_e2m1fn_x2", "float4_e2m1fn_x2", false, 1),
    ("bits8", "bits8", false, 1),
    ("bits16", "bits16", false, 2),
];

/// Why a tensor of `dtype` (a name with `dtype_known: false`) has no safetensors dtype:
/// the words of its `UnsupportedDtype` warning and of a conversion leaving it out.
pub(super) fn no_safetensors_dtype(dtype: &str) -> String {
    match dtype {
        "C128" => "dtype C128 (torch.complex128): safetensors has no complex128 dtype (its C64 is complex64)".to_string(),
        d => format!("dtype {d} has no safetensors name"),
    }
}

fn storage_class(type_name: &str) -> Option<&'static (&'static str, &'static str, bool, u64)> {
    let cls = type_name.rsplit('.').next().unwrap_or(type_name);
    let module_ok = matches!(
        type_name.rsplit_once('.').map(|(m, _)| m),
        Some("torch" | "torch.cuda")
    );
    STORAGE_TYPES.iter().find(|(c, ..)| module_ok && *c == cls)
}

fn is_untyped(type_name: &str) -> bool {
    matches!(
        type_name,
        "torch.storage.UntypedStorage" | "torch.UntypedStorage"
    )
}

pub(super) fn storage_element_size(type_name: &str) -> Option<u64> {
    if is_untyped(type_name) {
        return Some(1);
    }
    storage_class(type_name).map(|(_, _, _, s)| *s)
}

pub fn row_major_strides(shape: &[u64]) -> Vec<u64> {
    let mut out = vec![0u64; shape.len()];
    let mut acc = 1u64;
    for (o, d) in out.iter_mut().zip(shape).rev() {
        *o = acc;
        acc = acc.saturating_mul(*d);
    }
    out
}

pub(super) fn fortran_strides(shape: &[u64]) -> Vec<u64> {
    let mut out = Vec::with_capacity(shape.len());
    let mut acc = 1u64;
    for d in shape {
        out.push(acc);
        acc = acc.saturating_mul(*d);
    }
    out
}

/// torch's `is_contiguous`: strides of size-1 dims do not matter; an empty tensor is
/// contiguous.
pub fn is_contiguous(shape: &[u64], stride: &[u64]) -> bool {
    if shape.len() != stride.len() {
        return false;
    }
    if shape.contains(&0) {
        return true;
    }
    let mut expected = 1u64;
    for (d, s) in shape.iter().zip(stride).rev() {
        if *d == 1 {
            continue;
        }
        if *s != expected {
            return false;
        }
        expected = expected.saturating_mul(*d);
    }
    true
}

/// The tensors of a torch pickle, placed in the file.
pub(super) fn inventory(
    w: &mut Walk,
    place: &dyn Fn(&StorageRef) -> Option<StoragePlace>,
) -> (Vec<Tensor>, Vec<Finding>) {
    // names, shapes and strides are moved out of the walk, not copied: it is not used for
    // its tensors again (a tensor named twice copies them from its first entry)
    let (named, mut findings) = match w.settled.take() {
        Some(s) => s,
        None => w.named_tensors(),
    };
    let mut first: Vec<u32> = vec![u32::MAX; w.tensors.len()];
    let mut out: Vec<Tensor> = Vec::with_capacity(named.len());
    for nt in named {
        let Some(t) = w.tensors.get_mut(nt.tensor as usize) else {
            continue;
        };
        let Some(s) = w.storages.get(t.storage as usize) else {
            continue;
        };
        let earlier = first.get(nt.tensor as usize).and_then(|&k| out.get(k as usize));
        let (shape, stride) = match earlier {
            Some(o) => (o.shape.clone(), o.stride.clone()),
            None => (std::mem::take(&mut t.shape), std::mem::take(&mut t.stride)),
        };
        if let Some(slot) = first.get_mut(nt.tensor as usize) {
            if *slot == u32::MAX {
                *slot = u32::try_from(out.len()).unwrap_or(u32::MAX);
            }
        }
        let t = &*t;
        let name = nt.name;
        let (dtype, known, el) = match (&t.dtype, is_untyped(&s.type_name)) {
            (Some(d), _) => match TORCH_DTYPES.iter().find(|(n, ..)| n == d) {
                Some((_, st, k, e)) => ((*st).to_string(), *k, *e),
                None => (d.clone(), false, 1),
            },
            (None, false) => match storage_class(&s.type_name) {
                Some((_, st, k, e)) => ((*st).to_string(), *k, *e),
                None => (s.type_name.to_string(), false, 1),
            },
            (None, true) => ("U8".to_string(), true, 1),
        };
        if !known {
            push_bounded(
                &mut findings,
                Finding::warning(
                    Code::UnsupportedDtype,
                    no_safetensors_dtype(&dtype),
                )
                .at(t.offset)
                .tensor(name.clone()),
            );
        }
        let storage_el = storage_element_size(&s.type_name).unwrap_or(el);
        let storage_bytes = s.numel.checked_mul(storage_el);
        let params = shape.iter().try_fold(1u64, |a, &d| a.checked_mul(d));
        let contiguous = is_contiguous(&shape, &stride);
        // elements touched: 1 + Σ (d - 1) × stride, none for an empty tensor
        let extent = if shape.contains(&0) {
            Some(0)
        } else {
            shape
                .iter()
                .zip(&stride)
                .try_fold(1u64, |a, (&d, &s)| a.checked_add((d - 1).checked_mul(s)?))
        };
        let p = place(s);
        let start = p
            .as_ref()
            .and_then(|p| p.data.checked_add(t.storage_offset.checked_mul(el)?));
        // An empty tensor reads no byte, and torch loads it whatever its storage offset; one
        // placed past its storage's data is shown where that data ends (its storage offset
        // stays in the layout columns), not past the end of the file.
        let start = match (extent, &p) {
            (Some(0), Some(p)) => match (start, p.data.checked_add(p.bytes)) {
                (Some(st), Some(end)) => Some(st.min(end)),
                (st, end) => st.or(end),
            },
            _ => start,
        };
        let span = if contiguous { params } else { extent };
        let end = start.and_then(|st| st.checked_add(span?.checked_mul(el)?));
        if params.is_none() || span.is_none() {
            push_bounded(
                &mut findings,
                Finding::error(Code::ShapeOverflow, "the shape's size overflows u64")
                    .at(t.offset)
                    .tensor(name.clone()),
            );
        }
        // the tensor must lie inside its storage
        let reach = extent
            .and_then(|e| t.storage_offset.checked_add(e))
            .and_then(|e| e.checked_mul(el));
        if let (Some(reach), Some(sb)) = (reach, storage_bytes) {
            if reach > sb && extent != Some(0) {
                push_bounded(
                    &mut findings,
                    Finding::error(
                        Code::TensorPastStorage,
                        format!(
                            "the tensor reaches byte {reach} of its storage {:?}, which has {sb}",
                            s.key
                        ),
                    )
                    .at(t.offset)
                    .tensor(name.clone()),
                );
            }
        }
        if let (Some(p), Some(sb)) = (&p, storage_bytes) {
            if sb > p.bytes {
                push_bounded(
                    &mut findings,
                    Finding::error(
                        Code::TensorPastStorage,
                        format!(
                            "storage {:?} should hold {sb} bytes; its data has {}",
                            s.key, p.bytes
                        ),
                    )
                    .at(p.data)
                    .tensor(name.clone()),
                );
            }
        }
        if !contiguous {
            push_bounded(
                &mut findings,
                Finding::warning(
                    Code::NonContiguous,
                    format!(
                        "stride {:?} for shape {:?}: a view, not a contiguous tensor",
                        stride, shape
                    ),
                )
                .at(t.offset)
                .tensor(name.clone()),
            );
        }
        out.push(Tensor {
            name,
            dtype,
            dtype_known: known,
            element_size: el,
            shape,
            stride,
            storage: s.key.to_string(),
            storage_offset: t.storage_offset,
            contiguous,
            start,
            end,
            params,
            shares_storage_with: Vec::new(),
            member: p.and_then(|p| p.member),
        });
    }
    // tensors over one storage list each other (sorted, at most MAX_SHARED_NAMES each: n
    // views of one storage listing each other were n² names); grouped through an order of
    // indices, 4 bytes a tensor, where a map of copied keys and names took ~200
    let mut order: Vec<u32> = (0..u32::try_from(out.len()).unwrap_or(u32::MAX)).collect();
    let key = |k: &u32| out.get(*k as usize).map(|t| (t.storage.as_str(), t.name.as_str()));
    order.sort_unstable_by(|a, b| key(a).cmp(&key(b)));
    // The names listed are bounded in bytes too (SHARED_NAMES_SLACK + the bytes of every
    // name, shared evenly by the tensors that share): 16 copies of each name were 0.6 KiB a
    // tensor for 16 bytes of stream (100,000 views of one storage: 115 MB).
    let groups: Vec<&[u32]> = order
        .chunk_by(|a, b| key(a).map(|k| k.0) == key(b).map(|k| k.0))
        .filter(|g| g.len() >= 2)
        .collect();
    let sharing: u64 = groups.iter().map(|g| g.len() as u64).sum();
    let names_bytes: u64 = out.iter().map(|t| t.name.len() as u64).sum();
    let allowance = SHARED_NAMES_SLACK.saturating_add(names_bytes) / sharing.max(1);
    let mut shares: Vec<(u32, Vec<String>)> = Vec::new();
    for group in groups {
        let mut names: Vec<&str> = group.iter().filter_map(|k| key(k).map(|k| k.1)).collect();
        names.dedup();
        for k in group {
            let Some((_, own)) = key(k) else { continue };
            let mut others: Vec<String> = Vec::new();
            let mut spent = 0u64;
            for n in names.iter().filter(|n| **n != own).take(MAX_SHARED_NAMES) {
                let cost = (n.len() + std::mem::size_of::<String>()) as u64;
                if spent.saturating_add(cost) > allowance {
                    if others.is_empty() {
                        // one at least, so that the tensor is seen to share
                        others.push(crate::error::clip_to(n, SHARED_NAME_CLIP).into_owned());
                    }
                    break;
                }
                spent += cost;
                others.push(n.to_string());
            }
            shares.push((*k, others));
        }
    }
    for (k, others) in shares {
        if let Some(t) = out.get_mut(k as usize) {
            t.shares_storage_with = others;
        }
    }
    (out, findings)
}

/// How many tensors use each storage (by key): a tensor's `shares_storage_with` names at
/// most [`MAX_SHARED_NAMES`] of the others, and this says how many there are in all.
pub fn storage_users(tensors: &[Tensor]) -> HashMap<&str, usize> {
    let mut n: HashMap<&str, usize> = HashMap::new();
    for t in tensors {
        *n.entry(t.storage.as_str()).or_default() += 1;
    }
    n
}
