// Shared pieces of the browser tests: a tiny static server for dist/, Debian's Chromium
// through playwright-core, and an init script that counts every byte the page reads
// from a Blob/File.
import http from 'node:http';
import http2 from 'node:http2';
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { fileURLToPath } from 'node:url';
import { execFileSync } from 'node:child_process';
import { chromium } from 'playwright-core';
import { before, after, afterEach } from 'node:test';
import assert from 'node:assert/strict';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
// DIST=… serves another build (the benchmarks' before/after, same run).
export const DIST = process.env.DIST ? path.resolve(process.env.DIST) : path.join(ROOT, 'dist');
export const FIXTURES = path.join(ROOT, 'tests/fixtures');
export const OUT = path.join(ROOT, 'tests/e2e/out');
const TLS = path.join(ROOT, 'tests/e2e/tls');

const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript',
  '.wasm': 'application/wasm',
  '.css': 'text/css',
  '.json': 'application/json',
  '.png': 'image/png',
  '.svg': 'image/svg+xml',
};

/** Serves `dir` on 127.0.0.1 at a random port. `log` collects every request path.
 * `prefix` serves it under a sub-path (`/tensorpeek/`), answering unknown paths with its
 * 404.html as GitHub Pages does; `rewrite(relPath, text)` may change an HTML file. */
// `gzip` sends text, JS and wasm gzip-encoded to a client that accepts it, as GitHub Pages
// does (its CDN compresses wasm too: maxence-charriere/go-app#866) — the cold-load bench's
// visitor; compressed once per file (level 6, zlib's default) and kept, so that no request
// waits on compression.
const COMPRESSIBLE = new Set(['.html', '.js', '.wasm', '.css', '.json', '.svg']);
const gzipped = new Map();
function gzipOf(file) {
  const key = `${file}:${fs.statSync(file).mtimeMs}`;
  if (!gzipped.has(key)) gzipped.set(key, zlib.gzipSync(fs.readFileSync(file)));
  return gzipped.get(key);
}

