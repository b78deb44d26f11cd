//! One tensor's values: check the byte range against the shape and the file, then decode
//! streamed chunks into [`Stats`]. Synchronous and web-free: the one read loop
//! (`source::scan::scan_chunks`) drives a [`TensorScanner`], natively and in the Web Worker.
//!
//! Two decoding paths, same results:
//! - types of at most 16 bits per stored unit (BOOL, U8, I8, U16, I16, F16, BF16, all F8,
//!   F4): count how often each stored code occurs (a table of 2^8 or 2^16 counters), then
//!   decode each distinct code once at the end and feed it with its count. This is exact,
//!   holds no values and costs one table increment per element;
//! - everything else: decode each chunk into a reusable f64 buffer
//!   ([`ValueDecoder`]) and accumulate batch by batch.

use crate::dtype::decode::{Codec, NotDecoded, ValueDecoder};
use crate::error::{Code, Finding};
use crate::vocab::TensorEntry;
use crate::stats::{Stats, StatsAccumulator};

/// Why a scan produced no stats.
#[derive(Clone, Debug, PartialEq)]
pub enum ScanError {
    /// The values cannot be decoded, or the tensor's range is unsound (past the end of the
    /// file, size disagreeing with the shape): a finding about the file.
    Finding(Finding),
    /// A read failed mid-stream (file removed, changed, permission lost). `Code::ReadFailed`.
    Read(Finding),
    /// The caller cancelled after `done` bytes.
    Cancelled { done: u64 },
}

impl ScanError {
    /// The finding to show (none for a cancel).
    pub fn finding(&self) -> Option<&Finding> {
        match self {
            ScanError::Finding(f) | ScanError::Read(f) => Some(f),
            ScanError::Cancelled { .. } => None,
        }
    }
}

impl std::fmt::Display for ScanError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ScanError::Finding(x) | ScanError::Read(x) => x.fmt(f),
            ScanError::Cancelled { done } => write!(f, "cancelled after {done} bytes"),
        }
    }
}

/// The checked byte range of a tensor: what a reader must fetch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TensorRange {
    /// Absolute offset of the first byte in the file.
    pub start: u64,
    /// Byte length.
    pub len: u64,
    /// Element count.
    pub elements: u64,
}

/// Checks a tensor before any of its bytes are read: the type must be decodable, the
/// element count must match the byte length, and the range must lie inside the file.
pub fn plan(entry: &TensorEntry, file_len: u64) -> Result<(Codec, TensorRange), ScanError> {
    let finding = |code: Code, msg: String| {
        ScanError::Finding(
            Finding::error(code, msg)
                .tensor(entry.name.clone())
                .at_opt(entry.abs_start),
        )
    };
    // Not decodable (IQ*, TQ*, unknown names): a warning, never raw-byte "values".
    let codec = Codec::for_dtype(&entry.dtype).map_err(|e: NotDecoded| {
        ScanError::Finding(
            Finding::warning(Code::ValuesNotDecoded, e.message())
                .tensor(entry.name.clone())
                .field("dtype"),
        )
    })?;
    let Some(start) = entry.abs_start else {
        return Err(finding(Code::ShapeOverflow, "the tensor's absolute offset overflows u64".into()));
    };
    let Some(len) = entry.bytes else {
        return Err(finding(Code::InvalidOffsets, "the tensor's end offset is before its start".into()));
    };
    let Some(elements) = entry.shape.iter().try_fold(1u64, |a, &d| a.checked_mul(d)) else {
        return Err(finding(Code::ShapeOverflow, "the shape's element count overflows u64".into()));
    };
    let per_unit = codec.unit_values() as u64;
    if elements % per_unit != 0 {
        let code = if matches!(codec, Codec::Quant(_)) { Code::BlockMisaligned } else { Code::PartialByte };
        return Err(finding(
            code,
            format!("{elements} elements are not a whole number of {per_unit}-element units of {}", entry.dtype),
        ));
    }
    let expected = (elements / per_unit).checked_mul(codec.unit_bytes() as u64);
    if expected != Some(len) {
        return Err(finding(
            Code::SizeMismatch,
            format!(
                "the shape {:?} of {} needs {} bytes but the tensor has {len}",
                entry.shape,
                entry.dtype,
                expected.map_or_else(|| "more than 2^64".to_string(), |e| e.to_string())
            ),
        ));
    }
    match start.checked_add(len) {
        Some(end) if end <= file_len => {}
        _ => {
            return Err(finding(
                Code::TensorPastEnd,
                format!("bytes {start}..{start}+{len} run past the end of the file ({file_len} bytes)"),
            ))
        }
    }
    Ok((codec, TensorRange { start, len, elements }))
}

