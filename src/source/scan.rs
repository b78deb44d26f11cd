//! Reading one tensor's values: exactly its byte range, as a stream of chunks, through the
//! decoder and the statistics, with progress and cancel.
//!
//! [`scan_chunks`] is the one read loop. It runs over any [`ChunkStream`]: natively
//! [`SourceChunks`] (`read_at` on a byte source, chunk after chunk), in the page's Web
//! Worker a BYOB stream reader over `Blob.slice().stream()` (`web::worker::entry`), and in the
//! tests streams cut at random places or failing on purpose — so the tests drive the very
//! loop the worker runs.

use super::ByteSource;
use crate::dtype::decode::Codec;
use crate::error::{Code, Finding, Severity, SourceError};
use crate::formats::Inspection;
use crate::stats::Stats;
use crate::values::{gather_strided, plan, plan_strided, ScanError, StridedView, TensorRange, TensorScanner};
use crate::vocab::TensorEntry;

/// Bytes per read while scanning a tensor: 8 MiB, large enough that per-read overhead is
/// negligible, small enough that memory stays far below the 64 MB budget and progress
/// updates several times a second.
pub const SCAN_CHUNK_BYTES: u64 = 8 * 1024 * 1024;

/// Upper bound on a caller-chosen chunk length (64 MiB): the memory budget for a scan is
/// 64 MB above idle.
pub const MAX_SCAN_CHUNK_BYTES: u64 = 64 * 1024 * 1024;

/// The bytes per read of a scan asked for `requested` (0 means [`SCAN_CHUNK_BYTES`]; at
/// most [`MAX_SCAN_CHUNK_BYTES`]).
pub fn chunk_len(requested: u64) -> u64 {
    if requested == 0 {
        SCAN_CHUNK_BYTES
    } else {
        requested.min(MAX_SCAN_CHUNK_BYTES)
    }
}

/// A byte range delivered in order, chunk by chunk. A chunk may have any non-zero length;
/// the stream ends with `Ok(None)`.
#[allow(async_fn_in_trait)] // single-threaded use (wasm and a blocking CLI): no Send bound wanted
pub trait ChunkStream {
    async fn next_chunk(&mut self) -> Result<Option<&[u8]>, SourceError>;
}

/// `[start, start + len)` of a byte source, read `chunk_len` bytes at a time into one
/// reused buffer.
pub struct SourceChunks<'a, S: ByteSource + ?Sized> {
    src: &'a S,
    next: u64,
    end: u64,
    chunk_len: u64,
    buf: Vec<u8>,
}

impl<'a, S: ByteSource + ?Sized> SourceChunks<'a, S> {
    pub fn new(src: &'a S, start: u64, len: u64, chunk_len: u64) -> Self {
        SourceChunks {
            src,
            next: start,
            end: start.saturating_add(len),
            chunk_len: self::chunk_len(chunk_len),
            buf: Vec::new(),
        }
    }
}

impl<S: ByteSource + ?Sized> ChunkStream for SourceChunks<'_, S> {
    async fn next_chunk(&mut self) -> Result<Option<&[u8]>, SourceError> {
        if self.next >= self.end {
            return Ok(None);
        }
        let len = self.chunk_len.min(self.end - self.next);
        self.buf = self.src.read_at(self.next, len).await?;
        self.next = self.next.saturating_add(len);
        Ok(Some(&self.buf))
    }
}

/// A read of the tensor's bytes at `at` that failed (`Code::ReadFailed`).
pub fn read_failed(entry: &TensorEntry, at: u64, message: String) -> ScanError {
    ScanError::Read(Finding::error(Code::ReadFailed, message).at(at).tensor(entry.name.clone()))
}

/// A read at `at` that brought `got` bytes where `asked` were due (`Code::FileChanged`).
pub fn short_read(entry: &TensorEntry, at: u64, asked: u64, got: u64) -> ScanError {
    ScanError::Read(
        Finding::error(Code::FileChanged, format!("asked for {asked} bytes at {at}, got {got} (did the file change?)"))
            .at(at)
            .tensor(entry.name.clone()),
    )
}

