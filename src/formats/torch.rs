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

use crate::error::{Code, Finding};
use crate::formats::npy;
use crate::formats::pickle::eval::{GlobalRef, MoreGlobals, Walk, MAX_GLOBALS};
use crate::formats::pickle::safety::{GlobalVerdict, Verdict};
use crate::formats::zip;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

mod inventory;
mod legacy;
mod numpy;
mod pickles;
mod ranges;
mod zipped;

pub use inventory::{
    is_contiguous, row_major_strides, storage_users, MAX_SHARED_NAMES, SHARED_NAMES_SLACK,
    SHARED_NAME_CLIP,
};
pub use legacy::{LEGACY_COUNT_LEN, LEGACY_MAGIC, LEGACY_PREFIX};
pub use numpy::MAX_NPZ_MEMBERS;
pub use pickles::PICKLE_CHUNK;
pub use ranges::RangeCache;
pub use zipped::TAIL_LEN;

use ranges::{Fetch, Need};

/// The first read: a zip member's fixed local header, enough to tell the containers apart
/// (a zip's first member name follows it, read next — so that no byte past `data.pkl`'s
/// start, where a small file's tensor data may already lie, is read for the inventory).
pub const HEAD_LEN: u64 = zip::LOCAL_HEADER_LEN;
/// Largest pickle we walk (`data.pkl`, a legacy main pickle, a plain pickle, a nested
/// one). A 400 B-parameter state dict's `data.pkl` is a few MB; 512 MiB bounds memory.
pub const MAX_PICKLE_LEN: u64 = 512 << 20;

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
    directory: Option<zipped::Directory>,
    /// A legacy file's storages placed so far (see `run_legacy`).
    legacy: Option<legacy::Legacy>,
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
            let name_len = u64::from(zipped::first_name_len(&head));
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
