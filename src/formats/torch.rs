//! Pickle-based model files: the PyTorch zip format, the legacy PyTorch format, plain
//! pickles (any protocol), `.npy` and `.npz` — their safety verdict and tensor inventory,
//! read statically (see [`crate::formats::pickle`]: nothing is ever unpickled).
//!
//! # I/O model
//!
//! A zip is read from its end, a legacy file from its start, so the parser is a resumable
//! [`Reader`] over byte ranges rather than over a prefix:
//!
//! ```text
//! let mut r = Reader::new(file_len);
//! loop {
//!     match r.step() {
//!         Next::NeedRange { start, len } => r.supply(start, read(start, len)?),
//!         Next::Done(inspection) => break inspection,
//!     }
//! }
//! ```
//!
//! `step` re-runs the parse from the top over the ranges supplied so far (kept in a
//! [`RangeCache`], adjacent ranges merged) and asks for the first missing range; the
//! expensive results (a pickle walk, the central directory) are memoized in the reader,
//! so each is computed once. Every range asked for lies inside the file. A short read
//! (fewer bytes than asked) ends the parse with a `ReadFailed` finding. [`parse_all`] is
//! the synchronous driver over an in-memory file; it counts the bytes it served.
//!
//! What is read: a torch zip — its first local header, the last 42 bytes (the whole 64 KiB
//! comment window only when the end-of-central-directory record is not in them), the central directory, the
//! `data.pkl` local header and bytes, and each storage member's local header (30 bytes +
//! its name), never tensor data. A legacy file — its pickles from the start, then the
//! 8-byte element count in front of each storage. A plain pickle — up to its STOP. An
//! `.npy` — its header (and its pickle, for object arrays).

use crate::error::{push_bounded, Code, Finding};
use crate::formats::npy;
use crate::formats::pickle::eval::{self, Context, End, GlobalRef, MoreGlobals, StorageRef, Value, Walk, MAX_GLOBALS};
use crate::formats::pickle::safety::{GlobalVerdict, Verdict};
use crate::formats::zip;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;

/// The first read: a zip member's fixed local header, enough to tell the containers apart
/// (a zip's first member name follows it, read next — so that no byte past `data.pkl`'s
/// start, where a small file's tensor data may already lie, is read for the inventory).
pub const HEAD_LEN: u64 = zip::LOCAL_HEADER_LEN;
/// The first read at the end of a zip: the end-of-central-directory record of a zip without
/// a comment (torch writes none) and the Zip64 locator right before it — no more, so that
/// a small file's last storage, just before the directory, is not read.
pub const TAIL_LEN: u64 = zip::EOCD_LEN + zip::ZIP64_LOCATOR_LEN;
/// Smallest extra read while a pickle of unknown length is walked from the start.
pub const PICKLE_CHUNK: u64 = 64 << 10;
/// Largest pickle we walk (`data.pkl`, a legacy main pickle, a plain pickle, a nested
/// one). A 400 B-parameter state dict's `data.pkl` is a few MB; 512 MiB bounds memory.
pub const MAX_PICKLE_LEN: u64 = 512 << 20;
/// Most `.npy` members of an `.npz` inspected.
pub const MAX_NPZ_MEMBERS: usize = 100_000;
/// Other tensors a tensor's `shares_storage_with` names (in name order): tied weights
/// share a storage two or three at a time; n views of one storage listing all the others
/// were n² names (a 1 MB pickle of 45,000 views: two billion).
pub const MAX_SHARED_NAMES: usize = 16;
/// The legacy format's magic number: the first pickle of the file is this integer.
pub const LEGACY_MAGIC: i128 = 0x1950_a86a_20f9_469c_fc6c;
/// The storages of a legacy file are preceded by this many bytes (an int64 element count).
pub const LEGACY_COUNT_LEN: u64 = 8;

/// Which container a file is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Container {
    #[serde(rename = "pytorch-zip")]
    PytorchZip,
    #[serde(rename = "pytorch-legacy")]
    PytorchLegacy,
    #[serde(rename = "pickle")]
    Pickle,
    #[serde(rename = "npy")]
    Npy,
    #[serde(rename = "npz")]
    Npz,
    /// Not recognised (empty, random bytes, a zip of something else).
    #[serde(rename = "unknown")]
    Unknown,
}

impl Container {
    pub fn name(self) -> &'static str {
        match self {
            Container::PytorchZip => "pytorch-zip",
            Container::PytorchLegacy => "pytorch-legacy",
            Container::Pickle => "pickle",
            Container::Npy => "npy",
            Container::Npz => "npz",
            Container::Unknown => "unknown",
        }
    }
}

/// The report's `safety` object.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Safety {
    pub verdict: Verdict,
    /// Each distinct import, at its first occurrence (with how often it is performed).
    pub globals: Vec<GlobalRef>,
    /// Imports past the listing cap (`pickle::eval::MAX_GLOBALS`), counted by verdict.
    pub more_globals: MoreGlobals,
}

