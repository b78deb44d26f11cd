//! What must hold for any input, checked on one input at a time: the fuzz targets in
//! `fuzz/` call these on every input libFuzzer makes, and `tests/fuzz_regressions.rs`
//! replays every input that ever broke one (docs/fuzzing.md).
//!
//! Each `*_case` takes the raw fuzz input, decodes it into a file (or a set of files) as
//! documented there, runs the parser or the decoder, and returns `Err` naming the first
//! invariant that does not hold:
//! - a parser asked for more bytes always asks for more than it has and never for more
//!   than the file; fed a growing prefix in any steps it ends where a one-shot parse of the
//!   whole header ends (the same findings, tensors and values);
//! - a file judged sound (no errors) has tensors that tile its data section — in offset
//!   order, no overlap, no hole (GGUF: no hole beyond the alignment padding), all inside
//!   the file — and a layout that adds up;
//! - the report serializes and parses back as JSON, offsets as integers;
//! - the driver reads no more than the documented bound (safetensors: 8 + N; GGUF: the
//!   data start + one read granule, at most `MAX_GGUF_HEADER_BYTES` + one granule);
//! - time is linear: more than 10 ms of CPU time per KiB of input (the thread's CPU
//!   clock, so a busy machine is not a failure; confirmed by a second run) is an error;
//! - findings stay bounded (at most [`MAX_FINDINGS_PER_CODE`] + 1 per code);
//! - decoding is independent of how the bytes are chunked, and the statistics are
//!   consistent (counts add up, min ≤ max, the histogram counts every finite value).
//!
//! Native only (it measures time). Not used by the page or the CLI.

use crate::dtype::decode::Codec;
use crate::dtype::ggml::GGML_TYPES;
use crate::dtype::{Dtype, TensorDtype};
use crate::error::{Code, Finding, SourceError, MAX_FINDINGS_PER_CODE};
use crate::formats::gguf::{self, MAX_GGUF_HEADER_BYTES};
use crate::formats::pickle::eval::{walk, Context, End, Walk, MAX_OPCODES};
use crate::formats::pickle::{GlobalVerdict, Verdict};
use crate::formats::torch::{self, Container};
use crate::formats::{safetensors, zip, Inspection, Parsed, Step};
use crate::model::checkpoint::build_model;
use crate::report::{FileReport, ModelSection, Report};
use crate::source::set::{open_set, SetInput, SetOptions};
use crate::source::inspect::GGUF_READ_GRANULARITY;
use crate::source::ranges::read_ranges;
use crate::source::{self, ByteSource, DriveError};
use crate::values::TensorScanner;
use crate::vocab::{Format, TensorEntry};
use std::collections::BTreeMap;
use std::time::Duration;

/// Time allowed per KiB of input (and for any input under 1 KiB).
pub const MAX_TIME_PER_KIB: Duration = Duration::from_millis(10);
/// Zeros materialized past the fuzz input for the parsers (which take a prefix as one
/// slice): lets a claim be followed into the file's zero tail while keeping a case cheap.
pub const MAX_MATERIALIZED: usize = 64 << 10;
/// Zeros the driver may read past the fuzz input (a GGUF read is 1 MiB at least).
pub const MAX_READ_PAST_BODY: u64 = 2 << 20;

type Check = Result<(), String>;

/// The CPU time this thread has used: time spent waiting for a busy machine's cores does
/// not count (on a shared 2-core machine a parse of microseconds can wait for 20 ms).
#[cfg(unix)]
pub fn thread_cpu_time() -> Duration {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_THREAD_CPUTIME_ID is a clock every
    // supported unix has; on failure `ts` stays zero and the check measures nothing.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return Duration::ZERO;
    }
    Duration::new(u64::try_from(ts.tv_sec).unwrap_or(0), u32::try_from(ts.tv_nsec).unwrap_or(0))
}

/// Wall-clock time where no thread CPU clock exists.
#[cfg(not(unix))]
pub fn thread_cpu_time() -> Duration {
    use std::sync::OnceLock;
    static START: OnceLock<std::time::Instant> = OnceLock::new();
    START.get_or_init(std::time::Instant::now).elapsed()
}

/// How much slower than an optimized build this one runs: an unoptimized test build
/// (`cargo test`: debug assertions, no `fuzzing` cfg) takes ~20× the time.
const BUILD_SLOWDOWN: u32 = if cfg!(fuzzing) || !cfg!(debug_assertions) { 1 } else { 20 };

/// Runs `f`; if it took more than [`MAX_TIME_PER_KIB`] of CPU time per KiB of `work`
/// bytes (times [`BUILD_SLOWDOWN`]), runs it again and fails only when the second run is
/// slow too.
pub fn timed<T>(what: &str, work: usize, mut f: impl FnMut() -> T) -> Result<T, String> {
    let kib = u32::try_from(work.div_ceil(1024).max(1)).unwrap_or(u32::MAX);
    let budget = MAX_TIME_PER_KIB.saturating_mul(kib).saturating_mul(BUILD_SLOWDOWN);
    let t0 = thread_cpu_time();
    let out = f();
    if thread_cpu_time().saturating_sub(t0) <= budget {
        return Ok(out);
    }
    let t1 = thread_cpu_time();
    let out = f();
    let took = thread_cpu_time().saturating_sub(t1);
    if took > budget {
        return Err(format!("{what}: {took:?} of CPU time for {work} bytes, more than {MAX_TIME_PER_KIB:?} per KiB"));
    }
    Ok(out)
}

/// [`timed`] for work known only afterwards: `work` of the result (a reader's bytes read,
/// zeros of a gap included — time is linear in the bytes read).
pub fn timed_by<T>(what: &str, mut f: impl FnMut() -> T, work: impl Fn(&T) -> usize) -> Result<T, String> {
    let t0 = thread_cpu_time();
    let out = f();
    let took = thread_cpu_time().saturating_sub(t0);
    let n = work(&out);
    let kib = u32::try_from(n.div_ceil(1024).max(1)).unwrap_or(u32::MAX);
    let budget = MAX_TIME_PER_KIB.saturating_mul(kib).saturating_mul(BUILD_SLOWDOWN);
    if took <= budget {
        return Ok(out);
    }
    timed(what, n, f)
}