/// Largest strided view whose values are read: both the bytes it spans (read whole) and
/// its gathered elements (held once, contiguous) must fit in this budget — the same 64 MB
/// a scan may use above idle. A larger view is refused with a finding, never read.
pub const MAX_STRIDED_BYTES: u64 = 64 << 20;

/// A tensor that is a strided view of its storage (a transpose, a slice with a step, a
/// Fortran-order array): its strides in elements, outermost first, and its element size.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct StridedView {
    pub stride: Vec<u64>,
    pub element_size: u64,
}

/// The checked plan of a strided view: the span `[start, start + span)` to read and the
/// gathered (contiguous, row-major) byte length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StridedPlan {
    pub start: u64,
    pub span: u64,
    pub gathered: u64,
}

/// Checks a strided view before anything is read: its span must lie in the file and both
/// the span and the gathered elements must fit [`MAX_STRIDED_BYTES`].
pub fn plan_strided(entry: &TensorEntry, view: &StridedView, file_len: u64) -> Result<StridedPlan, ScanError> {
    let finding = |code: Code, msg: String| ScanError::Finding(Finding::error(code, msg).tensor(entry.name.clone()).at_opt(entry.abs_start));
    if view.stride.len() != entry.shape.len() || view.element_size == 0 {
        return Err(finding(Code::SizeMismatch, format!("stride {:?} does not fit the shape {:?}", view.stride, entry.shape)));
    }
    let Some(start) = entry.abs_start else {
        return Err(finding(Code::ShapeOverflow, "the tensor's absolute offset overflows u64".into()));
    };
    let elements = entry.shape.iter().try_fold(1u64, |a, &d| a.checked_mul(d));
    // elements touched: 1 + Σ (d − 1) × stride (none for an empty view)
    let extent = if entry.shape.contains(&0) {
        Some(0)
    } else {
        entry.shape.iter().zip(&view.stride).try_fold(1u64, |a, (&d, &s)| a.checked_add(d.checked_sub(1)?.checked_mul(s)?))
    };
    let (Some(span), Some(gathered)) = (
        extent.and_then(|e| e.checked_mul(view.element_size)),
        elements.and_then(|e| e.checked_mul(view.element_size)),
    ) else {
        return Err(finding(Code::ShapeOverflow, "the view's size overflows u64".into()));
    };
    if span > MAX_STRIDED_BYTES || gathered > MAX_STRIDED_BYTES {
        return Err(ScanError::Finding(
            Finding::warning(
                Code::ValuesNotDecoded,
                format!(
                    "a strided view (stride {:?}) spanning {span} bytes with {gathered} bytes of elements: views over {MAX_STRIDED_BYTES} bytes are not read (values are gathered in memory)",
                    view.stride
                ),
            )
            .tensor(entry.name.clone())
            .field("stride"),
        ));
    }
    match start.checked_add(span) {
        Some(end) if end <= file_len => Ok(StridedPlan { start, span, gathered }),
        _ => Err(finding(Code::TensorPastEnd, format!("the view spans bytes {start}..{start}+{span}, past the end of the file ({file_len} bytes)"))),
    }
}

