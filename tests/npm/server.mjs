// A static server for the npm tests, on 127.0.0.1 at a random port: files under `root`,
// answered with `Range` (206) and CORS, every request logged with its Range header and the
// bytes of body sent.
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';

const TYPES = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript', '.mjs': 'text/javascript', '.wasm': 'application/wasm', '.json': 'application/json' };

export async function serve(root) {
  const log = [];
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, 'http://x');
    const entry = { path: url.pathname, range: req.headers.range ?? null, status: 0, sent: 0 };
    log.push(entry);
    const file = path.join(root, path.normalize(decodeURIComponent(url.pathname)));
    const cors = { 'access-control-allow-origin': '*', 'access-control-expose-headers': 'Content-Range, Content-Length', 'cache-control': 'no-store' };
    if (req.method === 'OPTIONS') {
      res.writeHead(204, { ...cors, 'access-control-allow-headers': 'Range' });
      res.end();
      return;
    }
    if (!file.startsWith(root) || !fs.existsSync(file) || !fs.statSync(file).isFile()) {
      entry.status = 404;
      res.writeHead(404, cors);
      res.end('not found');
      return;
    }
    const size = fs.statSync(file).size;
    const type = TYPES[path.extname(file)] ?? 'application/octet-stream';
    const m = req.headers.range?.match(/^bytes=(\d+)-(\d*)$/);
    let [start, end] = [0, size - 1];
    if (m) {
      start = Number(m[1]);
      end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
      if (start >= size) { entry.status = 416; res.writeHead(416, { ...cors, 'content-range': `bytes */${size}` }); res.end(); return; }
      entry.status = 206;
      res.writeHead(206, { ...cors, 'content-type': type, 'content-range': `bytes ${start}-${end}/${size}`, 'content-length': end - start + 1, 'accept-ranges': 'bytes' });
    } else {
      entry.status = 200;
      res.writeHead(200, { ...cors, 'content-type': type, 'content-length': size });
    }
    const body = fs.createReadStream(file, { start, end });
    body.on('data', (c) => { entry.sent += c.length; });
    body.pipe(res);
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${server.address().port}`, log, close: () => new Promise((r) => server.close(r)) };
}
