//! A browser `Blob` (a dropped or picked `File`): as a byte source ([`BlobSource`], each read
//! `blob.slice(start, end).arrayBuffer()`) and as a stream of a range's chunks
//! ([`BlobChunks`], a BYOB stream reader into reused buffers, for tensor scans). Only the
//! requested range is ever read. Offsets go to `slice` as f64 (exact up to 2^53), never as
//! i32.

use super::ByteSource;
use crate::error::SourceError;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;

pub struct BlobSource {
    blob: web_sys::Blob,
    /// JS buffers [`ByteSource::read_into`] reads into, kept for the next reads (at most
    /// one per open stream and one more).
    spare: std::cell::RefCell<Vec<js_sys::ArrayBuffer>>,
    /// The streams [`ByteSource::read_into`] left open where their last reads ended, the
    /// most recently used last (at most [`MAX_CURSORS`]).
    cursors: std::cell::RefCell<Vec<Cursor>>,
    /// Streams opened by [`ByteSource::read_into`] so far ([`BlobSource::streams_opened`]).
    opened: std::cell::Cell<u64>,
    /// Whether each stream starts its next read as soon as one ends
    /// ([`BlobSource::with_read_ahead`]).
    read_ahead: bool,
    /// Reads started ahead so far ([`BlobSource::reads_ahead`]).
    ahead: std::cell::Cell<u64>,
}

/// Most streams [`BlobSource::read_into`] keeps open on one file, each where a read ended:
/// an MoE audit reads a GGUF's three stacked expert tensors of a layer (`ffn_gate_exps`,
/// `ffn_up_exps`, `ffn_down_exps`) in turn, expert by expert in the checkpoint's name
/// order (0, 1, 10, 100, …, 109, 11, 110, …) — about three runs of sequential reads per
/// stacked tensor, nine interleaved, which fewer streams would reopen again and again (a new
/// stream per read halves Chromium's throughput: see [`MAX_SKIP_BYTES`]). Over the
/// Qwen3-30B-A3B-shaped pair's 18,432 expert reads, simulated: 2,843 streams opened with 4
/// kept, 576 with 8, 438 with 12 (and 435 with 32).
pub const MAX_CURSORS: usize = 12;

/// Reads each stream of [`BlobSource::with_read_ahead`] keeps running ahead of what was
/// asked (each as long as the last read): two, measured on the sparse Qwen3-30B-A3B-shaped
/// pair's page audit (0.39–0.41 GB/s of source bytes with one, against 0.26 without).
pub const READ_AHEAD_DEPTH: usize = 2;

/// A BYOB reader over `slice(at, len)` of the blob, positioned at `pos` (the file offset
/// of the next byte a read gets: `held`'s first unread byte, else the pending read's).
struct Cursor {
    reader: web_sys::ReadableStreamByobReader,
    pos: u64,
    /// Bytes the stream gave that no read took yet, and how many of them were taken.
    held: Option<(js_sys::Uint8Array, u32)>,
    /// The reads started as soon as the last one ended ([`BlobSource::with_read_ahead`]),
    /// oldest first (at most [`READ_AHEAD_DEPTH`]).
    pending: std::collections::VecDeque<JsFuture>,
}

/// Largest JS buffer [`BlobSource::read_into`] keeps between reads (a longer read goes
/// through it in pieces): 64 MiB, the longest chunk any read loop asks for.
pub const MAX_READ_BUFFER_BYTES: u64 = 64 * 1024 * 1024;

/// Largest gap [`BlobSource::read_into`] reads over (and drops) to keep its stream rather
/// than open a new one: GGUF tensors are aligned (gaps under 64 bytes), a safetensors header
/// sits between shards' tensors only at file starts. Opening a stream per 8 MiB read halves
/// Chromium's throughput (measured: 0.43 against 0.72 GB/s, 1.05 against 2.03 GB/s over
/// 2 GiB), so sequential reads continue one stream.
pub const MAX_SKIP_BYTES: u64 = 1024 * 1024;

impl BlobSource {
    pub fn new(blob: web_sys::Blob) -> Self {
        BlobSource { blob, spare: std::cell::RefCell::new(Vec::new()), cursors: std::cell::RefCell::new(Vec::new()), opened: std::cell::Cell::new(0), read_ahead: false, ahead: std::cell::Cell::new(0) }
    }