impl Safety {
    /// The imports in one sentence: distinct ones by verdict, how often they are performed,
    /// and those past the listing cap (the CLI's block and the page's card say the same).
    pub fn summary(&self) -> String {
        let count = |v: GlobalVerdict| self.globals.iter().filter(|g| g.verdict == v).count();
        let performed = self.globals.iter().fold(0u64, |n, g| n.saturating_add(g.count));
        let mut out = format!(
            "{} distinct import(s), performed {} time(s): {} dangerous, {} unknown, {} allowed",
            self.globals.len(),
            performed,
            count(GlobalVerdict::Dangerous),
            count(GlobalVerdict::Unknown),
            count(GlobalVerdict::Allowed)
        );
        let m = &self.more_globals;
        if !m.is_empty() {
            out.push_str(&format!(
                "; {} more past the first {MAX_GLOBALS} distinct ones, counted only: {} dangerous, {} unknown",
                m.count, m.dangerous, m.unknown
            ));
        }
        out
    }
}

/// One tensor of the inventory.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Tensor {
    /// Key path (`state_dict.layer.weight`); `""` for a file that is one tensor (`.npy`,
    /// `torch.save(tensor)`); an `.npz` member's name without `.npy`.
    pub name: String,
    /// safetensors dtype name, or torch's / numpy's name when safetensors has none.
    pub dtype: String,
    /// Whether `dtype` is a safetensors name.
    pub dtype_known: bool,
    pub element_size: u64,
    pub shape: Vec<u64>,
    pub stride: Vec<u64>,
    /// The storage key (the zip member `…/data/<key>`, the legacy key, the npz member).
    pub storage: String,
    /// In elements of the tensor's dtype.
    pub storage_offset: u64,
    pub contiguous: bool,
    /// Absolute offset of the tensor's first byte.
    pub start: Option<u64>,
    /// `start` + elements × size for a contiguous tensor; for a strided one, the end of
    /// the span it touches.
    pub end: Option<u64>,
    /// Element count (`None` on overflow).
    pub params: Option<u64>,
    /// Other tensors over the same storage.
    pub shares_storage_with: Vec<String>,
    /// Zip member holding the data.
    pub member: Option<String>,
}

/// Everything learned about one file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Inspection {
    pub format: Container,
    pub size: u64,
    pub bytes_read: u64,
    pub tensors: Vec<Tensor>,
    pub safety: Safety,
    pub findings: Vec<Finding>,
    /// Opcodes walked in all pickles of the file.
    pub opcodes: u64,
    /// Zip members (torch zip, npz).
    #[serde(skip)]
    pub members: Vec<zip::Entry>,
    /// Absolute offset and length of the main pickle (`data.pkl`, the legacy main pickle,
    /// the plain pickle).
    pub pickle: Option<(u64, u64)>,
}

impl Inspection {
    /// True when the file has no error finding (dangerous imports are errors).
    pub fn ok(&self) -> bool {
        !self.findings.iter().any(|f| f.is_error())
    }
}

/// What [`Reader::step`] answers.
#[derive(Debug)]
pub enum Next {
    /// Supply `[start, start + len)` with [`Reader::supply`], then step again.
    NeedRange {
        start: u64,
        len: u64,
    },
    Done(Box<Inspection>),
}

/// Fetched byte ranges, adjacent and overlapping ones merged.
#[derive(Clone, Debug, Default)]
pub struct RangeCache {
    ranges: BTreeMap<u64, Vec<u8>>,
}

impl RangeCache {
    pub fn insert(&mut self, start: u64, bytes: Vec<u8>) {
        let mut start = start;
        let mut bytes = bytes;
        // merge with a range that begins before and reaches into or up to this one
        let before = self.ranges.range(..=start).next_back().map(|(&s, prev)| (s, s.saturating_add(prev.len() as u64)));
        if let Some((s, prev_end)) = before.filter(|&(_, prev_end)| prev_end >= start) {
            // taken out and extended in place, not copied: a legacy file's counts of empty
            // storages are adjacent 8-byte reads, and copying the growing range each time
            // made them quadratic (found by fuzzing)
            let mut merged = self.ranges.remove(&s).unwrap_or_default();
            let skip = usize::try_from(prev_end - start).unwrap_or(usize::MAX);
            if let Some(tail) = bytes.get(skip..) {
                // a tail at least half the range's length (a pickle read in doubling
                // windows) is given exactly its room: doubling would leave up to half the
                // file's pickle unused (a 40 MB pickle in a 64 MiB vector); smaller ones
                // grow it by doubling (linear, above). Exact growth by half or more each
                // time copies the range O(1) times over.
                if tail.len() >= merged.len() / 2 {
                    merged.reserve_exact(tail.len());
                }
                merged.extend_from_slice(tail);
            }
            start = s;
            bytes = merged;
        }
        // swallow ranges that begin inside or right after this one
        let end = start.saturating_add(bytes.len() as u64);
        let later: Vec<u64> = self.ranges.range(start..=end).map(|(&s, _)| s).collect();
        for s in later {
            if let Some(next) = self.ranges.remove(&s) {
                let next_end = s.saturating_add(next.len() as u64);
                let cur_end = start.saturating_add(bytes.len() as u64);
                if next_end > cur_end {
                    let skip = usize::try_from(cur_end - s).unwrap_or(usize::MAX);
                    if let Some(tail) = next.get(skip..) {
                        bytes.extend_from_slice(tail);
                    }
                }
            }
        }
        self.ranges.insert(start, bytes);
    }