/// The view's elements in row-major order, copied out of `span` (its bytes from the first
/// element on). `None` when an element lies outside `span` (a plan that was not checked).
pub fn gather_strided(span: &[u8], shape: &[u64], view: &StridedView, gathered: u64) -> Option<Vec<u8>> {
    let el = usize::try_from(view.element_size).ok()?;
    let mut out = Vec::with_capacity(usize::try_from(gathered.min(MAX_STRIDED_BYTES)).ok()?);
    if shape.contains(&0) {
        return Some(out);
    }
    let strides: Vec<usize> = view.stride.iter().map(|s| usize::try_from(*s).ok()?.checked_mul(el)).collect::<Option<_>>()?;
    let dims: Vec<usize> = shape.iter().map(|d| usize::try_from(*d).ok()).collect::<Option<_>>()?;
    // an odometer over the index, innermost dimension fastest
    let mut index = vec![0usize; dims.len()];
    let mut at = 0usize;
    loop {
        out.extend_from_slice(span.get(at..at.checked_add(el)?)?);
        let mut k = dims.len();
        loop {
            if k == 0 {
                return Some(out);
            }
            k -= 1;
            let (i, d, s) = (index.get_mut(k)?, *dims.get(k)?, *strides.get(k)?);
            *i += 1;
            if *i < d {
                at = at.checked_add(s)?;
                break;
            }
            at = at.checked_sub(s.checked_mul(d - 1)?)?;
            *i = 0;
        }
    }
}

/// Elements counted into [`CodeCounter`]'s u32 tables before they are added to its u64
/// totals: a u32 counter cannot overflow before then.
pub const CODE_FLUSH_ELEMENTS: u64 = u32::MAX as u64;

/// Lanes of the 8-bit counter: consecutive bytes go to different tables, so a run of equal
/// bytes (a zero-filled tensor) does not make every increment wait for the previous one.
const BYTE_LANES: usize = 4;

/// Counts how often each stored code of 1 or 2 bytes occurs.
///
/// Hand-written because it is the whole inner loop of the page's commonest scan (BF16/F16)
/// and no crate offers a byte-histogram of this shape. Codes are counted into a
/// 2^16-entry u32 table (256 KiB: its hot part stays in L1, unlike u64 counters), reading
/// 8 bytes at a time; the u32 counts are added to u64 totals every
/// [`CODE_FLUSH_ELEMENTS`] elements and at the end. Measured in V8 on 16 MiB of BF16
/// weights: 2.2 GB/s, against 0.6 GB/s for one u64 increment per 2-byte chunk.
struct CodeCounter {
    /// Bytes per code: 1 or 2.
    unit: usize,
    /// u32 counts since the last flush; for 1-byte codes, lane `l` uses entries
    /// `l * 256 .. l * 256 + 256`.
    small: Box<[u32; 1 << 16]>,
    /// Counts per code (2^8 or 2^16 entries).
    totals: Vec<u64>,
    /// Elements in `small` since the last flush.
    pending: u64,
    /// Flush after this many elements (at most [`CODE_FLUSH_ELEMENTS`]; smaller in tests).
    flush_every: u64,
    /// The first byte of a 2-byte code split across chunks.
    carry: Option<u8>,
}

impl CodeCounter {
    fn new(unit: usize, flush_every: u64) -> Self {
        let unit = unit.clamp(1, 2);
        CodeCounter {
            unit,
            small: Box::new([0; 1 << 16]),
            totals: vec![0; 1 << (8 * unit)],
            pending: 0,
            flush_every: flush_every.clamp(1, CODE_FLUSH_ELEMENTS),
            carry: None,
        }
    }

    fn bump(&mut self, code: u16) {
        if let Some(c) = self.small.get_mut(usize::from(code)) {
            *c += 1;
        }
        self.note(1);
    }

    /// Records `n` more elements in `small`, flushing when the limit is reached. Callers
    /// never count more than the room left (see [`count`](Self::count)).
    fn note(&mut self, n: u64) {
        self.pending += n;
        if self.pending >= self.flush_every {
            self.flush();
        }
    }