    /// A source whose streams read ahead: when [`ByteSource::read_into`] ends, its stream's
    /// next [`READ_AHEAD_DEPTH`] reads (each as long as the one just done) start at once, so the browser reads the
    /// file on while the caller compares, or reads another file. For the conversion audit,
    /// which reads both sides' tensors in turn: Chromium reads a cold file faster with two
    /// reads in flight than with one (measured in a worker on the sparse 61 GB GGUF, 2 GiB
    /// each: 0.39–0.45 GB/s one stream, 0.73 GB/s two at once). At most [`READ_AHEAD_DEPTH`] reads
    /// ahead per open stream ([`MAX_CURSORS`]): at most that many chunks read that no one asks for.
    pub fn with_read_ahead(blob: web_sys::Blob) -> Self {
        BlobSource { read_ahead: true, ..BlobSource::new(blob) }
    }

    /// A JS buffer of at least `want` bytes: a spare one, else a new one.
    fn take_buffer(&self, want: u32) -> js_sys::ArrayBuffer {
        let mut spare = self.spare.borrow_mut();
        match spare.iter().position(|b| b.byte_length() >= want) {
            Some(i) => spare.swap_remove(i),
            None => js_sys::ArrayBuffer::new(want),
        }
    }

    /// Keeps a JS buffer for a later read (one per open stream and one more).
    fn give_buffer(&self, buf: js_sys::ArrayBuffer) {
        let mut spare = self.spare.borrow_mut();
        if spare.len() <= MAX_CURSORS {
            spare.push(buf);
        }
    }

    /// How many streams [`ByteSource::read_into`] has opened (each a `slice().stream()` of
    /// the file): sequential and interleaved-sequential reads go on with open ones.
    pub fn streams_opened(&self) -> u64 {
        self.opened.get()
    }

    /// How many reads were started ahead ([`BlobSource::with_read_ahead`]).
    pub fn reads_ahead(&self) -> u64 {
        self.ahead.get()
    }

    pub fn blob(&self) -> &web_sys::Blob {
        &self.blob
    }
}

/// Largest offset a JS number represents exactly.
pub const MAX_SAFE_OFFSET: u64 = (1 << 53) - 1;

fn js_err(what: &str, e: JsValue) -> SourceError {
    let detail = e
        .as_string()
        // Error and DOMException (NotReadableError when the file changed) carry `message`;
        // read it by reflection so a thrown non-Error value cannot trip a conversion.
        .or_else(|| {
            js_sys::Reflect::get(&e, &JsValue::from_str("message"))
                .ok()
                .and_then(|m| m.as_string())
        })
        .unwrap_or_else(|| "unknown error".to_string());
    SourceError::new(format!("{what}: {detail}"))
}

impl ByteSource for BlobSource {
    fn len(&self) -> u64 {
        let size = self.blob.size();
        if size.is_finite() && size >= 0.0 {
            size as u64
        } else {
            0
        }
    }

    async fn read_at(&self, start: u64, len: u64) -> Result<Vec<u8>, SourceError> {
        let end = start
            .checked_add(len)
            .filter(|&e| e <= MAX_SAFE_OFFSET)
            .ok_or_else(|| SourceError::new(format!("range {start}+{len} is out of reach")))?;
        let slice = self
            .blob
            .slice_with_f64_and_f64(start as f64, end as f64)
            .map_err(|e| js_err("Blob.slice failed", e))?;
        let buf = JsFuture::from(slice.array_buffer())
            .await
            .map_err(|e| js_err(&format!("reading bytes {start}..{end} failed"), e))?;
        let bytes = js_sys::Uint8Array::new(&buf).to_vec();
        if bytes.len() as u64 != len {
            return Err(SourceError::new(format!(
                "asked for {len} bytes at {start}, got {} (the file changed?)",
                bytes.len()
            )));
        }
        Ok(bytes)
    }

