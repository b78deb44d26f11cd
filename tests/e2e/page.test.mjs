// End-to-end tests of the page in Debian's Chromium: a real safetensors file written by
// the PyPI `safetensors` package, a sparse ~6 GB Llama-3.2-3B-shaped file, broken files,
// and the drop-event path. Run after `trunk build --release --offline`.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { serve, useBrowser, openPage, th, readJson, FIXTURES, OUT, ROOT, bytesRead, network, shown, screenshot, done } from './harness.mjs';

// Holds back every request of `context` for a URL matching `re` until the function it
// returns is called; `asked` hears each such request as it comes.
async function holdBack(context, re, asked = () => {}) {
  let release;
  const held = new Promise((ok) => { release = ok; });
  await context.route(re, async (route) => { asked(); await held; await route.continue(); });
  return release;
}

// Logs every message the page posts to a worker (window.__posts: what, when) and when the
// first frame that has the first view's early rows began (window.__rowsSeen.framed: its
// animation callbacks run before it is painted).
async function watchPostsAndRows(page) {
  await page.evaluate(() => {
    const log = (window.__posts = []);
    const post = Worker.prototype.postMessage;
    Worker.prototype.postMessage = function (m, ...rest) {
      log.push({ what: m && 'module' in m ? 'module' : m?.open ? 'open' : 'other', at: performance.now() });
      return post.call(this, m, ...rest);
    };
    const seen = (window.__rowsSeen = { inserted: null, framed: null });
    new MutationObserver((_, obs) => {
      if (!document.querySelector('#shell [data-testid=early-inventory]')) return;
      obs.disconnect();
      seen.inserted = performance.now();
      requestAnimationFrame(() => { seen.framed = performance.now(); });
    }).observe(document.body, { childList: true, subtree: true });
  });
}

// A page whose first stage is ready when `fixture` is given, and whose parse worker's wasm
// and app code are held back (until `release()`): ?lazy, then a key — the first stage and the
// parse worker start on that first sign. Returns once the frame with the early rows began.
async function givenToAReadyFirstStage(fixture) {
  const { context, page, errors } = await openPage(env.browser, `${env.server.url}?lazy`, { app: false });
  const release = await holdBack(context, /tensorpeek-worker_bg\.wasm$|tensorpeek-[0-9a-f]{16}(_bg\.wasm|\.js)$/);
  await watchPostsAndRows(page);
  await page.keyboard.press('Shift');
  await page.waitForFunction(() => performance.getEntriesByName('tensorpeek: first stage ready').length > 0);
  await page.setInputFiles('#shell [data-testid=file-input]', fixture);
  await page.waitForFunction(() => window.__rowsSeen.framed !== null);
  return { context, page, errors, release };
}

// The parse worker was held until the early rows were painted: its wasm handed over and the
// file's request posted (once) only after the frame that showed them began.
async function assertHeldUntilPainted(page) {
  const { posts, seen } = await page.evaluate(() => ({ posts: window.__posts, seen: window.__rowsSeen }));
  const first = (what) => posts.find((p) => p.what === what);
  assert.ok(first('open') && first('module'), JSON.stringify(posts));
  assert.ok(first('open').at >= seen.framed, `the request was posted at ${first('open').at} ms, the rows painted at ${seen.framed} ms`);
  assert.ok(first('module').at >= seen.framed, `the wasm was handed at ${first('module').at} ms, the rows painted at ${seen.framed} ms`);
  assert.equal(posts.filter((p) => p.what === 'open').length, 1, JSON.stringify(posts));
}

// The first view's early rows as the page shows them: who gave them (`by`), each row's name
// and cells, the count line, and whether the parse worker had said ready (`ready`: 0 or 1).
const earlyRows = (page) => page.evaluate(() => {
  const rows = [...document.querySelectorAll('#shell [data-testid=early-inventory] [data-testid=tensor-row]')];
  return {
    by: window.__tensorpeek.firstRowsBy,
    names: rows.map((r) => r.dataset.name),
    rows: rows.map((r) => [...r.cells].map((c) => c.textContent)),
    count: document.querySelector('#shell [data-testid=early-inventory] p').textContent,
    ready: performance.getEntriesByName('tensorpeek: parse worker ready').length,
  };
});

const env = useBrowser();

const text = (page, sel) => page.locator(sel).first().innerText();