    fn flush(&mut self) {
        if self.unit == 1 {
            for lane in self.small.chunks_exact_mut(256).take(BYTE_LANES) {
                for (t, c) in self.totals.iter_mut().zip(lane.iter_mut()) {
                    *t += u64::from(*c);
                    *c = 0;
                }
            }
        } else {
            for (t, c) in self.totals.iter_mut().zip(self.small.iter_mut()) {
                *t += u64::from(*c);
                *c = 0;
            }
        }
        self.pending = 0;
    }

    /// The next bytes of the tensor.
    fn count(&mut self, mut bytes: &[u8]) {
        if self.unit == 2 {
            if let Some(lo) = self.carry.take() {
                match bytes.split_first() {
                    Some((&hi, rest)) => {
                        self.bump(u16::from_le_bytes([lo, hi]));
                        bytes = rest;
                    }
                    None => self.carry = Some(lo),
                }
            }
        }
        while !bytes.is_empty() {
            // At most the room left before a flush, and at least one element (flush_every >= 1).
            let room = usize::try_from(self.flush_every - self.pending).unwrap_or(usize::MAX);
            let take = room.saturating_mul(self.unit).min(bytes.len());
            let (now, rest) = bytes.split_at(take);
            bytes = rest;
            if self.unit == 1 {
                self.count_bytes(now);
                self.note(now.len() as u64);
            } else {
                let whole = now.len() / 2 * 2;
                let (pairs, odd) = now.split_at(whole);
                self.count_pairs(pairs);
                self.note((whole / 2) as u64);
                if let [b] = *odd {
                    // Only the last piece can end mid-code: `room` counts whole codes.
                    self.carry = Some(b);
                }
            }
        }
    }

    /// 1-byte codes, 8 at a time, two per lane.
    fn count_bytes(&mut self, bytes: &[u8]) {
        let t = &mut *self.small;
        let mut words = bytes.chunks_exact(8);
        for w in &mut words {
            let w = u64::from_le_bytes(w.try_into().unwrap_or_default());
            for (i, lane) in [0u64, 1, 2, 3, 0, 1, 2, 3].into_iter().enumerate() {
                let code = ((w >> (8 * i)) & 0xff) | (lane << 8);
                if let Some(c) = t.get_mut(code as usize) {
                    *c += 1;
                }
            }
        }
        for &b in words.remainder() {
            if let Some(c) = t.get_mut(usize::from(b)) {
                *c += 1;
            }
        }
    }

    /// 2-byte little-endian codes (`bytes.len()` is even), 4 at a time.
    fn count_pairs(&mut self, bytes: &[u8]) {
        let t = &mut *self.small;
        let mut words = bytes.chunks_exact(8);
        for w in &mut words {
            let w = u64::from_le_bytes(w.try_into().unwrap_or_default());
            for shift in [0, 16, 32, 48] {
                if let Some(c) = t.get_mut(usize::from((w >> shift) as u16)) {
                    *c += 1;
                }
            }
        }
        for p in words.remainder().chunks_exact(2) {
            if let [lo, hi] = *p {
                if let Some(c) = t.get_mut(usize::from(u16::from_le_bytes([lo, hi]))) {
                    *c += 1;
                }
            }
        }
    }

    /// Counts per code (index = the code's little-endian value).
    fn totals(mut self) -> Vec<u64> {
        self.flush();
        self.totals
    }
}

/// How a scanner turns bytes into values.
enum Mode {
    /// Count stored codes of 1 or 2 bytes; decode distinct codes at the end.
    Codes(Box<CodeCounter>),
    /// Decode every chunk into f64 values.
    Decode(Box<ValueDecoder>),
    /// Decode every chunk into f32 values (types whose values are all f32: F32, F6, every
    /// ggml block type): half the memory traffic, the same stats.
    Decode32(Box<ValueDecoder<f32>>),
}

/// Streams one tensor's bytes into [`Stats`]. Feed exactly the tensor's bytes, in order,
/// in chunks of any size; then call [`finish`](Self::finish).
pub struct TensorScanner {
    codec: Codec,
    mode: Mode,
    acc: StatsAccumulator,
    expected_bytes: u64,
    seen_bytes: u64,
    /// Units (from the start) the preview needs decoded directly.
    preview_units: u64,
    scratch: Vec<f64>,
}

