// tensorpeek's service worker: keeps the app shell — the page, its scripts, wasm and styles,
// files at the app's own level on its own origin — so that the page loads without a network.
// It never caches model bytes: requests to other origins (every URL a person opens), requests
// with a Range header, and anything but .html/.js/.wasm/.css (or the page itself) go to the
// network untouched. Network first: online, every load gets the current version (a new
// version is picked up on reload) and refreshes the copy; offline, the copy answers.
const CACHE = 'tensorpeek-shell';

const scopePath = () => new URL(self.registration.scope).pathname;

/** The cache key of a shell request (the page without its ?url=… query), or null when
 * the request is not part of the shell. */
function shellKey(request) {
  if (request.method !== 'GET' || request.headers.has('range')) return null;
  const url = new URL(request.url);
  if (url.origin !== self.location.origin) return null;
  const scope = scopePath();
  if (!url.pathname.startsWith(scope)) return null;
  const rest = url.pathname.slice(scope.length);
  if (rest.includes('/')) return null;
  if (rest === '' || rest === 'index.html') return new URL(scope, url).href;
  if (!/\.(?:html|js|wasm|css)$/.test(rest)) return null;
  return new URL(url.pathname, url).href;
}

/** The files the page and its worker load, read from their text (Trunk's hashed names; a
 * worker's loader names its wasm: `fetch('…_bg.wasm')` or `new URL('…_bg.wasm', …)`). */
function references(text, base) {
  const out = new Set();
  for (const m of text.matchAll(/(?:href|src|data-tensorpeek-js|data-tensorpeek-wasm)="([^"]+)"|(?:importScripts|wasm_bindgen|import|from|fetch)\s*\(?\s*['"]([^'"]+)['"]|new URL\(\s*['"]([^'"]+)['"]|module_or_path:\s*['"]([^'"]+)['"]/g)) {
    const ref = m[1] ?? m[2] ?? m[3] ?? m[4];
    if (!ref || ref.startsWith('data:') || ref.startsWith('blob:')) continue;
    const url = new URL(ref, base);
    if (url.origin === self.location.origin) out.add(url.href);
  }
  return out;
}

/** Fetches the shell afresh (the page, what it loads, the worker's loader and what that
 * loads) into the cache and drops what the current version no longer uses. Each answer is
 * stored (its body read) before the next request: unread bodies would hold the
 * browser's few connections per host and stall the rest. */
async function refresh() {
  const cache = await caches.open(CACHE);
  const scope = new URL(scopePath(), self.location.href).href;
  const page = await fetch(scope, { cache: 'no-store' });
  if (!page.ok) return;
  const html = await page.clone().text();
  await cache.put(scope, page);
  const keep = new Set([scope]);
  const todo = [...references(html, scope), ...['tensorpeek-worker_loader.js', 'tensorpeek-values_loader.js'].map((f) => new URL(f, scope).href)];
  for (let i = 0; i < todo.length && i < 64; i++) {
    const href = todo[i];
    if (keep.has(href) || !shellKey(new Request(href))) continue;
    const r = await fetch(href, { cache: 'no-store' });
    if (!r.ok) continue;
    const text = href.endsWith('.js') ? await r.clone().text() : null;
    await cache.put(href, r);
    keep.add(href);
    if (text) for (const ref of references(text, href)) todo.push(ref);
  }
  for (const req of await cache.keys()) if (!keep.has(req.url)) await cache.delete(req);
}

self.addEventListener('install', (event) => {
  self.skipWaiting();
  event.waitUntil(refresh().catch(() => {}));
});

self.addEventListener('activate', (event) => {
  event.waitUntil((async () => {
    for (const key of await caches.keys()) if (key !== CACHE) await caches.delete(key);
    await self.clients.claim();
  })());
});

self.addEventListener('fetch', (event) => {
  const key = shellKey(event.request);
  if (!key) return;
  event.respondWith((async () => {
    const cache = await caches.open(CACHE);
    try {
      const response = await fetch(event.request);
      if (response.status === 200 && response.type === 'basic') {
        const page = key.endsWith('/');
        const old = page ? await cache.match(key) : null;
        const changed = page && (!old || (await old.text()) !== (await response.clone().text()));
        await cache.put(key, response.clone());
        // A new version of the page names new files: bring the whole shell up to date.
        if (changed) event.waitUntil(refresh().catch(() => {}));
      }
      return response;
    } catch (err) {
      const hit = await cache.match(key);
      if (hit) return hit;
      throw err;
    }
  })());
});
