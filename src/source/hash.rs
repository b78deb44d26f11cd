//! The SHA-256 of a whole file, streamed: the check people make after a 5 GB download.
//! One loop over any [`ChunkStream`] — natively `SourceChunks` over a file (`tensorpeek
//! sha256`), in the page's worker a Blob's BYOB stream ("Verify file").

use super::scan::{ChunkStream, SourceChunks};
use super::ByteSource;
use crate::error::SourceError;
use crate::stats::sha256_hex;
use sha2::{Digest, Sha256};

/// Why a hash has no result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HashError {
    /// A read failed at this offset.
    Read { at: u64, message: String },
    /// The file ended before (or ran past) its length: it changed while being read.
    Changed { at: u64 },
    Cancelled { done: u64 },
}

impl std::fmt::Display for HashError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HashError::Read { at, message } => write!(f, "reading at byte {at} failed: {message}"),
            HashError::Changed { at } => write!(f, "the file changed while it was read (at byte {at})"),
            HashError::Cancelled { done } => write!(f, "cancelled after {done} bytes"),
        }
    }
}

/// Hashes the `total` bytes `chunks` delivers; `on_progress(done, total)` before the first
/// chunk and after each, `false` cancels.
pub async fn hash_chunks<C: ChunkStream + ?Sized>(
    chunks: &mut C,
    total: u64,
    mut on_progress: impl FnMut(u64, u64) -> bool,
) -> Result<String, HashError> {
    let mut h = Sha256::new();
    let mut done = 0u64;
    if !on_progress(0, total) {
        return Err(HashError::Cancelled { done: 0 });
    }
    loop {
        let chunk = chunks.next_chunk().await.map_err(|e: SourceError| HashError::Read { at: done, message: e.message })?;
        let Some(bytes) = chunk else { break };
        let n = bytes.len() as u64;
        if n == 0 || done.saturating_add(n) > total {
            return Err(HashError::Changed { at: done });
        }
        h.update(bytes);
        done += n;
        if !on_progress(done, total) {
            return Err(HashError::Cancelled { done });
        }
    }
    if done != total {
        return Err(HashError::Changed { at: done });
    }
    Ok(sha256_hex(h))
}

/// The lowercase hex SHA-256 of all of `src`, read `chunk_len` bytes at a time.
pub async fn hash_source<S: ByteSource + ?Sized>(src: &S, chunk_len: u64, on_progress: impl FnMut(u64, u64) -> bool) -> Result<String, HashError> {
    let mut chunks = SourceChunks::new(src, 0, src.len(), chunk_len);
    hash_chunks(&mut chunks, src.len(), on_progress).await
}

/// What a person pasted to compare a file against: a bare hex digest, a `sha256sum` line
/// (`HEX  NAME` or `HEX *NAME`), an LFS pointer's `oid sha256:HEX`, or `sha256:HEX`. The
/// 64 hex digits, lowercased; `None` when there are none.
pub fn expected_digest(text: &str) -> Option<String> {
    let t = text.trim();
    let t = t.strip_prefix("oid ").unwrap_or(t);
    let t = t.strip_prefix("sha256:").unwrap_or(t);
    let hex: String = t.chars().take_while(char::is_ascii_hexdigit).collect();
    let rest = t.get(hex.len()..).unwrap_or("");
    let ends_well = rest.is_empty() || rest.starts_with(char::is_whitespace);
    (hex.len() == 64 && ends_well).then(|| hex.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::MemorySource;

    #[test]
    fn hashes_any_chunking_like_sha256sum() {
        // `printf abc | sha256sum`
        let abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
        for chunk in [1, 2, 3, 8 << 20] {
            let got = pollster::block_on(hash_source(&MemorySource::new(b"abc".to_vec()), chunk, |_, _| true));
            assert_eq!(got.as_deref(), Ok(abc), "chunk {chunk}");
        }
        let mut calls = 0;
        let r = pollster::block_on(hash_source(&MemorySource::new(vec![0; 10]), 3, |_, _| {
            calls += 1;
            calls < 3
        }));
        assert_eq!(r, Err(HashError::Cancelled { done: 6 }));
    }

    #[test]
    fn reads_what_people_paste() {
        let h = "BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD";
        let want = Some(h.to_ascii_lowercase());
        assert_eq!(expected_digest(h), want);
        assert_eq!(expected_digest(&format!("{h}  model.safetensors\n")), want);
        assert_eq!(expected_digest(&format!("{h} *model.safetensors")), want);
        assert_eq!(expected_digest(&format!("oid sha256:{h}")), want);
        assert_eq!(expected_digest(&format!("  sha256:{h} ")), want);
        assert_eq!(expected_digest(&h[1..]), None);
        assert_eq!(expected_digest(&format!("{h}0")), None);
        assert_eq!(expected_digest(""), None);
    }
}