/// The read loop: takes the chunks of `range` from `chunks`, decodes them and returns the
/// stats (with the SHA-256 of the raw bytes when `sha256`).
///
/// `on_progress(done, total)` is called once before the first chunk (done = 0) and after
/// every chunk; returning `false` cancels at once (no further chunk is asked for) with
/// [`ScanError::Cancelled`]. A stream that fails, ends early, runs long or hands out an
/// empty chunk is a [`ScanError::Read`] naming the offset.
pub async fn scan_chunks<C: ChunkStream + ?Sized>(
    chunks: &mut C,
    codec: Codec,
    range: TensorRange,
    entry: &TensorEntry,
    sha256: bool,
    mut on_progress: impl FnMut(u64, u64) -> bool,
) -> Result<Stats, ScanError> {
    let total = range.len;
    let mut scanner = TensorScanner::new(codec, &entry.shape, total, sha256);
    if !on_progress(0, total) {
        return Err(ScanError::Cancelled { done: 0 });
    }
    let mut done = 0u64;
    loop {
        let at = range.start.saturating_add(done);
        let chunk = chunks
            .next_chunk()
            .await
            .map_err(|e| read_failed(entry, at, format!("reading at {at} failed: {e}")))?;
        let Some(bytes) = chunk else { break };
        let n = bytes.len() as u64;
        if n == 0 || done.saturating_add(n) > total {
            return Err(short_read(entry, at, total - done, n));
        }
        scanner.feed(bytes);
        done += n;
        if !on_progress(done, total) {
            return Err(ScanError::Cancelled { done });
        }
    }
    if done != total {
        return Err(short_read(entry, range.start.saturating_add(done), total - done, 0));
    }
    scanner.finish()
}

/// Reads the tensor's bytes `[abs_start, abs_start + bytes)` of `src` — never anything
/// outside — in chunks of `chunk_len` bytes (0 means [`SCAN_CHUNK_BYTES`]) and returns its
/// stats. A tensor whose type is not decoded, whose size disagrees with its shape, or whose
/// range runs past the end of the file is a [`ScanError::Finding`] (nothing is read). Without
/// `sha256`, `Stats::sha256` is empty (in wasm a software SHA-256 runs at ~0.2 GB/s, far
/// below the decoding).
pub async fn scan_tensor<S: ByteSource + ?Sized>(
    src: &S,
    entry: &TensorEntry,
    chunk_len: u64,
    sha256: bool,
    on_progress: impl FnMut(u64, u64) -> bool,
) -> Result<Stats, ScanError> {
    let (codec, range) = plan(entry, src.len())?;
    let mut chunks = SourceChunks::new(src, range.start, range.len, chunk_len);
    scan_chunks(&mut chunks, codec, range, entry, sha256, on_progress).await
}

/// One tensor of an inspected file, read as `tensorpeek stats` reads it (and the library's
/// `stats`): a strided view of a pickle's storage through [`scan_strided`], any other tensor
/// through [`scan_tensor`], with the SHA-256. A scan's finding joins the file's read
/// findings (`inspection.read_findings`), so the report of the file says it.
pub async fn tensor_stats<S: ByteSource + ?Sized>(
    src: &S,
    inspection: &mut Inspection,
    idx: usize,
    on_progress: impl FnMut(u64, u64) -> bool,
) -> TensorStats {
    let Some(entry) = inspection.tensors().get(idx).cloned() else {
        return TensorStats { stats: None, bytes_read: 0, failed: true };
    };
    // a view of a pickle-based file's storage (a transpose, a stepped slice, Fortran order)
    let strided = inspection
        .parsed
        .torch()
        .and_then(|t| t.layout(idx))
        .filter(|l| !l.contiguous)
        .map(|l| StridedView { stride: l.stride.clone(), element_size: l.element_size });
    let result = match &strided {
        Some(view) => scan_strided(src, &entry, view, true, on_progress).await,
        None => scan_tensor(src, &entry, SCAN_CHUNK_BYTES, true, on_progress).await.map(|s| (s, entry.bytes.unwrap_or(0))),
    };
    match result {
        Ok((stats, bytes_read)) => TensorStats { stats: Some(stats), bytes_read, failed: false },
        Err(e) => {
            let failed = e.finding().is_some_and(|f| f.severity == Severity::Error || f.code == Code::ValuesNotDecoded);
            if let Some(f) = e.finding() {
                inspection.read_findings.push(f.clone());
            }
            TensorStats { stats: None, bytes_read: 0, failed }
        }
    }
}