/// A file of `len` bytes: `body`, then zeros.
pub struct VirtualFile {
    pub body: Vec<u8>,
    pub len: u64,
    /// `body` and the first zeros of the tail (at most [`MAX_MATERIALIZED`]).
    head: Vec<u8>,
}

impl VirtualFile {
    pub fn new(body: Vec<u8>, len: u64) -> VirtualFile {
        let len = len.max(body.len() as u64);
        let head_len = usize::try_from(len).unwrap_or(usize::MAX).min(body.len().saturating_add(MAX_MATERIALIZED));
        let mut head = body.clone();
        head.resize(head_len, 0);
        VirtualFile { body, len, head }
    }

    /// First byte `k`: below 128, `k` zero bytes follow the body; 128 to 254: 2^(k − 128)
    /// (at most 2^62) — files far larger than their headers, past 4 GiB; 255: the next 8
    /// bytes (u64 LE) say how many (a fixture's header with its exact data length).
    pub fn from_fuzz(data: &[u8]) -> VirtualFile {
        let (k, body) = data.split_first().map_or((0, &[][..]), |(k, b)| (*k, b));
        let (extra, body) = match k {
            0..=127 => (u64::from(k), body),
            128..=254 => (1u64 << u32::from(k - 128).min(62), body),
            255 => match body.split_first_chunk::<8>() {
                Some((n, rest)) => (u64::from_le_bytes(*n), rest),
                None => (0, body),
            },
        };
        VirtualFile::new(body.to_vec(), (body.len() as u64).saturating_add(extra))
    }

    /// The first `n` bytes, when they are materialized.
    pub fn prefix(&self, n: u64) -> Option<&[u8]> {
        if n > self.len {
            return None;
        }
        self.head.get(..usize::try_from(n).ok()?)
    }
}

impl ByteSource for VirtualFile {
    fn len(&self) -> u64 {
        self.len
    }

    async fn read_at(&self, start: u64, len: u64) -> Result<Vec<u8>, SourceError> {
        let end = start.checked_add(len).filter(|e| *e <= self.len).ok_or_else(|| SourceError::new("read past the end"))?;
        if end > (self.body.len() as u64).saturating_add(MAX_READ_PAST_BODY) {
            return Err(SourceError::new("read past what the test materializes"));
        }
        let (s, e) = (start as usize, end as usize);
        // Zeroed memory first (calloc: untouched pages cost nothing), then the body's part.
        let mut v = vec![0u8; e - s];
        let part = self.body.get(s.min(self.body.len())..e.min(self.body.len())).unwrap_or(&[]);
        if let Some(dst) = v.get_mut(..part.len()) {
            dst.copy_from_slice(part);
        }
        Ok(v)
    }
}

fn errors(findings: &[Finding]) -> bool {
    findings.iter().any(Finding::is_error)
}

fn bounded(findings: &[Finding]) -> Check {
    let mut per: BTreeMap<String, usize> = BTreeMap::new();
    for f in findings {
        *per.entry(f.code.as_str()).or_default() += 1;
    }
    match per.iter().find(|(_, n)| **n > MAX_FINDINGS_PER_CODE + 1) {
        Some((code, n)) => Err(format!("{n} {code} findings kept (at most {} allowed)", MAX_FINDINGS_PER_CODE + 1)),
        None => Ok(()),
    }
}

/// What is read back from a report: every file's tensors' offsets, as integers (serde
/// skips the rest of the document while checking that it is JSON).
#[derive(serde::Deserialize)]
struct Back {
    files: Vec<BackFile>,
}

#[derive(serde::Deserialize)]
struct BackFile {
    tensors: Vec<BackTensor>,
    data_start: Option<u64>,
}

#[derive(serde::Deserialize)]
struct BackTensor {
    start: u64,
    end: u64,
}

/// The report of one inspection serializes, parses back, and keeps offsets as integers.
pub fn report_round_trips(i: &Inspection) -> Check {
    let r = Report::new(vec![FileReport::borrowed(i, &BTreeMap::new())]);
    let text = serde_json::to_string(&r).map_err(|e| format!("the report does not serialize: {e}"))?;
    let back: Back = serde_json::from_str(&text).map_err(|e| format!("the report does not parse back: {e}"))?;
    let file = back.files.first().ok_or("the report has no file")?;
    if file.data_start != i.data_start() {
        return Err("the data start did not survive the JSON".into());
    }
    if file.tensors.len() != i.tensors().len() {
        return Err(format!("the report lists {} tensors, the file {}", file.tensors.len(), i.tensors().len()));
    }
    for (j, (b, t)) in file.tensors.iter().zip(i.tensors()).enumerate() {
        if (b.start, b.end) != (t.start, t.end) {
            return Err(format!("tensor {j}'s offsets did not survive the JSON"));
        }
    }
    Ok(())
}

/// One input in eight, chosen by a hash of its first bytes and length (so that mutations
/// of one seed do not all go the same way): for checks that cost ten times the parse.
fn one_in_eight(data: &[u8]) -> bool {
    let h = data.iter().take(64).fold(data.len() as u64, |h, b| h.rotate_left(5) ^ u64::from(*b));
    h.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 61 == 0
}

/// Tensors of a file without errors tile its data section (`align`: GGUF's alignment;
/// 1 for safetensors, which allows no padding), all inside the file.
fn tiles(tensors: &[TensorEntry], data_start: u64, file_len: u64, align: u64, exact_end: bool) -> Check {
    // A GGUF without tensors may end before the padding that would align its (empty) data
    // section: llama.cpp and gguf-py read it, there being nothing to read there.
    if tensors.is_empty() && data_start > file_len {
        return if data_start - file_len < align { Ok(()) } else { Err("the data section starts past the end of the file and its padding".into()) };
    }
    let data_len = file_len.checked_sub(data_start).ok_or("the data section starts past the end of the file")?;
    let mut spans: Vec<(u64, u64, &str)> = Vec::new();
    for t in tensors {
        let bytes = t.bytes.ok_or_else(|| format!("{:?}: sound file, unknown byte size", t.name))?;
        let end = t.start.checked_add(bytes).ok_or("end overflows")?;
        if end > data_len {
            return Err(format!("{:?} ends at {end}, past the data section ({data_len} bytes)", t.name));
        }
        if t.abs_start != data_start.checked_add(t.start) {
            return Err(format!("{:?}: abs_start {:?} is not data start + start", t.name, t.abs_start));
        }
        spans.push((t.start, end, &t.name));
    }
    spans.sort_unstable();
    let mut expected = 0u64;
    for (start, end, name) in &spans {
        let aligned = expected.div_ceil(align).saturating_mul(align);
        if *start < expected {
            return Err(format!("{name:?} [{start}, {end}) overlaps the previous tensor (ends at {expected})"));
        }
        if *start > aligned.max(expected) {
            return Err(format!("{name:?} starts at {start}, leaving a hole after {expected}"));
        }
        expected = expected.max(*end);
    }
    if exact_end && expected != data_len {
        return Err(format!("the tensors end at {expected}, the data section at {data_len}"));
    }
    Ok(())
}