    /// A BYOB stream reader into one JS buffer kept from read to read (no new `ArrayBuffer`
    /// per read for the garbage collector to pile up), copied into `buf`. The stream stays
    /// open where the read ended, so the next read at (or a little past) that offset goes
    /// on with it; `read_at` when the browser has no byte stream.
    async fn read_into(&self, start: u64, len: u64, buf: &mut Vec<u8>) -> Result<(), SourceError> {
        let end = start
            .checked_add(len)
            .filter(|&e| e <= MAX_SAFE_OFFSET)
            .ok_or_else(|| SourceError::new(format!("range {start}+{len} is out of reach")))?;
        let n = usize::try_from(len).map_err(|_| SourceError::new(format!("a read of {len} bytes does not fit in memory")))?;
        if end > self.len() {
            return Err(SourceError::new(format!("asked for {len} bytes at {start}, past the end of the {} bytes (the file changed?)", self.len())));
        }
        // An open stream that can go on to `start`; else a new one from `start` to the end
        // (the least recently used closed when MAX_CURSORS are open).
        let mut cursor = {
            let mut open = self.cursors.borrow_mut();
            let at = open.iter().position(|c| c.pos <= start && start - c.pos <= MAX_SKIP_BYTES);
            match at {
                Some(i) => Some(open.remove(i)),
                None => {
                    if open.len() >= MAX_CURSORS {
                        let old = open.remove(0);
                        let _ = old.reader.cancel();
                    }
                    None
                }
            }
        };
        if cursor.is_none() {
            let slice = self
                .blob
                .slice_with_f64_and_f64(start as f64, self.len().min(MAX_SAFE_OFFSET) as f64)
                .map_err(|e| js_err("Blob.slice failed", e))?;
            match web_sys::ReadableStreamByobReader::new(&slice.stream()) {
                Ok(reader) => {
                    self.opened.set(self.opened.get().saturating_add(1));
                    cursor = Some(Cursor { reader, pos: start, held: None, pending: std::collections::VecDeque::new() });
                }
                Err(_) => {
                    *buf = self.read_at(start, len).await?;
                    return Ok(());
                }
            }
        }
        let Some(mut cursor) = cursor else { return Err(SourceError::new("no stream to read")) };
        let want = u32::try_from(len.clamp(1, MAX_READ_BUFFER_BYTES)).unwrap_or(u32::MAX);
        // Read over the gap, then into `buf`.
        let gap = usize::try_from(start - cursor.pos).unwrap_or(0);
        let result = async {
            if gap > 0 {
                let mut skip = vec![0; gap];
                self.pull(&mut cursor, want, &mut skip).await?;
            }
            buf.resize(n, 0);
            self.pull(&mut cursor, want, buf).await
        }
        .await;
        match result {
            Ok(()) => {
                cursor.pos = end;
                if self.read_ahead && cursor.held.is_none() && end < self.len() {
                    let ahead = u32::try_from((self.len() - end).min(u64::from(want))).unwrap_or(want);
                    while cursor.pending.len() < READ_AHEAD_DEPTH {
                        cursor.pending.push_back(self.start_read(&cursor.reader, ahead));
                        self.ahead.set(self.ahead.get().saturating_add(1));
                    }
                }
                self.cursors.borrow_mut().push(cursor);
                Ok(())
            }
            Err(e) => {
                let _ = cursor.reader.cancel();
                Err(SourceError::new(format!("reading bytes {start}..{end}: {e}")))
            }
        }
    }
}

impl BlobSource {
    /// Starts a BYOB read of up to `len` bytes into a spare JS buffer.
    fn start_read(&self, reader: &web_sys::ReadableStreamByobReader, len: u32) -> JsFuture {
        let view = js_sys::Uint8Array::new_with_byte_offset_and_length(&self.take_buffer(len), 0, len);
        JsFuture::from(reader.read_with_array_buffer_view(&view))
    }