test('a real safetensors file: numbers, table, export, bytes read, no network', async () => {
  const fixture = path.join(FIXTURES, 'tiny_model.safetensors');
  const want = readJson(fixture + '.expected.json');
  const { context, page, requests, errors } = await openPage(env.browser, env.server.url);
  const before = { requests: requests.length, served: env.server.log.length };

  await page.setInputFiles('[data-testid=file-input]', fixture);
  await done(page);

  // Read exactly 8 + N bytes (in the page's worker), through Blob reads only.
  await bytesRead(page);
  const reads = await page.evaluate(() => window.__reads);
  const total = reads.reduce((a, [, n]) => a + n, 0);
  assert.equal(total, 8 + want.header_len, `reads: ${JSON.stringify(reads)}`);
  assert.equal(want.bytes_read, 8 + want.header_len);

  // Its metadata holds `<img src=x onerror=alert(1)>` on purpose: active HTML is a warning.
  assert.equal(await page.getAttribute('[data-testid=verdict]', 'data-verdict'), 'sound with warnings');
  assert.deepEqual(await page.locator('[data-testid=finding]').evaluateAll((fs) => fs.map((f) => f.dataset.code)), ['SuspiciousText']);
  assert.match(await text(page, '[data-testid=size]'), new RegExp(`^${th(want.size)}\\b`));
  assert.match(await text(page, '[data-testid=header-len]'), new RegExp(`^${th(want.header_len)}\\b`));
  assert.equal(await text(page, '[data-testid=data-start]'), th(want.data_start));
  assert.equal(await text(page, '[data-testid=tensor-count]'), th(want.totals.tensors));
  assert.match(await text(page, '[data-testid=params]'), new RegExp(`^${th(want.totals.params)}`));
  assert.match(await text(page, '[data-testid=tensor-bytes]'), new RegExp(`^${th(want.totals.bytes)}\\b`));
  assert.equal(await text(page, '[data-testid=equation]'),
    `${th(want.size)} = 8 + ${th(want.header_len)} + ${th(want.totals.bytes)}`);
  for (const [dtype, v] of Object.entries(want.totals.by_dtype)) {
    const cells = await page.locator(`[data-testid=by-dtype] tr[data-dtype="${dtype}"] td`).allInnerTexts();
    assert.deepEqual(cells.slice(1, 3), [th(v.tensors), th(v.params)], dtype);
  }
  // Metadata that looks like markup is shown as text, never parsed as HTML.
  const meta = await text(page, '[data-testid=metadata]');
  assert.ok(meta.includes(want.metadata.note), meta);
  assert.equal(await page.locator('img').count(), 0);

  // The table: every tensor with its absolute start.
  const rows = page.locator('[data-testid=tensor-row]');
  assert.equal(await rows.count(), want.tensors.length);
  for (const t of want.tensors) {
    const row = page.locator(`[data-testid=tensor-row][data-name="${t.name}"]`);
    const cells = await row.locator('td').allInnerTexts();
    assert.equal(cells[2], t.dtype, t.name);
    assert.equal(cells[3], `[${t.shape.join(', ')}]`, t.name);
    assert.equal(cells[4], th(t.params), t.name);
    assert.equal(cells[6], `[${th(t.start)}, ${th(t.end)}]`, t.name);
    assert.equal(cells[7], th(t.abs_start), t.name);
  }

  // Sorting by bytes, descending (keyboard: the header is a button).
  await page.focus('[data-testid=sort-bytes]');
  await page.keyboard.press('Enter');
  await page.keyboard.press('Enter');
  assert.equal(await page.getAttribute('th:has([data-testid=sort-bytes])', 'aria-sort'), 'descending');
  const biggest = [...want.tensors].sort((a, b) => b.bytes - a.bytes || 0)[0];
  assert.equal(await rows.first().getAttribute('data-name'), biggest.name);
  // Sorting by name ascending.
  await page.click('[data-testid=sort-name]');
  const names = await rows.evaluateAll((rs) => rs.map((r) => r.dataset.name));
  assert.deepEqual(names, [...names].sort());

  // Filtering by a name substring.
  await page.fill('[data-testid=filter]', 'layers.1.');
  const filtered = want.tensors.filter((t) => t.name.includes('layers.1.'));
  assert.equal(await rows.count(), filtered.length);
  assert.equal(await text(page, '[data-testid=row-count]'), `${filtered.length} of ${want.tensors.length} tensors`);
  await page.fill('[data-testid=filter]', '');

  // Tree: groups with subtotals, collapsible.
  await page.check('[data-testid=tree-toggle]');
  const top = page.locator('[data-testid=group-row][data-path=model]');
  assert.equal(await top.count(), 1);
  const modelTensors = want.tensors.filter((t) => t.name.startsWith('model.'));
  assert.ok((await top.innerText()).includes(`${modelTensors.length} tensors`));
  assert.ok((await top.innerText()).includes(th(modelTensors.reduce((a, t) => a + t.params, 0))));
  await top.locator('button').press('Enter');
  assert.equal(await top.locator('button').getAttribute('aria-expanded'), 'true');
  await page.click('[data-testid=expand-all]');
  assert.equal(await rows.count(), want.tensors.length);
  await page.uncheck('[data-testid=tree-toggle]');

  // Copy buttons: a row's name, and the selected tensor's JSON.
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: env.server.url });
  const first = want.tensors[0].name;
  await page.locator(`[data-testid=tensor-row][data-name="${first}"] button.copy`).click();
  await page.waitForSelector(`[data-testid=tensor-row][data-name="${first}"] button.copy[data-copied=yes]`);
  assert.equal(await page.evaluate(() => navigator.clipboard.readText()), first);
  assert.equal(await page.locator('[data-testid=tensor-panel]').count(), 0, 'copying does not select the row');

  // Selecting a row (Enter) opens the tensor panel.
  await rows.first().focus();
  await page.keyboard.press('Enter');
  await page.waitForSelector('[data-testid=tensor-panel]');
  await page.click('[data-testid=copy-json]');
  await page.waitForFunction(() => document.querySelector('[data-testid=copy-json]').textContent === 'Copied');
  const copied = JSON.parse(await page.evaluate(() => navigator.clipboard.readText()));
  assert.equal(copied.name, await rows.first().getAttribute('data-name'));
  await page.click('[data-testid=panel-close]');
  assert.equal(await page.locator('[data-testid=tensor-panel]').count(), 0);

  // Export JSON: the report of docs/report.md.
  const [download] = await Promise.all([page.waitForEvent('download'), page.click('[data-testid=export-json]')]);
  const saved = path.join(OUT, 'export.json');
  await download.saveAs(saved);
  const report = readJson(saved);
  assert.equal(report.tool, 'tensorpeek');
  assert.equal(report.files.length, 1);
  const f = report.files[0];
  for (const k of ['name', 'size', 'header_len', 'data_start', 'bytes_read']) assert.equal(f[k], want[k], k);
  assert.equal(f.format, 'safetensors');
  assert.equal(f.ok, true);
  assert.deepEqual(f.metadata, want.metadata);
  assert.deepEqual(f.totals, want.totals);
  assert.equal(f.tensors.length, want.tensors.length);
  for (const t of want.tensors) {
    const g = f.tensors.find((x) => x.name === t.name);
    assert.ok(g, t.name);
    for (const k of ['dtype', 'shape', 'params', 'start', 'end', 'abs_start']) assert.deepEqual(g[k], t[k], `${t.name}.${k}`);
  }

  // Nothing went over the network after the page loaded (the export is a blob: URL).
  const net = network(requests, before.requests);
  assert.deepEqual(net, []);
  assert.deepEqual(network(env.server.log, before.served), []);
  assert.deepEqual(errors, []);
  await context.close();
});

test('a sparse 6 GB Llama-3.2-3B-shaped file: counts and offsets past 4 GiB', async () => {
  const file = path.join(OUT, 'llama32-3b.sparse.safetensors');
  if (!fs.existsSync(file)) {
    execFileSync('python3', [path.join(ROOT, 'tests/make_sparse_safetensors.py'), file]);
  }
  const want = readJson(file + '.expected.json');
  assert.ok(want.size > 6e9);
  const { context, page, requests, errors } = await openPage(env.browser, env.server.url);
  const nreq = requests.length;
  const t0 = Date.now();
  await page.setInputFiles('[data-testid=file-input]', file);
  await done(page);
  const ms = Date.now() - t0;
  assert.ok(ms < 10_000, `took ${ms} ms`);

  assert.equal(await bytesRead(page), 8 + want.header_len);
  assert.equal(await page.getAttribute('[data-testid=verdict]', 'data-verdict'), 'sound');
  assert.equal(await text(page, '[data-testid=tensor-count]'), '254');
  assert.match(await text(page, '[data-testid=params]'), /^3,212,749,824/);
  assert.match(await text(page, '[data-testid=tensor-bytes]'), /^6,425,499,648\b/);
  assert.match(await text(page, '[data-testid=size]'), new RegExp(`^${th(want.size)}\\b`));
  assert.equal(await text(page, '[data-testid=data-start]'), th(want.data_start));
  assert.equal(await text(page, '[data-testid=equation]'), `${th(want.size)} = 8 + ${th(want.header_len)} + 6,425,499,648`);
  assert.ok((await page.getAttribute('[data-testid=size] .bytes', 'title')).includes(th(want.size)));
  // The first rows render at once, the rest of the first page a task later.
  await page.waitForFunction(() => document.querySelectorAll('[data-testid=tensor-row]').length === 254);
  for (const t of [want.last, want.first_past_4gib]) {
    assert.ok(t.abs_start > 2 ** 32 || t === want.first_past_4gib);
    const cells = await page.locator(`[data-testid=tensor-row][data-name="${t.name}"] td`).allInnerTexts();
    assert.equal(cells[6], `[${th(t.start)}, ${th(t.end)}]`);
    assert.equal(cells[7], th(t.abs_start));
  }
  assert.ok(want.first_past_4gib.abs_start > 2 ** 32);
  // Sort by absolute start, descending: the last tensor first.
  await page.click('[data-testid=sort-absstart]');
  await page.click('[data-testid=sort-absstart]');
  assert.equal(await page.locator('[data-testid=tensor-row]').first().getAttribute('data-name'), want.last.name);
  assert.deepEqual(network(requests, nreq), []);
  assert.deepEqual(errors, []);
  await context.close();
});

