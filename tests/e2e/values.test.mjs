// End-to-end tests of the values panel (issue 4): a tensor's values are read in a Web
// Worker, only its byte range, and the numbers equal the reference readers'
// (tests/fixtures/values_expected.json, written by numpy / gguf-py). Run after
// `trunk build --release --offline`; case (c) needs the sparse file made by scripts/test.sh.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import crypto from 'node:crypto';
import path from 'node:path';
import { serve, useBrowser, openPage, addFileInput, th, readJson, FIXTURES, OUT, ROOT, bytesRead, shown, screenshot, done } from './harness.mjs';

const expected = readJson(path.join(FIXTURES, 'values_expected.json'));
const SPARSE = path.join(OUT, 'llama32-3b.sparse.safetensors');
const EMBED = 'model.embed_tokens.weight';

const env = useBrowser();

const hexF64 = (hex) => Buffer.from(hex, 'hex').readDoubleLE(0);
const value = (page, id) => page.getAttribute(`[data-testid=${id}]`, 'data-value');

async function open(page, file, tensor) {
  await page.setInputFiles('[data-testid=file-input]', file);
  await done(page);
  await select(page, tensor);
}

// Clicks a tensor's row (found through the filter, which is cleared again) at its left
// edge, away from the row's Copy button.
async function select(page, tensor) {
  await page.fill('[data-testid=filter]', tensor);
  await page.locator(`[data-testid=tensor-row][data-name="${tensor}"]`).click({ position: { x: 4, y: 4 } });
  await page.fill('[data-testid=filter]', '');
  await page.waitForSelector('[data-testid=values-panel]');
}

async function readValues(page, { sha = true, timeout = 60_000 } = {}) {
  const box = page.locator('[data-testid=values-sha]');
  if ((await box.isChecked()) !== sha) await box.click();
  const t0 = Date.now();
  await page.click('[data-testid=read-values]');
  // While a read runs the button is disabled and no (old) result is shown.
  await page.waitForSelector('[data-testid=read-values]:not([disabled])', { timeout });
  await page.waitForSelector('[data-testid=values-result], [data-testid=values-finding]', { timeout });
  return Date.now() - t0;
}

async function checkNumbers(page, want) {
  assert.equal(await value(page, 'v-count'), String(want.count), `${want.name} count`);
  assert.equal(await page.locator('[data-testid=v-count]').innerText(), th(want.count));
  assert.equal(Number(await value(page, 'v-min')), hexF64(want.min), `${want.name} min`);
  assert.equal(Number(await value(page, 'v-max')), hexF64(want.max), `${want.name} max`);
  for (const [id, k] of [['v-nan', 'nan'], ['v-pos-inf', 'pos_inf'], ['v-neg-inf', 'neg_inf'], ['v-zeros', 'zeros'], ['v-subnormals', 'subnormals']]) {
    assert.equal(await value(page, id), String(want[k]), `${want.name} ${k}`);
  }
  const mean = Number(await value(page, 'v-mean'));
  assert.ok(Math.abs(mean - want.mean) <= 1e-9 * Math.max(1, Math.abs(want.mean)), `${want.name} mean ${mean} vs ${want.mean}`);
  const std = Number(await value(page, 'v-std'));
  assert.ok(Math.abs(std - want.std) <= 1e-9 * Math.abs(want.std), `${want.name} std ${std} vs ${want.std}`);
}