    /// Fills `dst` from a cursor: the bytes it holds first, then its pending read's, then
    /// reads of at most `want` bytes into a spare JS buffer (which each BYOB read transfers
    /// and hands back as a new `ArrayBuffer` over the same memory, kept for the next read).
    async fn pull(&self, cursor: &mut Cursor, want: u32, dst: &mut [u8]) -> Result<(), SourceError> {
        let mut filled = 0usize;
        while filled < dst.len() {
            if cursor.held.is_none() {
                let fut = match cursor.pending.pop_front() {
                    Some(f) => f,
                    None => {
                        let room = u32::try_from(dst.len() - filled).unwrap_or(u32::MAX).min(want);
                        self.start_read(&cursor.reader, room)
                    }
                };
                let r = fut.await.map_err(|e| js_err("the read failed", e))?;
                match byob_value(&r) {
                    Some(value) if value.length() > 0 => cursor.held = Some((value, 0)),
                    _ => break,
                }
            }
            let Some((value, used)) = cursor.held.take() else { break };
            let avail = value.length().saturating_sub(used);
            let take = u32::try_from(dst.len() - filled).unwrap_or(u32::MAX).min(avail);
            let Some(part) = dst.get_mut(filled..filled.saturating_add(take as usize)) else { break };
            value.subarray(used, used.saturating_add(take)).copy_to(part);
            filled += take as usize;
            if take == avail {
                self.give_buffer(value.buffer());
            } else {
                cursor.held = Some((value, used.saturating_add(take)));
            }
        }
        if filled != dst.len() {
            return Err(SourceError::new(format!("the stream ended after {filled} of {} bytes (the file changed?)", dst.len())));
        }
        Ok(())
    }
}

/// A finished BYOB read's bytes (`{done, value}`), or `None` at the end of the stream.
fn byob_value(r: &JsValue) -> Option<js_sys::Uint8Array> {
    let done = js_sys::Reflect::get(r, &JsValue::from_str("done")).ok().and_then(|d| d.as_bool());
    if done == Some(true) {
        return None;
    }
    js_sys::Reflect::get(r, &JsValue::from_str("value")).ok()?.dyn_into().ok()
}

/// Chunk buffers not in use. A buffer is taken for each read and given back once its bytes
/// were copied out (or, when a [`Tee`] keeps it for a while, once the tee returns it), so
/// a scan allocates a few chunk buffers in all — not a new `ArrayBuffer` per chunk, which
/// the garbage collector let pile up: measured in Chromium over 788 MB, the renderer grew
/// by ~190 MiB with `slice().arrayBuffer()` per 8 MiB chunk and by 6–14 MiB with reused
/// buffers.
pub struct BufferPool {
    len: u32,
    free: Vec<js_sys::ArrayBuffer>,
}

impl BufferPool {
    pub fn new(len: u32) -> Self {
        BufferPool { len, free: Vec::new() }
    }

    pub fn take(&mut self) -> js_sys::ArrayBuffer {
        self.free.pop().unwrap_or_else(|| js_sys::ArrayBuffer::new(self.len))
    }

    pub fn give(&mut self, buf: js_sys::ArrayBuffer) {
        if buf.byte_length() == self.len {
            self.free.push(buf);
        }
    }
}

/// What happens to each chunk's JS buffer once its bytes are in wasm: by default it goes
/// back to the pool; the values worker's SHA-256 tee hands it to a hashing worker first.
#[allow(async_fn_in_trait)]
pub trait Tee {
    async fn take(&mut self, view: &js_sys::Uint8Array, pool: &mut BufferPool) -> Result<(), String>;
}

/// No tee: the buffer goes straight back to the pool.
pub struct NoTee;

impl Tee for NoTee {
    async fn take(&mut self, view: &js_sys::Uint8Array, pool: &mut BufferPool) -> Result<(), String> {
        pool.give(view.buffer());
        Ok(())
    }
}

/// How [`BlobChunks`] reads: a BYOB stream when the browser offers one, else one
/// `slice().arrayBuffer()` per chunk; `Slices` forces the fallback (the e2e tests use it to
/// cover that path in Chromium).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadMode {
    Auto,
    Slices,
}

enum Reader {
    /// A BYOB ("bring your own buffer") reader over `Blob.slice(start, end).stream()`.
    Byob(web_sys::ReadableStreamByobReader),
    /// Fallback for a browser whose `Blob.stream()` is not a byte stream: `next..end` is
    /// still to read.
    Slices { next: u64, end: u64 },
}

/// A read in progress.
struct Pending {
    fut: JsFuture,
    byob: bool,
}

