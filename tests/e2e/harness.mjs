// Shared pieces of the browser tests: a tiny static server for dist/, Debian's Chromium
// through playwright-core, and an init script that counts every byte the page reads
// from a Blob/File.
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { before, after } from 'node:test';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const DIST = path.join(ROOT, 'dist');
export const FIXTURES = path.join(ROOT, 'tests/fixtures');
export const OUT = path.join(ROOT, 'tests/e2e/out');

const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript',
  '.wasm': 'application/wasm',
  '.css': 'text/css',
  '.json': 'application/json',
  '.png': 'image/png',
  '.svg': 'image/svg+xml',
};

/** Serves `dir` on 127.0.0.1 at a random port. `log` collects every request path. */
export async function serve(dir = DIST, { check = 'index.html' } = {}) {
  if (!fs.existsSync(path.join(dir, check))) {
    throw new Error(`${dir}/index.html is missing: run \`trunk build --release --offline\` first`);
  }
  const log = [];
  const server = http.createServer((req, res) => {
    log.push(req.url);
    const url = new URL(req.url, 'http://x');
    let rel = decodeURIComponent(url.pathname);
    if (rel.endsWith('/')) rel += 'index.html';
    const file = path.join(dir, path.normalize(rel));
    if (!file.startsWith(dir) || !fs.existsSync(file) || !fs.statSync(file).isFile()) {
      res.writeHead(404);
      res.end('not found');
      return;
    }
    res.writeHead(200, {
      'content-type': TYPES[path.extname(file)] ?? 'application/octet-stream',
      'cache-control': 'no-store',
    });
    fs.createReadStream(file).pipe(res);
  });
  await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
  const { port } = server.address();
  return { url: `http://127.0.0.1:${port}/`, log, close: () => new Promise((ok) => server.close(ok)) };
}

export const CHROMIUM_ARGS = [
  '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update',
  '--disable-sync', '--no-first-run', '--disable-quic',
];

export function launch() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    args: CHROMIUM_ARGS,
  });
}

// Runs in the page before its own scripts: every way of reading a Blob adds the bytes it
// reads to window.__reads (one entry per read: [kind, bytes]). The page's workers (which
// read the files) are counted too: `openPage` serves their loader with WORKER_COUNTING in
// front, and their reads arrive here as ['worker:' + kind, bytes].
export const COUNT_READS = () => {
  window.__reads = [];
  const note = (kind, blob) => window.__reads.push([kind, blob.size]);
  new BroadcastChannel('tensorpeek-test-reads').onmessage = (e) => window.__reads.push(e.data);
  for (const m of ['arrayBuffer', 'text', 'bytes', 'stream']) {
    const orig = Blob.prototype[m];
    if (!orig) continue;
    Blob.prototype[m] = function (...args) {
      note(m, this);
      return orig.apply(this, args);
    };
  }
  for (const m of ['readAsArrayBuffer', 'readAsText', 'readAsDataURL', 'readAsBinaryString']) {
    const orig = FileReader.prototype[m];
    FileReader.prototype[m] = function (blob, ...args) {
      note(m, blob);
      return orig.call(this, blob, ...args);
    };
  }
  window.__bytesRead = () => window.__reads.reduce((a, [, n]) => a + n, 0);
  window.__pageBytesRead = () => window.__reads.filter(([k]) => !k.startsWith('worker:')).reduce((a, [, n]) => a + n, 0);
};

// Put in front of the workers' loader script (not the page's own code): wraps the same
// Blob methods in the worker and reports each read to the page.
const WORKER_COUNTING = `{
  const ch = new BroadcastChannel('tensorpeek-test-reads');
  for (const m of ['arrayBuffer', 'text', 'bytes', 'stream']) {
    const orig = Blob.prototype[m];
    if (!orig) continue;
    Blob.prototype[m] = function (...args) { ch.postMessage(['worker:' + m, this.size]); return orig.apply(this, args); };
  }
}
`;

/** Every byte read from a Blob so far, by the page and its workers (the workers' reports
 * travel on a BroadcastChannel: give them a moment to arrive). */
export async function bytesRead(page, { pageOnly = false } = {}) {
  await page.waitForTimeout(150);
  return page.evaluate((pageOnly) => (pageOnly ? window.__pageBytesRead() : window.__bytesRead()), pageOnly);
}

/** A page on the served app with read counting, network and error logs. */
export async function openPage(browser, url, options = {}) {
  const context = await browser.newContext({ acceptDownloads: true, viewport: { width: 1280, height: 900 }, ...options });
  await context.route('**/tensorpeek-worker_loader.js', async (route) => {
    const r = await route.fetch();
    route.fulfill({ response: r, body: WORKER_COUNTING + (await r.text()) });
  });
  const page = await context.newPage();
  await page.addInitScript(COUNT_READS);
  const requests = [];
  const errors = [];
  page.on('request', (r) => requests.push(r.url()));
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  await page.goto(url);
  await page.waitForSelector('[data-testid=file-input]', { state: 'attached' });
  return { context, page, requests, errors };
}

/** The requests made since index `from`, but the page's own: blob:/data: URLs (exports,
 * copies) and its worker's script and wasm, loaded from the app's origin when a file is
 * first opened. What is left is what the page fetched from the network for the person. */
export const network = (requests, from = 0) =>
  requests.slice(from).filter((u) => !u.startsWith('blob:') && !u.startsWith('data:') && !/\/tensorpeek-worker/.test(u));

/** Thousands separators as the page prints them. */
/** Puts `file` in a hidden `<input type="file" id=ID>` of its own (the page clears its
 * file input once a file is taken), for tests that hand the File to a worker themselves. */
export async function addFileInput(page, id, file) {
  await page.evaluate((id) => {
    const i = document.createElement('input');
    i.type = 'file';
    i.id = id;
    i.hidden = true;
    document.body.append(i);
  }, id);
  await page.setInputFiles(`#${id}`, file);
}

export const th = (n) => BigInt(n).toString().replace(/\B(?=(\d{3})+(?!\d))/g, ',');

export const readJson = (p) => JSON.parse(fs.readFileSync(p, 'utf8'));

// One static server over dist/ and one Chromium for a whole test file: registers the
// file's `before`/`after` hooks and returns `{ server, browser }` once they ran.
export function useBrowser() {
  const env = {};
  before(async () => {
    fs.mkdirSync(OUT, { recursive: true });
    env.server = await serve();
    env.browser = await launch();
  });
  after(async () => {
    await env.browser?.close();
    await env.server?.close();
  });
  return env;
}