test('broken files show findings, not a blank page', async () => {
  const { context, page, errors } = await openPage(env.browser, env.server.url);
  await page.setInputFiles('[data-testid=file-input]', path.join(FIXTURES, 'truncated.safetensors'));
  await done(page);
  assert.equal(await page.getAttribute('[data-testid=verdict]', 'data-verdict'), 'errors');
  const past = page.locator('[data-testid=finding][data-code=TensorPastEnd]');
  assert.ok((await past.count()) >= 1);
  const line = await past.first().innerText();
  assert.match(line, /tensor b\b/);
  assert.match(line, /at byte [\d,]+/);
  // The finding's tensor links to its row.
  await past.first().locator('button.link').click();
  assert.equal(await page.getAttribute('[data-testid=tensor-panel]', 'data-name'), 'b');
  assert.equal(await page.getAttribute('[data-testid=tensor-row][data-name=b]', 'aria-selected'), 'true');
  const src = readJson(path.join(FIXTURES, 'truncated.safetensors.source.json'));
  const size = src.size - 10;
  assert.equal(await text(page, '[data-testid=equation]'),
    `${th(size)} ≠ 8 + ${th(src.header_len)} + ${th(src.totals.bytes)} = ${th(src.size)}`);

  // A huge header length, garbage, and an empty file: each gets a view with a finding.
  const huge = Buffer.alloc(16);
  huge.writeBigUInt64LE(10n ** 12n);
  huge.write('{}', 8);
  await page.setInputFiles('[data-testid=file-input]', [
    { name: 'huge-header.safetensors', mimeType: 'application/octet-stream', buffer: huge },
    { name: 'notes.txt', mimeType: 'text/plain', buffer: Buffer.from('hello, this is not a model file') },
    { name: 'empty.safetensors', mimeType: 'application/octet-stream', buffer: Buffer.alloc(0) },
  ]);
  const tabs = page.locator('[data-testid=tab]');
  await page.waitForFunction(() => document.querySelectorAll('[data-testid=tab] .mark.reading').length === 0);
  assert.equal(await tabs.count(), 4);
  const codes = [];
  for (const i of [1, 2, 3]) {
    await tabs.nth(i).click();
    await done(page);
    assert.equal(await page.getAttribute('[data-testid=verdict]', 'data-verdict'), 'errors');
    codes.push(await page.locator('[data-testid=finding]').first().getAttribute('data-code'));
  }
  assert.deepEqual(codes, ['HeaderTooLarge', 'UnknownFormat', 'FileTooShort']);
  await tabs.nth(0).click();
  await done(page);
  await screenshot(page, { path: path.join(OUT, 'broken.png'), fullPage: true });
  // Closing a view keeps the others.
  await page.click('[data-testid=file-view] button:has-text("Close")');
  assert.equal(await tabs.count(), 3);
  assert.deepEqual(errors, []);
  await context.close();
});

test('dropping files (dragenter, dragover, drop with a DataTransfer)', async () => {
  const a = fs.readFileSync(path.join(FIXTURES, 'one_tensor.safetensors'));
  const b = fs.readFileSync(path.join(FIXTURES, 'tiny_model.safetensors'));
  const wantA = readJson(path.join(FIXTURES, 'one_tensor.safetensors.expected.json'));
  const wantB = readJson(path.join(FIXTURES, 'tiny_model.safetensors.expected.json'));
  const { context, page, requests, errors } = await openPage(env.browser, env.server.url, { app: false });
  const nreq = requests.length;
  const entered = await page.evaluate(([a, b]) => {
    const dt = new DataTransfer();
    dt.items.add(new File([new Uint8Array(a)], 'one_tensor.safetensors'));
    dt.items.add(new File([new Uint8Array(b)], 'tiny_model.safetensors'));
    window.__dt = dt;
    // The zone under the pointer: the first view's plain HTML until the app (which starts
    // on the dragenter) replaces it.
    window.__fire = (type) => document.querySelector('[data-testid=dropzone]')
      .dispatchEvent(new DragEvent(type, { bubbles: true, cancelable: true, dataTransfer: window.__dt }));
    // dispatchEvent returns false when a handler called preventDefault().
    return { enter: window.__fire('dragenter'), over: window.__fire('dragover') };
  }, [[...a], [...b]]);
  assert.deepEqual(entered, { enter: false, over: false }, 'dragenter/dragover must call preventDefault');
  await page.waitForFunction(() => { window.__fire('dragover'); return !!document.querySelector('.app.dragging'); });
  assert.equal(await page.evaluate(() => window.__fire('drop')), false, 'drop must call preventDefault');
  // Instant feedback: the app's two tabs, or (while the app starts) the first view saying so.
  assert.ok(await page.evaluate(() => document.querySelectorAll('[data-testid=tab]').length === 2 || !!document.querySelector('#shell.starting')));
  await page.waitForSelector('.app:not(.dragging)');
  const tabs = page.locator('[data-testid=tab]');
  await page.waitForFunction(() => document.querySelectorAll('[data-testid=tab]').length === 2);
  await page.waitForFunction(() => document.querySelectorAll('[data-testid=tab] .mark.reading').length === 0);
  assert.equal(await bytesRead(page), 8 + wantA.header_len + 8 + wantB.header_len);
  // The last dropped file is shown.
  await done(page);
  assert.equal(await text(page, '[data-testid=tensor-count]'), th(wantB.totals.tensors));
  await tabs.first().click();
  await done(page);
  assert.equal(await text(page, '[data-testid=tensor-count]'), th(wantA.totals.tensors));
  assert.equal(await page.getAttribute('[data-testid=verdict]', 'data-verdict'), 'sound');
  // Export of both files at once.
  const [dl] = await Promise.all([page.waitForEvent('download'), page.click('[data-testid=export-all]')]);
  const saved = path.join(OUT, 'export-all.json');
  await dl.saveAs(saved);
  assert.deepEqual(readJson(saved).files.map((f) => f.name), ['one_tensor.safetensors', 'tiny_model.safetensors']);
  assert.deepEqual(network(requests, nreq), []);
  assert.deepEqual(errors, []);
  await context.close();
});