test('safetensors (numpy): stats in a worker, exactly the tensor\'s bytes, in the export', async () => {
  const want = expected.safetensors.find((t) => t.name === 't_F32');
  const { context, page, errors } = await openPage(env.browser, env.server.url);
  await open(page, path.join(FIXTURES, want.file), want.name);
  const pageReadBefore = await page.evaluate(() => window.__pageBytesRead());
  await readValues(page);
  await checkNumbers(page, want);
  assert.equal(await value(page, 'v-sha256'), want.sha256);
  assert.equal(await page.getAttribute('[data-testid=values-timing]', 'data-hashing'), 'nested worker');
  // The worker reports what it read: exactly the tensor's byte length. The page itself
  // read nothing more (its own Blob reads are counted by the init script).
  assert.equal(await page.getAttribute('[data-testid=values-timing]', 'data-bytes-read'), String(want.bytes));
  assert.equal(await page.evaluate(() => window.__pageBytesRead()), pageReadBefore);
  // Histogram and preview are drawn.
  assert.ok(await page.locator('[data-testid=histogram] rect').count() > 0);
  const total = (await page.locator('[data-testid=histogram] rect').evaluateAll((rs) => rs.map((r) => Number(r.dataset.count)))).reduce((a, b) => a + b, 0);
  assert.equal(total, want.count - want.nan - want.pos_inf - want.neg_inf, 'histogram counts every finite value');
  await page.click('[data-testid=hist-log]');
  assert.equal(await page.getAttribute('[data-testid=hist-log]', 'aria-pressed'), 'true');
  assert.equal(await page.locator('[data-testid=values-preview] tbody tr').count(), 8);

  // The stats are in the exported report.
  const [dl] = await Promise.all([page.waitForEvent('download'), page.click('[data-testid=export-json]')]);
  const saved = path.join(OUT, 'values-export.json');
  await dl.saveAs(saved);
  const report = readJson(saved);
  const t = report.files[0].tensors.find((x) => x.name === want.name);
  assert.equal(t.stats.count, want.count);
  assert.equal(t.stats.sha256, want.sha256);
  assert.equal(t.stats.zeros, want.zeros);
  assert.equal(t.stats.min, hexF64(want.min));
  assert.equal(report.files[0].tensors.filter((x) => x.stats).length, 1);

  // Hashing off: same numbers, no hash.
  await readValues(page, { sha: false });
  await page.waitForFunction(() => document.querySelector('[data-testid=v-sha256]')?.dataset.value === '');
  await checkNumbers(page, want);
  assert.deepEqual(errors, []);
  await context.close();
});

test('GGUF quantized tensors: dequantized values equal gguf-py\'s', async () => {
  const { context, page, errors } = await openPage(env.browser, env.server.url);
  for (const name of ['g_Q4_K', 'g_Q8_0']) {
    const want = expected.gguf.find((t) => t.name === name);
    if (name === 'g_Q4_K') await open(page, path.join(FIXTURES, want.file), name);
    else await select(page, name);
    await readValues(page);
    await checkNumbers(page, want);
    assert.equal(await value(page, 'v-sha256'), want.sha256);
    assert.match(await page.locator('[data-testid=values-note]').innerText(), /dequantized/i);
    assert.equal(await page.getAttribute('[data-testid=values-timing]', 'data-bytes-read'), String(want.bytes));
  }
  assert.deepEqual(errors, []);
  await context.close();
});

test('a type that is not decoded shows a finding, never numbers', async () => {
  const { context, page, errors } = await openPage(env.browser, env.server.url);
  // IQ4_NL is decoded (equal to gguf-py's dequantize) ...
  const iq4 = expected.gguf.find((t) => t.name === 'g_IQ4_NL');
  await open(page, path.join(FIXTURES, iq4.file), iq4.name);
  await readValues(page);
  await checkNumbers(page, iq4);
  assert.match(await page.locator('[data-testid=values-note]').innerText(), /dequantized/i);
  // ... a type ggml removed is not (tests/fixtures/iquants/removed_type.gguf: an IQ4_NL
  // tensor relabelled IQ4_NL_4_4, id 36).
  const iq = readJson(path.join(FIXTURES, 'iquants/expected.json'));
  await open(page, path.join(FIXTURES, iq.removed.file), iq.removed.tensor);
  await readValues(page);
  const f = page.locator('[data-testid=values-finding]');
  assert.equal(await f.getAttribute('data-code'), 'ValuesNotDecoded');
  assert.match(await f.innerText(), /values not decoded for this type/);
  assert.equal(await page.locator('[data-testid=values-result]').count(), 0);
  // The page stays usable: another tensor reads fine.
  await select(page, iq.removed_neighbour.tensor);
  await readValues(page);
  await checkNumbers(page, iq.removed_neighbour);
  assert.deepEqual(errors, []);
  await context.close();
});