impl TensorScanner {
    /// `sha256`: hash the raw bytes (the report's `sha256`; off only for benchmarks).
    pub fn new(codec: Codec, shape: &[u64], expected_bytes: u64, sha256: bool) -> Self {
        let mut acc = StatsAccumulator::new(codec.min_normal(), shape, sha256);
        acc.set_note(codec.note());
        let unit = codec.unit_bytes();
        let code_path = unit <= 2 && !matches!(codec, Codec::Quant(_) | Codec::Lut6x4(..));
        let mode = if code_path {
            Mode::Codes(Box::new(CodeCounter::new(unit, CODE_FLUSH_ELEMENTS)))
        } else {
            if codec.exact_in_f32() && std::env::var_os("F64").is_none() {
                Mode::Decode32(Box::new(ValueDecoder::typed(codec.clone())))
            } else {
                Mode::Decode(Box::new(ValueDecoder::new(codec.clone())))
            }
        };
        // The preview corner ends before (rows-1)*row_len + cols elements.
        let row_len = shape.last().copied().unwrap_or(1);
        let preview_elems = (crate::stats::PREVIEW_ROWS - 1).saturating_mul(row_len).saturating_add(crate::stats::PREVIEW_COLS);
        let per_unit = codec.unit_values() as u64;
        TensorScanner {
            codec,
            mode,
            acc,
            expected_bytes,
            seen_bytes: 0,
            preview_units: preview_elems.div_ceil(per_unit),
            scratch: Vec::new(),
        }
    }

    /// Builds a scanner for a planned tensor.
    pub fn for_tensor(codec: Codec, range: &TensorRange, shape: &[u64]) -> Self {
        TensorScanner::new(codec, shape, range.len, true)
    }

    pub fn bytes_seen(&self) -> u64 {
        self.seen_bytes
    }

    /// The next chunk of the tensor's bytes.
    pub fn feed(&mut self, bytes: &[u8]) {
        let before = self.seen_bytes;
        self.seen_bytes = self.seen_bytes.saturating_add(bytes.len() as u64);
        self.acc.raw(bytes);
        match &mut self.mode {
            Mode::Decode(d) => {
                let acc = &mut self.acc;
                d.feed(bytes, |v| acc.push(v));
            }
            Mode::Decode32(d) => {
                let acc = &mut self.acc;
                d.feed(bytes, |v| acc.push(v));
            }
            Mode::Codes(counter) => {
                let unit = counter.unit;
                // Whole units before this chunk.
                let seen_units = before / unit as u64;
                // Preview: decode the first units directly (element order matters there).
                if seen_units < self.preview_units {
                    let offset_in_unit = usize::from(counter.carry.is_some());
                    let want_units = usize::try_from(self.preview_units - seen_units).unwrap_or(usize::MAX);
                    let skip = if offset_in_unit == 1 { unit - 1 } else { 0 };
                    let mut first = seen_units;
                    let mut head: Vec<u8> = Vec::new();
                    if let (Some(c), Some(b)) = (counter.carry, bytes.first()) {
                        head.extend([c, *b]);
                        self.scratch.clear();
                        self.codec.decode(&head, &mut self.scratch);
                        self.acc.preview_values(first * self.codec.unit_values() as u64, &self.scratch);
                        first += 1;
                    }
                    let rest = bytes.get(skip..).unwrap_or(&[]);
                    let take = want_units.saturating_mul(unit).min(rest.len() / unit * unit);
                    if let Some(p) = rest.get(..take) {
                        self.scratch.clear();
                        self.codec.decode(p, &mut self.scratch);
                        self.acc.preview_values(first * self.codec.unit_values() as u64, &self.scratch);
                    }
                }
                counter.count(bytes);
            }
        }
    }

