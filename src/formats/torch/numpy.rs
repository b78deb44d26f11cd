//! numpy's containers: an `.npy` file (its header, and its pickle for an object array) and
//! an `.npz` — a zip of `.npy` members, whose local headers, `.npy` prefixes, headers and
//! object-array pickles are each read in one round for all members.

use super::inventory::{fortran_strides, is_contiguous, row_major_strides};
use super::ranges::Fetch;
use super::{absorb, Container, Inspection, Reader, Tensor, MAX_PICKLE_LEN};
use crate::error::{Code, Finding};
use crate::formats::npy;
use crate::formats::pickle::eval::Context;
use crate::formats::zip;

/// Most `.npy` members of an `.npz` inspected.
pub const MAX_NPZ_MEMBERS: usize = 100_000;

impl Reader {
    fn npy_at(
        &mut self,
        i: &mut Inspection,
        at: u64,
        len: u64,
        name: &str,
        member: Option<&str>,
    ) -> Fetch<()> {
        let pre = self.get(at, npy::PREFIX_V2.min(len))?;
        let total = match npy::header_len(pre, at) {
            Ok(Some(t)) if t <= len => t,
            Ok(_) => {
                i.findings.push(
                    Finding::error(Code::NpyMalformed, "the .npy header is cut short").at(at),
                );
                return Ok(());
            }
            Err(f) => {
                i.findings.push(f);
                return Ok(());
            }
        };
        let bytes = self.get(at, total)?;
        let h = match npy::parse(bytes, at) {
            Ok(h) => h,
            Err(f) => {
                i.findings.push(f);
                return Ok(());
            }
        };
        let data = at + h.data_offset;
        if h.object {
            let ctx = Context {
                base: data,
                member: member.map(str::to_string),
                torch: false,
            };
            let plen = len - h.data_offset;
            self.walk_at(data, &ctx, plen.min(MAX_PICKLE_LEN))?;
            let what = format!("the object array {name:?}");
            let w = self.walked(data)?;
            self.pickle_end(w, data, &what, &mut i.findings);
            absorb(i, w);
            if i.pickle.is_none() {
                i.pickle = Some((data, plen));
            }
            return Ok(());
        }
        let el = h.element_size.unwrap_or(1);
        let params = h.shape.iter().try_fold(1u64, |a, &d| a.checked_mul(d));
        let nbytes = params.and_then(|p| p.checked_mul(el));
        let end = nbytes.and_then(|n| data.checked_add(n));
        if end.is_none_or(|e| e > at.saturating_add(len)) {
            i.findings.push(
                Finding::error(
                    Code::TensorPastEnd,
                    format!(
                        "array {name:?}: {} bytes of data do not fit in the file",
                        nbytes.map_or("too many".into(), |n| n.to_string())
                    ),
                )
                .at(data)
                .tensor(name),
            );
        }
        let dtype = h.dtype.map_or_else(|| h.descr.clone(), str::to_string);
        if h.dtype.is_none() {
            i.findings.push(
                Finding::warning(
                    Code::UnsupportedDtype,
                    format!(
                        "numpy dtype {:?} has no safetensors name{}",
                        h.descr,
                        if h.big_endian { " (big-endian)" } else { "" }
                    ),
                )
                .at(at)
                .tensor(name),
            );
        }
        if h.fortran_order && h.shape.iter().filter(|&&d| d > 1).count() > 1 {
            i.findings.push(
                Finding::warning(Code::NonContiguous, format!("array {name:?} is stored in Fortran (column-major) order: its bytes are the transpose"))
                    .at(at)
                    .tensor(name),
            );
        }
        let stride = if h.fortran_order {
            fortran_strides(&h.shape)
        } else {
            row_major_strides(&h.shape)
        };
        i.tensors.push(Tensor {
            name: name.to_string(),
            contiguous: is_contiguous(&h.shape, &stride),
            dtype,
            dtype_known: h.dtype.is_some(),
            element_size: el,
            shape: h.shape.clone(),
            stride,
            storage: member.unwrap_or("").to_string(),
            storage_offset: 0,
            start: Some(data),
            end,
            params,
            shares_storage_with: Vec::new(),
            member: member.map(str::to_string),
        });
        Ok(())
    }

    pub(super) fn run_npy(&mut self) -> Fetch<Inspection> {
        let mut i = self.empty(Container::Npy);
        self.npy_at(&mut i, 0, self.file_len, "", None)?;
        Ok(i)
    }

    pub(super) fn npz(&mut self, i: &mut Inspection, entries: &[zip::Entry]) -> Fetch<()> {
        // every member's local header, then .npy prefix, header and (object arrays) pickle,
        // each kind in one round: member by member, a round each, was quadratic in the
        // members, as every round walks the directory again (found while fuzzing the reader)
        let stored: Vec<&zip::Entry> = entries.iter().take(MAX_NPZ_MEMBERS).filter(|e| e.method == 0).collect();
        self.batch(stored.iter().map(|e| (e.header_offset, zip::LOCAL_HEADER_LEN.saturating_add(e.name.len() as u64))))?;
        let data: Vec<(u64, u64)> = stored
            .iter()
            .filter_map(|e| match self.member_data(e) {
                Ok(Ok(at)) => Some((at, e.size)),
                _ => None,
            })
            .collect();
        self.batch(data.iter().map(|&(at, size)| (at, npy::PREFIX_V2.min(size))))?;
        let headers: Vec<(u64, u64, u64)> = data
            .iter()
            .filter_map(|&(at, size)| match npy::header_len(self.get(at, npy::PREFIX_V2.min(size)).ok()?, at) {
                Ok(Some(total)) if total <= size => Some((at, total, size)),
                _ => None,
            })
            .collect();
        self.batch(headers.iter().map(|&(at, total, _)| (at, total)))?;
        let objects: Vec<(u64, u64)> = headers
            .iter()
            .filter_map(|&(at, total, size)| {
                let h = npy::parse(self.get(at, total).ok()?, at).ok()?;
                let plen = size.checked_sub(h.data_offset)?.min(MAX_PICKLE_LEN);
                if !h.object {
                    return None;
                }
                Some((at.checked_add(h.data_offset)?, plen))
            })
            .collect();
        self.batch(objects.into_iter())?;
        for e in entries.iter().take(MAX_NPZ_MEMBERS) {
            let name = e.name.strip_suffix(".npy").unwrap_or(&e.name).to_string();
            if e.method != 0 {
                i.findings.push(
                    Finding::warning(
                        Code::CompressedMember,
                        format!(
                            "{} is compressed (np.savez_compressed): not inspected",
                            e.name
                        ),
                    )
                    .at(e.header_offset)
                    .tensor(name),
                );
                continue;
            }
            let at = match self.member_data(e)? {
                Ok(a) => a,
                Err(f) => {
                    i.findings.push(f);
                    continue;
                }
            };
            self.npy_at(i, at, e.size, &name, Some(&e.name))?;
        }
        if entries.len() > MAX_NPZ_MEMBERS {
            i.findings.push(Finding::warning(
                Code::PickleLimit,
                format!("only the first {MAX_NPZ_MEMBERS} members are inspected"),
            ));
        }
        Ok(())
    }
}