test('unsound ranges and files changed on disk are findings; the page stays usable', async () => {
  const { context, page, errors } = await openPage(env.browser, env.server.url);
  // truncated.safetensors: tensor b claims bytes [184, 216) of a 206-byte file.
  await open(page, path.join(FIXTURES, 'truncated.safetensors'), 'b');
  await readValues(page);
  assert.equal(await page.getAttribute('[data-testid=values-finding]', 'data-code'), 'TensorPastEnd');
  assert.equal(await page.locator('[data-testid=values-result]').count(), 0);
  await select(page, 'a');
  await readValues(page);
  assert.equal(await value(page, 'v-count'), '16');
  await context.close();

  // A file modified after it was opened: the browser refuses the read; a finding, no numbers.
  const copy = path.join(OUT, 'changed.safetensors');
  fs.copyFileSync(path.join(FIXTURES, 'values_np.safetensors'), copy);
  const second = await openPage(env.browser, env.server.url);
  await open(second.page, copy, 't_F64');
  await new Promise((ok) => setTimeout(ok, 1100));
  fs.appendFileSync(copy, Buffer.alloc(16));
  await readValues(second.page);
  const code = await second.page.getAttribute('[data-testid=values-finding]', 'data-code');
  assert.ok(['ReadFailed', 'FileChanged'].includes(code), code);
  assert.equal(await second.page.locator('[data-testid=values-result]').count(), 0);
  console.log('file changed on disk:', await second.page.locator('[data-testid=values-finding]').innerText());
  await second.context.close();
  assert.deepEqual(errors, []);
});

test('a tensor of several 8 MiB chunks: hashed in order by the nested worker, read by both read paths', async () => {
  // 5000 × 2048 BF16 (20,480,000 bytes: 3 chunks, the last one partial) of varied bytes,
  // so that a chunk hashed out of order or twice changes the digest.
  const shape = [5000, 2048];
  const data = Buffer.alloc(shape[0] * shape[1] * 2);
  let x = 0x12345678;
  for (let i = 0; i < data.length; i += 4) {
    x ^= x << 13; x ^= x >>> 17; x ^= x << 5;
    data.writeUInt32LE(x >>> 0, i);
  }
  const header = Buffer.from(JSON.stringify({ w: { dtype: 'BF16', shape, data_offsets: [0, data.length] } }));
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(header.length));
  const file = path.join(OUT, 'chunks.safetensors');
  fs.writeFileSync(file, Buffer.concat([len, header, data]));
  const { context, page, errors } = await openPage(env.browser, env.server.url);
  await open(page, file, 'w');
  await readValues(page);
  assert.equal(await value(page, 'v-count'), String(shape[0] * shape[1]));
  assert.equal(await value(page, 'v-sha256'), crypto.createHash('sha256').update(data).digest('hex'));
  assert.equal(await page.getAttribute('[data-testid=values-timing]', 'data-hashing'), 'nested worker');
  assert.equal(await page.getAttribute('[data-testid=values-timing]', 'data-bytes-read'), String(data.length));

  // The worker asked directly, through its BYOB stream reader and through the fallback for
  // browsers whose Blob.stream() is not a byte stream (one slice().arrayBuffer() per chunk):
  // the same numbers, the same bytes read.
  const start = 8 + header.length;
  const entry = { name: 'w', dtype: 'BF16', shape, ggml_dims: null, params: shape[0] * shape[1], start: 0, end: data.length, abs_start: start, bytes: data.length, stats: null };
  await addFileInput(page, 'direct-input', file);
  const direct = (reader) => page.evaluate(({ entry, reader }) => new Promise((ok, fail) => {
    const w = new Worker('./tensorpeek-values_loader.js');
    w.onmessage = (e) => {
      if (e.data.kind === 'ready') {
        w.postMessage({ scan: { file: document.getElementById('direct-input').files[0], entry, sha256: true, chunk: 0, slices: reader === 'slices' } });
      } else if (e.data.kind === 'done') {
        w.terminate();
        ok({ count: e.data.stats.count, sha256: e.data.stats.sha256, mean: e.data.stats.mean, bytesRead: e.data.bytesRead });
      } else if (e.data.kind === 'error') {
        w.terminate();
        fail(new Error(e.data.message));
      }
    };
  }), { entry, reader });
  const byob = await direct(undefined);
  const slices = await direct('slices');
  assert.equal(byob.sha256, crypto.createHash('sha256').update(data).digest('hex'));
  assert.deepEqual(slices, byob);
  assert.equal(byob.count, shape[0] * shape[1]);
  assert.equal(byob.bytesRead, data.length);
  assert.equal(byob.mean, Number(await value(page, 'v-mean')));
  assert.deepEqual(errors, []);
  await context.close();
});