// Records, in window.__atFirstWarm, whether the first view (#shell) was still in the page and
// the app running when the first made-up file's view had been warmed (web/warm.rs's mark).
const watchFirstWarm = (page, { buffered = false } = {}) => page.evaluate((buffered) => {
  new PerformanceObserver((list) => {
    for (const m of list.getEntries()) {
      if (m.name === 'tensorpeek: warmed warm.safetensors') window.__atFirstWarm = { shell: !!document.getElementById('shell'), running: !!window.__tensorpeek?.running };
    }
  }).observe({ type: 'mark', buffered });
}, buffered);

test('with no file coming, the app warms its first view unseen, before it takes over from the first view: both made-up files rendered, nothing shown, nothing read', async () => {
  // ?lazy: the app starts on the hover below, after the observer is in place
  const { context, page, errors } = await openPage(env.browser, `${env.server.url}?lazy`, { app: false });
  // What the page was when the first made-up file's view had been rendered: the warm-up
  // runs while the first view and www/loader.js still own the page (web/mod.rs `start`),
  // so that a file given meanwhile is read by the loader's parse worker at once.
  await watchFirstWarm(page);
  await page.hover('[data-testid=dropzone]');
  // web/warm.rs marks each made-up file once its view was rendered and unmounted; the
  // inspections are the committed src/web/warm_view.postcard, decoded as a worker's answer
  const marks = () => performance.getEntriesByType('mark').map((m) => m.name).filter((n) => n.startsWith('tensorpeek: warmed'));
  await page.waitForFunction((n) => performance.getEntriesByType('mark').filter((m) => m.name.startsWith('tensorpeek: warmed')).length >= n, 2, { timeout: 30_000 });
  assert.deepEqual(await page.evaluate(marks), ['tensorpeek: warmed warm.safetensors', 'tensorpeek: warmed warm.gguf']);
  await page.waitForFunction(() => window.__atFirstWarm);
  assert.deepEqual(await page.evaluate(() => window.__atFirstWarm), { shell: true, running: false }, 'the first view still the page\'s at the first warm view');
  // then the app takes over
  await page.waitForFunction(() => window.__tensorpeek?.running && !document.getElementById('shell'));
  assert.equal(await page.locator('[data-testid=file-view]').count(), 0, 'nothing of it in the page');
  assert.equal(await page.locator('[data-testid=tensor-row]').count(), 0);
  assert.equal(await bytesRead(page), 0, 'no Blob read');
  assert.deepEqual(errors, []);
  await context.close();
});

test('an embedded page (?embed=1), whose first view stays hidden until the app shows its own, is taken over before the warm-up, which follows', async () => {
  // The embedded layout has no file input of its own: wait for the drop zone, which the
  // first view and the app both have (the app may take over before the load event; CI on
  // d6c81cc waited 30 s for a file input that the app had already removed).
  const { context, page, errors, requests } = await openPage(env.browser, `${env.server.url}?embed=1`, { app: false, waitFor: '[data-testid=dropzone]' });
  await watchFirstWarm(page, { buffered: true });
  await page.waitForFunction(() => window.__atFirstWarm, null, { timeout: 30_000 });
  assert.deepEqual(await page.evaluate(() => window.__atFirstWarm), { shell: false, running: true }, 'the app\'s own view first');
  await page.waitForSelector('.app.embed[data-testid=dropzone]', { state: 'visible' });
  // the app starts at once: neither index.html's inline script nor the loader asks for the
  // first stage
  assert.deepEqual(requests.filter((u) => u.endsWith('/tensorpeek-peek_bg.wasm')), [], 'no first stage for ?embed');
  assert.deepEqual(errors, []);
  await context.close();
});

