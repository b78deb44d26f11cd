//! The conversion audit's read loop: every planned pair ([`crate::model::audit::plan`]) is
//! read from both sides tensor by tensor, in bounded chunks through [`ByteSource`]s, and
//! fed to its comparator as it arrives — never a whole large tensor in memory.
//!
//! - Unpermuted pairs are read in aligned chunks of up to [`AUDIT_CHUNK_BYTES`] per side
//!   (whole units — blocks — on both sides).
//! - Pairs under the llama Q/K permutation are read a block of whole heads at a time: a
//!   head's rows only move within the head, so the source rows a target head needs are
//!   the same head's rows. A head larger than [`MAX_HEAD_BLOCK_BYTES`] is read row by row.
//! - Progress (pairs done, source bytes read) is reported after every chunk; returning
//!   `false` from the callback cancels (the audit is then `complete: false`).
//!   `first_mismatch` stops at the first pair that fails (mismatch, missing,
//!   generated_mismatch), as soon as its first failing element is seen.
//!
//! Generic over [`ByteSource`], so the page's Web Worker can run it over `Blob`s.

use super::set::{OpenedSet, SetInput};
use super::ByteSource;
use crate::error::Code;
use crate::model::audit::compare::compare_generated;
use crate::model::audit::{self, Audit, Comparator, Gather, Method, Outcome, Plan, ReadSpec, Side, Verdict, Work};
use crate::report::{FileReport, Report};
use std::collections::BTreeMap;
use crate::vocab::Format;

/// Bytes read per side per step: 8 MiB keeps per-read overhead negligible and two buffers
/// far below the audit's 256 MiB budget.
pub const AUDIT_CHUNK_BYTES: u64 = 8 * 1024 * 1024;

/// Largest block of whole heads read at once for a permuted pair (per side); a head
/// larger than this (no real model has one: Llama 3 405B's is 128 × 16384 × 4 bytes =
/// 8 MiB in F32) is read row by row instead.
pub const MAX_HEAD_BLOCK_BYTES: u64 = 64 * 1024 * 1024;

/// Values decoded at once when a pair is compared by value (4 MiB of f32, 8 MiB of f64
/// per side while decoding): bounds the comparator's buffers whatever the chunk size.
pub const MAX_DECODED_VALUES: u64 = 1 << 20;

/// Most bytes read for a generated tensor (its values are checked whole): 2^16 values of
/// 8 bytes, the largest generated tensor [`crate::model::audit::generated`] believes.
pub const MAX_GENERATED_BYTES: u64 = 8 << 16;

/// The hint on a Q/K pair that equals its source without the permutation (the
/// converter's permutation was not applied).
pub const UNPERMUTED_HINT: &str = "target equals the source without the Q/K row permutation";

/// How the audit runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AuditOptions {
    /// Stop at the first failing pair.
    pub first_mismatch: bool,
    /// Bytes per read per side (0: [`AUDIT_CHUNK_BYTES`]).
    pub chunk_bytes: u64,
    /// Largest block of heads read at once for a permuted pair ([`MAX_HEAD_BLOCK_BYTES`];
    /// tests lower it to drive the row-by-row path).
    pub max_head_block_bytes: u64,
}

impl Default for AuditOptions {
    fn default() -> Self {
        AuditOptions { first_mismatch: false, chunk_bytes: AUDIT_CHUNK_BYTES, max_head_block_bytes: MAX_HEAD_BLOCK_BYTES }
    }
}

/// Where an audit is, for a progress bar.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AuditProgress {
    pub pairs_done: usize,
    pub pairs: usize,
    /// Source bytes read so far / to read in all.
    pub bytes_done: u64,
    pub bytes_total: u64,
    /// Target bytes read so far.
    pub target_bytes_done: u64,
    /// The pair being read (its source name, or its target's).
    pub current: Option<String>,
}

/// Why a pair's reading stopped.
enum Interrupt {
    Cancelled,
    Read(String),
}

struct Reader<'a, S: ByteSource, F: FnMut(&AuditProgress) -> bool> {
    source: &'a [S],
    target: &'a [S],
    options: AuditOptions,
    progress: AuditProgress,
    on_progress: F,
    /// The two read buffers, reused from read to read, and the gathered source of a
    /// transposed piece.
    sb: Vec<u8>,
    tb: Vec<u8>,
    gb: Vec<u8>,
}