    /// `[start, start + len)` if all of it was fetched.
    pub fn get(&self, start: u64, len: u64) -> Option<&[u8]> {
        let (&s, b) = self.ranges.range(..=start).next_back()?;
        let from = usize::try_from(start - s).ok()?;
        let to = from.checked_add(usize::try_from(len).ok()?)?;
        b.get(from..to)
    }

    /// The part of `[start, start + len)` still to fetch, without the bytes already held
    /// at either end (so that no byte is asked for twice).
    fn missing(&self, start: u64, len: u64) -> Need {
        let end = start.saturating_add(len);
        let have = self.run_from(start).len() as u64;
        let from = start.saturating_add(have).min(end);
        // a held range that begins inside and reaches the end trims the tail
        let later = if from < end { self.ranges.range(from.saturating_add(1)..end).next() } else { None };
        let to = match later {
            Some((&s, b)) if s.saturating_add(b.len() as u64) >= end => s,
            _ => end,
        };
        Need {
            start: from,
            len: to - from,
        }
    }

    /// The contiguous bytes fetched from `start` on.
    pub fn run_from(&self, start: u64) -> &[u8] {
        self.ranges
            .range(..=start)
            .next_back()
            .and_then(|(&s, b)| b.get(usize::try_from(start - s).ok()?..))
            .unwrap_or(&[])
    }
}

/// A missing range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Need {
    start: u64,
    len: u64,
}

type Fetch<T> = Result<T, Need>;

/// A central directory: its entries and what was wrong with it.
type Directory = (Vec<zip::Entry>, Vec<Finding>);

/// The resumable parser (see the module documentation).
#[derive(Debug)]
pub struct Reader {
    file_len: u64,
    cache: RangeCache,
    bytes_read: u64,
    short_read: Option<(u64, u64, u64)>,
    asked: Option<Need>,
    /// Ranges known to be needed after `asked` (see [`Reader::take_also_needed`]).
    also: Vec<Need>,
    /// Memoized walks by absolute start offset (only finished ones: STOP, failure, or out
    /// of data at the end of the file).
    walks: HashMap<u64, Walk>,
    directory: Option<Directory>,
    /// A legacy file's storages placed so far (see `run_legacy`).
    legacy: Option<Legacy>,
}

/// How far a legacy file's storages are placed: the key list and the storages the main
/// pickle names (element count, storage class), the next key, where its count is, and what
/// was found so far.
#[derive(Debug)]
struct Legacy {
    keys: Vec<String>,
    by_key: HashMap<String, (u64, std::rc::Rc<str>)>,
    next: usize,
    p: u64,
    data_at: HashMap<String, (u64, u64)>,
    findings: Vec<Finding>,
    stopped: bool,
}

impl Reader {
    pub fn new(file_len: u64) -> Self {
        Reader {
            file_len,
            cache: RangeCache::default(),
            bytes_read: 0,
            short_read: None,
            asked: None,
            also: Vec::new(),
            walks: HashMap::new(),
            directory: None,
            legacy: None,
        }
    }

    /// Hands over the bytes of a range asked for (or any other range of the file).
    pub fn supply(&mut self, start: u64, bytes: Vec<u8>) {
        self.bytes_read = self.bytes_read.saturating_add(bytes.len() as u64);
        if let Some(a) = self.asked {
            if a.start == start && (bytes.len() as u64) < a.len {
                self.short_read = Some((start, a.len, bytes.len() as u64));
            }
        }
        self.cache.insert(start, bytes);
    }

    /// Ranges the parse will need after the one [`Reader::step`] just asked for, already
    /// known (a torch zip's storage local headers, 30 bytes + name each): a driver may read
    /// them in the same round, so that a file of n storages takes a few rounds, not n.
    /// Supplying them is optional; each is asked for again later if it is not.
    pub fn take_also_needed(&mut self) -> Vec<(u64, u64)> {
        std::mem::take(&mut self.also).into_iter().map(|n| (n.start, n.len)).collect()
    }