test('the first view is plain HTML: no app code before it (with ?lazy: until a file is coming); it looks as the app\'s; what was begun in it is handed over; without ?lazy the app comes in idle time', async () => {
  // What the app's empty view shows (its text: the white space between HTML's tags aside),
  // and where: the plain-HTML copy must match it.
  const view = () => ({
    parts: [...document.querySelectorAll('.app [data-testid], .app h1, .app .empty p')]
      .map((e) => [e.tagName, e.dataset.testid ?? '', e.textContent.replace(/\s+/g, '')]),
    boxes: ['[data-testid=url-input]', '[data-testid=url-open]', '[data-testid=empty]', 'label[for=file-input]', 'label[for=folder-input]']
      .map((sel) => { const r = document.querySelector(sel).getBoundingClientRect(); return [sel, Math.round(r.x), Math.round(r.y), Math.round(r.width), Math.round(r.height)]; }),
  });
  // ?lazy: the app loads only on a first sign of a file (without it: in idle time, below)
  const { context, page, requests, errors } = await openPage(env.browser, `${env.server.url}?lazy`, { app: false });
  assert.ok(await page.evaluate(() => !!document.getElementById('shell')));
  await page.waitForTimeout(300);
  assert.deepEqual(requests.filter((u) => /tensorpeek-.*\.(js|wasm)$/.test(u)), [], 'no app code on first load');
  const before = await page.evaluate(view);
  // Text typed in the first view (without the focus that would start the app) is kept
  // when the app takes over on the pointer's coming near.
  await page.evaluate(() => { document.querySelector('#shell #url-input').value = 'not a url'; });
  await page.dispatchEvent('#shell [data-testid=empty]', 'pointerover');
  await page.waitForFunction(() => !document.getElementById('shell'), null, { timeout: 30_000 });
  assert.ok(requests.some((u) => /tensorpeek-[0-9a-f]+_bg\.wasm$/.test(u)), 'the app loaded');
  assert.equal(await page.inputValue('[data-testid=url-input]'), 'not a url');
  const after = await page.evaluate(view);
  assert.deepEqual(after.parts, before.parts, 'the first view shows what the app shows');
  assert.deepEqual(after.boxes, before.boxes, 'nothing moves when the app takes over');
  await context.close();

  // A file chosen in the first view is opened by the app.
  const fixture = path.join(FIXTURES, 'one_tensor.safetensors');
  const want = readJson(fixture + '.expected.json');
  const second = await openPage(env.browser, `${env.server.url}?lazy`, { app: false });
  await second.page.setInputFiles('#shell [data-testid=file-input]', fixture);
  await done(second.page);
  assert.equal(await text(second.page, '[data-testid=tensor-count]'), th(want.totals.tensors));
  await second.context.close();

  // A URL submitted in the first view is taken by the app (and judged: not a URL).
  const third = await openPage(env.browser, `${env.server.url}?lazy`, { app: false });
  await third.page.evaluate(() => {
    document.querySelector('#shell #url-input').value = 'not a url';
    document.querySelector('#shell form').requestSubmit();
  });
  assert.match(await text(third.page, '[data-testid=url-error]'), /not a Hub repository id/);
  await third.context.close();

  // Without ?lazy: the first view's files come first — the parse worker's code only once
  // the first view has painted, the app's after the load event —, then, with no sign of a
  // file, the app loads in idle time, takes over and starts its worker.
  const idle = await openPage(env.browser, env.server.url, { app: false });
  await idle.page.waitForFunction(() => performance.getEntriesByName('tensorpeek: parse worker started').length > 0, null, { timeout: 30_000 });
  const order = await idle.page.evaluate(() => {
    const load = performance.timing.loadEventStart - performance.timing.navigationStart;
    const all = performance.getEntriesByType('resource');
    // the first view's own files: the styles it is painted with and loader.js (not the
    // app's views' style sheets, which come beside it with media="print": below)
    const viewStyles = [...document.querySelectorAll('link[data-tensorpeek-view-style]')].map((l) => l.href);
    const view = all.filter((r) => /\.css$|\/loader\.js$/.test(r.name) && !viewStyles.includes(r.name));
    const viewDone = Math.max(...view.map((r) => r.responseEnd));
    const ours = all.filter((r) => /tensorpeek-/.test(r.name));
    const worker = performance.getEntriesByName('tensorpeek: parse worker started')[0].startTime;
    // the first stage's wasm comes beside them (below), at low priority
    const stage = (r) => r.name.endsWith('/tensorpeek-peek_bg.wasm');
    return {
      view: view.length,
      // which style sheets held the first paint (Chromium's resource timing says)
      blocking: all.filter((r) => /\.css$/.test(r.name)).map((r) => [r.name.split('/').pop().replace(/-[0-9a-f]{16}/, ''), r.renderBlockingStatus]).sort(),
      viewStyles: viewStyles.length,
      beside: [...ours.filter((r) => !(r.startTime >= viewDone) && !stage(r)).map((r) => r.name), ...(worker >= viewDone ? [] : ['the parse worker'])],
      appBeforeLoad: ours.filter((r) => /tensorpeek-[0-9a-f]{16}/.test(r.name) && r.startTime < load).map((r) => r.name),
    };
  });
  assert.ok(order.view >= 2, 'the first view\'s styles and loader.js');
  // the first paint waits for the two style sheets the first view uses, not for the app's
  // views' four, which are put in force when the app is fetched (below)
  assert.deepEqual(order.blocking, [['audit.css', 'non-blocking'], ['gguf.css', 'non-blocking'], ['model.css', 'non-blocking'], ['style.css', 'blocking'], ['values.css', 'non-blocking'], ['web.css', 'blocking']]);
  assert.equal(order.viewStyles, 4);
  assert.deepEqual(order.beside, [], 'no code of ours but the first stage while the first view\'s own files load');
  assert.deepEqual(order.appBeforeLoad, [], 'no app code before the load event');
  // the first stage, asked for by index.html's inline script as the HTML was read (not once
  // www/loader.js runs, after the styles), is compiled from that response — one request —
  // and warmed with no file
  assert.equal(await idle.page.evaluate(() => window.__tensorpeekStage instanceof Promise), true, 'asked for with the HTML');
  await idle.page.waitForFunction(() => performance.getEntriesByName('tensorpeek: first stage ready').length > 0, null, { timeout: 30_000 });
  assert.equal(idle.requests.filter((u) => u.endsWith('/tensorpeek-peek_bg.wasm')).length, 1);
  await idle.page.waitForFunction(() => !document.getElementById('shell'), null, { timeout: 30_000 });
  // the app's views' style sheets in force once it has taken over
  assert.deepEqual(await idle.page.evaluate(() => [...document.querySelectorAll('link[data-tensorpeek-view-style]')].map((l) => [l.media, !!l.sheet])), Array(4).fill(['all', true]));
  await idle.page.waitForFunction(() => performance.getEntriesByType('mark').some((m) => m.name === 'tensorpeek: spare worker ready'), null, { timeout: 30_000 });
  assert.deepEqual(idle.errors, []);
  // a clean console: no warning either (Trunk's worker shim made wasm-bindgen warn about
  // deprecated init parameters on every load; www/tensorpeek-worker_loader.js replaces it)
  await idle.page.waitForTimeout(300);
  assert.deepEqual(idle.warnings.filter((w) => !/blocked by Playwright/.test(w)), []);
  await idle.context.close();
  assert.deepEqual(errors, []);
});

test('a file given before the app runs: the parse worker reads it and its first rows show before the app is fetched; the app takes them over without reading it again', async () => {
  const fixture = path.join(FIXTURES, 'tiny_model.safetensors');
  const want = readJson(fixture + '.expected.json');
  const { context, page, errors } = await openPage(env.browser, `${env.server.url}?lazy`, { app: false });
  // The first stage never answers here (its wasm held for good): this is the parse worker's
  // path, as on a page where the first stage cannot be had (its own test is below).
  await context.route(/tensorpeek-peek_bg\.wasm$/, () => {});
  // The app's own code (hashed names) is held back until the first rows are on screen.
  const release = await holdBack(context, /tensorpeek-[0-9a-f]{16}(_bg\.wasm|\.js)$/);
  await page.setInputFiles('#shell [data-testid=file-input]', fixture);
  await page.waitForSelector('#shell [data-testid=early-inventory] [data-testid=tensor-row]', { timeout: 30_000 });
  const early = await page.evaluate(() => ({
    names: [...document.querySelectorAll('#shell [data-testid=early-inventory] [data-testid=tensor-row]')].map((r) => r.dataset.name),
    cells: [...document.querySelector('#shell [data-testid=early-inventory] [data-testid=tensor-row]').cells].map((c) => c.textContent),
    head: document.querySelector('#shell [data-testid=early-inventory] h2').textContent,
  }));
  assert.equal(early.head, 'tiny_model.safetensors');
  assert.deepEqual([...early.names].sort(), want.tensors.map((t) => t.name).sort(), 'every tensor of the file (16, under the 100 shown)');
  const first = want.tensors.find((t) => t.name === early.names[0]);
  assert.deepEqual(early.cells.slice(1, 5), [first.name, first.dtype, `[${first.shape.join(', ')}]`, th(first.params)]);
  assert.equal(await page.evaluate(() => !!document.getElementById('shell')), true, 'the app has not taken over');
  release();
  await done(page);
  // The app's code was asked for only once the first rows were on screen.
  const order = await page.evaluate(() => ({
    rows: window.__tensorpeek.firstRows,
    app: performance.getEntriesByType('resource').filter((r) => /tensorpeek-[0-9a-f]{16}(_bg\.wasm|\.js)$/.test(r.name)).map((r) => r.startTime),
  }));
  assert.equal(order.app.length, 2, 'the app\'s script and wasm');
  assert.ok(order.app.every((t) => t >= order.rows), JSON.stringify(order));
  assert.equal(await text(page, '[data-testid=tensor-count]'), th(want.totals.tensors));
  // Read once: the app took the parse worker's answers instead of reading the file again.
  assert.equal(await bytesRead(page), 8 + want.header_len);
  assert.deepEqual(errors, []);
  await context.close();
});