/// Reads `[start, start + len)` of `src` into `buf`.
async fn read<S: ByteSource>(src: &S, start: u64, len: u64, what: &str, buf: &mut Vec<u8>) -> Result<(), Interrupt> {
    src.read_into(start, len, buf)
        .await
        .map_err(|e| Interrupt::Read(format!("reading {len} bytes of the {what} at offset {start} failed: {e}")))?;
    if buf.len() as u64 != len {
        return Err(Interrupt::Read(format!(
            "asked the {what} for {len} bytes at offset {start}, got {} (did the file change?)",
            buf.len()
        )));
    }
    Ok(())
}

fn part(bytes: &[u8], at: u64, len: u64) -> &[u8] {
    let (Ok(at), Ok(len)) = (usize::try_from(at), usize::try_from(len)) else {
        return &[];
    };
    bytes.get(at..at.saturating_add(len)).unwrap_or(&[])
}

impl<S: ByteSource, F: FnMut(&AuditProgress) -> bool> Reader<'_, S, F> {
    /// Reads a range of each side into the two buffers, one after the other: in Chromium,
    /// two `Blob` streams in flight at once read ~30 % faster but the browser's memory then
    /// grew by 250–780 MiB over the 2 × 6.4 GB pair, against a flat ~45 MiB this way.
    async fn read_both(&mut self, s: &S, (s_at, s_len): (u64, u64), t: &S, (t_at, t_len): (u64, u64)) -> Result<(), Interrupt> {
        read(s, s_at, s_len, "source", &mut self.sb).await?;
        read(t, t_at, t_len, "target", &mut self.tb).await
    }

    fn tick(&mut self, source_bytes: u64, target_bytes: u64) -> Result<(), Interrupt> {
        self.progress.bytes_done = self.progress.bytes_done.saturating_add(source_bytes);
        self.progress.target_bytes_done = self.progress.target_bytes_done.saturating_add(target_bytes);
        if (self.on_progress)(&self.progress) {
            Ok(())
        } else {
            Err(Interrupt::Cancelled)
        }
    }

    fn chunk(&self) -> u64 {
        match self.options.chunk_bytes {
            0 => AUDIT_CHUNK_BYTES,
            n => n,
        }
    }

    /// Compares one pair.
    async fn compare(&mut self, spec: &ReadSpec, s: &S, t: &S) -> Result<Outcome, Interrupt> {
        let mut cmp = Comparator::new(spec.method.clone());
        let mut unpermuted_equal = None;
        match (spec.permutation, spec.gather) {
            (_, Some(g)) => self.compare_gathered(spec, g, s, t, &mut cmp).await?,
            (None, None) => self.compare_flat(spec, s, t, &mut cmp).await?,
            (Some(_), None) => unpermuted_equal = self.compare_permuted(spec, s, t, &mut cmp).await?,
        }
        let mut out = cmp.finish();
        if let (Some(g), Some(m)) = (spec.gather, out.first_mismatch.as_mut()) {
            // Compared in the target's order: back to the source tensor's index.
            let cols = spec.cols.max(1);
            let (r, c) = (m.index / cols, m.index % cols);
            m.index = spec.source_index_base.saturating_add(r.saturating_mul(g.row_stride)).saturating_add(c.saturating_mul(g.col_stride));
        }
        if out.verdict == Verdict::Mismatch && unpermuted_equal == Some(true) {
            out.hint = Some(UNPERMUTED_HINT.into());
        }
        Ok(out)
    }

    /// Elements per read: whole pieces, at most a chunk of bytes per side (and at most
    /// [`MAX_DECODED_VALUES`] when values are decoded).
    fn chunk_elements(&self, spec: &ReadSpec) -> u64 {
        let piece = spec.piece_elements();
        let (sb, tb) = spec.bytes_of(piece);
        let mut pieces = (self.chunk() / sb.max(tb).max(1)).max(1);
        if matches!(spec.method, Method::Values { .. } | Method::NegExp { .. } | Method::Scaled { .. }) {
            pieces = pieces.min((MAX_DECODED_VALUES / piece).max(1));
        }
        pieces.saturating_mul(piece)
    }

    async fn compare_flat(&mut self, spec: &ReadSpec, s: &S, t: &S, cmp: &mut Comparator) -> Result<(), Interrupt> {
        let total = spec.source.elements;
        let step = self.chunk_elements(spec);
        let mut done = 0u64;
        while done < total {
            let n = step.min(total - done);
            let (s_off, t_off) = spec.bytes_of(done);
            let (s_len, t_len) = spec.bytes_of(n);
            let (s_at, t_at) = (spec.source.start.saturating_add(s_off), spec.target.start.saturating_add(t_off));
            self.read_both(s, (s_at, s_len), t, (t_at, t_len)).await?;
            cmp.compare(&self.sb, &self.tb, spec.source_index_base.saturating_add(done));
            done = done.saturating_add(n);
            self.tick(s_len, t_len)?;
            if self.options.first_mismatch && cmp.failed() {
                break;
            }
        }
        Ok(())
    }

    /// Reads whole heads; returns whether the target equals the source without the
    /// permutation (known when the bytes are compared and heads are read whole).
    async fn compare_permuted(&mut self, spec: &ReadSpec, s: &S, t: &S, cmp: &mut Comparator) -> Result<Option<bool>, Interrupt> {
        let Some(p) = spec.permutation else { return Ok(None) };
        let cols = spec.cols;
        let (s_row, t_row) = spec.bytes_of(cols);
        let head_bytes = p.head_dim.saturating_mul(s_row.max(t_row));
        let bytes_compare = matches!(spec.method, Method::Bytes { .. });
        if head_bytes > self.options.max_head_block_bytes.min(MAX_HEAD_BLOCK_BYTES) {
            for row in 0..spec.rows {
                let src_row = p.source_row(row);
                let s_at = spec.source.start.saturating_add(src_row.saturating_mul(s_row));
                let t_at = spec.target.start.saturating_add(row.saturating_mul(t_row));
                self.read_both(s, (s_at, s_row), t, (t_at, t_row)).await?;
                cmp.compare(&self.sb, &self.tb, src_row.saturating_mul(cols));
                self.tick(s_row, t_row)?;
                if self.options.first_mismatch && cmp.failed() {
                    break;
                }
            }
            return Ok(None);
        }
        let mut unpermuted_equal = bytes_compare;
        let heads_per_read = (self.chunk() / head_bytes.max(1)).clamp(1, p.heads.max(1));
        let mut head = 0u64;
        while head < p.heads {
            let nh = heads_per_read.min(p.heads - head);
            let r0 = head.saturating_mul(p.head_dim);
            let rows = nh.saturating_mul(p.head_dim);
            let s_at = spec.source.start.saturating_add(r0.saturating_mul(s_row));
            let t_at = spec.target.start.saturating_add(r0.saturating_mul(t_row));
            self.read_both(s, (s_at, rows.saturating_mul(s_row)), t, (t_at, rows.saturating_mul(t_row))).await?;
            let (sb, tb) = (&self.sb, &self.tb);
            for row in r0..r0.saturating_add(rows) {
                let src_row = p.source_row(row);
                let target_part = part(tb, (row - r0).saturating_mul(t_row), t_row);
                let source_part = part(sb, src_row.saturating_sub(r0).saturating_mul(s_row), s_row);
                cmp.compare(source_part, target_part, src_row.saturating_mul(cols));
                if unpermuted_equal && part(sb, (row - r0).saturating_mul(s_row), s_row) != target_part {
                    unpermuted_equal = false;
                }
            }
            head = head.saturating_add(nh);
            self.tick(rows.saturating_mul(s_row), rows.saturating_mul(t_row))?;
            if self.options.first_mismatch && cmp.failed() {
                return Ok(None);
            }
        }
        Ok(bytes_compare.then_some(unpermuted_equal))
    }

    /// A transposed or de-interleaved piece: its whole source span is read once (at most
    /// [`crate::model::audit::MAX_GATHER_SOURCE_BYTES`], checked by the plan), then the
    /// target in chunks of whole rows, each compared with the source elements gathered into
    /// the target's order (indices are the piece's, in target order: the caller maps the
    /// first mismatch back).
    async fn compare_gathered(&mut self, spec: &ReadSpec, g: Gather, s: &S, t: &S, cmp: &mut Comparator) -> Result<(), Interrupt> {
        let elem = spec.source_unit.bytes;
        read(s, spec.source.start, spec.source.len, "source", &mut self.sb).await?;
        self.tick(spec.source.len, 0)?;
        let cols = spec.cols.max(1);
        let (_, t_row) = spec.bytes_of(cols);
        let rows_per = (self.chunk() / t_row.max(1)).max(1).min((MAX_DECODED_VALUES / cols).max(1));
        let mut row = 0u64;
        while row < spec.rows {
            let n = rows_per.min(spec.rows - row);
            let t_at = spec.target.start.saturating_add(row.saturating_mul(t_row));
            read(t, t_at, n.saturating_mul(t_row), "target", &mut self.tb).await?;
            self.gb.clear();
            for r in row..row.saturating_add(n) {
                for c in 0..cols {
                    let at = r.saturating_mul(g.row_stride).saturating_add(c.saturating_mul(g.col_stride)).saturating_mul(elem);
                    self.gb.extend_from_slice(part(&self.sb, at, elem));
                }
            }
            cmp.compare(&self.gb, &self.tb, row.saturating_mul(cols));
            row = row.saturating_add(n);
            self.tick(0, n.saturating_mul(t_row))?;
            if self.options.first_mismatch && cmp.failed() {
                break;
            }
        }
        Ok(())
    }

    async fn generated(&mut self, work: &Work, t: &S) -> Result<Outcome, Interrupt> {
        let Work::Generated { target, codec, expected } = work else {
            return Err(Interrupt::Read("not a generated tensor".into()));
        };
        if target.len > MAX_GENERATED_BYTES {
            return Ok(Outcome::decided(Verdict::NotCompared, format!("{} bytes is more than the {MAX_GENERATED_BYTES} read for a generated tensor", target.len)));
        }
        read(t, target.start, target.len, "target", &mut self.tb).await?;
        let mut actual = Vec::new();
        codec.decode(&self.tb, &mut actual);
        self.tick(0, target.len)?;
        Ok(compare_generated(&expected.values, &actual, expected.rel_tol))
    }
}