// ------------------------------------------------------------------ safetensors

/// The safetensors header parser over a (prefix, file length): fuzz input = [length byte
/// (see [`VirtualFile::from_fuzz`])] ++ file bytes.
pub fn safetensors_case(data: &[u8]) -> Check {
    let file = VirtualFile::from_fuzz(data);
    let len = file.len;
    // Growing prefixes, exactly as asked.
    let mut have = 0u64;
    let mut rounds = 0;
    let header = loop {
        let Some(prefix) = file.prefix(have) else { return Ok(()) };
        let step = timed("safetensors::parse", prefix.len(), || safetensors::parse(prefix, len))?;
        match step {
            Step::Done(h) => break h,
            Step::Need(n) => {
                if n <= have || n > len {
                    return Err(format!("asked for {n} bytes with {have} in hand of a {len}-byte file"));
                }
                have = n;
            }
        }
        rounds += 1;
        if rounds > 3 {
            return Err(format!("{rounds} rounds for a safetensors header (8 bytes, then 8 + N)"));
        }
    };
    bounded(&header.findings)?;
    let read = 8u64.saturating_add(header.header_len.unwrap_or(0));
    if !errors(&header.findings) {
        let ds = header.data_start.ok_or("a sound file without a data start")?;
        tiles(&header.tensors, ds, len, 1, true)?;
        for t in &header.tensors {
            if let (TensorDtype::Safetensors(d), Some(p), Some(b)) = (&t.dtype, t.params, t.bytes) {
                if p.checked_mul(d.bits()) != b.checked_mul(8) {
                    return Err(format!("{:?}: {p} {} elements in {b} bytes", t.name, d.name()));
                }
            }
        }
    }
    // The driver: the same header, read in exactly two reads of 8 and N bytes.
    let i = pollster::block_on(source::inspect(&file, "fuzz.safetensors"));
    if i.format == Format::Safetensors {
        if let Some(h) = i.parsed.safetensors() {
            if *h != header {
                return Err("the driver's result differs from the parser's".into());
            }
            if i.bytes_read > read.min(len) {
                return Err(format!("read {} bytes, more than 8 + N = {read}", i.bytes_read));
            }
        }
    }
    report_round_trips(&i)
}

// ------------------------------------------------------------------ GGUF

/// A small deterministic generator for read steps.
struct Steps(u64);

impl Steps {
    fn next(&mut self, max: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        if max == 0 {
            0
        } else {
            self.0 % max
        }
    }
}

/// The GGUF parser fed growing prefixes in random steps through one [`gguf::Resume`]:
/// fuzz input = [length byte] ++ [step seed byte] ++ file bytes. One input in eight (by a
/// hash) also runs the driver and the report.
pub fn gguf_case(data: &[u8]) -> Check {
    gguf_check(data, one_in_eight(data))
}

/// [`gguf_case`] with the driver and the report checked on every input (the tests).
pub fn gguf_case_full(data: &[u8]) -> Check {
    gguf_check(data, true)
}