/// `[start, start + len)` of a Blob as a [`ChunkStream`](super::scan::ChunkStream): the
/// browser's implementation of the scan's input. The next read is already running (in the
/// browser, outside wasm) while the caller decodes the current chunk; each chunk's bytes
/// are copied into one reused wasm buffer, and the JS buffer goes to the [`Tee`].
pub struct BlobChunks<T: Tee> {
    blob: web_sys::Blob,
    reader: Reader,
    pool: BufferPool,
    chunk: u64,
    total: u64,
    done: u64,
    next: Option<Pending>,
    bytes: Vec<u8>,
    pub tee: T,
}

impl<T: Tee> BlobChunks<T> {
    pub fn open(blob: &web_sys::Blob, start: u64, len: u64, chunk: u64, mode: ReadMode, tee: T) -> Result<Self, SourceError> {
        let end = start
            .checked_add(len)
            .filter(|&e| e <= MAX_SAFE_OFFSET)
            .ok_or_else(|| SourceError::new(format!("range {start}+{len} is out of reach")))?;
        let byob = match mode {
            ReadMode::Auto => blob
                .slice_with_f64_and_f64(start as f64, end as f64)
                .ok()
                .and_then(|slice| web_sys::ReadableStreamByobReader::new(&slice.stream()).ok()),
            ReadMode::Slices => None,
        };
        let reader = match byob {
            Some(r) => Reader::Byob(r),
            None => Reader::Slices { next: start, end },
        };
        // Chunks are at most 64 MiB (MAX_SCAN_CHUNK_BYTES) and at most the range: u32.
        let chunk = super::scan::chunk_len(chunk).min(len.max(1));
        let mut chunks = BlobChunks {
            blob: blob.clone(),
            reader,
            pool: BufferPool::new(u32::try_from(chunk).unwrap_or(u32::MAX)),
            chunk,
            total: len,
            done: 0,
            next: None,
            bytes: Vec::new(),
            tee,
        };
        if len > 0 {
            chunks.next = chunks.start_read().transpose()?;
        }
        Ok(chunks)
    }

    /// Starts the next read: into a pooled buffer (BYOB; the buffer belongs to the stream
    /// until the read ends), or of the next slice. `None` once every slice was asked for.
    fn start_read(&mut self) -> Option<Result<Pending, SourceError>> {
        match &mut self.reader {
            Reader::Byob(reader) => {
                let view = js_sys::Uint8Array::new(&self.pool.take());
                Some(Ok(Pending { fut: JsFuture::from(reader.read_with_array_buffer_view(&view)), byob: true }))
            }
            Reader::Slices { next, end } => {
                if *next >= *end {
                    return None;
                }
                let at = *next;
                let to = at.saturating_add(self.chunk).min(*end);
                *next = to;
                Some(
                    self.blob
                        .slice_with_f64_and_f64(at as f64, to as f64)
                        .map(|s| Pending { fut: JsFuture::from(s.array_buffer()), byob: false })
                        .map_err(|e| js_err("Blob.slice failed", e)),
                )
            }
        }
    }

    /// A finished read: the bytes read, or `None` at the end of the stream.
    fn result(byob: bool, r: &JsValue) -> Option<js_sys::Uint8Array> {
        if !byob {
            return r.is_instance_of::<js_sys::ArrayBuffer>().then(|| js_sys::Uint8Array::new(r));
        }
        byob_value(r)
    }
}

impl<T: Tee> super::scan::ChunkStream for BlobChunks<T> {
    async fn next_chunk(&mut self) -> Result<Option<&[u8]>, SourceError> {
        let Some(Pending { fut, byob }) = self.next.take() else {
            return Ok(None);
        };
        let r = fut.await.map_err(|e| js_err("the read failed", e))?;
        let Some(view) = Self::result(byob, &r) else {
            return Ok(None);
        };
        self.done = self.done.saturating_add(u64::from(view.length()));
        if self.done < self.total {
            self.next = self.start_read().transpose()?;
        }
        self.bytes.resize(view.length() as usize, 0);
        view.copy_to(&mut self.bytes);
        self.tee.take(&view, &mut self.pool).await.map_err(SourceError::new)?;
        Ok(Some(&self.bytes))
    }
}

impl<T: Tee> Drop for BlobChunks<T> {
    fn drop(&mut self) {
        // Stops a stream read still running after an error (its promise is dropped).
        if let Reader::Byob(reader) = &self.reader {
            let _ = reader.cancel();
        }
    }
}