/// One side of an audit from a set of files opened together ([`super::set::open_set`]):
/// its safetensors or GGUF files in input order (with the index of each file's input, to
/// find its byte source), config.json's architecture, and what is missing from the model
/// as a whole (a shard, a split part) as notes.
pub fn side_of(set: &OpenedSet) -> (Side<'_>, Vec<usize>) {
    let mut files = Vec::new();
    let mut inputs = Vec::new();
    for (i, f) in &set.files {
        if matches!(f.format, Format::Safetensors | Format::Gguf) {
            files.push(f.as_ref());
            inputs.push(*i);
        }
    }
    let config = set.checkpoint.as_ref().and_then(|c| c.architecture.as_ref());
    // A split GGUF's parts that were not given (the audit's reasons name them).
    let split_missing = set.splits.first().and_then(|m| {
        let count = m.split_count?;
        let given: Vec<u64> = m.parts.iter().filter_map(|p| p.split_no).collect();
        let missing = (0..count.min(MAX_PARTS_NAMED)).filter(|n| !given.contains(n)).map(|n| n + 1).collect();
        Some((missing, count))
    });
    let mut notes: Vec<String> = Vec::new();
    if let Some(c) = &set.checkpoint {
        notes.extend(c.errors.iter().filter(|f| f.code == Code::MissingShard).map(|f| f.message.clone()));
    }
    for s in &set.splits {
        notes.extend(s.errors.iter().filter(|f| matches!(f.code, Code::SplitMissing | Code::SplitMismatch)).map(|f| f.message.clone()));
    }
    let indexed = set.checkpoint.as_ref().is_some_and(|c| c.index.is_some());
    (Side { files, config, notes, split_missing, indexed }, inputs)
}

