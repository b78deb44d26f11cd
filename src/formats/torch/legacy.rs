//! The legacy PyTorch format (`torch.save(..., _use_new_zipfile_serialization=False)`):
//! five pickles from the start (magic number, protocol version, system info, the main
//! pickle, the storage keys), then each storage in key-list order behind its 8-byte element
//! count. The storages are placed a read round each, the progress kept across rounds
//! ([`Legacy`]).

use super::inventory::{inventory, storage_element_size, string_list, StoragePlace};
use super::ranges::{Fetch, Need};
use super::{absorb, Container, Inspection, Reader, MAX_PICKLE_LEN};
use crate::error::{Code, Finding};
use crate::formats::pickle::eval::{Context, End, StorageRef, Walk};
use std::collections::HashMap;

/// The legacy format's magic number: the first pickle of the file is this integer.
pub const LEGACY_MAGIC: i128 = 0x1950_a86a_20f9_469c_fc6c;
/// The storages of a legacy file are preceded by this many bytes (an int64 element count).
pub const LEGACY_COUNT_LEN: u64 = 8;

/// The legacy format's first bytes as torch writes them (protocol 2): PROTO 2, LONG1 of
/// [`LEGACY_MAGIC`], STOP.
pub const LEGACY_PREFIX: &[u8] = b"\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19.";

/// How far a legacy file's storages are placed: the key list and the storages the main
/// pickle names (element count, storage class), the next key, where its count is, and what
/// was found so far.
#[derive(Debug)]
pub(super) struct Legacy {
    keys: Vec<String>,
    by_key: HashMap<String, (u64, std::rc::Rc<str>)>,
    next: usize,
    p: u64,
    data_at: HashMap<String, (u64, u64)>,
    findings: Vec<Finding>,
    stopped: bool,
}