test('the first view\'s parse worker: its wasm fetched by the page, once; a file given while it loads waits in the worker and is answered before any warm-up', async () => {
  const fixture = path.join(FIXTURES, 'tiny_model.safetensors');
  const want = readJson(fixture + '.expected.json');
  const { context, page, errors } = await openPage(env.browser, `${env.server.url}?lazy`, { app: false });
  // The parse worker's wasm is held back until the file has been given (its job is then
  // surely posted before the worker's program runs); the app's own code until the first
  // rows are on screen.
  let asked = 0;
  await context.route(/tensorpeek-peek_bg\.wasm$/, () => {}); // the first stage: never (below)
  const releaseWasm = await holdBack(context, /tensorpeek-worker_bg\.wasm$/, () => asked++);
  const releaseApp = await holdBack(context, /tensorpeek-[0-9a-f]{16}(_bg\.wasm|\.js)$/);
  await page.setInputFiles('#shell [data-testid=file-input]', fixture);
  await page.waitForFunction(() => !!window.__tensorpeek.early, null, { timeout: 30_000 });
  releaseWasm();
  await page.waitForSelector('#shell [data-testid=early-inventory] [data-testid=tensor-row]', { timeout: 30_000 });
  const names = await page.$$eval('#shell [data-testid=early-inventory] [data-testid=tensor-row]', (rs) => rs.map((r) => r.dataset.name));
  assert.deepEqual(names.sort(), want.tensors.map((t) => t.name).sort());
  // The page fetched the worker's wasm (it is in the page's own timeline), and nobody else.
  assert.equal(asked, 1, 'one request for the parse worker\'s wasm');
  assert.equal(await page.evaluate(() => performance.getEntriesByType('resource').filter((r) => r.name.endsWith('/tensorpeek-worker_bg.wasm')).length), 1);
  // The job waited in the worker's loader and went first: no warm-up in that worker.
  const parseWorkers = () => page.workers().filter((w) => /tensorpeek-worker_loader/.test(w.url()));
  const warmed = (w) => w.evaluate(() => performance.getEntriesByName('tensorpeek: worker warmed up').length);
  assert.equal(parseWorkers().length, 1);
  assert.equal(await warmed(parseWorkers()[0]), 0, 'the early job\'s worker did not warm up first');
  releaseApp();
  await done(page);
  assert.equal(await text(page, '[data-testid=tensor-count]'), th(want.totals.tensors));
  // The app's spare, started with no job waiting, warms up before it says it is ready.
  await page.waitForFunction(() => performance.getEntriesByName('tensorpeek: spare worker ready').length > 0, null, { timeout: 30_000 });
  const counts = await Promise.all(parseWorkers().map(warmed));
  assert.ok(counts.includes(1), `a warmed spare among the parse workers: ${JSON.stringify(counts)}`);
  assert.equal(await bytesRead(page), 8 + want.header_len);
  assert.deepEqual(errors, []);
  await context.close();
});

test('the app is fetched once the parse worker\'s wasm is in, not after its warm-up; the spare values worker starts 2 s after the app\'s spare parse worker is ready', async () => {
  // ?lazy and a first sign of a file (the pointer on the drop zone): the loader starts the
  // parse worker and wants the app at once; the parse worker's wasm is held back until then.
  const { context, page, requests, errors } = await openPage(env.browser, `${env.server.url}?lazy`, { app: false });
  let asked;
  const wasmAsked = new Promise((ok) => { asked = ok; });
  const releaseWasm = await holdBack(context, /tensorpeek-worker_bg\.wasm$/, () => asked());
  await page.dispatchEvent('#shell [data-testid=empty]', 'pointerover');
  await wasmAsked;
  const app = () => page.evaluate(() => performance.getEntriesByType('resource').filter((r) => /tensorpeek-[0-9a-f]{16}\.js$/.test(r.name)).map((r) => r.startTime));
  // the loader has not started the app (`started`: set as it asks for it, in the same task as
  // the first sign), nor has its script been asked for (the requests as they are sent)
  assert.equal(await page.evaluate(() => window.__tensorpeek.started), null, 'the app waits for the parse worker\'s wasm');
  assert.deepEqual(requests.filter((u) => /tensorpeek-[0-9a-f]{16}\.js$/.test(u)), []);
  releaseWasm();
  await page.waitForFunction(() => performance.getEntriesByName('tensorpeek: parse worker ready').length > 0, null, { timeout: 30_000 });
  const ready = await page.evaluate(() => performance.getEntriesByName('tensorpeek: parse worker ready')[0].startTime);
  // (a resource's entry is there once its response has ended — which may be after the
  // worker's `ready`, now that its warm-up no longer grows its memory a hundred times —; its
  // startTime is when it was asked for)
  await page.waitForFunction(() => performance.getEntriesByType('resource').some((r) => /tensorpeek-[0-9a-f]{16}\.js$/.test(r.name)), null, { timeout: 30_000 });
  const [asked0] = await app();
  // the worker warms up between its wasm's arrival and its `ready`; the app's request went
  // out at the arrival
  assert.ok(asked0 !== undefined && asked0 < ready, `the app asked for at ${asked0} ms, the parse worker ready at ${ready} ms`);
  // The app takes over; its spare parse worker (the loader's) is ready; the spare values
  // worker comes VALUES_SPARE_AFTER_MS (web/worker/pool.rs) later — a timer, never early.
  const mark = (n) => page.evaluate((n) => performance.getEntriesByName(n)[0]?.startTime, n);
  await page.waitForFunction(() => performance.getEntriesByName('tensorpeek: spare values worker ready').length > 0, null, { timeout: 30_000 });
  const [spare, values] = [await mark('tensorpeek: spare worker ready'), await mark('tensorpeek: spare values worker ready')];
  assert.ok(values - spare >= 2000, `the spare values worker ready ${values - spare} ms after the spare parse worker`);
  assert.deepEqual(errors, []);
  await context.close();
});

test('an early job whose worker says ready only after the app has taken it is read once', async () => {
  // The parse worker's scripts held back: its wasm comes (the app is fetched then, and takes
  // over for the file given meanwhile) while its program cannot run; the loader's request
  // waits in it, and its `ready` reaches the app, not the loader.
  const fixture = path.join(FIXTURES, 'tiny_model.safetensors');
  const want = readJson(fixture + '.expected.json');
  const { context, page, errors } = await openPage(env.browser, `${env.server.url}?lazy`, { app: false });
  await context.route(/tensorpeek-peek_bg\.wasm$/, () => {}); // the first stage: never
  // (its glue, which the loader imports: the loader itself is served counting its reads)
  const release = await holdBack(context, /tensorpeek-worker\.js$/);
  await page.setInputFiles('#shell [data-testid=file-input]', fixture);
  await page.waitForFunction(() => !document.getElementById('shell'), null, { timeout: 30_000 });
  release();
  await done(page);
  assert.equal(await text(page, '[data-testid=tensor-count]'), th(want.totals.tensors));
  // the header once: the loader's request, not a second one on the worker's `ready`
  assert.equal(await bytesRead(page), 8 + want.header_len);
  assert.deepEqual(errors, []);
  await context.close();
});