/// What [`tensor_stats`] read.
#[derive(Clone, Debug)]
pub struct TensorStats {
    pub stats: Option<Stats>,
    pub bytes_read: u64,
    /// The values could not be read or decoded (an error, or a type not decoded).
    pub failed: bool,
}

/// One chunk in memory (a strided view's gathered elements).
struct OneChunk<'a>(Option<&'a [u8]>);

impl ChunkStream for OneChunk<'_> {
    async fn next_chunk(&mut self) -> Result<Option<&[u8]>, SourceError> {
        Ok(self.0.take().filter(|b| !b.is_empty()))
    }
}

/// Reads a strided view's values (a transpose, a stepped slice, a Fortran-order array):
/// the bytes it spans in one read (at most [`crate::values::MAX_STRIDED_BYTES`], checked
/// before reading), its elements gathered through the strides in row-major order, then
/// the statistics as for any tensor. The stats' note says so; the SHA-256 is of the
/// gathered bytes. Returns the stats and the bytes read. `on_progress` is called before
/// and after the read; returning `false` cancels.
pub async fn scan_strided<S: ByteSource + ?Sized>(
    src: &S,
    entry: &TensorEntry,
    view: &StridedView,
    sha256: bool,
    mut on_progress: impl FnMut(u64, u64) -> bool,
) -> Result<(Stats, u64), ScanError> {
    let p = plan_strided(entry, view, src.len())?;
    // the gathered elements, as a contiguous tensor, through the decoder's own checks
    let flat = TensorEntry { bytes: Some(p.gathered), ..entry.clone() };
    let (codec, range) = plan(&flat, u64::MAX)?;
    if !on_progress(0, p.span) {
        return Err(ScanError::Cancelled { done: 0 });
    }
    let bytes = src
        .read_at(p.start, p.span)
        .await
        .map_err(|e| read_failed(entry, p.start, format!("reading {} bytes at {} failed: {e}", p.span, p.start)))?;
    if bytes.len() as u64 != p.span {
        return Err(short_read(entry, p.start, p.span, bytes.len() as u64));
    }
    if !on_progress(p.span, p.span) {
        return Err(ScanError::Cancelled { done: p.span });
    }
    let gathered = gather_strided(&bytes, &entry.shape, view, p.gathered)
        .filter(|g| g.len() as u64 == p.gathered)
        .ok_or_else(|| ScanError::Finding(Finding::error(Code::SizeMismatch, "the view's elements do not lie in the bytes it spans").tensor(entry.name.clone()).at(p.start)))?;
    drop(bytes);
    let mut chunks = OneChunk(Some(&gathered));
    let mut stats = scan_chunks(&mut chunks, codec, range, &flat, sha256, |_, _| true).await?;
    let said = format!(
        "a strided view (stride {:?}): its {} elements were gathered in row-major order from the {} bytes it spans; the SHA-256 is of the gathered bytes",
        view.stride,
        range.elements,
        p.span
    );
    stats.note = Some(match stats.note.take() {
        Some(n) => format!("{said}. {n}"),
        None => said,
    });
    Ok((stats, p.span))
}