test('a 788 MB BF16 embedding in a sparse 6 GB file: progress, cancel, then a full read', { skip: !fs.existsSync(SPARSE) && 'run scripts/test.sh (it makes the sparse file)' }, async () => {
  const { context, page, errors } = await openPage(env.browser, env.server.url);
  await open(page, SPARSE, EMBED);
  // Cancel while reading: the progress bar shows bytes, then Cancel stops the worker.
  await page.locator('[data-testid=values-sha]').check();
  await page.click('[data-testid=read-values]');
  await page.waitForFunction(() => {
    const d = document.querySelector('[data-testid=values-done]');
    return d && !d.innerText.startsWith('0 of');
  }, null, { timeout: 30_000 });
  assert.match(await page.locator('[data-testid=values-done]').innerText(), / of 788,004,864 bytes$/);
  // Reading with SHA-256 (switched on above): the values worker and its nested hasher.
  for (let i = 0; i < 50 && page.workers().length < 2; i++) await new Promise((ok) => setTimeout(ok, 100));
  const reading = page.workers();
  // The values worker and its hashing worker (and perhaps the page's idle spares, a parse
  // worker and a values worker: web/worker/pool.rs).
  assert.ok(reading.length >= 2 && reading.length <= 4, `${reading.length} workers`);
  const closed = new Set();
  for (const w of reading) w.on('close', () => closed.add(w));
  await page.click('[data-testid=values-cancel]');
  await page.waitForSelector('[data-testid=values-cancelled]');
  // Cancel ends both: what is left is at most the two idle spares.
  for (let i = 0; i < 50 && (page.workers().length > 2 || closed.size < 2); i++) await new Promise((ok) => setTimeout(ok, 100));
  assert.ok(closed.size >= 2, `${closed.size} of the reading workers closed`);
  assert.ok(page.workers().length <= 2, page.workers().map((w) => w.url()).join(' '));
  assert.ok(page.workers().filter((w) => /tensorpeek-worker_loader/.test(w.url())).length <= 1, 'one parse spare at most');
  assert.equal(await page.locator('[data-testid=values-result]').count(), 0);
  assert.equal(await page.locator('[data-testid=values-progress]').count(), 0);
  // Still usable: another tensor's row selects.
  await select(page, 'model.norm.weight');
  await select(page, EMBED);

  // Full read, without and with SHA-256.
  const figures = {};
  for (const sha of [false, true]) {
    await readValues(page, { sha, timeout: 300_000 });
    assert.equal(await value(page, 'v-count'), '394002432');
    assert.equal(await value(page, 'v-zeros'), '394002432');
    assert.equal(Number(await value(page, 'v-min')), 0);
    assert.equal(Number(await value(page, 'v-max')), 0);
    const timing = page.locator('[data-testid=values-timing]');
    assert.equal(await timing.getAttribute('data-bytes-read'), '788004864');
    if (sha) {
      const h = crypto.createHash('sha256');
      const zeros = Buffer.alloc(8 << 20);
      for (let left = 788004864; left > 0; left -= zeros.length) h.update(left >= zeros.length ? zeros : zeros.subarray(0, left));
      assert.equal(await value(page, 'v-sha256'), h.digest('hex'));
    }
    const ms = Number(await timing.getAttribute('data-ms'));
    figures[sha ? 'sha256' : 'no_sha256'] = { ms, gb_per_s: 788004864 / ms / 1e6, wasm_memory: Number(await timing.getAttribute('data-wasm-memory')) };
  }
  assert.notEqual(figures.sha256.ms, figures.no_sha256.ms, 'two separate reads');
  console.log('values throughput (worker, 788 MB BF16 of zeros):', JSON.stringify(figures));
  fs.writeFileSync(path.join(OUT, 'values-figures.json'), JSON.stringify(figures, null, 2));
  if (process.env.UPDATE_SCREENSHOTS) {
    await screenshot(page.locator('[data-testid=values-panel]'), { path: path.join(OUT, 'values-embed.png') });
  }
  assert.deepEqual(errors, []);
  await context.close();
});