test('the first stage: a safetensors file\'s first rows from tensorpeek-peek_bg.wasm on the page, while the parse worker\'s wasm is still coming; the rows are the reference reader\'s, then the app\'s whole view', async () => {
  const fixture = path.join(FIXTURES, 'tiny_model.safetensors');
  const want = readJson(fixture + '.expected.json');
  // ?lazy: nothing of ours is fetched before the file (without it the parse worker's wasm
  // may be in before the route below is; CI-like runs saw it ready), so that the first stage
  // surely answers while the parse worker's wasm and the app's code are held back.
  const { context, page, requests, errors } = await openPage(env.browser, `${env.server.url}?lazy`, { app: false });
  const release = await holdBack(context, /tensorpeek-worker_bg\.wasm$|tensorpeek-[0-9a-f]{16}(_bg\.wasm|\.js)$/);
  await page.setInputFiles('#shell [data-testid=file-input]', fixture);
  await page.waitForSelector('#shell [data-testid=early-inventory] [data-testid=tensor-row]', { timeout: 30_000 });
  const early = await earlyRows(page);
  assert.equal(early.by, 'first stage');
  assert.equal(early.ready, 0, 'the parse worker was not ready');
  assert.equal(early.count, `${th(want.totals.tensors)} tensors (the whole view is loading)`);
  assert.deepEqual([...early.names].sort(), want.tensors.map((t) => t.name).sort());
  for (const [i, name, dtype, shape, params] of early.rows) {
    const t = want.tensors.find((x) => x.name === name);
    assert.deepEqual([dtype, shape, params], [t.dtype, `[${t.shape.join(', ')}]`, th(t.params)], name);
    assert.equal(i, String(early.names.indexOf(name)));
  }
  // read on the page: the 8-byte length, then the N bytes after it
  assert.equal(await bytesRead(page, { pageOnly: true }), 8 + want.header_len);
  assert.ok(requests.some((u) => u.endsWith('/tensorpeek-peek_bg.wasm')));
  release();
  await done(page);
  assert.equal(await text(page, '[data-testid=tensor-count]'), th(want.totals.tensors));
  // the parse worker read the header too (for the app's whole inspection), once
  assert.equal(await bytesRead(page), 2 * (8 + want.header_len));
  assert.deepEqual(errors, []);
  await context.close();
});

test('a first stage that is ready holds the parse worker: its wasm and the file\'s request go to it only once the first stage\'s rows are painted', async () => {
  const fixture = path.join(FIXTURES, 'tiny_model.safetensors');
  const want = readJson(fixture + '.expected.json');
  const { context, page, errors, release } = await givenToAReadyFirstStage(fixture);
  // the wasm is let through only now: its handoff, if the worker were not held, could come
  // at once; the request was due at once
  release();
  await done(page);
  assert.equal(await page.evaluate(() => window.__tensorpeek.firstRowsBy), 'first stage');
  await assertHeldUntilPainted(page);
  assert.equal(await text(page, '[data-testid=tensor-count]'), th(want.totals.tensors));
  // the first stage's read and the parse worker's, each once
  assert.equal(await bytesRead(page), 2 * (8 + want.header_len));
  assert.deepEqual(errors, []);
  await context.close();
});

test('the first stage takes a GGUF file too: its first rows, the reference reader\'s, in the first view while the parse worker\'s wasm is held; a read of 1 MiB; the parse worker held until they are painted, then the app\'s whole view', async () => {
  const fixture = path.join(FIXTURES, 'stories260K.gguf');
  const want = readJson(path.join(FIXTURES, 'stories260K.expected.json'));
  const size = fs.statSync(fixture).size;
  const { context, page, errors, release } = await givenToAReadyFirstStage(fixture);
  const early = await earlyRows(page);
  assert.equal(early.by, 'first stage');
  assert.equal(early.ready, 0, 'the parse worker was not ready');
  assert.equal(early.count, `${th(want.tensors.length)} tensors (the whole view is loading)`);
  // every tensor, in the header's order, as gguf-py read it (the shape in numpy order)
  assert.equal(early.rows.length, want.tensors.length);
  early.rows.forEach(([i, name, dtype, shape, params], k) => {
    const t = want.tensors[k];
    assert.deepEqual([i, name, dtype, shape, params], [String(k), t.name, t.type, `[${[...t.ggml_dims].reverse().join(', ')}]`, th(t.n_elements)]);
  });
  // read on the page: the first 8 bytes, then up to the first 1 MiB (src/peek.rs GGUF_FIRST_READ)
  assert.ok(size > 1 << 20 && want.data_offset < 1 << 20, `${size} bytes, the data at ${want.data_offset}`);
  assert.equal(await bytesRead(page, { pageOnly: true }), 1 << 20);
  release();
  await done(page);
  await assertHeldUntilPainted(page);
  assert.equal(await text(page, '[data-testid=tensor-count]'), th(want.tensors.length));
  assert.deepEqual(errors, []);
  await context.close();
});

test('the loaded app\'s own first rows: a file given to it shows its first rows (the parse worker\'s, sent ahead of the inspection) in a painted frame, then the whole view', async () => {
  const file = path.join(OUT, 'llama32-3b.sparse.safetensors');
  if (!fs.existsSync(file)) {
    execFileSync('python3', [path.join(ROOT, 'tests/make_sparse_safetensors.py'), file]);
  }
  const { context, page, errors } = await openPage(env.browser, env.server.url);
  // What the page showed before its whole view: the first rows as they came, and whether a
  // frame began with them still there (its animation callbacks run before it is painted).
  await page.evaluate(() => {
    const seen = (window.__earlySeen = { rows: null, count: null, painted: false });
    new MutationObserver((_, obs) => {
      const rs = document.querySelectorAll('[data-testid=file-view][data-state=reading] [data-testid=early-rows] [data-testid=tensor-row]');
      if (!rs.length) return;
      obs.disconnect();
      seen.rows = [...rs].map((r) => [...r.cells].map((c) => c.textContent));
      seen.count = document.querySelector('[data-testid=early-rows] p').textContent;
      requestAnimationFrame(() => { seen.painted = !!document.querySelector('[data-testid=early-rows] [data-testid=tensor-row]'); });
    }).observe(document.body, { childList: true, subtree: true });
  });
  await page.setInputFiles('[data-testid=file-input]', file);
  await done(page);
  const seen = await page.evaluate(() => window.__earlySeen);
  assert.ok(seen.rows, 'the first rows came before the whole view');
  assert.equal(seen.painted, true, 'a frame began with them on screen');
  assert.equal(seen.count, '254 tensors (the first 24 here; the whole view is loading)');
  assert.equal(seen.rows.length, 24);
  assert.equal(await page.locator('[data-testid=early-rows]').count(), 0, 'replaced by the whole view');
  // The same tensors, in the same order, as the whole view's table shows first.
  const full = await page.locator('[data-testid=tensor-row]').evaluateAll((rs) => rs.slice(0, 24).map((r) => ({ name: r.dataset.name, cells: [...r.cells].map((c) => c.textContent) })));
  assert.deepEqual(seen.rows.map((r) => r[1]), full.map((r) => r.name));
  for (const [k, [i, name, dtype, shape, params]] of seen.rows.entries()) {
    assert.equal(i, String(k));
    for (const v of [dtype, shape, params]) assert.ok(full[k].cells.some((c) => c.includes(v)), `${name}: ${v} in ${full[k].cells.join(' | ')}`);
  }
  assert.deepEqual(errors, []);
  await context.close();
});

