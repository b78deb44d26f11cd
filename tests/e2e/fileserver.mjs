// Test servers for files on the web, on 127.0.0.1 at ports of their own (so cross-origin
// to the page, as in real use): files served with Range and CORS — or, to test the
// failures, without Range support, without CORS, with a length that changes, or with a
// connection that breaks mid-way — and a small imitation of the Hugging Face Hub
// (`/api/models/ORG/REPO[/revision/REV]` and `/ORG/REPO/resolve/REV/FILE`, redirecting to
// a "CDN" server on another port as the Hub does). Every request is logged with the bytes
// of body the server wrote for it.
import http from 'node:http';
import fs from 'node:fs';

const CORS = {
  'access-control-allow-origin': '*',
  'access-control-expose-headers': 'Content-Range, Content-Length, Last-Modified',
};

/**
 * Starts a file server. `files` maps a path (`/a/model.gguf`) to a file on disk.
 * Options: `range` (default true) — answer `Range` with 206, else 200 and the whole file;
 * `cors` (default true); `grow` — a function returning bytes added to every length after
 * the first answer (a file that changes); `pace` — bytes per millisecond the body is
 * written at (a network link: on loopback the kernel's socket buffers would otherwise
 * take several MB of a body at once, before any client could say stop); `breakAfter` — destroy the connection after this
 * many body bytes of a response larger than it (not for ranges starting at 0: the file
 * opens, its values break); `holdAfter` — write at most this many body bytes, then send
 * nothing more and keep the connection open (a stalled link: whatever the client does and
 * however slow the machine, no more is sent; `entry.closed` says whether the client hung
 * up); `hub` — `{ repos: { 'org/repo': { files:
 * { 'path/in/repo': diskPath } } }, cdn }` to answer as the Hub (cdn: a file server the
 * resolve URLs redirect to).
 */
export async function fileServer({ files = {}, range = true, cors = true, grow = null, breakAfter = null, holdAfter = null, hub = null, pace = null } = {}) {
  const log = [];
  let answered = 0;
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, 'http://x');
    const entry = { method: req.method, path: url.pathname, range: req.headers.range ?? null, status: 0, sent: 0 };
    log.push(entry);
    const head = (status, headers) => {
      entry.status = status;
      res.writeHead(status, { ...(cors ? CORS : {}), 'cache-control': 'no-store', ...headers });
    };
    if (req.method === 'OPTIONS') {
      head(204, cors ? { 'access-control-allow-headers': 'Range', 'access-control-allow-methods': 'GET', 'access-control-max-age': '600' } : {});
      res.end();
      return;
    }
    if (hub) {
      const api = url.pathname.match(/^\/api\/models\/([^/]+\/[^/]+)(?:\/revision\/(.+))?$/);
      if (api) {
        const repo = hub.repos[api[1]];
        if (!repo) { head(404, { 'content-type': 'application/json' }); res.end('{"error":"Repository not found"}'); return; }
        const siblings = Object.entries(repo.files).map(([rfilename, p]) => ({ rfilename, size: fs.statSync(p).size }));
        const body = JSON.stringify({ id: api[1], sha: 'abc123', siblings });
        head(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
        entry.sent = Buffer.byteLength(body);
        res.end(body);
        return;
      }
      const resolve = url.pathname.match(/^\/([^/]+\/[^/]+)\/resolve\/([^/]+)\/(.+)$/);
      if (resolve) {
        const repo = hub.repos[resolve[1]];
        const file = decodeURIComponent(resolve[3]);
        if (!repo?.files[file]) { head(404, {}); res.end('Entry not found'); return; }
        // As the Hub: a redirect to the CDN, which serves the bytes with ranges and CORS.
        head(302, { location: `${hub.cdn.url}cdn/${resolve[1]}/${resolve[3]}?sig=test` });
        res.end();
        return;
      }
    }
    const file = files[decodeURIComponent(url.pathname)];
    if (!file || !fs.existsSync(file)) { head(404, { 'content-type': 'text/plain' }); res.end('not found'); return; }
    const real = fs.statSync(file).size;
    const size = real + (grow && answered > 0 ? grow() : 0);
    answered += 1;
    const m = range && req.headers.range?.match(/^bytes=(\d+)-(\d*)$/);
    let start = 0;
    let end = size - 1;
    if (m) {
      start = Number(m[1]);
      end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
      if (start >= size) { head(416, { 'content-range': `bytes */${size}` }); res.end(); return; }
      head(206, { 'content-type': 'application/octet-stream', 'content-range': `bytes ${start}-${end}/${size}`, 'content-length': end - start + 1, 'accept-ranges': 'bytes' });
    } else {
      head(200, { 'content-type': 'application/octet-stream', 'content-length': size });
    }
    // The body, written chunk by chunk with backpressure; `sent` counts what was handed
    // to the socket. A client that goes away stops it.
    const stream = fs.createReadStream(file, { start, end: Math.min(end, real - 1), highWaterMark: pace ? 16 * 1024 : 64 * 1024 });
    let closed = false;
    res.on('close', () => { closed = true; entry.closed = true; stream.destroy(); });
    stream.on('data', (chunk) => {
      if (closed) return;
      if (holdAfter !== null && entry.sent + chunk.length > holdAfter) {
        res.write(chunk.subarray(0, holdAfter - entry.sent));
        entry.sent = holdAfter;
        stream.destroy();
        return;
      }
      if (breakAfter !== null && start > 0 && entry.sent + chunk.length > breakAfter && end - start + 1 > breakAfter) {
        res.write(chunk.subarray(0, breakAfter - entry.sent));
        entry.sent = breakAfter;
        stream.destroy();
        // A moment later, as a network failing mid-way (the answer has begun).
        setTimeout(() => res.socket?.destroy(), 300);
        return;
      }
      entry.sent += chunk.length;
      if (pace) {
        stream.pause();
        res.write(chunk);
        setTimeout(() => { if (!closed) stream.resume(); }, chunk.length / pace);
      } else if (!res.write(chunk)) {
        stream.pause();
        res.once('drain', () => stream.resume());
      }
    });
    stream.on('end', () => res.end());
  });
  await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
  const { port } = server.address();
  server.keepAliveTimeout = 1000;
  return {
    url: `http://127.0.0.1:${port}/`,
    log,
    /** Body bytes written for GET requests since index `from` of the log. */
    sent: (from = 0) => log.slice(from).reduce((a, e) => a + e.sent, 0),
    gets: (from = 0) => log.slice(from).filter((e) => e.method === 'GET'),
    close: () => new Promise((ok) => { server.closeAllConnections?.(); server.close(ok); }),
  };
}