    /// Advances the parse: the next range needed, or the result.
    pub fn step(&mut self) -> Next {
        self.also.clear();
        if let Some((start, want, got)) = self.short_read {
            let mut i = self.empty(Container::Unknown);
            i.findings.push(
                Finding::error(
                    Code::ReadFailed,
                    format!("asked for {want} bytes at {start}, got {got}"),
                )
                .at(start),
            );
            return Next::Done(Box::new(self.finish(i)));
        }
        match self.run() {
            Ok(i) => {
                self.asked = None;
                Next::Done(Box::new(self.finish(i)))
            }
            Err(n) if n.len == 0 => {
                // a parser bug, not the file's: finish rather than ask for nothing forever
                let mut i = self.empty(Container::Unknown);
                i.findings.push(
                    Finding::error(Code::ReadFailed, "the reader asked for an empty range")
                        .at(n.start),
                );
                Next::Done(Box::new(self.finish(i)))
            }
            Err(n) => {
                self.asked = Some(n);
                Next::NeedRange {
                    start: n.start,
                    len: n.len,
                }
            }
        }
    }

    fn empty(&self, format: Container) -> Inspection {
        Inspection {
            format,
            size: self.file_len,
            bytes_read: self.bytes_read,
            tensors: Vec::new(),
            safety: Safety {
                verdict: Verdict::Error,
                globals: Vec::new(),
                more_globals: MoreGlobals::default(),
            },
            findings: Vec::new(),
            opcodes: 0,
            members: Vec::new(),
            pickle: None,
        }
    }

    /// Bytes `[start, start + len)`, clamped to the file; a range past the end is the
    /// caller's bug and answers with what exists.
    fn get(&self, start: u64, len: u64) -> Fetch<&[u8]> {
        let start = start.min(self.file_len);
        let len = len.min(self.file_len - start);
        if len == 0 {
            // nothing to fetch (an empty central directory before any byte held: found by
            // fuzzing, tests/fuzz_regressions.rs)
            return Ok(&[]);
        }
        self.cache
            .get(start, len)
            .ok_or_else(|| self.cache.missing(start, len))
    }

    fn run(&mut self) -> Fetch<Inspection> {
        if self.file_len == 0 {
            let mut i = self.empty(Container::Unknown);
            i.findings
                .push(Finding::error(Code::FileTooShort, "the file is empty").at(0));
            return Ok(i);
        }
        let head = self.get(0, HEAD_LEN)?.to_vec();
        if head.starts_with(b"PK\x03\x04") {
            // the first member's name too (its length is the u16 at 26)
            let name_len = head.get(26..28).map_or(0, |b| u64::from(u16::from_le_bytes([b.first().copied().unwrap_or(0), b.get(1).copied().unwrap_or(0)])));
            let head = self.get(0, HEAD_LEN + name_len)?.to_vec();
            return self.run_zip(&head);
        }
        if head.starts_with(b"PK\x05\x06") {
            return self.run_zip(&head);
        }
        if head.starts_with(npy::MAGIC) {
            return self.run_npy();
        }
        self.run_pickles()
    }

    // ------------------------------------------------------------------ pickles

    /// Walks the pickle starting at `start`, asking for more bytes while it runs out
    /// before its STOP and the file goes on.
    fn walk_at(&mut self, start: u64, ctx: &Context, limit: u64) -> Fetch<()> {
        if !self.walks.contains_key(&start) {
            let avail = self.cache.run_from(start);
            let avail_end = start.saturating_add(avail.len() as u64);
            let cap = start.saturating_add(limit).min(self.file_len);
            let window = avail
                .get(
                    ..usize::try_from(cap.saturating_sub(start))
                        .unwrap_or(usize::MAX)
                        .min(avail.len()),
                )
                .unwrap_or(avail);
            let mut w = eval::walk(window, ctx);
            if let End::OutOfData(at) = w.end {
                if avail_end < cap {
                    // windows double; a rest of at most two windows is read at once, so
                    // that each read at least halves what the cache holds already (it
                    // then takes exactly its room: `RangeCache::insert`)
                    let rest = cap - avail_end;
                    let len = (avail.len() as u64).max(PICKLE_CHUNK);
                    let len = if rest <= len.saturating_mul(2) { rest } else { len };
                    return Err(Need {
                        start: avail_end,
                        len,
                    });
                }
                if cap < self.file_len
                    && cap == start.saturating_add(limit)
                    && limit == MAX_PICKLE_LEN
                {
                    // the bytes go on, but not for us
                    w.end = End::Failed;
                    w.findings.push(
                        Finding::error(
                            Code::PickleLimit,
                            format!("the pickle from byte {start} runs past the {MAX_PICKLE_LEN}-byte limit: not walked to its end"),
                        )
                        .at(at),
                    );
                }
            }
            if ctx.torch {
                // a torch pickle's values serve only to name its tensors
                w.settle();
            }
            self.walks.insert(start, w);
        }
        Ok(())
    }

    fn walked(&self, start: u64) -> Fetch<&Walk> {
        self.walks.get(&start).ok_or(Need { start, len: 0 })
    }