test('thousands of tensors: a virtualized table — rows in view only, scroll, sort, filter, tree', async (t) => {
  // A synthetic header (UI scaling only; the numbers are checked against the files above).
  const count = 6000;
  const header = {};
  for (let i = 0; i < count; i++) {
    header[`model.layers.${Math.floor(i / 10)}.t${i % 10}.weight`] = { dtype: 'F32', shape: [2], data_offsets: [i * 8, i * 8 + 8] };
  }
  let json = Buffer.from(JSON.stringify(header));
  const n = json.length;
  const buf = Buffer.alloc(8 + n + count * 8);
  buf.writeBigUInt64LE(BigInt(n));
  json.copy(buf, 8);
  const { context, page, errors } = await openPage(env.browser, env.server.url);
  const t0 = Date.now();
  await page.setInputFiles('[data-testid=file-input]', { name: 'many.safetensors', mimeType: 'application/octet-stream', buffer: buf });
  await done(page);
  const ms = Date.now() - t0;
  assert.equal(await page.getAttribute('[data-testid=verdict]', 'data-verdict'), 'sound');
  assert.equal(await text(page, '[data-testid=tensor-count]'), '6,000');
  const rows = page.locator('[data-testid=tensor-row]');
  // Only the rows in view (and a few around them) are in the page.
  await page.waitForSelector('[data-testid=table-wrap].virtual');
  assert.equal(await page.getAttribute('[data-testid=table-wrap]', 'data-rows'), '6000');
  const inPage = await rows.count();
  assert.ok(inPage > 10 && inPage < 100, `${inPage} rows in the page`);
  assert.equal(await rows.first().getAttribute('data-name'), 'model.layers.0.t0.weight');
  // Scrolled to the end, the last rows are there.
  await page.locator('[data-testid=table-wrap]').evaluate((el) => { el.scrollTop = el.scrollHeight; el.dispatchEvent(new Event('scroll')); });
  await page.waitForSelector('[data-testid=tensor-row][data-name="model.layers.599.t9.weight"]');
  assert.ok((await rows.count()) < 100);
  // Sorted by name, descending: the first row is the greatest name.
  await page.locator('[data-testid=table-wrap]').evaluate((el) => { el.scrollTop = 0; el.dispatchEvent(new Event('scroll')); });
  await page.click('[data-testid=sort-name]');
  await page.click('[data-testid=sort-name]');
  assert.equal(await rows.first().getAttribute('data-name'), 'model.layers.99.t9.weight');
  await page.click('[data-testid=sort-]');
  await page.fill('[data-testid=filter]', 'layers.599.');
  assert.equal(await rows.count(), 10);
  await page.fill('[data-testid=filter]', '');
  await page.check('[data-testid=tree-toggle]');
  assert.equal(await page.locator('[data-testid=group-row]').count(), 1);
  await page.click('[data-testid=expand-all]');
  // 6,000 tensors and their groups: virtualized again.
  assert.ok(Number(await page.getAttribute('[data-testid=table-wrap]', 'data-rows')) > 6000);
  assert.ok((await page.locator('[data-testid=group-row]').count()) + (await rows.count()) < 100);
  t.diagnostic(`6,000 tensors: setInputFiles → inventory ${ms} ms`);
  assert.ok(ms < 15_000, `took ${ms} ms`);
  assert.deepEqual(errors, []);
  await context.close();
});

test('dist/ works from a sub-path (relative URLs)', async () => {
  const sub = await serve(ROOT, { check: 'dist/index.html' });
  try {
    const { context, page, errors } = await openPage(env.browser, `${sub.url}dist/`);
    await page.setInputFiles('[data-testid=file-input]', path.join(FIXTURES, 'one_tensor.safetensors'));
    await done(page);
    assert.equal(await page.getAttribute('[data-testid=verdict]', 'data-verdict'), 'sound');
    assert.ok(sub.log.some((u) => u.startsWith('/dist/') && u.endsWith('.wasm')), sub.log.join(' '));
    assert.deepEqual(errors, []);
    await context.close();
  } finally {
    await sub.close();
  }
});

test('screenshots, light and dark, wide and phone', async () => {
  const file = path.join(OUT, 'llama32-3b.sparse.safetensors');
  const docs = path.join(ROOT, 'docs');
  fs.mkdirSync(OUT, { recursive: true });
  for (const [scheme, name, viewport] of [
    ['light', 'screenshot.png', { width: 1280, height: 1000 }],
    ['dark', 'screenshot-dark.png', { width: 1280, height: 1000 }],
    ['light', 'phone.png', { width: 390, height: 844 }],
  ]) {
    const { context, page, errors } = await openPage(env.browser, env.server.url, { viewport, colorScheme: scheme });
    await page.setInputFiles('[data-testid=file-input]', file);
    await done(page);
    await page.check('[data-testid=tree-toggle]');
    const layer = page.locator('[data-testid=group-row][data-path=model] button');
    await layer.click();
    await page.locator('[data-testid=group-row][data-path="model.layers"] button').click();
    await page.locator('[data-testid=group-row][data-path="model.layers.0"] button').click();
    await page.locator('[data-testid=group-row][data-path="model.layers.0.self_attn"] button').click();
    await page.mouse.move(0, 0);
    await page.evaluate(() => window.scrollTo(0, 0));
    // The committed pictures in docs/ are refreshed only when asked (UPDATE_SCREENSHOTS=1).
    const dir = name !== 'phone.png' && process.env.UPDATE_SCREENSHOTS ? docs : OUT;
    await screenshot(page, { path: path.join(dir, name), fullPage: false });
    assert.deepEqual(errors, []);
    await context.close();
  }
});
