//! Byte sources, and every loop that reads from them.
//!
//! A source knows its length and reads a byte range asynchronously. Implementations: a
//! browser `Blob`/`File` (`blob`, wasm only), HTTP range requests (`http`, wasm only; what
//! its answers mean, and the messages, are [`remote`]'s, on both targets), a native file
//! (`file`, native only) and memory; [`page`] is either of the first two (wasm only). The read loops, each written once and
//! used by the page and the CLI alike: [`drive`] feeds a synchronous parser the prefix it
//! asks for; [`ranges`] feeds the pickle family's reader the ranges it asks for anywhere
//! in the file; [`inspect`] reads one file's header; [`set`] opens a set of files (a
//! checkpoint, a split GGUF); [`scan`] streams one tensor's bytes through the decoder;
//! [`audit`] reads two models' tensors side by side for the conversion audit.

pub mod audit;
#[cfg(target_arch = "wasm32")]
pub mod blob;
#[cfg(not(target_arch = "wasm32"))]
pub mod file;
#[cfg(target_arch = "wasm32")]
pub mod http;
pub mod hash;
pub mod inspect;
#[cfg(not(target_arch = "wasm32"))]
pub mod net;
#[cfg(target_arch = "wasm32")]
pub mod page;
pub mod ranges;
pub mod remote;
pub mod resolve;
pub mod scan;
pub mod set;

pub use inspect::inspect;
pub use scan::{scan_tensor, SCAN_CHUNK_BYTES};

use crate::error::{Code, Finding, SourceError};
use crate::formats::Step;

/// Something with a length that can be read at any offset. Offsets and lengths are u64
/// everywhere (files pass 4 GiB, also in wasm32).
#[allow(async_fn_in_trait)] // single-threaded use (wasm and a blocking CLI): no Send bound wanted
pub trait ByteSource {
    /// Total length in bytes.
    fn len(&self) -> u64;

    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Reads `len` bytes at `start`. Implementations must return exactly that many bytes
    /// or an error; callers never ask past `self.len()`.
    async fn read_at(&self, start: u64, len: u64) -> Result<Vec<u8>, SourceError>;

    /// Reads `len` bytes at `start` into `buf` (resized to `len`), so that a loop can reuse
    /// one buffer (the audit reads two 8 MiB buffers per step; a fresh allocation per read
    /// costs page faults). By default, `read_at`'s result replaces `buf`.
    async fn read_into(&self, start: u64, len: u64, buf: &mut Vec<u8>) -> Result<(), SourceError> {
        *buf = self.read_at(start, len).await?;
        Ok(())
    }
}

/// `ByteSource` for an enum whose every variant holds one source: each call goes to the
/// variant's (the CLI's inputs, the page's files, the parse worker's inputs).
/// `delegate_byte_source!(Src { File, Url, Memory });`
macro_rules! delegate_byte_source {
    ($ty:ident { $($variant:ident),+ $(,)? }) => {
        impl $crate::source::ByteSource for $ty {
            fn len(&self) -> u64 {
                match self {
                    $($ty::$variant(s) => $crate::source::ByteSource::len(s),)+
                }
            }

            async fn read_at(&self, start: u64, len: u64) -> Result<Vec<u8>, $crate::error::SourceError> {
                match self {
                    $($ty::$variant(s) => $crate::source::ByteSource::read_at(s, start, len).await,)+
                }
            }

            async fn read_into(&self, start: u64, len: u64, buf: &mut Vec<u8>) -> Result<(), $crate::error::SourceError> {
                match self {
                    $($ty::$variant(s) => $crate::source::ByteSource::read_into(s, start, len, buf).await,)+
                }
            }
        }
    };
}
pub(crate) use delegate_byte_source;

/// A shared source is a source (the page keeps its files behind `Rc`s).
impl<T: ByteSource + ?Sized> ByteSource for std::rc::Rc<T> {
    fn len(&self) -> u64 {
        (**self).len()
    }

    async fn read_at(&self, start: u64, len: u64) -> Result<Vec<u8>, SourceError> {
        (**self).read_at(start, len).await
    }

    async fn read_into(&self, start: u64, len: u64, buf: &mut Vec<u8>) -> Result<(), SourceError> {
        (**self).read_into(start, len, buf).await
    }
}

/// A borrowed source is a source (the audit reads the files a set driver opened).
impl<T: ByteSource + ?Sized> ByteSource for &T {
    fn len(&self) -> u64 {
        (**self).len()
    }

