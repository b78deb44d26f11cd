//! One tensor's values: check the byte range against the shape and the file, then decode
//! streamed chunks into [`Stats`]. Synchronous and web-free: the async reader
//! (`source::scan::scan_tensor`) and a Web Worker both drive a [`TensorScanner`].
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
use crate::report::{Format, TensorEntry};
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
pub fn plan(format: Format, entry: &TensorEntry, file_len: u64) -> Result<(Codec, TensorRange), ScanError> {
    let finding = |code: Code, msg: String| {
        ScanError::Finding(
            Finding::error(code, msg)
                .tensor(entry.name.clone())
                .at_opt(entry.abs_start),
        )
    };
    // Not decodable (IQ*, TQ*, unknown names): a warning, never raw-byte "values".
    let codec = Codec::for_tensor(format, &entry.dtype).map_err(|e: NotDecoded| {
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

/// How a scanner turns bytes into values.
enum Mode {
    /// Count stored codes of `unit` (1 or 2) bytes; decode distinct codes at the end.
    Codes { unit: usize, counts: Vec<u64>, carry: Option<u8> },
    /// Decode every chunk.
    Decode(Box<ValueDecoder>),
}

/// Streams one tensor's bytes into [`Stats`]. Feed exactly the tensor's bytes, in order,
/// in chunks of any size; then call [`finish`](Self::finish).
pub struct TensorScanner {
    codec: Codec,
    mode: Mode,
    acc: StatsAccumulator,
    expected_bytes: u64,
    seen_bytes: u64,
    /// Elements seen so far (for the preview in the code-count path).
    seen_units: u64,
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
            Mode::Codes { unit, counts: vec![0; 1 << (8 * unit)], carry: None }
        } else {
            Mode::Decode(Box::new(ValueDecoder::new(codec.clone())))
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
            seen_units: 0,
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
        self.seen_bytes = self.seen_bytes.saturating_add(bytes.len() as u64);
        self.acc.raw(bytes);
        match &mut self.mode {
            Mode::Decode(d) => {
                let acc = &mut self.acc;
                d.feed(bytes, |v| acc.push(v));
            }
            Mode::Codes { unit, counts, carry } => {
                let unit = *unit;
                // Preview: decode the first units directly (element order matters there).
                if self.seen_units < self.preview_units {
                    let offset_in_unit = usize::from(carry.is_some());
                    let want_units = usize::try_from(self.preview_units - self.seen_units).unwrap_or(usize::MAX);
                    let skip = if offset_in_unit == 1 { unit - 1 } else { 0 };
                    let mut first = self.seen_units;
                    let mut head: Vec<u8> = Vec::new();
                    if let (Some(c), Some(b)) = (*carry, bytes.first()) {
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
                let mut body = bytes;
                if unit == 1 {
                    for &b in body {
                        if let Some(c) = counts.get_mut(usize::from(b)) {
                            *c += 1;
                        }
                    }
                    self.seen_units += body.len() as u64;
                } else {
                    if let Some(lo) = carry.take() {
                        if let Some((&hi, rest)) = body.split_first() {
                            if let Some(c) = counts.get_mut(usize::from(u16::from_le_bytes([lo, hi]))) {
                                *c += 1;
                            }
                            self.seen_units += 1;
                            body = rest;
                        } else {
                            *carry = Some(lo);
                        }
                    }
                    let mut pairs = body.chunks_exact(2);
                    for p in &mut pairs {
                        if let [lo, hi] = *p {
                            if let Some(c) = counts.get_mut(usize::from(u16::from_le_bytes([lo, hi]))) {
                                *c += 1;
                            }
                        }
                    }
                    self.seen_units += (body.len() / 2) as u64;
                    if let [last] = *pairs.remainder() {
                        *carry = Some(last);
                    }
                }
            }
        }
    }

    /// The stats, once every byte was fed. A byte count different from the planned one,
    /// or a partial element left over, is an error (the source returned the wrong bytes).
    pub fn finish(mut self) -> Result<Stats, ScanError> {
        if let Mode::Decode(d) = &mut self.mode {
            let acc = &mut self.acc;
            d.finish(|v| acc.push(v));
        }
        let leftover = match &self.mode {
            Mode::Decode(d) => d.leftover(),
            Mode::Codes { carry, .. } => usize::from(carry.is_some()),
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
        if let Mode::Codes { unit, counts, .. } = mode {
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