/// One side of an audit: the inputs it was opened from (their byte sources) and the set
/// [`super::set::open_set`] made of them.
pub struct OpenedSide<'a, S> {
    pub inputs: &'a [SetInput<S>],
    pub set: &'a OpenedSet,
}

impl<'a, S> OpenedSide<'a, S> {
    /// The byte sources of the files `side_of` took, in its order.
    fn sources(&self, idx: &[usize]) -> Vec<&'a S> {
        idx.iter().filter_map(|&i| self.inputs.get(i).map(|x| &x.src)).collect()
    }
}

/// The audit of two opened sides (`tensorpeek audit`, the library's `audit`): the sides,
/// the plan ([`crate::model::audit::plan`]; `Err` is its sentence when the sides cannot be
/// paired), then [`run_audit`]. Returns the audit and the source bytes the plan reads.
pub async fn audit_sides<S: ByteSource>(
    source: &OpenedSide<'_, S>,
    target: &OpenedSide<'_, S>,
    options: AuditOptions,
    on_progress: impl FnMut(&AuditProgress) -> bool,
) -> Result<(Audit, u64), String> {
    let (s_side, s_idx) = side_of(source.set);
    let (t_side, t_idx) = side_of(target.set);
    let plan = audit::plan(&s_side, &t_side).map_err(|e| e.to_string())?;
    let audit = run_audit(&plan, &source.sources(&s_idx), &target.sources(&t_idx), options, on_progress).await;
    Ok((audit, plan.source_bytes_to_read()))
}