    async fn read_at(&self, start: u64, len: u64) -> Result<Vec<u8>, SourceError> {
        (**self).read_at(start, len).await
    }

    async fn read_into(&self, start: u64, len: u64, buf: &mut Vec<u8>) -> Result<(), SourceError> {
        (**self).read_into(start, len, buf).await
    }
}

/// Bytes in memory (tests, and anything already loaded).
#[derive(Clone, Debug, Default)]
pub struct MemorySource {
    bytes: Vec<u8>,
}

impl MemorySource {
    pub fn new(bytes: Vec<u8>) -> Self {
        MemorySource { bytes }
    }
}

impl ByteSource for MemorySource {
    fn len(&self) -> u64 {
        self.bytes.len() as u64
    }

    async fn read_at(&self, start: u64, len: u64) -> Result<Vec<u8>, SourceError> {
        let range = usize::try_from(start)
            .ok()
            .zip(start.checked_add(len).and_then(|e| usize::try_from(e).ok()));
        range
            .and_then(|(s, e)| self.bytes.get(s..e))
            .map(<[u8]>::to_vec)
            .ok_or_else(|| SourceError::new(format!("range {start}+{len} is outside the {} bytes in memory", self.bytes.len())))
    }
}

/// A growing prefix of a source, counting what was read.
pub struct Prefix<'a, S: ByteSource + ?Sized> {
    src: &'a S,
    buf: Vec<u8>,
    bytes_read: u64,
}

impl<'a, S: ByteSource + ?Sized> Prefix<'a, S> {
    pub fn new(src: &'a S) -> Self {
        Prefix {
            src,
            buf: Vec::new(),
            bytes_read: 0,
        }
    }

    pub fn bytes(&self) -> &[u8] {
        &self.buf
    }

    pub fn bytes_read(&self) -> u64 {
        self.bytes_read
    }

    /// Extends the prefix to at least `want` bytes (capped at the source length) by
    /// reading only the missing tail.
    pub async fn extend_to(&mut self, want: u64) -> Result<(), SourceError> {
        let want = want.min(self.src.len());
        let have = self.buf.len() as u64;
        if want <= have {
            return Ok(());
        }
        let chunk = self.src.read_at(have, want - have).await?;
        if chunk.len() as u64 != want - have {
            return Err(SourceError::new(format!(
                "asked for {} bytes at offset {have}, got {}",
                want - have,
                chunk.len()
            )));
        }
        self.bytes_read = self.bytes_read.saturating_add(chunk.len() as u64);
        self.buf.extend_from_slice(&chunk);
        Ok(())
    }
}

/// Upper bound on parse rounds, so a parser that keeps asking can never loop forever.
pub const MAX_PARSE_ROUNDS: usize = 10_000;

/// Runs a parser to completion over a source: parse, read what it needs, parse again.
pub async fn drive<S: ByteSource + ?Sized, T>(
    prefix: &mut Prefix<'_, S>,
    parse: impl Fn(&[u8], u64) -> Step<T>,
    read_hint: impl Fn(u64, u64) -> u64,
) -> Result<T, DriveError> {
    let len = prefix.src.len();
    for _ in 0..MAX_PARSE_ROUNDS {
        match parse(prefix.bytes(), len) {
            Step::Done(t) => return Ok(t),
            Step::Need(n) => {
                let have = prefix.bytes().len() as u64;
                if n <= have || have >= len {
                    return Err(DriveError::Stuck { need: n, have });
                }
                let want = read_hint(have, n).max(n);
                prefix.extend_to(want).await.map_err(DriveError::Read)?;
            }
        }
    }
    Err(DriveError::Stuck {
        need: 0,
        have: prefix.bytes().len() as u64,
    })
}

#[derive(Debug)]
pub enum DriveError {
    Read(SourceError),
    /// The parser asked for bytes the file does not have (a parser bug: parsers must turn
    /// that into a finding).
    Stuck { need: u64, have: u64 },
}

impl DriveError {
    pub fn finding(&self) -> Finding {
        match self {
            DriveError::Read(e) => Finding::error(Code::ReadFailed, format!("reading the file failed: {e}")),
            DriveError::Stuck { need, have } => Finding::error(
                Code::ReadFailed,
                format!("the parser needed {need} bytes but only {have} could be read"),
            ),
        }
    }
}