// `h2` serves over HTTP/2 with TLS (a self-signed certificate for 127.0.0.1 and localhost,
// tests/e2e/tls/, made once with `openssl req -x509 -newkey ec -pkeyopt
// ec_paramgen_curve:prime256v1 -nodes -days 36500 -subj /CN=127.0.0.1 -addext
// subjectAltName=IP:127.0.0.1,DNS:localhost`: the browser context is to ignore certificate
// errors), as GitHub Pages serves its sites: every request of a page on one connection,
// where HTTP/1.1 gives a browser six per host and a seventh request waits for one of them.
export async function serve(dir = DIST, { check = 'index.html', prefix = '/', rewrite = null, gzip = false, h2 = false } = {}) {
  if (!fs.existsSync(path.join(dir, check))) {
    throw new Error(`${dir}/index.html is missing: run \`trunk build --release --offline\` first`);
  }
  const log = [];
  const handler = (req, res) => {
    log.push(req.url);
    const url = new URL(req.url, 'http://x');
    let rel = decodeURIComponent(url.pathname);
    if (!rel.startsWith(prefix)) rel = '/\0';
    rel = '/' + rel.slice(prefix.length);
    if (rel.endsWith('/')) rel += 'index.html';
    const file = path.join(dir, path.normalize(rel));
    if (!file.startsWith(dir) || !fs.existsSync(file) || !fs.statSync(file).isFile()) {
      const notFound = path.join(dir, '404.html');
      if (prefix !== '/' && fs.existsSync(notFound)) {
        let body = fs.readFileSync(notFound, 'utf8');
        if (rewrite) body = rewrite('/404.html', body);
        res.writeHead(404, { 'content-type': TYPES['.html'], 'cache-control': 'no-store' });
        res.end(body);
        return;
      }
      res.writeHead(404);
      res.end('not found');
      return;
    }
    if (rewrite && file.endsWith('.html')) {
      res.writeHead(200, { 'content-type': TYPES['.html'], 'cache-control': 'no-store' });
      res.end(rewrite(rel, fs.readFileSync(file, 'utf8')));
      return;
    }
    const type = TYPES[path.extname(file)] ?? 'application/octet-stream';
    if (gzip && COMPRESSIBLE.has(path.extname(file)) && /\bgzip\b/.test(req.headers['accept-encoding'] ?? '')) {
      const body = gzipOf(file);
      res.writeHead(200, { 'content-type': type, 'content-encoding': 'gzip', 'content-length': body.length, 'cache-control': 'no-store', vary: 'accept-encoding' });
      res.end(body);
      return;
    }
    res.writeHead(200, { 'content-type': type, 'cache-control': 'no-store' });
    fs.createReadStream(file).pipe(res);
  };
  const server = h2
    ? http2.createSecureServer({ key: fs.readFileSync(path.join(TLS, 'key.pem')), cert: fs.readFileSync(path.join(TLS, 'cert.pem')), allowHTTP1: true }, handler)
    : http.createServer(handler);
  await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
  const { port } = server.address();
  // an HTTP/2 connection stays open after its page has gone: closed with the server
  const sessions = new Set();
  server.on('session', (session) => { sessions.add(session); session.on('close', () => sessions.delete(session)); });
  const scheme = h2 ? 'https' : 'http';
  return {
    url: `${scheme}://127.0.0.1:${port}${prefix}`, origin: `${scheme}://127.0.0.1:${port}`, log,
    close: () => new Promise((ok) => { for (const session of sessions) session.destroy(); server.close(ok); }),
  };
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
  // Every Content-Security-Policy violation is said on the console (collected by the
  // harness; any one fails the test).
  document.addEventListener('securitypolicyviolation', (e) => {
    console.error(`CSP violation: ${e.violatedDirective} blocked ${e.blockedURI || 'inline'} in ${e.documentURI}`);
  });
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

/** CSP violations seen by any page of the running test (checked after each test). */
export const cspViolations = [];

/** A page on the served app with read counting, network and error logs. Service workers
 * are blocked unless `options.serviceWorkers` is 'allow' (the offline test): the app's
 * worker loader must be fetched through Playwright's route to be counted.
 *
 * In the test files (their browser from `useBrowser`; never in a benchmark, which measures
 * new pages), a test's page is kept for the next one that asks for the same options when
 * the test closes its context having changed nothing that a navigation does not reset (see
 * `keep`): the next test navigates it to its URL. A new context's page costs Chromium a renderer
 * process and every wasm module compiled again in it: 2.3–2.9 CPU-seconds per page with
 * its app against 0.9–1.2 for navigating a kept one (an idle 2-core machine, 2026-12-07);
 * a whole run made 27 pages and kept 103. */
export async function openPage(browser, url, { waitFor = '[data-testid=file-input]', countWorkerReads = true, app = true, ...options } = {}) {
  const key = JSON.stringify([countWorkerReads, options]);
  if (!keptPages.has(browser)) keptPages.set(browser, []);
  const kept = keptPages.get(browser);
  const at = kept.findIndex((k) => k.key === key);
  const entry = at >= 0 ? kept.splice(at, 1)[0] : await newEntry(browser, key, countWorkerReads, options);
  const { context, page } = entry;
  entry.changed = false;
  entry.inUse = true;
  const requests = [];
  const errors = [];
  const warnings = [];
  entry.listeners = [
    ['request', (r) => requests.push(r.url())],
    ['pageerror', (e) => errors.push(String(e))],
    ['console', (m) => {
      if (m.type() === 'error') errors.push(m.text());
      if (m.type() === 'warning') warnings.push(m.text());
      if (/CSP violation|Content Security Policy/i.test(m.text())) cspViolations.push(m.text());
    }],
  ];
  for (const [event, f] of entry.listeners) page.on(event, f);
  entry.events = eventCounts(page, context);
  await page.goto(url);
  if (waitFor) await page.waitForSelector(waitFor, { state: 'attached' });
  // `app`: wait until the app has taken over from the first view's plain HTML (www/loader.js
  // starts it on the pointer over the drop zone, as a person's would be), so that a test's
  // input reaches the app's own controls; `app: false` tests the first view itself.
  // (One evaluate: with ?url= the app may take over at any moment on its own.)
  if (app && await page.evaluate(() => !!document.querySelector('#shell [data-testid=empty]')
    ?.dispatchEvent(new PointerEvent('pointerover', { bubbles: true })) || !!document.getElementById('shell'))) {
    await page.waitForFunction(() => !document.getElementById('shell'), null, { timeout: 30_000 });
  }
  return { context, page, requests, errors, warnings };
}

// Per browser (one per test file), the pages kept for reuse: { key, context, page, ... };
// only the browsers of `useBrowser` keep pages.
const keptPages = new WeakMap();
const keeping = new WeakSet();

// What a test may do to its context or page that a navigation does not undo: any call of
// these marks the page as changed, and its context is then closed for good.
const CONTEXT_CHANGES = ['route', 'unroute', 'unrouteAll', 'routeFromHAR', 'routeWebSocket', 'grantPermissions', 'clearPermissions',
  'setOffline', 'setGeolocation', 'setExtraHTTPHeaders', 'setHTTPCredentials', 'addInitScript', 'addCookies', 'clearCookies',
  'exposeBinding', 'exposeFunction', 'newPage', 'setDefaultTimeout', 'setDefaultNavigationTimeout'];
const PAGE_CHANGES = ['route', 'unroute', 'unrouteAll', 'routeFromHAR', 'routeWebSocket', 'setViewportSize', 'emulateMedia',
  'setExtraHTTPHeaders', 'addInitScript', 'exposeBinding', 'exposeFunction', 'addLocatorHandler', 'setDefaultTimeout',
  'setDefaultNavigationTimeout', 'close'];

// Every event's listener count on the page and its context (Playwright's own waits add
// listeners and take them away again): a listener a test left is a change too.
const eventCounts = (page, context) => JSON.stringify([page, context].map((o) => o.eventNames().map((n) => [n, o.listenerCount(n)])));

async function newEntry(browser, key, countWorkerReads, options) {
  const context = await browser.newContext({ acceptDownloads: true, viewport: { width: 1280, height: 900 }, serviceWorkers: 'block', ...options });
  // Routing turns on Playwright's request interception for the whole context, under which
  // Chromium fails a worker's cross-origin fetch (net::ERR_FAILED, the server never
  // contacted): tests of files opened by URL pass `countWorkerReads: false`.
  if (countWorkerReads) {
    await context.route('**/tensorpeek-*_loader.js', async (route) => {
      try {
        const r = await route.fetch();
        await route.fulfill({ response: r, body: WORKER_COUNTING + (await r.text()) });
      } catch {
        // The page closed while its spare worker (web/worker/pool.rs) was loading.
      }
    });
  }
  const page = await context.newPage();
  await page.addInitScript(COUNT_READS);
  const entry = { key, context, page, changed: false, inUse: false, listeners: [], events: '' };
  for (const [target, names] of [[context, CONTEXT_CHANGES], [page, PAGE_CHANGES]]) {
    for (const name of names) {
      const f = target[name];
      if (typeof f === 'function') target[name] = function (...args) { entry.changed = true; return f.apply(this, args); };
    }
  }
  const close = context.close;
  context.close = async (...args) => {
    if (!entry.inUse) return; // closed (or kept) already
    entry.inUse = false;
    if (!(await keep(browser, entry))) await close.apply(context, args);
  };
  return entry;
}

/** Puts a test's page back for the next test when nothing was changed that a navigation
 * does not reset: its listeners taken off, the page navigated to about:blank and every
 * worker of the test's page gone (so that no read of the last test reaches the next one's
 * counts). Says whether it did. */
async function keep(browser, entry) {
  const { context, page } = entry;
  const left = eventCounts(page, context) !== entry.events;
  for (const [event, f] of entry.listeners) page.off(event, f);
  entry.listeners = [];
  if (!keeping.has(browser) || entry.changed || left || page.isClosed()) return false;
  try {
    const workers = page.workers();
    await page.goto('about:blank');
    // Chromium ends them with the document; should Playwright not say so within 10 s, the
    // context is closed instead (a new page for the next test, never a failure).
    for (const until = Date.now() + 10_000; workers.some((w) => page.workers().includes(w)); ) {
      if (Date.now() > until) return false;
      await new Promise((ok) => setTimeout(ok, 20));
    }
  } catch {
    return false;
  }
  keptPages.get(browser)?.push(entry);
  return true;
}

/** The memory of every Chromium process (PSS, bytes), for the benchmarks' peaks. */
export function chromiumPss() {
  let kb = 0;
  for (const pid of fs.readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      if (!fs.readFileSync(`/proc/${pid}/comm`, 'utf8').startsWith('chromium')) continue;
      const m = fs.readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8').match(/^Pss:\s+(\d+) kB/m);
      if (m) kb += Number(m[1]);
    } catch { /* the process ended */ }
  }
  return kb * 1024;
}