/// The report of an audit (`tensorpeek audit --json`): both sides' files, the source's
/// checkpoint (else the target's split model), the `audit` object.
pub fn audit_report(source: &OpenedSet, target: &OpenedSet, audit: &Audit) -> Report {
    let files = source.inspections().chain(target.inspections()).map(|i| FileReport::of(i, &BTreeMap::new())).collect();
    let mut report = Report::new(files);
    report.model = crate::report::ModelSection::of(source.checkpoint.as_ref(), target.splits.first());
    report.audit = Some(Box::new(audit.clone()));
    report
}

/// Most missing split parts named in the reasons (a lying `split.count` cannot make a
/// long list).
pub const MAX_PARTS_NAMED: u64 = 1000;

/// Whether a verdict stops a `first_mismatch` audit.
fn fails(v: Verdict) -> bool {
    matches!(v, Verdict::Mismatch | Verdict::MissingInTarget | Verdict::MissingInSource | Verdict::GeneratedMismatch)
}

/// Runs a planned audit. `source` and `target` are the sides' byte sources, in the order
/// of the files the plan was made from. `on_progress` is called before the first read and
/// after every chunk; returning `false` cancels.
pub async fn run_audit<S: ByteSource>(
    plan: &Plan,
    source: &[S],
    target: &[S],
    options: AuditOptions,
    on_progress: impl FnMut(&AuditProgress) -> bool,
) -> Audit {
    let mut r = Reader {
        source,
        target,
        options,
        progress: AuditProgress { pairs: plan.pairs.len(), bytes_total: plan.source_bytes_to_read(), ..AuditProgress::default() },
        on_progress,
        sb: Vec::new(),
        tb: Vec::new(),
        gb: Vec::new(),
    };
    let mut outcomes: Vec<Option<Outcome>> = Vec::with_capacity(plan.pairs.len());
    let mut stop: Option<&str> = None;
    if r.tick(0, 0).is_err() {
        return Audit::assemble(plan, outcomes, Some("the audit was cancelled"));
    }
    for pair in &plan.pairs {
        r.progress.current = pair.source.as_ref().or(pair.target.as_ref()).map(|t| t.entry.name.clone());
        let src = pair.source.as_ref().and_then(|t| r.source.get(t.file));
        let tgt = pair.target.as_ref().and_then(|t| r.target.get(t.file));
        let result = match (&pair.work, src, tgt) {
            (Work::Decided(o), _, _) => Ok(o.clone()),
            (Work::Compare(spec), Some(s), Some(t)) => r.compare(spec, s, t).await,
            (w @ Work::Generated { .. }, _, Some(t)) => r.generated(w, t).await,
            _ => Ok(Outcome::decided(Verdict::NotCompared, "its file was not given to the read loop")),
        };
        let outcome = match result {
            Ok(o) => o,
            Err(Interrupt::Cancelled) => {
                stop = Some("the audit was cancelled");
                break;
            }
            Err(Interrupt::Read(why)) => Outcome::decided(Verdict::NotCompared, why),
        };
        let failed = fails(outcome.verdict);
        outcomes.push(Some(outcome));
        r.progress.pairs_done += 1;
        if r.tick(0, 0).is_err() {
            stop = Some("the audit was cancelled");
            break;
        }
        if options.first_mismatch && failed {
            stop = Some("the audit stopped at the first mismatch (--first-mismatch)");
            break;
        }
    }
    Audit::assemble(plan, outcomes, stop)
}