    fn run_pickles(&mut self) -> Fetch<Inspection> {
        let ctx = Context {
            base: 0,
            member: None,
            torch: false,
        };
        self.walk_at(0, &ctx, MAX_PICKLE_LEN)?;
        let first = self.walked(0)?;
        if first.end != End::Failed && first.root.as_i128() == Some(LEGACY_MAGIC) {
            return self.run_legacy();
        }
        let mut i = self.empty(Container::Pickle);
        let end = self.pickle_end(first, 0, "the pickle", &mut i.findings);
        if let Some(end) = end {
            i.pickle = Some((0, end));
            if end < self.file_len {
                i.findings.push(
                    Finding::warning(
                        Code::TrailingBytes,
                        format!(
                            "{} bytes follow the pickle's STOP (not read)",
                            self.file_len - end
                        ),
                    )
                    .at(end),
                );
            }
        }
        if first.end == End::Failed && first.opcodes <= 1 {
            // not a pickle at all (random bytes, another format)
            i.format = Container::Unknown;
            i.findings.push(
                Finding::error(Code::UnknownFormat, "not a pickle, a zip or a .npy file").at(0),
            );
        }
        absorb(&mut i, first);
        Ok(i)
    }

    /// Where a finished walk ended, with a finding when it did not reach STOP.
    fn pickle_end(
        &self,
        w: &Walk,
        start: u64,
        what: &str,
        findings: &mut Vec<Finding>,
    ) -> Option<u64> {
        match w.end {
            End::Stop(e) => Some(e),
            End::OutOfData(at) => {
                findings.push(
                    Finding::error(
                        Code::PickleTruncated,
                        format!("{what} (from byte {start}) ends before its STOP opcode: the file or member is truncated"),
                    )
                    .at(at),
                );
                None
            }
            End::Failed => None,
        }
    }