/** The requests made since index `from`, but the page's own: blob:/data: URLs (exports,
 * copies) and its code — the app, its worker and service worker, loaded from the app's
 * origin when a file is first coming. What is left is what the page fetched from the
 * network for the person. */
export const network = (requests, from = 0) =>
  requests.slice(from).filter((u) => !u.startsWith('blob:') && !u.startsWith('data:') && !OWN_CODE.test(u));

/** The page's own code, fetched from its origin when first needed: the app (when a file is
 * coming: www/loader.js), its worker, the service worker. */
const OWN_CODE = /\/(tensorpeek-[^/?#]*|loader\.js|sw\.js)([?#].*)?$/;

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

/** A view that is read and shown whole: its state `done`, and its tensor table (if any)
 * past the first rows (the table renders its first rows at once and the rest a frame
 * later: `data-complete` says which). `view` is `file` or `model`. */
export const shown = (view = 'file') =>
  `[data-testid=${view}-view][data-state=done]:not(:has([data-testid=table-wrap][data-complete=false]))`;

/** Waits until a view is `shown` (above); a timeout only stops a hang. */
export const done = (page, timeout = 30_000, view = 'file') => page.waitForSelector(shown(view), { timeout });

/** `target.screenshot(options)` (a page or a locator), asked again when the browser has
 * not answered in Playwright's 30 s: a CI run on a loaded 2-core machine once timed out in
 * Chromium's capture of a page that had rendered (its `done` state seen just before), and a
 * screenshot is a picture for people, not what a test asserts. Three unanswered asks are a
 * hang, and fail the test. */
export async function screenshot(target, options) {
  for (let ask = 1; ; ask++) {
    try {
      return await target.screenshot(options);
    } catch (e) {
      if (e?.name !== 'TimeoutError' || ask === 3) throw e;
      console.log(`screenshot ${options?.path ?? ''}: no answer in time (ask ${ask} of 3), asking again`);
    }
  }
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
    keeping.add(env.browser);
  });
  after(async () => {
    await env.browser?.close();
    await env.server?.close();
  });
  // No test may log a Content-Security-Policy violation (in the page, a frame or a worker
  // console).
  afterEach(() => {
    const seen = cspViolations.splice(0);
    assert.deepEqual(seen, [], 'Content-Security-Policy violations');
  });
  return env;
}

/** The CLI the tests compare the page with: $TENSORPEEK, else the debug build of this
 * checkout, brought up to date by cargo first (a no-op when it is; once per test file).
 * Never a binary that merely exists: a release build left from older code once made the
 * page, built from newer code, disagree with it. */
let built = null;
export function cliBinary() {
  if (process.env.TENSORPEEK) return process.env.TENSORPEEK;
  if (!built) {
    execFileSync('cargo', ['build', '--quiet', '--bin', 'tensorpeek'], { cwd: ROOT, stdio: 'inherit' });
    built = path.join(process.env.CARGO_TARGET_DIR ?? path.join(ROOT, 'target'), 'debug', 'tensorpeek');
  }
  return built;
}
