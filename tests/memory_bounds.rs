//! Peak heap on crafted inputs (issue 12): for any input, peak memory ≤ 4 × the header
//! bytes + 64 MiB (for a pickle-based file, the bytes read: the pickle, a zip's directory
//! and local headers). A counting global allocator (this test binary only) measures the heap
//! in use; each case measures reading the file (`source::inspect`, what the page and the
//! CLI both do) and the CLI's whole `inspect --json` path (inspect, report, JSON written
//! out). The inputs are the ones issue 12 reported and the other shapes of header that
//! make one finding, one map entry or one allocation per few bytes of input.
//!
//! The counts are per thread: each `#[test]` runs its group of cases in turn on its own
//! thread, and the groups run in parallel without counting each other's memory. The
//! figures are printed (`cargo test --test tests memory_bounds:: -- --nocapture`).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::time::Instant;
use tensorpeek::formats::Inspection;
use tensorpeek::model::checkpoint::build_model;
use tensorpeek::report::{FileReport, Report};
use tensorpeek::source::{self, MemorySource};

#[path = "support/state_dict.rs"]
mod state_dict;

struct Counting;

// Per thread, so that the groups of cases below run as tests of their own, in parallel, each
// counting only what its own thread allocates (a block freed on another thread than the one
// that allocated it makes a count negative: only the difference from a start is read). No
// destructor and a const initializer: usable from the allocator at any time.
thread_local! {
    static CURRENT: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

fn grew(n: usize) {
    let n = n as isize;
    let now = CURRENT.with(|c| {
        let v = c.get().wrapping_add(n);
        c.set(v);
        v
    });
    PEAK.with(|p| p.set(p.get().max(now)));
}

fn shrank(n: usize) {
    CURRENT.with(|c| c.set(c.get().wrapping_sub(n as isize)));
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        shrank(layout.size());
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            // Count the moment both blocks may exist (a moving realloc).
            grew(new_size);
            shrank(layout.size());
        }
        p
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// Peak heap above what was in use when `f` started, and `f`'s result.
fn peak_of<T>(f: impl FnOnce() -> T) -> (u64, T) {
    let base = CURRENT.with(Cell::get);
    PEAK.with(|p| p.set(base));
    let out = f();
    let peak = PEAK.with(Cell::get).saturating_sub(base);
    (peak.max(0) as u64, out)
}

const MIB: u64 = 1 << 20;

fn bound(header_bytes: u64) -> u64 {
    4 * header_bytes + 64 * MIB
}

fn inspect(bytes: Vec<u8>, name: &str) -> Inspection {
    pollster::block_on(source::inspect(&MemorySource::new(bytes), name))
}

/// Measures one file: inspect alone, then inspect + report + JSON (streamed, as the CLI
/// writes it). Returns a line for the table and whether it held the bound.
///
/// One inspection serves both: the CLI's peak over [inspect; report] is the larger of the
/// inspection's peak and what the inspection holds once done plus the report's own peak
/// (the counts are per thread and the same for the same input, so a second inspection
/// inside one measurement gave the same figure at twice the time).
fn case(label: &str, name: &str, bytes: Vec<u8>, expect: &[tensorpeek::error::Code]) -> Result<String, String> {
    case_checked(label, name, bytes, expect, |_| {})
}

/// `case`, with `check` run on the inspection (outside the two measurements: what it
/// allocates, it frees) before the report is written.
fn case_checked(label: &str, name: &str, bytes: Vec<u8>, expect: &[tensorpeek::error::Code], check: impl FnOnce(&Inspection)) -> Result<String, String> {
    let file_len = bytes.len() as u64;
    let src = MemorySource::new(bytes);
    let base = CURRENT.with(Cell::get);
    let t0 = Instant::now();
    let (peak_inspect, i) = peak_of(|| pollster::block_on(source::inspect(&src, name)));
    let secs = t0.elapsed().as_secs_f64();
    let header = i.bytes_read;
    for code in expect {
        if !i.findings().any(|f| f.code == *code) {
            return Err(format!("{label}: expected a {code} finding, got {:?}", i.findings().map(|f| f.code).collect::<Vec<_>>()));
        }
    }
    check(&i);
    let held = u64::try_from(CURRENT.with(Cell::get).saturating_sub(base)).unwrap_or(0);
    let (peak_report, written) = peak_of(|| {
        let report = Report::new(vec![FileReport::borrowed(&i, &Default::default())]);
        let mut sink = Counter(0);
        report.write_json_pretty(&mut sink).map(|()| sink.0)
    });
    drop(i);
    let peak_cli = peak_inspect.max(held + peak_report);
    let written = written.map_err(|e| format!("{label}: writing the report failed: {e}"))?;
    let line = format!(
        "{label:<46} file {:>10}  read {:>10}  inspect peak {:>10} ({:.2}× + {:>4.1} ms)  cli peak {:>10}  json {:>10}  bound {:>10}",
        file_len,
        header,
        peak_inspect,
        peak_inspect as f64 / header.max(1) as f64,
        secs * 1e3,
        peak_cli,
        written,
        bound(header)
    );
    if peak_inspect > bound(header) || peak_cli > bound(header) {
        return Err(format!("over the bound: {line}"));
    }
    Ok(line)
}

/// `head`, then `unit` `n` times, then `tail`: a pickle of one opcode sequence repeated.
fn repeated(head: &[u8], unit: &[u8], n: usize, tail: &[u8]) -> Vec<u8> {
    [head, &unit.repeat(n), tail].concat()
}

/// A stored (uncompressed) zip of `members`, as torch.save lays out its archive (local
/// headers, central directory, end record; layouts from PKWARE's APPNOTE).
fn stored_zip(members: &[(&str, &[u8])]) -> Vec<u8> {
    let (mut out, mut central) = (Vec::new(), Vec::new());
    for (name, body) in members {
        let at = out.len() as u32;
        let size = (body.len() as u32).to_le_bytes();
        let name_len = (name.len() as u16).to_le_bytes();
        out.extend_from_slice(&0x0403_4b50u32.to_le_bytes());
        out.extend_from_slice(&[20, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        out.extend_from_slice(&size);
        out.extend_from_slice(&size);
        out.extend_from_slice(&name_len);
        out.extend_from_slice(&0u16.to_le_bytes());
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(body);
        central.extend_from_slice(&0x0201_4b50u32.to_le_bytes());
        central.extend_from_slice(&[20, 0, 20, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        central.extend_from_slice(&size);
        central.extend_from_slice(&size);
        central.extend_from_slice(&name_len);
        central.extend_from_slice(&[0; 12]); // extra, comment, disk, attributes
        central.extend_from_slice(&at.to_le_bytes());
        central.extend_from_slice(name.as_bytes());
    }
    let (cd_at, cd_len) = (out.len() as u32, central.len() as u32);
    out.extend_from_slice(&central);
    out.extend_from_slice(&0x0605_4b50u32.to_le_bytes());
    out.extend_from_slice(&[0; 4]);
    let n = (members.len() as u16).to_le_bytes();
    out.extend_from_slice(&n);
    out.extend_from_slice(&n);
    out.extend_from_slice(&cd_len.to_le_bytes());
    out.extend_from_slice(&cd_at.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    out
}

fn x(s: &[u8]) -> Vec<u8> {
    [&[b'X'][..], &(s.len() as u32).to_le_bytes(), s].concat()
}

/// A torch `data.pkl`: `{key: {key: … [tensors] …}}` (`levels` dicts under one memoized
/// key of `keylen` bytes), the list holding `n` + 1 views of storage "0" (each a rebuild
/// from memoized parts, 16 bytes) or, not `distinct`, one tensor and `n` memo GETs of it.
fn views_pickle(n: usize, distinct: bool, keylen: usize, levels: usize) -> Vec<u8> {
    let mut p = b"\x80\x02ctorch._utils\n_rebuild_tensor_v2\nq\x01(".to_vec();
    p.extend(x(b"storage"));
    p.extend(b"ctorch\nFloatStorage\n");
    p.extend(x(b"0"));
    p.extend(x(b"cpu"));
    p.extend(b"K\x04tQq\x02K\x04\x85q\x03K\x01\x85q\x04ccollections\nOrderedDict\n)Rq\x05}");
    p.extend(x(&vec![b'k'; keylen]));
    p.extend(b"q\x00");
    for _ in 1..levels {
        p.extend(b"}h\x00");
    }
    p.extend(b"](h\x01(h\x02K\x00h\x03h\x04\x89h\x05tRq\x06");
    let unit: &[u8] = if distinct { b"h\x01(h\x02K\x00h\x03h\x04\x89h\x05tR" } else { b"h\x06" };
    p.extend(unit.repeat(n));
    p.extend(b"e");
    p.extend(b"s".repeat(levels));
    p.extend(b".");
    p
}

/// A torch zip of `pkl` with its one storage (4 F32).
fn torch_zip(pkl: &[u8]) -> Vec<u8> {
    stored_zip(&[("archive/data.pkl", pkl), ("archive/data/0", &[0u8; 16]), ("archive/version", b"3\n")])
}

/// An io::Write that counts.
struct Counter(u64);

impl std::io::Write for Counter {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0 += b.len() as u64;
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

// ------------------------------------------------------------------ GGUF builders

fn gstr(out: &mut Vec<u8>, s: &[u8]) {
    out.extend_from_slice(&(s.len() as u64).to_le_bytes());
    out.extend_from_slice(s);
}

/// A GGUF v3 file from raw KV entries (key, type, value bytes) and tensor infos
/// (name, dims, type, offset), with `data` zero bytes after the aligned data start.
fn gguf(kvs: &[(Vec<u8>, u32, Vec<u8>)], tensors: &[(Vec<u8>, Vec<u64>, u32, u64)], data: usize) -> Vec<u8> {
    let mut out = b"GGUF".to_vec();
    out.extend_from_slice(&3u32.to_le_bytes());
    out.extend_from_slice(&(tensors.len() as u64).to_le_bytes());
    out.extend_from_slice(&(kvs.len() as u64).to_le_bytes());
    for (k, ty, v) in kvs {
        gstr(&mut out, k);
        out.extend_from_slice(&ty.to_le_bytes());
        out.extend_from_slice(v);
    }
    for (name, dims, ty, off) in tensors {
        gstr(&mut out, name);
        out.extend_from_slice(&(dims.len() as u32).to_le_bytes());
        for d in dims {
            out.extend_from_slice(&d.to_le_bytes());
        }
        out.extend_from_slice(&ty.to_le_bytes());
        out.extend_from_slice(&off.to_le_bytes());
    }
    out.resize(out.len().div_ceil(32) * 32 + data, 0);
    out
}

fn array(elem: u32, n: u64, body: Vec<u8>) -> Vec<u8> {
    let mut v = elem.to_le_bytes().to_vec();
    v.extend_from_slice(&n.to_le_bytes());
    v.extend(body);
    v
}

fn safetensors(header: &str, data: usize) -> Vec<u8> {
    let mut v = (header.len() as u64).to_le_bytes().to_vec();
    v.extend_from_slice(header.as_bytes());
    v.resize(v.len() + data, 0);
    v
}

#[test]
fn gguf_and_safetensors_headers_stay_within_four_times_the_header_plus_64_mib() {
    use tensorpeek::error::Code::*;
    let (mut lines, mut over) = (Vec::new(), Vec::new());
    let mut run = |r| record(r, &mut lines, &mut over);

    // Issue 12: 4,194,304 distinct token type ids (was ~2 GB of RSS).
    let n = 4_194_304u32;
    let ids: Vec<u8> = (0..n).flat_map(|i| (i as i32).to_le_bytes()).collect();
    run(case(
        "GGUF, 4,194,304 distinct token types",
        "types.gguf",
        gguf(&[(b"tokenizer.ggml.token_type".to_vec(), 9, array(5, u64::from(n), ids))], &[], 0),
        &[],
    ));

    // Issue 12: two 8 MiB tensor names (was 154 MB: each finding copied the name).
    let long = vec![b'n'; 8 << 20];
    run(case(
        "GGUF, two 8 MiB tensor names (same name)",
        "names.gguf",
        gguf(&[], &[(long.clone(), vec![4], 0, 0), (long, vec![4], 0, 32)], 64),
        &[NameTooLong, DuplicateTensor],
    ));

    // Issue 12: a safetensors header with an 8 MB key twice (was 117 MB).
    let key = "k".repeat(8 << 20);
    let entry = format!(r#""{key}":{{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}"#);
    run(case("safetensors, an 8 MB key twice", "dup.safetensors", safetensors(&format!("{{{entry},{entry}}}"), 1), &[DuplicateKey]));

    // The same key 8 MiB of control characters: 6 bytes each in JSON.
    let key = "\\u0001".repeat(1 << 20);
    let entry = format!(r#""{key}":{{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}"#);
    run(case("safetensors, a 1 Mi-control-char name twice", "ctl.safetensors", safetensors(&format!("{{{entry},{entry}}}"), 1), &[SuspiciousName]));

    // 200,000 metadata entries (20 × the limit), each one a finding (bad UTF-8 keys).
    let kvs: Vec<(Vec<u8>, u32, Vec<u8>)> = (0..200_000u32).map(|i| ([&i.to_le_bytes()[..], &[0xff]].concat(), 0, vec![1])).collect();
    run(case("GGUF, 200,000 entries with non-UTF-8 keys", "kvs.gguf", gguf(&kvs, &[], 0), &[InvalidUtf8]));

    // 400,000 tensor infos of an unknown type (a finding each, and an entry each).
    let tensors: Vec<(Vec<u8>, Vec<u64>, u32, u64)> = (0..400_000u32).map(|i| (i.to_le_bytes().to_vec(), vec![1], 99, 0)).collect();
    run(case("GGUF, 400,000 tensors of an unknown type", "tensors.gguf", gguf(&[], &tensors, 0), &[UnknownGgmlType]));

    // A token list of 1,000,000 tokens holding control characters (counted, 3 shown).
    let mut toks = Vec::new();
    for i in 0..1_000_000u32 {
        gstr(&mut toks, format!("\u{1}{i}").as_bytes());
    }
    run(case(
        "GGUF, 1,000,000 suspicious tokens",
        "tokens.gguf",
        gguf(&[(b"tokenizer.ggml.tokens".to_vec(), 9, array(8, 1_000_000, toks))], &[], 0),
        &[SuspiciousText],
    ));

    // Nested arrays: 500,000 inner arrays of 1 bool each, each inner one invalid.
    let inner: Vec<u8> = (0..500_000).flat_map(|_| array(7, 1, vec![2])).collect();
    run(case("GGUF, 500,000 nested bool arrays", "nested.gguf", gguf(&[(b"n".to_vec(), 9, array(9, 500_000, inner))], &[], 0), &[InvalidBool, NestedArray]));

    finish(&lines, &over);
}

#[test]
fn large_safetensors_headers_stay_within_the_bound() {
    use tensorpeek::error::Code::*;
    let (mut lines, mut over) = (Vec::new(), Vec::new());
    let mut run = |r| record(r, &mut lines, &mut over);
    // safetensors: 300,000 tiny tensors, each with an unknown field and the wrong size.
    let mut h = String::from("{");
    for i in 0..300_000 {
        h.push_str(&format!(r#""{i}":{{"dtype":"F32","shape":[1],"data_offsets":[0,1],"x":0}},"#));
    }
    h.pop();
    h.push('}');
    run(case("safetensors, 300,000 tensors with 3 findings each", "many.safetensors", safetensors(&h, 1), &[UnknownField, SizeMismatch]));

    // safetensors: 300,000 of the smallest valid tensor entries (3 × the limit).
    let mut h = String::from("{");
    for i in 0..300_000u64 {
        h.push_str(&format!(r#""{i:x}":{{"dtype":"U8","shape":[],"data_offsets":[{i},{}]}},"#, i + 1));
    }
    h.pop();
    h.push('}');
    run(case("safetensors, 300,000 one-byte tensors", "tiny.safetensors", safetensors(&h, 300_000), &[LimitExceeded]));

    // safetensors: a shape of 4,000,000 dims and offsets of 4,000,000 numbers.
    let ones = vec!["1"; 4_000_000].join(",");
    let h = format!(r#"{{"a":{{"dtype":"U8","shape":[{ones}],"data_offsets":[{ones}]}}}}"#);
    run(case("safetensors, 4,000,000 dims", "dims.safetensors", safetensors(&h, 1), &[InvalidField]));

    // safetensors: 300,000 __metadata__ entries with HTML (counted).
    let mut h = String::from(r#"{"__metadata__":{"#);
    for i in 0..300_000 {
        h.push_str(&format!(r#""{i}":"<script>","#));
    }
    h.pop();
    h.push_str("}}");
    run(case("safetensors, 300,000 metadata entries with HTML", "meta.safetensors", safetensors(&h, 0), &[SuspiciousText]));

    finish(&lines, &over);
}

#[test]
fn torch_zips_stay_within_the_bound() {
    use tensorpeek::error::Code::*;
    let (mut lines, mut over) = (Vec::new(), Vec::new());
    let mut run = |r| record(r, &mut lines, &mut over);
    // A real-shaped torch checkpoint: data.pkl of 100,000 tensors laid out as torch.save
    // writes a state dict (its storages absent: a finding each, capped).
    let pkl = state_dict::state_dict_pickle(100_000);
    // The walk of that data.pkl alone holds no more than its counted budget
    // (MEMORY_PER_BYTE per byte + MEMORY_SLACK) as the allocator sees it: the collector
    // keeps its garbage down (126 MB before it, 9.5 ×).
    {
        use tensorpeek::formats::pickle::eval::{MEMORY_PER_BYTE, MEMORY_SLACK};
        use tensorpeek::formats::pickle::{walk, Context};
        let ctx = Context { torch: true, ..Context::default() };
        let (peak, w) = peak_of(|| walk(&pkl, &ctx));
        let len = pkl.len() as u64;
        let line = format!("{:<46} pickle {len:>10}  walk peak {peak:>10} ({:.2}×)  held at its end {:>10}", "walk of that data.pkl alone", peak as f64 / len as f64, w.held);
        let within = w.findings.is_empty() && peak <= MEMORY_PER_BYTE * len + MEMORY_SLACK;
        run(if within { Ok(line) } else { Err(format!("over the walk's budget: {line} {:?}", w.findings.first())) });
    }
    let p = stored_zip(&[("archive/data.pkl", &pkl), ("archive/version", b"3\n")]);
    run(case("torch zip, a state dict of 100,000 tensors", "model.pt", p, &[]));
    // The same with its 100,000 storages (2 × 2 F32 each): bytes read are data.pkl, the
    // central directory and every storage's local header.
    let pkl = state_dict::state_dict_pickle_of(100_000, 2, 2);
    let names: Vec<String> = (0..100_000).map(|k| format!("archive/data/{k}")).collect();
    let mut members: Vec<(&str, &[u8])> = vec![("archive/data.pkl", &pkl)];
    members.extend(names.iter().map(|n| (n.as_str(), &[0u8; 16][..])));
    members.push(("archive/version", b"3\n"));
    run(case("torch zip, the same with its 100,000 storages", "model.pt", stored_zip(&members), &[]));
    // Past MAX_TENSORS (131,072) tensors a walk lists none more (counted in one finding
    // each for tensors and storages): what the inventory holds stops growing, so a longer
    // state dict costs only its pickle's generic values.
    let n = tensorpeek::formats::MAX_TENSORS as usize + 60_000;
    let pkl = state_dict::state_dict_pickle(n);
    let p = stored_zip(&[("archive/data.pkl", &pkl), ("archive/version", b"3\n")]);
    run(case_checked("torch zip, a state dict of 191,072 tensors", "model.pt", p, &[LimitExceeded], |i| {
        assert_eq!(i.parsed.tensors().len() as u64, tensorpeek::formats::MAX_TENSORS);
        let past: Vec<&str> = i.findings().filter(|f| f.code == LimitExceeded).map(|f| f.message.as_str()).collect();
        assert!(past.len() == 2 && past.iter().all(|m| m.contains("60,000 more")), "{past:?}");
    }));
    // Issue 24: one tensor object is listed under every key that holds it (as torch.load
    // gives each), 2 bytes of memo GET a name; names past REPEAT_NAMES_SLACK + 1 per 16
    // bytes are counted (unbounded: 145 MB for this 400 KB file, 265 MB for the CLI)
    let pkl = views_pickle(200_000, false, 1, 4);
    let p = torch_zip(&pkl);
    use tensorpeek::formats::pickle::eval::{REPEAT_NAMES_SLACK, REPEAT_NAME_STREAM_BYTES};
    let listed = 1 + REPEAT_NAMES_SLACK + pkl.len() as u64 / REPEAT_NAME_STREAM_BYTES;
    run(case_checked("torch zip, one tensor under 200,000 keys", "model.pt", p, &[LimitExceeded], |i| {
        assert_eq!(i.parsed.tensors().len() as u64, listed);
        let said: Vec<&str> = i.findings().filter(|f| f.code == LimitExceeded).map(|f| f.message.as_str()).collect();
        assert!(said.len() == 1 && said[0].contains(&tensorpeek::fmt::thousands(200_001 - listed)), "{said:?}");
    }));
    // ... and under a 1 KiB key path: NAMES_SLACK + 1 per byte bounds the names' bytes
    // (unbounded: 1.9 GB for this 200 KB file)
    run(case("torch zip, one tensor under 100,000 keys, 1 KiB paths", "model.pt", torch_zip(&views_pickle(100_000, false, 250, 4)), &[LimitExceeded]));
    // 30,000 views of one storage (16 bytes each) under a 250-byte key: each listed 16
    // names of 250 bytes (165 MB, 309 MB for the CLI); now the lists share
    // SHARED_NAMES_SLACK + the names' bytes, at least one name each
    let p = torch_zip(&views_pickle(30_000, true, 250, 1));
    run(case_checked("torch zip, 30,000 views under a 250-byte key", "model.pt", p, &[], |i| {
        let t = i.parsed.torch().unwrap();
        assert_eq!(t.inspection.tensors.len(), 30_001);
        let names: u64 = t.inspection.tensors.iter().map(|t| t.name.len() as u64).sum();
        let shared: u64 = t.inspection.tensors.iter().flat_map(|t| &t.shares_storage_with).map(|n| n.len() as u64 + 24).sum();
        assert!(t.inspection.tensors.iter().all(|t| !t.shares_storage_with.is_empty()));
        assert!(shared <= tensorpeek::formats::torch::SHARED_NAMES_SLACK + names, "{shared} bytes of shared names");
    }));
    // ... under a 1 KiB path (572 MB, 1.08 GB for the CLI)
    run(case("torch zip, 30,000 views, 1 KiB paths", "model.pt", torch_zip(&views_pickle(30_000, true, 250, 4)), &[LimitExceeded]));
    run(case("torch zip, 100,000 views, 1 KiB paths", "model.pt", torch_zip(&views_pickle(100_000, true, 250, 4)), &[LimitExceeded]));

    finish(&lines, &over);
}

#[test]
fn pickles_stay_within_the_bound() {
    use tensorpeek::error::Code::*;
    let (mut lines, mut over) = (Vec::new(), Vec::new());
    let mut run = |r| record(r, &mut lines, &mut over);
    // Pickle-based files (read whole: the pickle is the header). The shapes of stream that
    // make one value, one import, one memo entry or one finding per few bytes.
    let p = repeated(b"\x80\x02(", b"K\x01", 2_000_000, b"l.");
    run(case("pickle, 2,000,000 small ints in one list", "ints.pkl", p, &[]));
    let mut p = b"\x80\x02".to_vec();
    for i in 0..200_000 {
        p.extend_from_slice(format!("cm{i}\nf{i}\n0").as_bytes());
    }
    p.extend_from_slice(b"N.");
    run(case("pickle, 200,000 distinct imports", "imports.pkl", p, &[UnknownGlobal]));
    let p = repeated(b"\x80\x02", b"cos\nsystem\nX\x02\x00\x00\x00idq\x00\x85R0", 200_000, b"N.");
    run(case("pickle, os.system called 200,000 times", "calls.pkl", p, &[DangerousGlobal]));
    let mut p = b"\x80\x02".to_vec();
    for i in 0..500_000u32 {
        let s = format!("s{i}");
        p.push(b'X');
        p.extend_from_slice(&(s.len() as u32).to_le_bytes());
        p.extend_from_slice(s.as_bytes());
        p.push(b'r');
        p.extend_from_slice(&i.to_le_bytes());
        p.push(b'0');
    }
    p.extend_from_slice(b"N.");
    run(case("pickle, 500,000 memoized strings", "memo.pkl", p, &[]));
    let p = repeated(b"\x80\x02", b"]q\x00h\x00a", 1_000_000, b".");
    run(case("pickle, a list appended to itself 1,000,000 times", "self.pkl", p, &[PickleLimit]));
    // 5 bytes of stream per 24-byte item, appended 4 at a time: the list's doublings are
    // checked before they happen
    let p = repeated(b"\x80\x02]", b"(J\x01\x00\x00\x00J\x01\x00\x00\x00J\x01\x00\x00\x00J\x01\x00\x00\x00e", 2_000_000, b".");
    run(case("pickle, 8,000,000 BININTs appended to one list", "binints.pkl", p, &[PickleLimit]));
    // a cheap 34 MB head (one bytes value, dropped), then a tail that holds ~28 bytes per
    // byte (empty lists appended to one list): the walk's budget is the whole stream's
    // (3 per byte + 48 MiB), spent in its last megabytes; with the stream in memory that
    // stays within 4 × + 64 MiB (at 6 per byte + 16 MiB it would not: ~296 MB of 224)
    let mut p = b"\x80\x04\x8e".to_vec();
    p.extend_from_slice(&(34_000_000u64).to_le_bytes());
    p.resize(p.len() + 34_000_000, 0);
    p.extend_from_slice(b"0]");
    p.extend(b"]a".repeat(3_000_000));
    p.push(b'.');
    run(case("pickle, a 34 MB bytes value, then 3,000,000 lists", "tail.pkl", p, &[PickleLimit]));
    // every value made is dropped at once: the collector frees them
    let p = repeated(b"\x80\x02", b"(K\x01K\x02t0", 2_000_000, b"N.");
    run(case("pickle, 2,000,000 tuples made and dropped", "garbage.pkl", p, &[]));

    finish(&lines, &over);
}

#[test]
fn checkpoint_merges_stay_within_the_bound() {
    use tensorpeek::error::Code::*;
    let mut lines = Vec::new();
    let mut over = Vec::new();
    // JSON companions, read whole: a tokenizer.json with 300,000 special tokens and an
    // index with 500,000 broken weight_map entries (a finding each before capping).
    let added: Vec<String> = (0..300_000).map(|i| format!(r#"{{"id":{i},"content":"<t{i}>","special":true}}"#)).collect();
    let tok = format!(r#"{{"added_tokens":[{}],"model":{{"type":"BPE","vocab":{{}},"merges":[]}}}}"#, added.join(","));
    let map: Vec<String> = (0..500_000).map(|i| format!(r#""t{i}":{i}"#)).collect();
    let idx = format!(r#"{{"weight_map":{{{}}}}}"#, map.join(","));
    let cfg = r#"{"bos_token":"<t1>","eos_token":"<t2>","chat_template":"{{ cycler.__init__.__globals__ }}"}"#;
    let m = merge_case(
        "checkpoint: 300k special tokens, 500k bad index entries",
        vec![
            ("tokenizer.json".to_string(), tok.into_bytes()),
            ("tokenizer_config.json".to_string(), cfg.as_bytes().to_vec()),
            ("model.safetensors.index.json".to_string(), idx.into_bytes()),
        ],
        &mut lines,
        &mut over,
    );
    assert!(m.findings().any(|f| f.code == ChatTemplateUnsafe), "{:?}", m.findings().map(|f| f.code).collect::<Vec<_>>());
    let t = m.tokenizer.as_ref().unwrap();
    assert_eq!((t.special_tokens.len(), t.added_tokens), (tensorpeek::model::companions::MAX_SPECIAL_TOKENS, Some(300_000)));
    assert!(m.findings().count() <= 2 * 250, "findings are capped: {}", m.findings().count());

    // The smallest index entries, past the limit; a tokenizer config whose tokens and
    // template are huge arrays (never built); a config.json of a million zeros (too large:
    // skipped) and one just under the limit (kept as a tree).

    let map: Vec<String> = (0..700_000).map(|i| format!(r#""{i:x}":"s""#)).collect();
    let idx = format!(r#"{{"weight_map":{{{}}}}}"#, map.join(","));
    let zeros = vec!["0"; 1_000_000].join(",");
    let tcfg = format!(r#"{{"bos_token":[{zeros}],"chat_template":[{zeros}],"model_max_length":[{zeros}],"eos_token":{{"content":"</s>","x":[{zeros}]}}}}"#);
    let big_cfg = format!(r#"{{"model_type":"llama","x":[{zeros}]}}"#);
    let small_cfg = format!(r#"{{"model_type":"llama","x":[{}]}}"#, vec!["0"; 130_000].join(","));
    let m = merge_case(
        "checkpoint: 700k tiny index entries, array-valued tokens",
        vec![
            ("model.safetensors.index.json".to_string(), idx.into_bytes()),
            ("tokenizer_config.json".to_string(), tcfg.into_bytes()),
            ("config.json".to_string(), big_cfg.into_bytes()),
        ],
        &mut lines,
        &mut over,
    );
    let codes: Vec<_> = m.findings().map(|f| f.code).collect();
    assert!(codes.contains(&LimitExceeded) && codes.contains(&CompanionTooLarge), "{codes:?}");
    assert_eq!(m.tokenizer.as_ref().and_then(|t| t.role("eos")).and_then(|s| s.text.as_deref()), Some("</s>"));
    assert!(small_cfg.len() <= tensorpeek::model::checkpoint::MAX_CONFIG_BYTES);
    // An index alone: 300,000 entries, each naming its own shard (not used: too many
    // shards), then 300,000 entries over 10,000 shards, none provided.
    let map: Vec<String> = (0..300_000).map(|i| format!(r#""{i:x}":"{i:x}""#)).collect();
    let idx = format!(r#"{{"weight_map":{{{}}}}}"#, map.join(","));
    let m = merge_case("checkpoint: 300k index entries, 300k shards", vec![("model.safetensors.index.json".to_string(), idx.into_bytes())], &mut lines, &mut over);
    assert!(m.index.is_none() && m.errors.iter().any(|f| f.code == LimitExceeded), "{:?}", m.errors);
    let map: Vec<String> = (0..300_000).map(|i| format!(r#""{i:x}":"{:x}""#, i % 10_000)).collect();
    let idx = format!(r#"{{"weight_map":{{{}}}}}"#, map.join(","));
    let m = merge_case("checkpoint: 300k index entries, 10k shards", vec![("model.safetensors.index.json".to_string(), idx.into_bytes())], &mut lines, &mut over);
    assert_eq!(m.index.as_ref().map(|i| (i.shards.len(), i.tensors)), Some((10_000, tensorpeek::model::companions::MAX_INDEX_ENTRIES as u64)));
    let m = merge_case("checkpoint: config.json of 130,000 zeros (260 KB)", vec![("config.json".to_string(), small_cfg.into_bytes())], &mut lines, &mut over);
    assert!(m.architecture.is_some());

    finish(&lines, &over);
}

/// One case's line kept, or its failure.
fn record(r: Result<String, String>, lines: &mut Vec<String>, over: &mut Vec<String>) {
    match r {
        Ok(l) => lines.push(l),
        Err(e) => over.push(e),
    }
}

/// A group's figures printed, and its failures.
fn finish(lines: &[String], over: &[String]) {
    for l in lines {
        println!("{l}");
    }
    assert!(over.is_empty(), "{}", over.join("\n"));
}

/// Measures merging JSON companions (read whole) into a checkpoint.
fn merge_case(label: &str, companions: Vec<(String, Vec<u8>)>, lines: &mut Vec<String>, over: &mut Vec<String>) -> tensorpeek::model::checkpoint::CheckpointModel {
    let json_bytes: u64 = companions.iter().map(|(_, b)| b.len() as u64).sum();
    let t0 = Instant::now();
    let (peak, m) = peak_of(|| build_model(&[], &companions));
    let line = format!(
        "{label:<46} json {json_bytes:>10}  merge peak {peak:>10} ({:.2}× + {:.1} ms)  bound {:>10}",
        peak as f64 / json_bytes as f64,
        t0.elapsed().as_secs_f64() * 1e3,
        bound(json_bytes)
    );
    if peak > bound(json_bytes) {
        over.push(format!("over the bound: {line}"));
    } else {
        lines.push(line);
    }
    m
}

#[test]
fn inspections_still_read_only_the_header() {
    // A sanity check of the helper: a small sound file reads its 8 + N bytes.
    let header = r#"{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}"#;
    let i = inspect(safetensors(header, 1), "a.safetensors");
    assert!(i.ok());
    assert_eq!(i.bytes_read, 8 + header.len() as u64);
}
