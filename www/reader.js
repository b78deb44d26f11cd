// tensorpeek's range reader: a worker nested in the values worker (src/web/reader.rs) that
// reads one byte range of a local file and hands it over in chunks, so that the browser's
// reading runs on its own thread while the values worker decodes and counts on another.
// On one thread the two took turns: a Blob stream fills a read's buffer in tasks of the
// thread that reads it, and those wait while wasm counts.
//
// Written in plain JS, not as part of the wasm program: it decodes nothing, and it starts
// in a few milliseconds where a wasm worker would first load and compile ~1.4 MB.
//
// Messages in:  { file, start, len, chunk, ahead }   read [start, start + len) of file
//               { back: ArrayBuffer }                 a chunk's buffer, free again
// Messages out: { ready: true }                       listening (sent at once)
//               { buf: ArrayBuffer, n }               the next n bytes (buf transferred)
//               { done: true }                        all len bytes were sent
//               { error: message }                    the read failed; nothing more comes
// At most `ahead` buffers of `chunk` bytes exist; a full one waits until one comes back.
'use strict';

let job = null;

onmessage = (e) => {
  const m = e.data;
  if (m && m.back instanceof ArrayBuffer) {
    if (job) { job.free.push(m.back); pump(job); }
  } else if (m && m.file instanceof Blob && job === null) {
    const { file, start, len, chunk, ahead } = m;
    job = {
      reader: file.slice(start, start + len).stream().getReader({ mode: 'byob' }),
      left: len, chunk, free: [], made: 0, ahead: Math.max(1, ahead), busy: false,
    };
    if (len === 0) postMessage({ done: true }); else pump(job);
  }
};

// One read at a time, into a free buffer (or a new one while fewer than `ahead` exist).
async function pump(j) {
  if (j.busy || j.left <= 0) return;
  let buf = j.free.pop();
  if (!buf && j.made < j.ahead) { buf = new ArrayBuffer(j.chunk); j.made++; }
  if (!buf) return;
  j.busy = true;
  try {
    // Wait for a full buffer (or the rest of the range): one message per chunk, not one per
    // piece the browser has at hand (64–200 KiB in Chromium). A browser without `min`
    // ignores it, and the chunk is what the read returned.
    const want = Math.min(buf.byteLength, j.left);
    const { done, value } = await j.reader.read(new Uint8Array(buf, 0, want), { min: want });
    const n = value ? value.byteLength : 0;
    if (n > 0) {
      j.left -= n;
      postMessage({ buf: value.buffer, n }, [value.buffer]);
    }
    if (j.left <= 0) {
      postMessage({ done: true });
    } else if (done) {
      postMessage({ error: `the stream ended ${j.left} bytes before the end of the range (the file changed?)` });
      j.left = 0;
    }
  } catch (err) {
    postMessage({ error: String(err && err.message ? err.message : err) });
    j.left = 0;
  }
  j.busy = false;
  pump(j);
}

postMessage({ ready: true });
