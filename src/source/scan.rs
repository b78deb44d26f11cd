//! Reading one tensor's values from a byte source: exactly its byte range, in chunks,
//! with progress and cancel.

use super::ByteSource;
use crate::error::{Code, Finding};
use crate::report::{Format, TensorEntry};
use crate::stats::Stats;
use crate::values::{plan, ScanError, TensorScanner};

/// Bytes per read while scanning a tensor: 8 MiB, the low end of the 8–16 MiB the issue
/// asks for (large enough that per-read overhead is negligible, small enough that memory
/// stays far below the 64 MB budget and progress updates several times a second).
pub const SCAN_CHUNK_BYTES: u64 = 8 * 1024 * 1024;

/// Upper bound on a caller-chosen chunk length (64 MiB): the memory budget for a
/// scan is 64 MB above idle.
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

/// A read of the tensor's bytes at `at` that failed (`Code::ReadFailed`).
pub fn read_failed(entry: &TensorEntry, at: u64, message: String) -> ScanError {
    ScanError::Read(Finding::error(Code::ReadFailed, message).at(at).tensor(entry.name.clone()))
}

/// A read of `asked` bytes at `at` that returned `got` (`Code::FileChanged`).
pub fn short_read(entry: &TensorEntry, at: u64, asked: u64, got: u64) -> ScanError {
    ScanError::Read(
        Finding::error(Code::FileChanged, format!("asked for {asked} bytes at {at}, got {got} (did the file change?)"))
            .at(at)
            .tensor(entry.name.clone()),
    )
}

/// Reads the tensor's bytes `[abs_start, abs_start + bytes)` — never anything outside —
/// in chunks of `chunk_len` bytes (0 means [`SCAN_CHUNK_BYTES`]; at most
/// [`MAX_SCAN_CHUNK_BYTES`]) and returns its stats.
///
/// `on_progress(done, total)` is called once before the first read (done = 0) and after
/// every chunk; returning `false` cancels at once (no further read is issued) with
/// [`ScanError::Cancelled`]. A tensor whose type is not decoded, whose size disagrees
/// with its shape, or whose range runs past the end of the file is a
/// [`ScanError::Finding`] (nothing is read); a failed or short read is a
/// [`ScanError::Read`] naming the offset.
pub async fn scan_tensor<S: ByteSource>(
    src: &S,
    format: Format,
    entry: &TensorEntry,
    chunk_len: u64,
    on_progress: impl FnMut(u64, u64) -> bool,
) -> Result<Stats, ScanError> {
    scan_tensor_opts(src, format, entry, chunk_len, true, on_progress).await
}

/// [`scan_tensor`] with the SHA-256 optional: without it `Stats::sha256` is empty. In wasm
/// there is no SHA instruction and a software SHA-256 runs at ~0.2 GB/s, well below the
/// decoding and statistics; the page may scan without it and hash separately.
pub async fn scan_tensor_opts<S: ByteSource>(
    src: &S,
    format: Format,
    entry: &TensorEntry,
    chunk_len: u64,
    sha256: bool,
    mut on_progress: impl FnMut(u64, u64) -> bool,
) -> Result<Stats, ScanError> {
    let (codec, range) = plan(format, entry, src.len())?;
    let chunk_len = self::chunk_len(chunk_len);
    let mut scanner = TensorScanner::new(codec, &entry.shape, range.len, sha256);
    let total = range.len;
    if !on_progress(0, total) {
        return Err(ScanError::Cancelled { done: 0 });
    }
    let mut done = 0u64;
    while done < total {
        let len = chunk_len.min(total - done);
        // `done < total` and start + total <= file length (checked by `plan`): no overflow.
        let at = range.start.saturating_add(done);
        let bytes = src
            .read_at(at, len)
            .await
            .map_err(|e| read_failed(entry, at, format!("reading {len} bytes at {at} failed: {e}")))?;
        if bytes.len() as u64 != len {
            return Err(short_read(entry, at, len, bytes.len() as u64));
        }
        scanner.feed(&bytes);
        done += len;
        if !on_progress(done, total) {
            return Err(ScanError::Cancelled { done });
        }
    }
    scanner.finish()
}