    fn run_legacy(&mut self) -> Fetch<Inspection> {
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

    // ------------------------------------------------------------------ zip

    fn run_zip(&mut self, head: &[u8]) -> Fetch<Inspection> {
        // guess from the first member's name, for a zip too broken to read
        let first_name = head
            .get(26..28)
            .map(|b| {
                usize::from(u16::from_le_bytes([
                    *b.first().unwrap_or(&0),
                    *b.get(1).unwrap_or(&0),
                ]))
            })
            .and_then(|n| head.get(30..30 + n))
            .map(|n| String::from_utf8_lossy(n).into_owned())
            .unwrap_or_default();
        let guess = if first_name.ends_with(".npy") {
            Container::Npz
        } else {
            Container::PytorchZip
        };
        if self.directory.is_none() {
            match self.read_directory()? {
                Ok(d) => self.directory = Some(d),
                Err(f) => {
                    let mut i = self.empty(guess);
                    i.findings.push(f);
                    return Ok(i);
                }
            }
        }
        let Some((entries, dir_findings)) = self.directory.clone() else {
            return Err(Need { start: 0, len: 0 });
        };
        let pkl = entries
            .iter()
            .filter(|e| {
                e.name == "data.pkl"
                    || (e.name.ends_with("/data.pkl") && e.name.matches('/').count() == 1)
            })
            .min_by_key(|e| e.name.len());
        let mut i;
        if let Some(pkl) = pkl.cloned() {
            i = self.empty(Container::PytorchZip);
            i.findings.extend(dir_findings);
            self.torch_zip(&mut i, &entries, &pkl)?;
        } else if !entries.is_empty() && entries.iter().all(|e| e.name.ends_with(".npy")) {
            i = self.empty(Container::Npz);
            i.findings.extend(dir_findings);
            self.npz(&mut i, &entries)?;
        } else {
            i = self.empty(Container::Unknown);
            i.findings.extend(dir_findings);
            i.findings.push(Finding::error(
                Code::UnknownFormat,
                "a zip with neither a data.pkl (PyTorch) nor only .npy members (numpy .npz)",
            ));
        }
        i.members = entries;
        Ok(i)
    }

    /// The central directory, or a finding when the zip cannot be read.
    fn read_directory(&self) -> Fetch<Result<Directory, Finding>> {
        let len = self.file_len;
        let mut dir = None;
        for window in [
            TAIL_LEN,
            zip::EOCD_LEN + zip::MAX_COMMENT + zip::ZIP64_LOCATOR_LEN,
        ] {
            let w = window.min(len);
            let tail = self.get(len - w, w)?;
            dir = zip::find_eocd(tail, len - w, len);
            if dir.is_some() || w == len {
                break;
            }
        }
        let Some(mut dir) = dir else {
            return Ok(Err(Finding::error(
                Code::ZipMalformed,
                "no end-of-central-directory record at the end of the file: the zip is truncated or not a zip",
            )
            .at(len)));
        };
        if let Some(z64) = dir.zip64_at {
            if z64.saturating_add(zip::ZIP64_EOCD_LEN) > dir.eocd_at {
                return Ok(Err(Finding::error(
                    Code::ZipMalformed,
                    "the Zip64 locator points past the end record",
                )
                .at(dir.eocd_at)));
            }
            let rec = self.get(z64, zip::ZIP64_EOCD_LEN)?;
            if let Err(f) = zip::apply_zip64(&mut dir, rec) {
                return Ok(Err(f));
            }
        }
        let end = dir.cd_offset.checked_add(dir.cd_size);
        if end.is_none_or(|e| e > dir.eocd_at) {
            return Ok(Err(Finding::error(
                Code::ZipMalformed,
                format!("the central directory ({} bytes at {}) does not end before the end record at {}", dir.cd_size, dir.cd_offset, dir.eocd_at),
            )
            .at(dir.eocd_at)));
        }
        if dir.cd_size > zip::MAX_CENTRAL_DIRECTORY {
            return Ok(Err(Finding::error(
                Code::ZipMalformed,
                format!(
                    "a {}-byte central directory exceeds the {}-byte limit",
                    dir.cd_size,
                    zip::MAX_CENTRAL_DIRECTORY
                ),
            )
            .at(dir.eocd_at)));
        }
        let cd = self.get(dir.cd_offset, dir.cd_size)?;
        Ok(Ok(zip::parse_central_directory(
            cd,
            dir.cd_offset,
            dir.entries,
        )))
    }

    /// Absolute offset of a member's data, from its local header.
    fn member_data(&self, e: &zip::Entry) -> Fetch<Result<u64, Finding>> {
        let want = zip::LOCAL_HEADER_LEN + e.name.len() as u64;
        if e.header_offset.saturating_add(want) > self.file_len {
            return Ok(Err(Finding::error(
                Code::ZipMalformed,
                format!("the local header of {} is past the end of the file", e.name),
            )
            .at(e.header_offset)));
        }
        let lh = self.get(e.header_offset, want)?;
        let off = zip::data_offset(e, lh);
        // only stored members come here, whose two sizes must be equal: a lying directory
        // may make either one the larger, and both (data.pkl's walk, a storage's bytes) must
        // lie in the file (found by fuzzing: tests/fuzz_regressions.rs)
        let size = e.compressed_size.max(e.size);
        Ok(off.and_then(|o| {
            if o.saturating_add(size) > self.file_len {
                Err(Finding::error(
                    Code::TensorPastEnd,
                    format!(
                        "member {} ({size} bytes from byte {o}) runs past the end of the file",
                        e.name
                    ),
                )
                .at(o))
            } else {
                Ok(o)
            }
        }))
    }

    fn torch_zip(
        &mut self,
        i: &mut Inspection,
        entries: &[zip::Entry],
        pkl: &zip::Entry,
    ) -> Fetch<()> {
        if pkl.method != 0 {
            i.findings.push(
                Finding::error(Code::CompressedMember, format!("{} is compressed (method {}); torch writes it stored, and it is not inflated here", pkl.name, pkl.method))
                    .at(pkl.header_offset),
            );
            return Ok(());
        }
        if pkl.size > MAX_PICKLE_LEN {
            i.findings.push(
                Finding::error(
                    Code::PickleLimit,
                    format!(
                        "{} has {} bytes, over the {MAX_PICKLE_LEN}-byte limit",
                        pkl.name, pkl.size
                    ),
                )
                .at(pkl.header_offset),
            );
            return Ok(());
        }
        let at = match self.member_data(pkl)? {
            Ok(a) => a,
            Err(f) => {
                i.findings.push(f);
                return Ok(());
            }
        };
        let ctx = Context {
            base: at,
            member: Some(pkl.name.clone()),
            torch: true,
        };
        self.get(at, pkl.size)?;
        self.walk_at(at, &ctx, pkl.size)?;
        // borrowed from the walk (not copied: 64 bytes and three counts a storage)
        let storages = &self.walks.get(&at).ok_or(Need { start: at, len: 0 })?.storages;
        let prefix = pkl.name.strip_suffix("data.pkl").unwrap_or("").to_string();
        let by_name: HashMap<&str, &zip::Entry> =
            entries.iter().map(|e| (e.name.as_str(), e)).collect();
        // every storage's local header in one round (see `take_also_needed`)
        let headers: Vec<Need> = storages
            .iter()
            .filter_map(|s| by_name.get(format!("{prefix}data/{}", s.key).as_str()).copied())
            .filter(|e| e.method == 0)
            .map(|e| (e.header_offset, zip::LOCAL_HEADER_LEN + e.name.len() as u64))
            .filter(|&(at, want)| at.saturating_add(want) <= self.file_len && self.cache.get(at, want).is_none())
            .map(|(at, want)| self.cache.missing(at, want))
            .collect();
        if let Some((first, rest)) = headers.split_first() {
            self.also = rest.to_vec();
            return Err(*first);
        }
        let mut places: HashMap<Rc<str>, StoragePlace> = HashMap::new();
        for s in storages {
            let name = format!("{prefix}data/{}", s.key);
            let Some(e) = by_name.get(name.as_str()) else {
                push_bounded(
                    &mut i.findings,
                    Finding::error(
                        Code::MissingStorage,
                        format!("storage {:?} has no member {name} in the zip", s.key),
                    )
                    .at(s.offset)
                    .field(name.clone()),
                );
                continue;
            };
            if e.method != 0 {
                push_bounded(
                    &mut i.findings,
                    Finding::error(
                        Code::CompressedMember,
                        format!("{name} is compressed: its bytes are not at a fixed offset"),
                    )
                    .at(e.header_offset),
                );
                continue;
            }
            match self.member_data(e)? {
                Ok(d) => {
                    places.insert(
                        s.key.clone(),
                        StoragePlace {
                            data: d,
                            bytes: e.size,
                            member: Some(name),
                        },
                    );
                }
                Err(f) => push_bounded(&mut i.findings, f),
            }
        }
        // nothing more is read: the walk is taken (its names and shapes move into the
        // inventory) and the bytes read let go before the inventory is built
        let mut w = self.walks.remove(&at).ok_or(Need { start: at, len: 0 })?;
        self.cache = RangeCache::default();
        let end = self.pickle_end(&w, at, &pkl.name, &mut i.findings);
        if end.is_some_and(|e| e < at.saturating_add(pkl.size)) {
            i.findings.push(
                Finding::warning(
                    Code::TrailingBytes,
                    format!("{} continues after the pickle's STOP", pkl.name),
                )
                .at(end.unwrap_or(at)),
            );
        }
        i.pickle = Some((at, pkl.size));
        let (t, f) = inventory(&mut w, &|s: &StorageRef| places.get(&*s.key).cloned());
        i.tensors = t;
        i.findings.extend(f);
        absorb(i, &w);
        Ok(())
    }

    // ------------------------------------------------------------------ numpy

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

    fn run_npy(&mut self) -> Fetch<Inspection> {
        let mut i = self.empty(Container::Npy);
        self.npy_at(&mut i, 0, self.file_len, "", None)?;
        Ok(i)
    }

    /// Asks for every range of `ranges` not held yet in one round (the first, and the rest
    /// through [`Reader::take_also_needed`]); Ok when all are held.
    fn batch(&mut self, ranges: impl Iterator<Item = (u64, u64)>) -> Fetch<()> {
        let mut need = Vec::new();
        for (at, len) in ranges {
            if len > 0 && at.checked_add(len).is_some_and(|e| e <= self.file_len) && self.cache.get(at, len).is_none() {
                need.push(self.cache.missing(at, len));
            }
        }
        match need.split_first() {
            Some((first, rest)) => {
                self.also = rest.to_vec();
                Err(*first)
            }
            None => Ok(()),
        }
    }

    fn npz(&mut self, i: &mut Inspection, entries: &[zip::Entry]) -> Fetch<()> {
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

    // ------------------------------------------------------------------ verdict

    fn finish(&self, mut i: Inspection) -> Inspection {
        i.bytes_read = self.bytes_read;
        // A finding points into the file (or at its end): a storage or member a lying
        // header places past the end is reported where the file ends, the message saying
        // where it was placed (found by fuzzing: `tests/fuzz_regressions.rs`).
        for f in &mut i.findings {
            if f.offset.is_some_and(|o| o > self.file_len) {
                f.offset = Some(self.file_len);
            }
        }
        for g in &i.safety.globals {
            let what = match (&g.module, &g.name) {
                (Some(m), Some(n)) => format!("{m}.{n}"),
                _ => "an import computed at run time".to_string(),
            };
            let times = if g.count > 1 { format!(" ({} times)", g.count) } else { String::new() };
            let f = match g.verdict {
                GlobalVerdict::Dangerous => Finding::error(
                    Code::DangerousGlobal,
                    format!("{} {what}{times}: {}", g.opcode, g.why),
                ),
                GlobalVerdict::Unknown => Finding::warning(
                    Code::UnknownGlobal,
                    format!("{} {what}{times}: {}", g.opcode, g.why),
                ),
                GlobalVerdict::Allowed => continue,
            };
            let f = match &g.member {
                Some(m) => f.field(m.clone()),
                None => f,
            };
            i.findings.push(f.at(g.offset));
        }
        // imports past the listing cap: counted as the capped findings are (`more`)
        let more = i.safety.more_globals;
        for (code, n, error) in [(Code::DangerousGlobal, more.dangerous, true), (Code::UnknownGlobal, more.unknown, false)] {
            if n > 0 {
                let msg = format!("… and {} more {code} imports past the first {MAX_GLOBALS} distinct ones listed", n);
                let mut f = if error { Finding::error(code, msg) } else { Finding::warning(code, msg) };
                f.more = n;
                i.findings.push(f);
            }
        }
        // several walks (a legacy file's five, an .npz's object arrays) and an import each:
        // bounded per code like every file's findings (found by fuzzing)
        crate::error::cap_findings(&mut i.findings);
        let any = |v: GlobalVerdict| {
            let more = match v {
                GlobalVerdict::Dangerous => more.dangerous,
                GlobalVerdict::Unknown => more.unknown,
                GlobalVerdict::Allowed => 0,
            };
            more > 0 || i.safety.globals.iter().any(|g| g.verdict == v)
        };
        let errors = i
            .findings
            .iter()
            .any(|f| f.is_error() && f.code != Code::DangerousGlobal);
        i.safety.verdict = if any(GlobalVerdict::Dangerous) {
            Verdict::Dangerous
        } else if errors || i.format == Container::Unknown {
            Verdict::Error
        } else if any(GlobalVerdict::Unknown) {
            Verdict::Suspicious
        } else {
            Verdict::Safe
        };
        i
    }
}

/// Copies a walk's globals, findings and opcode count into the inspection.
fn absorb(i: &mut Inspection, w: &Walk) {
    i.opcodes = i.opcodes.saturating_add(w.opcodes);
    i.findings.extend(w.findings.iter().cloned());
    i.safety.globals.extend(w.globals.iter().cloned());
    i.safety.more_globals.add(&w.more_globals);
}

/// Where a storage's bytes are.
#[derive(Clone, Debug, PartialEq)]
struct StoragePlace {
    data: u64,
    bytes: u64,
    member: Option<String>,
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

fn string_list(w: &Walk) -> Vec<String> {
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
/// per element), from torch's `_dtype_to_storage_type_map` and element sizes.
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
    ("ComplexDoubleStorage", "complex128", false, 16),
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
    ("complex128", "complex128", false, 16),
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

fn storage_element_size(type_name: &str) -> Option<u64> {
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

fn fortran_strides(shape: &[u64]) -> Vec<u64> {
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
fn inventory(
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
                    format!("dtype {dtype} has no safetensors name"),
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
    let mut shares: Vec<(u32, Vec<String>)> = Vec::new();
    for group in order.chunk_by(|a, b| key(a).map(|k| k.0) == key(b).map(|k| k.0)) {
        if group.len() < 2 {
            continue;
        }
        let mut names: Vec<&str> = group.iter().filter_map(|k| key(k).map(|k| k.1)).collect();
        names.dedup();
        for k in group {
            let Some((_, own)) = key(k) else { continue };
            let others: Vec<String> = names.iter().filter(|n| **n != own).take(MAX_SHARED_NAMES).map(|n| n.to_string()).collect();
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

/// The legacy format's first bytes as torch writes them (protocol 2): PROTO 2, LONG1 of
/// [`LEGACY_MAGIC`], STOP.
pub const LEGACY_PREFIX: &[u8] = b"\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19.";

/// A cheap guess from the first bytes, for a dispatcher choosing a parser (no walk): a zip
/// answers [`Container::PytorchZip`] (an `.npz` is told apart only by its directory), the
/// `.npy` magic [`Container::Npy`], torch's legacy prefix [`Container::PytorchLegacy`], a
/// PROTO opcode of protocol 2–5 [`Container::Pickle`]. Protocol 0–1 pickles have no
/// marker: `None`, like anything else ([`Reader`] still reads them).
pub fn sniff(head: &[u8]) -> Option<Container> {
    if head.starts_with(b"PK\x03\x04") || head.starts_with(b"PK\x05\x06") {
        Some(Container::PytorchZip)
    } else if head.starts_with(npy::MAGIC) {
        Some(Container::Npy)
    } else if head.starts_with(LEGACY_PREFIX) {
        Some(Container::PytorchLegacy)
    } else if head.first() == Some(&0x80) && head.get(1).is_some_and(|p| (2..=5).contains(p)) {
        Some(Container::Pickle)
    } else {
        None
    }
}

/// Runs a [`Reader`] over an in-memory file. Returns the inspection and the bytes served.
pub fn parse_all(bytes: &[u8]) -> (Inspection, u64) {
    let mut r = Reader::new(bytes.len() as u64);
    let mut served = 0u64;
    loop {
        match r.step() {
            Next::NeedRange { start, len } => {
                let also = r.take_also_needed();
                for (start, len) in std::iter::once((start, len)).chain(also) {
                    let s = usize::try_from(start).unwrap_or(usize::MAX);
                    let e = usize::try_from(start.saturating_add(len)).unwrap_or(usize::MAX);
                    let chunk = bytes.get(s..e.min(bytes.len())).unwrap_or(&[]).to_vec();
                    served = served.saturating_add(chunk.len() as u64);
                    r.supply(start, chunk);
                }
            }
            Next::Done(i) => return (*i, served),
        }
    }
}

pub mod convert;
pub mod file;

pub use file::TorchFile;

#[cfg(test)]
mod tests;