impl Reader {
    pub(super) fn run_legacy(&mut self) -> Fetch<Inspection> {
        let mut i = self.empty(Container::PytorchLegacy);
        let mut pos = 0u64;
        let names = [
            "the magic number",
            "the protocol version",
            "the system info",
            "the main pickle",
            "the storage keys",
        ];
        let mut main_start = 0u64;
        let mut keys: Vec<String> = Vec::new();
        for (k, what) in names.iter().enumerate() {
            let ctx = Context {
                base: pos,
                member: None,
                torch: k == 3,
            };
            self.walk_at(pos, &ctx, MAX_PICKLE_LEN)?;
            let w = self.walked(pos)?;
            if k == 3 {
                main_start = pos;
            }
            if k == 4 && self.legacy.is_none() {
                keys = string_list(w);
            }
            let End::Stop(end) = w.end else {
                for s in walk_starts(&self.walks, 0, k) {
                    if let Ok(prev) = self.walked(s) {
                        absorb(&mut i, prev);
                    }
                }
                absorb(&mut i, w);
                self.pickle_end(w, pos, what, &mut i.findings);
                return Ok(self.legacy_tail(i, main_start, None));
            };
            pos = end;
        }
        // storages, in key-list order, each preceded by its element count: a read round per
        // storage, so the progress is kept across rounds (starting over from the first key
        // each round made a file of n storages cost n² — found by fuzzing,
        // tests/fuzz_regressions.rs)
        let mut st = match self.legacy.take() {
            Some(st) => st,
            None => {
                let Some(main) = self.walks.get(&main_start) else {
                    return Err(Need { start: 0, len: 0 });
                };
                Legacy {
                    keys,
                    by_key: main.storages.iter().map(|s| (s.key.to_string(), (s.numel, s.type_name.clone()))).collect(),
                    next: 0,
                    p: pos,
                    data_at: HashMap::new(),
                    findings: Vec::new(),
                    stopped: false,
                }
            }
        };
        while !st.stopped {
            let Some(key) = st.keys.get(st.next) else { break };
            let p = st.p;
            let Some((numel, type_name)) = st.by_key.get(key.as_str()) else {
                st.findings.push(
                    Finding::error(Code::MissingStorage, format!("storage {key:?} is listed but no tensor names it: its size is unknown, the storages after it cannot be placed"))
                        .at(p)
                        .field("storage keys"),
                );
                st.stopped = true;
                break;
            };
            if p.saturating_add(LEGACY_COUNT_LEN) > self.file_len {
                st.findings.push(
                    Finding::error(
                        Code::MissingStorage,
                        format!(
                            "storage {key:?} should start at byte {p}, past the end of the file"
                        ),
                    )
                    .at(p),
                );
                st.stopped = true;
                break;
            }
            let count_bytes = match self.get(p, LEGACY_COUNT_LEN) {
                Ok(b) => b,
                Err(n) => {
                    self.legacy = Some(st);
                    return Err(n);
                }
            };
            let mut a = [0u8; 8];
            a.copy_from_slice(count_bytes);
            let count = u64::from_le_bytes(a);
            if count != *numel {
                st.findings.push(
                    Finding::error(
                        Code::StorageSizeMismatch,
                        format!(
                            "storage {key:?} records {count} elements; the pickle says {numel}"
                        ),
                    )
                    .at(p),
                );
            }
            let el = storage_element_size(type_name).unwrap_or(1);
            let Some(bytes) = count.checked_mul(el) else {
                st.findings.push(
                    Finding::error(
                        Code::ShapeOverflow,
                        format!("storage {key:?}: {count} elements overflow"),
                    )
                    .at(p),
                );
                st.stopped = true;
                break;
            };
            let data = p + LEGACY_COUNT_LEN;
            let end = data.saturating_add(bytes);
            if end > self.file_len {
                st.findings.push(
                    Finding::error(
                        Code::TensorPastEnd,
                        format!("storage {key:?} ({bytes} bytes from byte {data}) runs past the end of the file ({} bytes)", self.file_len),
                    )
                    .at(data),
                );
            }
            st.data_at.insert(key.clone(), (data, bytes));
            st.p = end;
            st.next += 1;
            crate::error::keep_bounded(&mut st.findings);
        }
        i.findings.extend(st.findings.iter().cloned());
        if !st.stopped && st.p < self.file_len {
            i.findings.push(
                Finding::warning(
                    Code::TrailingBytes,
                    format!("{} bytes after the last storage", self.file_len - st.p),
                )
                .at(st.p),
            );
        }
        for s in walk_starts(&self.walks, 0, 5) {
            if let Ok(w) = self.walked(s) {
                absorb(&mut i, w);
            }
        }
        let tail = self.legacy_tail(i, main_start, Some(&st.data_at));
        self.legacy = Some(st);
        Ok(tail)
    }

    fn legacy_tail(
        &mut self,
        mut i: Inspection,
        main_start: u64,
        data_at: Option<&HashMap<String, (u64, u64)>>,
    ) -> Inspection {
        if let Some(w) = self.walks.get_mut(&main_start) {
            if let End::Stop(e) = w.end {
                i.pickle = Some((main_start, e - main_start));
            }
            if let Some(data_at) = data_at {
                let place = |s: &StorageRef| {
                    data_at.get(&*s.key).map(|&(d, b)| StoragePlace {
                        data: d,
                        bytes: b,
                        member: None,
                    })
                };
                let (t, f) = inventory(w, &place);
                i.tensors = t;
                i.findings.extend(f);
            }
        }
        i
    }
}

/// The start offsets of the first `n` consecutive walks from `start`.
fn walk_starts(walks: &HashMap<u64, Walk>, start: u64, n: usize) -> Vec<u64> {
    let mut out = Vec::new();
    let mut p = start;
    for _ in 0..n {
        let Some(w) = walks.get(&p) else { break };
        out.push(p);
        match w.end {
            End::Stop(e) => p = e,
            _ => break,
        }
    }
    out
}