    /// The stats, once every byte was fed. A byte count different from the planned one,
    /// or a partial element left over, is an error (the source returned the wrong bytes).
    pub fn finish(mut self) -> Result<Stats, ScanError> {
        let acc = &mut self.acc;
        match &mut self.mode {
            Mode::Decode(d) => d.finish(|v| acc.push(v)),
            Mode::Decode32(d) => d.finish(|v| acc.push(v)),
            Mode::Codes(_) => {}
        }
        let leftover = match &self.mode {
            Mode::Decode(d) => d.leftover(),
            Mode::Decode32(d) => d.leftover(),
            Mode::Codes(counter) => usize::from(counter.carry.is_some()),
        };
        if self.seen_bytes != self.expected_bytes || leftover != 0 {
            return Err(ScanError::Read(Finding::error(
                Code::ReadFailed,
                format!(
                    "read {} bytes of a {}-byte tensor ({} bytes of a partial element left)",
                    self.seen_bytes, self.expected_bytes, leftover
                ),
            )));
        }
        let TensorScanner { codec, mode, mut acc, .. } = self;
        if let Mode::Codes(counter) = mode {
            let unit = counter.unit;
            let counts = counter.totals();
            // Decode every code that occurred, once.
            let mut codes: Vec<u8> = Vec::new();
            let mut weights: Vec<u64> = Vec::new();
            for (code, &n) in counts.iter().enumerate() {
                if n > 0 {
                    let le = (code as u16).to_le_bytes();
                    codes.extend(le.iter().take(unit));
                    weights.push(n);
                }
            }
            let mut vals = Vec::new();
            codec.decode(&codes, &mut vals);
            let per_unit = codec.unit_values();
            let pairs: Vec<(f64, u64)> = vals
                .chunks_exact(per_unit)
                .zip(&weights)
                .flat_map(|(vs, &w)| vs.iter().map(move |&v| (v, w)))
                .collect();
            acc.push_weighted(&pairs);
        }
        Ok(acc.finish())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn naive(unit: usize, bytes: &[u8]) -> Vec<u64> {
        let mut t = vec![0u64; 1 << (8 * unit)];
        for c in bytes.chunks_exact(unit) {
            let code = if unit == 1 { usize::from(c[0]) } else { usize::from(u16::from_le_bytes([c[0], c[1]])) };
            t[code] += 1;
        }
        t
    }

    proptest! {
        /// Any cut of the bytes and any flush interval give the same counts as counting
        /// one code at a time: the u32 tables are flushed before they could overflow and
        /// codes split across chunks are joined.
        #[test]
        fn counts_equal_naive(unit in 1usize..=2, bytes in proptest::collection::vec(any::<u8>(), 0..400),
                              zeros in 0usize..300, flush in 1u64..40, cuts in proptest::collection::vec(0usize..700, 0..5)) {
            let mut bytes = bytes;
            bytes.extend(std::iter::repeat_n(0u8, zeros));
            bytes.truncate(bytes.len() / unit * unit);
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(bytes.len())).collect();
            cuts.sort_unstable();
            for flush_every in [flush, CODE_FLUSH_ELEMENTS] {
                let mut c = CodeCounter::new(unit, flush_every);
                let mut at = 0;
                for &cut in cuts.iter().chain([&bytes.len()]) {
                    c.count(&bytes[at..cut]);
                    at = cut;
                }
                prop_assert!(c.carry.is_none());
                prop_assert_eq!(c.totals(), naive(unit, &bytes));
            }
        }
    }

    /// Counts reaching the flush interval move to the u64 totals; codes split across calls join.
    #[test]
    fn flush_moves_counts_to_the_totals() {
        let mut c = CodeCounter::new(2, 3);
        for _ in 0..5 {
            c.count(&[0, 0, 0, 0, 0, 0, 0, 0, 0]);
            c.count(&[0]);
        }
        assert_eq!(c.pending, 25 % 3, "25 codes, flushed every 3");
        let t = c.totals();
        assert_eq!(t[0], 25);
        assert_eq!(t.iter().sum::<u64>(), 25);
    }
}