test('the app and its worker load from a sub-path too, and only once a file is coming', async () => {
  const sub = await serve(ROOT, { check: 'dist/index.html' });
  try {
    const want = expected.safetensors.find((t) => t.name === 't_U8');
    const { context, page, errors } = await openPage(env.browser, `${sub.url}dist/?lazy`, { app: false });
    // The first load is the first view's HTML, CSS and loader; the app and its worker come
    // with the first sign of a file (here the file itself).
    await page.waitForTimeout(200);
    assert.ok(!sub.log.some((u) => u.includes('tensorpeek-')), sub.log.join(' '));
    await open(page, path.join(FIXTURES, want.file), want.name);
    await readValues(page);
    await checkNumbers(page, want);
    for (const f of ['tensorpeek-worker_loader.js', 'tensorpeek-worker.js', 'tensorpeek-worker_bg.wasm', 'tensorpeek-values_loader.js', 'tensorpeek-values.js', 'tensorpeek-values_bg.wasm']) {
      assert.ok(sub.log.includes(`/dist/${f}`), `${f} in ${sub.log.join(' ')}`);
    }
    assert.ok(sub.log.some((u) => /^\/dist\/tensorpeek-[0-9a-f]+_bg\.wasm$/.test(u)), sub.log.join(' '));
    assert.deepEqual(errors, []);
    await context.close();
  } finally {
    await sub.close();
  }
});

test('SHA-256 is off by default and the choice is kept while the page is open', async () => {
  const { context, page, errors } = await openPage(env.browser, env.server.url);
  const [a, b] = expected.safetensors.filter((t) => t.file === 'values_np.safetensors');
  await open(page, path.join(FIXTURES, a.file), a.name);
  const box = page.locator('[data-testid=values-sha]');
  assert.equal(await box.isChecked(), false);
  await readValues(page, { sha: false });
  assert.equal(await value(page, 'v-sha256'), '');
  await box.click();
  await select(page, b.name);
  assert.equal(await page.locator('[data-testid=values-sha]').isChecked(), true, 'kept for the next tensor');
  assert.deepEqual(errors, []);
  await context.close();
});

test('Verify file: the whole file\'s SHA-256, compared with a pasted sha256sum line or oid', async () => {
  const file = path.join(FIXTURES, 'values_np.safetensors');
  const hex = crypto.createHash('sha256').update(fs.readFileSync(file)).digest('hex');
  const { context, page, errors } = await openPage(env.browser, env.server.url);
  await page.setInputFiles('[data-testid=file-input]', file);
  await done(page);
  await page.click('[data-testid=verify] summary');
  await page.fill('[data-testid=verify-expected]', `${hex.toUpperCase()}  values_np.safetensors`);
  await page.click('[data-testid=verify-start]');
  await page.waitForSelector('[data-testid=verify-hash]');
  assert.equal(await page.locator('[data-testid=verify-hash]').innerText(), hex);
  assert.equal(await page.getAttribute('[data-testid=verify-verdict]', 'data-match'), 'true');
  // The whole file was read, in the worker.
  assert.ok((await bytesRead(page)) >= fs.statSync(file).size);
  const wrong = hex.replace(/^./, (c) => (c === '0' ? '1' : '0'));
  await page.fill('[data-testid=verify-expected]', `oid sha256:${wrong}`);
  assert.equal(await page.getAttribute('[data-testid=verify-verdict]', 'data-match'), 'false');
  await page.fill('[data-testid=verify-expected]', 'not a hash');
  assert.equal(await page.locator('[data-testid=verify-unreadable]').count(), 1);
  assert.deepEqual(errors, []);
  await context.close();
});

test('screenshot of the values panel', async () => {
  const want = expected.safetensors.find((t) => t.name === 't_BF16');
  for (const [scheme, vw] of [['light', { width: 1280, height: 900 }], ['dark', { width: 1280, height: 900 }], ['light', { width: 390, height: 800 }]]) {
    const { context, page } = await openPage(env.browser, env.server.url, { colorScheme: scheme, viewport: vw });
    await open(page, path.join(FIXTURES, want.file), want.name);
    await readValues(page);
    const panel = page.locator('[data-testid=values-panel]');
    await panel.scrollIntoViewIfNeeded();
    const name = `values-${scheme}-${vw.width}.png`;
    await screenshot(panel, { path: path.join(OUT, name) });
    if (process.env.UPDATE_SCREENSHOTS && scheme === 'light' && vw.width === 1280) {
      fs.copyFileSync(path.join(OUT, name), path.join(path.dirname(OUT), '../../docs/screenshot-ui-values.png'));
    }
    await context.close();
  }
});