fn gguf_check(data: &[u8], deep: bool) -> Check {
    let (seed, rest) = match data {
        [k, s, rest @ ..] => (*s, [&[*k][..], rest].concat()),
        _ => (0, data.to_vec()),
    };
    let file = VirtualFile::from_fuzz(&rest);
    let len = file.len;
    let mut steps = Steps(u64::from(seed).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let granule = [1u64, 7, 64, 4096, 1 << 20][usize::from(seed % 5)];
    let mut resume = gguf::Resume::default();
    let mut have = 0u64;
    let mut rounds = 0u64;
    let resumed = loop {
        let Some(prefix) = file.prefix(have) else { return Ok(()) };
        let step = timed("gguf::parse_resumable", prefix.len(), || {
            // Timing re-runs must not see a resume point the first run consumed.
            let mut r = std::mem::take(&mut resume);
            let s = gguf::parse_resumable(prefix, len, &mut r);
            (s, r)
        });
        let (step, r) = match step {
            Ok(x) => x,
            // A slow round may be the resume point's doing: say which.
            Err(e) => return Err(format!("{e} (round {rounds}, prefix {have})")),
        };
        resume = r;
        match step {
            Step::Done(g) => break g,
            Step::Need(n) => {
                if n <= have || n > len {
                    return Err(format!("asked for {n} bytes with {have} in hand of a {len}-byte file"));
                }
                have = n.saturating_add(steps.next(granule)).min(len);
            }
        }
        rounds += 1;
        if rounds > 100_000 {
            return Err("more than 100,000 rounds".into());
        }
    };
    let Some(full) = file.prefix(have) else { return Ok(()) };
    let once = match timed("gguf::parse", full.len(), || gguf::parse(full, len))? {
        Step::Done(g) => g,
        Step::Need(n) => return Err(format!("a one-shot parse of the prefix that sufficed asked for {n} bytes")),
    };
    if !same(&once, &resumed) {
        return Err(format!("the resumed parse differs from the one-shot parse: {}", gguf_diff(&once, &resumed)));
    }
    bounded(&once.findings)?;
    if !errors(&once.findings) {
        if let Some(ds) = once.header.data_start {
            tiles(&once.tensors, ds, len, once.header.alignment.max(1), false)?;
        }
        if !once.layout.adds_up {
            return Err(format!("a sound file whose layout does not add up: {:?}", once.layout));
        }
    }
    // The driver (1 MiB granules, never past the data start + one granule) and the report:
    // for one input in 8, as they cost ten times the parse.
    if !deep {
        return Ok(());
    }
    let i = pollster::block_on(source::inspect(&file, "fuzz.gguf"));
    if let Parsed::Gguf(g) = &i.parsed {
        if !same(g, &once) && i.read_findings.is_empty() {
            return Err("the driver's result differs from the one-shot parse".into());
        }
        let nested = g.findings.iter().any(|f| f.code == Code::NestedArray);
        let cap = MAX_GGUF_HEADER_BYTES.saturating_add(GGUF_READ_GRANULARITY);
        let bound = match g.header.data_start {
            Some(ds) if !nested => ds.saturating_add(GGUF_READ_GRANULARITY).min(cap),
            _ => cap,
        };
        if i.bytes_read > bound.min(len) {
            return Err(format!("read {} bytes; the bound is {bound}", i.bytes_read));
        }
    }
    report_round_trips(&i)
}

/// Equal parses (a NaN metadata value equals itself here: compared by its Debug text).
fn same(a: &gguf::GgufFile, b: &gguf::GgufFile) -> bool {
    a == b || format!("{a:?}") == format!("{b:?}")
}

/// Which part of two parses differs (the first), for the failure message.
fn gguf_diff(a: &gguf::GgufFile, b: &gguf::GgufFile) -> String {
    if a.header != b.header {
        return format!("header {:?} / {:?}", a.header, b.header);
    }
    if a.findings != b.findings {
        let codes = |g: &gguf::GgufFile| g.findings.iter().map(|f| format!("{}@{:?}", f.code, f.offset)).collect::<Vec<_>>();
        return format!("findings {:?} / {:?}", codes(a), codes(b));
    }
    if let Some(i) = (0..a.kvs.len().max(b.kvs.len())).find(|i| a.kvs.get(*i) != b.kvs.get(*i)) {
        return format!("kv {i}: {:?} / {:?}", a.kvs.get(i).map(|k| (&k.key, k.offset, k.bytes)), b.kvs.get(i).map(|k| (&k.key, k.offset, k.bytes)));
    }
    if a.tensors != b.tensors {
        return format!("tensors ({} / {})", a.tensors.len(), b.tensors.len());
    }
    if a.tokenizer != b.tokenizer {
        return format!("tokenizer {:?} / {:?}", a.tokenizer, b.tokenizer);
    }
    "card or layout".into()
}

// ------------------------------------------------------------------ companions and sets

const COMPANION_NAMES: [&str; 5] = ["model.safetensors.index.json", "config.json", "tokenizer.json", "tokenizer_config.json", "generation_config.json"];

/// One JSON companion, merged as a checkpoint would be: fuzz input = [kind byte (index,
/// config, tokenizer, tokenizer config, generation config)] ++ JSON bytes. A config is
/// checked against a small Llama-shaped tensor list, so the inventory check runs too.
pub fn companions_case(data: &[u8]) -> Check {
    let (k, body) = data.split_first().map_or((0, &[][..]), |(k, b)| (*k, b));
    let name = COMPANION_NAMES[usize::from(k) % COMPANION_NAMES.len()];
    let shard = llama_shard();
    let files: Vec<&Inspection> = if name == "config.json" { vec![&shard] } else { vec![] };
    let companions = vec![(name.to_string(), body.to_vec())];
    let m = timed("build_model", body.len(), || build_model(&files, &companions))?;
    let all: Vec<Finding> = m.findings().cloned().collect();
    bounded(&all)?;
    let text = serde_json::to_string(&m).map_err(|e| format!("the model does not serialize: {e}"))?;
    serde_json::from_str::<serde_json::Value>(&text).map_err(|e| format!("the model does not parse back: {e}"))?;
    Ok(())
}

/// A one-layer Llama-shaped shard (hidden 4, 2 heads, vocab 8).
fn llama_shard() -> Inspection {
    let names: [(&str, &[u64]); 6] = [
        ("model.embed_tokens.weight", &[8, 4]),
        ("model.layers.0.self_attn.q_proj.weight", &[4, 4]),
        ("model.layers.0.self_attn.k_proj.weight", &[2, 4]),
        ("model.layers.0.mlp.down_proj.weight", &[4, 8]),
        ("model.layers.0.input_layernorm.weight", &[4]),
        ("model.norm.weight", &[4]),
    ];
    let mut off = 0u64;
    let mut entries = Vec::new();
    for (n, shape) in names {
        let bytes = shape.iter().product::<u64>() * 2;
        entries.push(format!(r#""{n}":{{"dtype":"BF16","shape":{shape:?},"data_offsets":[{off},{}]}}"#, off + bytes));
        off += bytes;
    }
    let header = format!("{{{}}}", entries.join(","));
    let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
    bytes.extend_from_slice(header.as_bytes());
    let len = bytes.len() as u64 + off;
    let h = match safetensors::parse(&bytes, len) {
        Step::Done(h) => h,
        Step::Need(_) => safetensors::Header { header_len: None, data_start: None, metadata: Vec::new(), tensors: Vec::new(), findings: Vec::new() },
    };
    Inspection::new("model.safetensors", len, Format::Safetensors, bytes.len() as u64, Parsed::Safetensors(h))
}

/// Several small files opened together (checkpoint shards, split GGUF parts, companions):
/// fuzz input = records of [kind byte][part byte][length u16 LE][bytes]. Kinds: 0
/// safetensors shard `model-0000k-of-0000n.safetensors`, 1 GGUF part
/// `m-0000k-of-0000n.gguf`, 2–6 the companions, 7 a file with another name.
pub fn assembly_case(data: &[u8]) -> Check {
    let mut inputs = Vec::new();
    let mut rest = data;
    while let [kind, part, l0, l1, tail @ ..] = rest {
        let n = usize::from(u16::from_le_bytes([*l0, *l1])).min(tail.len());
        let (bytes, after) = tail.split_at(n);
        rest = after;
        let (k, of) = (u64::from(part % 4) + 1, u64::from(part / 64) + 1);
        let name = match kind % 8 {
            0 => format!("model-{k:05}-of-{of:05}.safetensors"),
            1 => format!("m-{k:05}-of-{of:05}.gguf"),
            2..=6 => COMPANION_NAMES[usize::from(kind % 8 - 2)].to_string(),
            _ => format!("notes-{k}.bin"),
        };
        inputs.push(SetInput { name, src: crate::source::MemorySource::new(bytes.to_vec()), explain: kind % 8 == 7 });
        if inputs.len() >= 8 {
            break;
        }
    }
    let set = timed("open_set", data.len(), || pollster::block_on(open_set(&inputs, SetOptions { classify_by_content: true }, |_, _| {})))?;
    let mut findings: Vec<Finding> = set.checkpoint.iter().flat_map(|c| c.findings().cloned()).collect();
    bounded(&findings)?;
    for s in &set.splits {
        findings = s.findings().cloned().collect();
        bounded(&findings)?;
    }
    let mut report = Report::new(set.inspections().map(|i| FileReport::borrowed(i, &BTreeMap::new())).collect());
    report.model = match (&set.checkpoint, set.splits.first()) {
        (Some(c), _) => Some(ModelSection::Checkpoint(Box::new(c.clone()))),
        (None, Some(s)) => Some(ModelSection::Split(Box::new(s.clone()))),
        (None, None) => None,
    };
    let text = serde_json::to_string(&report).map_err(|e| format!("the report does not serialize: {e}"))?;
    serde_json::from_str::<serde_json::Value>(&text).map_err(|e| format!("the report does not parse back: {e}"))?;
    Ok(())
}

// ------------------------------------------------------------------ decoding

/// Every element type we decode or refuse: the 22 safetensors dtypes, then the ggml ids.
pub fn every_dtype() -> Vec<TensorDtype> {
    Dtype::all().map(TensorDtype::Safetensors).chain((0..GGML_TYPES.len() as u32).map(TensorDtype::Ggml)).collect()
}

/// A tensor of any element type decoded from random bytes: fuzz input = [type byte
/// ([`every_dtype`] index)] ++ [chunking seed byte] ++ stored bytes (cut to whole units).
/// The statistics must not depend on how the bytes are chunked, and must be consistent.
pub fn decode_case(data: &[u8]) -> Check {
    let [t, seed, bytes @ ..] = data else { return Ok(()) };
    let types = every_dtype();
    let Some(dtype) = types.get(usize::from(*t) % types.len()) else { return Ok(()) };
    let Ok(codec) = Codec::for_dtype(dtype) else { return Ok(()) };
    let unit = codec.unit_bytes();
    let units = bytes.len() / unit;
    let Some(bytes) = bytes.get(..units * unit) else { return Ok(()) };
    let elements = (units * codec.unit_values()) as u64;
    // Two dimensions when they divide evenly, so that the preview's rows are exercised.
    let rows = [elements / 4, 4];
    let flat = [elements];
    let shape: &[u64] = if elements.is_multiple_of(4) && elements > 0 { &rows } else { &flat };
    let whole = timed("decode", bytes.len(), || {
        let mut s = TensorScanner::new(codec.clone(), shape, bytes.len() as u64, true);
        s.feed(bytes);
        s.finish()
    })?
    .map_err(|e| format!("{dtype}: a whole-units tensor did not decode: {e}"))?;
    let mut steps = Steps(u64::from(*seed).wrapping_mul(0x2545_F491_4F6C_DD1D) | 1);
    let mut s = TensorScanner::new(codec.clone(), shape, bytes.len() as u64, true);
    let mut rest = bytes;
    while !rest.is_empty() {
        let n = (steps.next(rest.len() as u64 + 1) as usize).clamp(1, rest.len());
        let (a, b) = rest.split_at(n);
        s.feed(a);
        rest = b;
    }
    let chunked = s.finish().map_err(|e| format!("{dtype}: chunked decode failed: {e}"))?;
    let (a, b) = (serde_json::to_string(&whole).unwrap_or_default(), serde_json::to_string(&chunked).unwrap_or_default());
    if a != b {
        return Err(format!("{dtype}: stats differ with the chunking:\n{a}\n{b}"));
    }
    if whole.count != elements {
        return Err(format!("{dtype}: {} values for {elements} elements", whole.count));
    }
    let nonfinite = whole.nan + whole.pos_inf + whole.neg_inf;
    let finite = elements.checked_sub(nonfinite).ok_or("more non-finite values than values")?;
    let hist: u64 = whole.histogram.as_ref().map_or(0, |h| h.counts.iter().sum());
    if hist != finite {
        return Err(format!("{dtype}: the histogram counts {hist} of {finite} finite values"));
    }
    if let (Some(lo), Some(hi)) = (whole.min, whole.max) {
        if lo > hi || lo.is_nan() || hi.is_nan() {
            return Err(format!("{dtype}: min {lo} > max {hi}"));
        }
    }
    if whole.zeros.saturating_add(whole.subnormals) > finite {
        return Err(format!("{dtype}: zeros and subnormals exceed the finite values"));
    }
    // The decoder itself, whole: one value per element, the same extremes.
    let mut out: Vec<f64> = Vec::new();
    codec.decode(bytes, &mut out);
    if out.len() as u64 != elements {
        return Err(format!("{dtype}: decode gave {} values for {elements}", out.len()));
    }
    let fin = out.iter().copied().filter(|v| v.is_finite());
    let (lo, hi) = fin.fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), v| (l.min(v), h.max(v)));
    if finite > 0 && (whole.min != Some(lo) || whole.max != Some(hi)) {
        return Err(format!("{dtype}: min/max {:?}/{:?} but the values span {lo}..{hi}", whole.min, whole.max));
    }
    Ok(())
}

// ------------------------------------------------------------------ pickle and PyTorch

/// torch's legacy protocol-version pickle (`PROTO 2, BININT2 1001, STOP`): with
/// [`torch::LEGACY_PREFIX`] in front of the fuzz bytes, they are a legacy file's system
/// info, main pickle, storage keys and storages.
const LEGACY_VERSION: &[u8] = b"\x80\x02M\xe9\x03.";

/// Counts findings of `code`, a `more` summary for as many as it counts.
fn count_of(findings: &[Finding], code: Code) -> u64 {
    findings.iter().filter(|f| f.code == code).map(|f| if f.more > 0 { f.more } else { 1 }).sum()
}

/// What a static walk of `len` bytes at absolute `base` must hold: it ends inside its
/// bytes, every import, storage and tensor it records is at an opcode inside them, its
/// findings point inside them, and it walked at most `MAX_OPCODES` opcodes.
fn walk_checks(w: &Walk, base: u64, len: usize) -> Check {
    let end = base.checked_add(len as u64).ok_or("base + length overflows")?;
    let inside = |at: u64| base <= at && at < end;
    match w.end {
        End::Stop(e) if e <= base || e > end => return Err(format!("STOP reported at {e}, outside ({base}, {end}]")),
        End::OutOfData(a) if a < base || a > end => return Err(format!("ran out of data at {a}, outside [{base}, {end}]")),
        _ => {}
    }
    if w.opcodes > MAX_OPCODES {
        return Err(format!("{} opcodes walked, more than MAX_OPCODES", w.opcodes));
    }
    if let Some(g) = w.globals.iter().find(|g| !inside(g.offset)) {
        return Err(format!("import {:?}.{:?} at {}, outside [{base}, {end})", g.module, g.name, g.offset));
    }
    if let Some(s) = w.storages.iter().find(|s| !inside(s.offset)) {
        return Err(format!("storage {:?} at {}, outside [{base}, {end})", s.key, s.offset));
    }
    if let Some(t) = w.tensors.iter().find(|t| !inside(t.offset) || t.storage as usize >= w.storages.len()) {
        return Err(format!("tensor at {} (storage {} of {})", t.offset, t.storage, w.storages.len()));
    }
    if let Some(f) = w.findings.iter().find(|f| f.offset.is_some_and(|o| o < base || o > end)) {
        return Err(format!("{} finding at {:?}, outside [{base}, {end}]", f.code, f.offset));
    }
    Ok(())
}

/// What a pickle-family inspection of a `file_len`-byte file must hold, whatever the
/// bytes: findings bounded per code and inside the file; the verdict says Dangerous
/// exactly when an import is dangerous, Safe only with no error and only allowed imports;
/// every import not allowed has its finding (counted through the `more` summaries); every
/// tensor's byte range lies inside the file unless an error says it does not.
fn torch_checks(i: &torch::Inspection, file_len: u64) -> Check {
    bounded(&i.findings)?;
    if i.size != file_len {
        return Err(format!("size {} for a {file_len}-byte file", i.size));
    }
    if i.opcodes > MAX_OPCODES {
        return Err(format!("{} opcodes walked, more than MAX_OPCODES", i.opcodes));
    }
    let globals = |v: GlobalVerdict| i.safety.globals.iter().filter(|g| g.verdict == v).count() as u64;
    let more = i.safety.more_globals;
    let (dangerous, unknown) = (globals(GlobalVerdict::Dangerous) + more.dangerous, globals(GlobalVerdict::Unknown) + more.unknown);
    let verdict = i.safety.verdict;
    if (verdict == Verdict::Dangerous) != (dangerous > 0) {
        return Err(format!("verdict {} with {dangerous} dangerous imports", verdict.name()));
    }
    let errors = i.findings.iter().any(|f| f.is_error() && f.code != Code::DangerousGlobal);
    if verdict == Verdict::Safe && (errors || unknown > 0 || i.format == Container::Unknown) {
        return Err(format!("verdict safe for a {} file with errors ({errors}) or {unknown} unknown imports", i.format.name()));
    }
    if verdict == Verdict::Suspicious && (errors || unknown == 0) {
        return Err(format!("verdict suspicious with errors ({errors}) or no unknown import"));
    }
    for (code, n) in [(Code::DangerousGlobal, dangerous), (Code::UnknownGlobal, unknown)] {
        if count_of(&i.findings, code) != n {
            return Err(format!("{n} imports judged {code}, {} such findings", count_of(&i.findings, code)));
        }
    }
    if let Some(g) = i.safety.globals.iter().find(|g| g.offset >= file_len) {
        return Err(format!("import {:?}.{:?} at {}, past the end of the file", g.module, g.name, g.offset));
    }
    if let Some(f) = i.findings.iter().find(|f| f.offset.is_some_and(|o| o > file_len)) {
        return Err(format!("{} finding at {:?}, past the end of the file", f.code, f.offset));
    }
    if let Some((at, n)) = i.pickle {
        if at.checked_add(n).is_none_or(|e| e > file_len) {
            return Err(format!("the pickle ({n} bytes at {at}) runs past the end of the file"));
        }
    }
    // An error naming the tensor, or its storage (a legacy storage running past the end),
    // or counting such errors past the cap.
    let said = |t: &torch::Tensor| {
        let storage = format!("{:?}", t.storage);
        i.findings.iter().any(|f| {
            f.is_error()
                && matches!(f.code, Code::TensorPastEnd | Code::TensorPastStorage | Code::ShapeOverflow)
                && (f.more > 0 || f.tensor.as_deref() == Some(t.name.as_str()) || (f.tensor.is_none() && f.message.contains(&storage)))
        })
    };
    for t in &i.tensors {
        if let (Some(s), Some(e)) = (t.start, t.end) {
            if (s > e || e > file_len) && !said(t) {
                return Err(format!("tensor {:?} at [{s}, {e}) of a {file_len}-byte file, and no error says so", t.name));
            }
        }
        if t.shape.len() != t.stride.len() {
            return Err(format!("tensor {:?}: {} dims, {} strides", t.name, t.shape.len(), t.stride.len()));
        }
    }
    Ok(())
}

/// The end of the last of the pickles the reader walks from the start of a non-zip
/// file (one pickle, or a legacy file's five), walked one-shot over `bytes`, and an upper
/// bound on the storage keys; `None` when a walk does not reach its STOP (the reader may
/// then read to the end of the file).
fn pickles_end(bytes: &[u8]) -> Option<(u64, u64)> {
    let first = walk(bytes, &Context::default());
    let End::Stop(e) = first.end else { return None };
    if first.root.as_i128() != Some(torch::LEGACY_MAGIC) {
        return Some((e, 0));
    }
    let (mut pos, mut keys) = (e, 0);
    for k in 1..5 {
        let ctx = Context { base: pos, member: None, torch: k == 3 };
        let w = walk(bytes.get(usize::try_from(pos).ok()?..)?, &ctx);
        let End::Stop(e) = w.end else { return None };
        (pos, keys) = (e, w.opcodes);
    }
    Some((pos, keys))
}

/// The bytes a reader may read of a non-zip pickle file whose pickles end at `end`, with
/// at most `keys` storages after them (docs/limits.md: the pickles from the start, read
/// in windows that at most double — the first at least `PICKLE_CHUNK` —, and the 8-byte
/// count in front of each storage).
fn pickle_read_bound(end: u64, keys: u64) -> u64 {
    end.saturating_mul(2).max(end.saturating_add(torch::PICKLE_CHUNK)).max(torch::HEAD_LEN).saturating_add(keys.saturating_mul(torch::LEGACY_COUNT_LEN))
}

/// The report of a pickle-family file round-trips and carries its safety verdict.
fn torch_report(i: &Inspection) -> Check {
    report_round_trips(i)?;
    let Some(t) = i.parsed.torch() else { return Ok(()) };
    let r = Report::new(vec![FileReport::borrowed(i, &BTreeMap::new())]);
    let v = serde_json::to_value(&r).map_err(|e| format!("the report does not serialize: {e}"))?;
    let verdict = v.pointer("/files/0/safety/verdict").and_then(|v| v.as_str());
    if verdict != Some(t.inspection.safety.verdict.name()) {
        return Err(format!("the report's safety verdict is {verdict:?}, the file's {}", t.inspection.safety.verdict.name()));
    }
    Ok(())
}

/// The static pickle walker over arbitrary bytes, then the reader over them as a whole
/// file (a plain pickle, or a legacy torch file): fuzz input = [mode byte] ++ bytes. Mode
/// bit 0 puts torch's legacy magic and protocol-version pickles in front (the bytes are
/// then the system info, main pickle, storage keys and storages); bit 1 walks with torch
/// persistent ids expected; bit 2 walks at absolute offset 2^62; bit 3 in a zip member.
pub fn pickle_case(data: &[u8]) -> Check {
    let (mode, body) = data.split_first().map_or((0, &[][..]), |(m, b)| (*m, b));
    let bytes = if mode & 1 == 1 { [torch::LEGACY_PREFIX, LEGACY_VERSION, body].concat() } else { body.to_vec() };
    let base = if mode & 4 != 0 { 1u64 << 62 } else { 0 };
    let ctx = Context { base, member: (mode & 8 != 0).then(|| "archive/data.pkl".to_string()), torch: mode & 2 != 0 };
    let (w, named) = timed("pickle::walk", bytes.len(), || {
        let w = walk(&bytes, &ctx);
        let named = w.named_tensors();
        (w, named)
    })?;
    walk_checks(&w, base, bytes.len())?;
    if named.0.iter().any(|n| n.tensor as usize >= w.tensors.len()) {
        return Err("a named tensor that the walk did not rebuild".into());
    }
    // The reader over the same bytes as a file.
    let len = bytes.len() as u64;
    let (i, served) = timed("torch::parse_all", bytes.len(), || torch::parse_all(&bytes))?;
    torch_checks(&i, len)?;
    if served != i.bytes_read || served > len {
        return Err(format!("served {served} bytes of {len}, the reader counts {}", i.bytes_read));
    }
    let magic = bytes.starts_with(b"PK\x03\x04") || bytes.starts_with(b"PK\x05\x06") || bytes.starts_with(crate::formats::npy::MAGIC);
    if !magic {
        // The reader walks the first pickle in growing windows: it must see what a
        // one-shot walk of the whole file sees.
        let one = if base == 0 && ctx.member.is_none() && !ctx.torch { w } else { walk(&bytes, &Context::default()) };
        if one.globals.iter().any(|g| g.verdict == GlobalVerdict::Dangerous) && i.safety.verdict != Verdict::Dangerous {
            return Err(format!("a one-shot walk finds a dangerous import, the reader says {}", i.safety.verdict.name()));
        }
        if matches!(i.format, Container::Pickle | Container::Unknown) && (i.safety.globals != one.globals || i.opcodes != one.opcodes) {
            return Err(format!(
                "the reader's walk ({} imports, {} opcodes) differs from a one-shot walk ({} imports, {} opcodes)",
                i.safety.globals.len(),
                i.opcodes,
                one.globals.len(),
                one.opcodes
            ));
        }
        if let Some((end, keys)) = pickles_end(&bytes) {
            let bound = pickle_read_bound(end, keys).min(len);
            if i.bytes_read > bound {
                return Err(format!("read {} bytes; the pickles end at {end}, the bound is {bound}", i.bytes_read));
            }
        }
    }
    // As the CLI and the page read it.
    let fi = pollster::block_on(source::inspect(&crate::source::MemorySource::new(bytes), "fuzz.pkl"));
    torch_report(&fi)
}

/// A file of `head`, then `gap` zero bytes, then `tail`: a zip's local headers and
/// `data.pkl` at the start, its central directory at the end and gigabytes of tensor data
/// between, from a fuzz input of a few KiB.
pub struct GapFile {
    pub head: Vec<u8>,
    pub gap: u64,
    pub tail: Vec<u8>,
    pub len: u64,
    /// Reads refused because they take more than [`MAX_READ_PAST_BODY`] zeros.
    refused: std::cell::Cell<u64>,
}

impl GapFile {
    /// Fuzz input = [gap byte] ++ [split, u16 LE] ++ bytes: the gap after the first
    /// `split` bytes (at most all of them) is the gap byte's count of zeros, read as
    /// [`VirtualFile::from_fuzz`] reads its length byte (255: the next 8 bytes, LE).
    pub fn from_fuzz(data: &[u8]) -> GapFile {
        let (k, split, body) = match data {
            [k, s0, s1, rest @ ..] => (*k, usize::from(u16::from_le_bytes([*s0, *s1])), rest),
            _ => (0, 0, &[][..]),
        };
        let (gap, body) = match k {
            0..=127 => (u64::from(k), body),
            128..=254 => (1u64 << u32::from(k - 128).min(62), body),
            255 => match body.split_first_chunk::<8>() {
                Some((n, rest)) => (u64::from_le_bytes(*n).min(1 << 62), rest),
                None => (0, body),
            },
        };
        let (head, tail) = body.split_at(split.min(body.len()));
        GapFile::new(head.to_vec(), gap, tail.to_vec())
    }

    pub fn new(head: Vec<u8>, gap: u64, tail: Vec<u8>) -> GapFile {
        let len = (head.len() as u64).saturating_add(gap).saturating_add(tail.len() as u64);
        GapFile { head, gap, tail, len, refused: std::cell::Cell::new(0) }
    }

    /// The whole file in memory, when its gap is at most [`MAX_MATERIALIZED`].
    pub fn materialized(&self) -> Option<Vec<u8>> {
        let gap = usize::try_from(self.gap).ok().filter(|g| *g <= MAX_MATERIALIZED)?;
        Some([&self.head[..], &vec![0u8; gap], &self.tail].concat())
    }
}

impl ByteSource for GapFile {
    fn len(&self) -> u64 {
        self.len
    }

    async fn read_at(&self, start: u64, len: u64) -> Result<Vec<u8>, SourceError> {
        let end = start.checked_add(len).filter(|e| *e <= self.len).ok_or_else(|| SourceError::new("read past the end"))?;
        let h = self.head.len() as u64;
        let t = h.saturating_add(self.gap);
        let zeros = end.min(t).saturating_sub(start.max(h));
        if zeros > MAX_READ_PAST_BODY {
            self.refused.set(self.refused.get().saturating_add(1));
            return Err(SourceError::new("read past what the test materializes"));
        }
        let n = usize::try_from(len).map_err(|_| SourceError::new("too long"))?;
        let mut v = vec![0u8; n];
        // the head's part
        if start < h {
            let (s, e) = (start as usize, end.min(h) as usize);
            if let (Some(dst), Some(src)) = (v.get_mut(..e - s), self.head.get(s..e)) {
                dst.copy_from_slice(src);
            }
        }
        // the tail's part
        if end > t {
            let from = start.max(t);
            let (s, e) = ((from - t) as usize, (end - t) as usize);
            let at = (from - start) as usize;
            if let (Some(dst), Some(src)) = (v.get_mut(at..at + (e - s)), self.tail.get(s..e)) {
                dst.copy_from_slice(src);
            }
        }
        Ok(v)
    }
}

/// Read rounds a torch zip may take: the head, the first member's name, the last 42
/// bytes, the whole comment window, the Zip64 record, the directory, `data.pkl`'s local
/// header, `data.pkl`, the storages' local headers (one round), and one more (docs/limits.md:
/// "a handful").
pub const MAX_ZIP_ROUNDS: u64 = 12;

/// The zip-based PyTorch reader (and `.npz`, and anything else the reader meets) over a
/// [`GapFile`]: fuzz input = [gap byte] ++ [split u16 LE] ++ file bytes. It runs through
/// the resumable reader exactly as `source::` drives it (`ranges::read_ranges`, with the
/// sniffed first 8 bytes handed in), then through `parse_all` over the same bytes in
/// memory (when the gap is small), then `source::inspect` and the report.
pub fn torch_case(data: &[u8]) -> Check {
    let file = GapFile::from_fuzz(data);
    let len = file.len;
    // What `source::inspect` sniffs first and hands to the reader.
    let head = pollster::block_on(file.read_at(0, len.min(safetensors::LEN_PREFIX))).unwrap_or_default();
    let read = |r: &(Result<torch::Inspection, DriveError>, source::ranges::RangeReads)| usize::try_from(r.1.bytes).unwrap_or(usize::MAX).max(data.len());
    let (result, cost) = timed_by("ranges::read_ranges", || pollster::block_on(read_ranges(&file, &head)), read)?;
    let i = match result {
        Ok(i) => i,
        Err(DriveError::Stuck { need, have }) => return Err(format!("the reader asked for a range outside the file or an empty one ({need}, {have})")),
        // A read of megabytes of the gap (a directory or data.pkl the file places there).
        Err(DriveError::Read(_)) if file.refused.get() > 0 => return Ok(()),
        Err(DriveError::Read(e)) => return Err(format!("a read failed: {e}")),
    };
    torch_checks(&i, len)?;
    if cost.bytes != i.bytes_read {
        return Err(format!("the driver counts {} bytes read, the reader {}", cost.bytes, i.bytes_read));
    }
    if matches!(i.format, Container::PytorchZip) && cost.rounds > MAX_ZIP_ROUNDS {
        return Err(format!("{} read rounds for a torch zip", cost.rounds));
    }
    // Bytes read (docs/limits.md): a zip's first local header and name, its tail (the
    // comment window), the Zip64 record, the directory, data.pkl and the members' local
    // headers; never more.
    let zip = head.starts_with(b"PK\x03\x04") || head.starts_with(b"PK\x05\x06");
    if zip && i.format == Container::PytorchZip {
        let first_name = match (file.head.get(26), file.head.get(27)) {
            (Some(a), Some(b)) => u64::from(u16::from_le_bytes([*a, *b])),
            _ => u64::from(u16::MAX),
        };
        let headers: u64 = i.members.iter().map(|e| zip::LOCAL_HEADER_LEN.saturating_add(e.name.len() as u64)).fold(0, u64::saturating_add);
        let pkl = i.pickle.map_or(torch::MAX_PICKLE_LEN, |(_, n)| n).min(torch::MAX_PICKLE_LEN);
        let bound = [
            torch::HEAD_LEN + first_name,
            zip::EOCD_LEN + zip::MAX_COMMENT + zip::ZIP64_LOCATOR_LEN,
            zip::ZIP64_EOCD_LEN,
            zip::MAX_CENTRAL_DIRECTORY.min(len),
            pkl,
            headers,
        ]
        .iter()
        .fold(0u64, |a, b| a.saturating_add(*b))
        .min(len);
        if i.bytes_read > bound {
            return Err(format!("read {} bytes of a torch zip; the bound is {bound}", i.bytes_read));
        }
    }
    // The same reader over the file in memory (no gap of gigabytes): the same inspection.
    if let Some(bytes) = file.materialized() {
        let (mut j, _) = timed("torch::parse_all", bytes.len(), || torch::parse_all(&bytes))?;
        j.bytes_read = i.bytes_read;
        if j != i {
            return Err("parse_all and the driven reader disagree".into());
        }
        if !zip {
            if let Some((end, keys)) = pickles_end(&bytes) {
                let bound = pickle_read_bound(end, keys).min(len);
                if i.bytes_read > bound {
                    return Err(format!("read {} bytes; the pickles end at {end}, the bound is {bound}", i.bytes_read));
                }
            }
        }
    }
    // As the CLI and the page read it, and the report.
    let fi = pollster::block_on(source::inspect(&file, "fuzz.pt"));
    if file.refused.get() > 0 {
        return Ok(());
    }
    torch_report(&fi)
}
