// Whole checkpoints on the page: a folder (picked with the webkitdirectory input, or
// dropped — the directory-entry walk is exercised with stand-in FileSystemEntry objects),
// the Model tab's numbers against the reference reader's (tests/fixtures/checkpoint/
// expected.json, written by tests/fixtures/make_checkpoint.py with `safetensors.safe_open`),
// the broken variants' findings, and a sparse 6.4 GB Llama-3.2-3B-shaped checkpoint.
// Run after `trunk build --release --offline` and
// `python3 tests/make_sparse_checkpoint.py tests/e2e/out/llama32-3b-ckpt`.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { serve, useBrowser, openPage, th, readJson, FIXTURES, OUT, ROOT, bytesRead, network, shown, screenshot, done } from './harness.mjs';

const CKPT = path.join(FIXTURES, 'checkpoint');
const EXPECTED = readJson(path.join(CKPT, 'expected.json'));
const SPARSE = path.join(OUT, 'llama32-3b-ckpt');

const env = useBrowser();

const text = async (page, sel) => (await page.locator(sel).first().textContent()).trim();
const modelDone = (page) => done(page, 60_000, 'model');

/** N of a safetensors file (its first 8 bytes). */
function headerLen(file) {
  const fd = fs.openSync(file, 'r');
  const b = Buffer.alloc(8);
  fs.readSync(fd, b, 0, 8, 0);
  fs.closeSync(fd);
  return Number(b.readBigUInt64LE(0));
}

/** What the page must read of a folder: 8 + N per shard, every .json whole, nothing else. */
function expectedReads(dir) {
  let n = 0;
  for (const f of fs.readdirSync(dir)) {
    const p = path.join(dir, f);
    if (f.endsWith('.safetensors')) n += 8 + headerLen(p);
    else if (f.endsWith('.json')) n += fs.statSync(p).size;
  }
  return n;
}

/** Checks the Model tab of the `good` fixture (or the same files dropped). */
async function checkGood(page, prefix) {
  const want = EXPECTED.variants.good;
  assert.equal(await page.getAttribute('[data-testid=model-verdict]', 'data-verdict'), 'sound');
  assert.equal(await page.locator('[data-testid=model-finding]').count(), 0);
  assert.equal(await text(page, '[data-testid=model-tensor-count]'), th(want.tensors));
  assert.match(await text(page, '[data-testid=model-params]'), new RegExp(`^${th(want.params)}`));
  assert.match(await text(page, '[data-testid=model-tensor-bytes]'), new RegExp(`^${th(want.tensor_bytes)}`));
  // Shards table.
  const rows = page.locator('[data-testid=shard-row]');
  assert.equal(await rows.count(), want.shards.length);
  for (const [i, s] of want.shards.entries()) {
    const r = rows.nth(i);
    // Shards are named by base name (the index's names); the tabs keep the relative path.
    assert.equal(await r.getAttribute('data-name'), s.name);
    assert.equal((await r.locator('[data-testid=shard-size]').textContent()).trim(), th(s.size));
    assert.equal((await r.locator('[data-testid=shard-header-len]').textContent()).trim(), th(s.header_len));
    assert.equal((await r.locator('[data-testid=shard-tensors]').textContent()).trim(), th(s.tensors));
    assert.equal((await r.locator('[data-testid=shard-tensor-bytes]').textContent()).trim(), th(s.tensor_bytes));
  }
  assert.equal(await page.locator('[data-testid=shard-missing]').count(), 0);
  // Reconciliation: sum of shard sizes = tensor bytes + headers + 8-byte prefixes.
  const headers = want.shards.reduce((a, s) => a + s.header_len, 0);
  const prefixes = 8 * want.shards.length;
  assert.equal(headers + prefixes, want.headers_and_prefixes);
  assert.equal(await text(page, '[data-testid=model-equation]'),
    `${th(want.file_bytes)} = ${th(want.tensor_bytes)} + ${th(headers)} + ${th(prefixes)}`);
  assert.equal(await page.getAttribute('[data-testid=model-reconciliation]', 'data-balanced'), 'true');
  // Architecture from config.json.
  const c = EXPECTED.config;
  assert.equal(await text(page, '[data-testid=arch-family]'), 'llama');
  assert.equal(await text(page, '[data-testid=arch-layers]'), String(c.num_hidden_layers));
  assert.equal(await text(page, '[data-testid=arch-hidden]'), String(c.hidden_size));
  assert.equal(await text(page, '[data-testid=arch-intermediate]'), String(c.intermediate_size));
  assert.equal(await text(page, '[data-testid=arch-heads]'), String(c.num_attention_heads));
  assert.equal(await text(page, '[data-testid=arch-kv-heads]'), String(c.num_key_value_heads));
  assert.equal(await text(page, '[data-testid=arch-head-dim]'), String(c.hidden_size / c.num_attention_heads));
  assert.equal(await text(page, '[data-testid=arch-vocab]'), String(c.vocab_size));
  assert.equal(await text(page, '[data-testid=arch-tied]'), 'no');
  assert.equal(await text(page, '[data-testid=arch-dtype]'), c.torch_dtype);
  const groups = c.num_attention_heads / c.num_key_value_heads;
  assert.equal(await text(page, '[data-testid=arch-attention]'),
    `${c.num_attention_heads} query heads share ${c.num_key_value_heads} KV heads (${groups} per group, grouped-query attention)`);
  // Audit.
  assert.equal(await text(page, '[data-testid=audit-expected]'), th(want.tensors));
  assert.equal(await text(page, '[data-testid=audit-present]'), th(want.tensors));
  assert.equal(await text(page, '[data-testid=audit-missing]'), '0');
  assert.equal(await text(page, '[data-testid=audit-share]'), `${want.embedding_share_percent.toFixed(2)} %`);
  // Tokenizer.
  const tok = want.tokenizer;
  assert.equal(await text(page, '[data-testid=t-tokens]'), th(tok.tokenizer_vocab));
  assert.equal(await text(page, '[data-testid=t-merges]'), th(tok.tokenizer_merges));
  assert.equal(await page.locator('[data-testid=chat-template]').count(), tok.chat_templates);
  // The merged table: every tensor once, each with its shard.
  assert.equal(await text(page, '[data-testid=row-count]'), `${want.tensors} of ${want.tensors} tensors`);
  const files = await page.$$eval('[data-testid=model-view] [data-testid=tensor-row]', (rows) =>
    rows.map((r) => [r.dataset.name, r.querySelector('[data-testid=tensor-file]')?.textContent]));
  assert.equal(files.length, want.tensors);
  const index = readJson(path.join(CKPT, 'good', 'model.safetensors.index.json')).weight_map;
  for (const [name, file] of files) assert.equal(file, index[name], name);
  for (const [name, shape] of Object.entries(want.shapes)) {
    const row = page.locator(`[data-testid=model-view] [data-testid=tensor-row][data-name="${name}"]`);
    assert.equal((await row.locator('td.shape').textContent()).trim(), `[${shape.join(', ')}]`, name);
  }
  // Sorting by the File column keeps the shards together.
  await page.click('[data-testid=model-view] [data-testid=sort-file]');
  const sorted = await page.$$eval('[data-testid=model-view] [data-testid=tensor-file]', (c) => c.map((x) => x.textContent));
  assert.deepEqual(sorted, [...sorted].sort());
}

/** The exported report's `model` section against the reference. */
async function checkExport(page, saveAs) {
  const want = EXPECTED.variants.good;
  const [dl] = await Promise.all([page.waitForEvent('download'), page.click('[data-testid=model-export]')]);
  await dl.saveAs(saveAs);
  const r = readJson(saveAs);
  assert.equal(r.files.length, want.shards.length);
  const m = r.model;
  assert.ok(m, 'the report has a model section');
  assert.equal(m.ok, true);
  assert.deepEqual(m.errors, []);
  assert.equal(m.tensors.length, want.tensors);
  assert.equal(m.totals.params, want.params);
  assert.equal(m.totals.bytes, want.tensor_bytes);
  assert.equal(m.reconciliation.file_bytes, want.file_bytes);
  assert.equal(m.reconciliation.tensor_bytes, want.tensor_bytes);
  assert.equal(m.reconciliation.headers_and_prefixes, want.headers_and_prefixes);
  assert.equal(m.reconciliation.balanced, true);
  assert.deepEqual(m.shards.map((s) => [path.basename(s.name), s.size, s.header_len, s.tensors, s.tensor_bytes]),
    want.shards.map((s) => [s.name, s.size, s.header_len, s.tensors, s.tensor_bytes]));
  assert.ok(Math.abs(m.inventory.embedding_share_percent - want.embedding_share_percent) < 0.001);
  for (const t of m.tensors) assert.deepEqual(t.shape, want.shapes[t.name], t.name);
  assert.equal(m.architecture.layers, EXPECTED.config.num_hidden_layers);
  assert.equal(m.index.total_size, want.index_total_size);
}

test('a checkpoint folder picked with "Choose folder…" (webkitdirectory)', async () => {
  const { context, page, requests, errors } = await openPage(env.browser, env.server.url);
  const nreq = requests.length;
  const dir = path.join(CKPT, 'good');
  await page.setInputFiles('[data-testid=folder-input]', dir);
  await modelDone(page);
  await page.waitForFunction(() => document.querySelectorAll('[data-testid=tab] .mark.reading').length === 0);
  // The model tab is shown, and each shard has its own tab.
  const tabs = await page.$$eval('[data-testid=tab]', (t) => t.map((x) => x.title));
  assert.deepEqual(tabs, ['good/model-00001-of-00002.safetensors', 'good/model-00002-of-00002.safetensors']);
  await checkGood(page, 'good/');
  // Read: the shards' headers and the JSON files, nothing else.
  assert.equal(await bytesRead(page), expectedReads(dir));
  assert.match(await text(page, '[data-testid=model-bytes-read]'), new RegExp(`^read ${th(expectedReads(dir))} of `));
  await checkExport(page, path.join(OUT, 'checkpoint-good.json'));
  // A chat template is text, and the copy button is there.
  assert.equal(await page.locator('[data-testid=chat-template] pre').count(), 1);
  assert.equal(await page.locator('[data-testid=copy-template]').count(), 1);
  // Shard tabs still work.
  await page.click('[data-testid=tab] >> nth=1');
  await page.waitForSelector('[data-testid=file-view][data-state=done]');
  assert.equal(await text(page, '[data-testid=tensor-count]'), th(EXPECTED.variants.good.shards[1].tensors));
  await page.click('[data-testid=model-tab]');
  await modelDone(page);
  if (process.env.UPDATE_SCREENSHOTS) {
    await screenshot(page, { path: path.join(ROOT, 'docs/screenshot-model.png'), fullPage: false });
  }
  await screenshot(page, { path: path.join(OUT, 'model.png'), fullPage: true });
  await page.emulateMedia({ colorScheme: 'dark' });
  await screenshot(page, { path: path.join(OUT, 'model-dark.png'), fullPage: false });
  await page.setViewportSize({ width: 390, height: 844 });
  await screenshot(page, { path: path.join(OUT, 'model-phone.png'), fullPage: true });
  await page.emulateMedia({ colorScheme: 'light' });
  await page.setViewportSize({ width: 1280, height: 900 });
  assert.deepEqual(network(requests, nreq), []);
  assert.deepEqual(errors, []);
  await context.close();
});

test('a checkpoint folder dropped (directory entries walked, readEntries in batches)', async () => {
  const dir = path.join(CKPT, 'good');
  const files = fs.readdirSync(dir).sort().map((f) => [f, [...fs.readFileSync(path.join(dir, f))]]);
  const { context, page, errors } = await openPage(env.browser, env.server.url);
  await page.evaluate((files) => {
    // Stand-ins for FileSystemDirectoryEntry / FileSystemFileEntry (a synthetic DataTransfer
    // has no real entries): the page uses only their methods.
    const later = (f) => setTimeout(f, 0);
    const fileEntry = (file, dir) => ({
      isFile: true, isDirectory: false, name: file.name, fullPath: `/${dir}/${file.name}`,
      file(ok) { later(() => ok(file)); },
    });
    window.__readEntriesCalls = {};
    const dirEntry = (name, fullPath, children) => ({
      isFile: false, isDirectory: true, name, fullPath,
      createReader() {
        // Two batches, then empty: the walker must call readEntries until it is empty.
        const batches = [children.slice(0, 3), children.slice(3), []];
        return {
          readEntries(ok) {
            window.__readEntriesCalls[fullPath] = (window.__readEntriesCalls[fullPath] ?? 0) + 1;
            later(() => ok(batches.shift() ?? []));
          },
        };
      },
    });
    const objs = files.map(([n, bytes]) => fileEntry(new File([new Uint8Array(bytes)], n), 'good'));
    objs.push(fileEntry(new File(['# readme'], 'README.md'), 'good'));
    // A subfolder (walked: its file is listed as ignored) and a chain of folders deeper
    // than MAX_FOLDER_DEPTH (8), whose bottom is not walked.
    objs.push(dirEntry('original', '/good/original',
      [fileEntry(new File(['not a model'], 'consolidated.pth'), 'good/original')]));
    let deep = fileEntry(new File(['deep'], 'deep.txt'), 'good/deep');
    let p = '/good' + '/d'.repeat(10);
    for (let i = 10; i > 0; i--) { deep = dirEntry('d', p, [deep]); p = p.slice(0, -2); }
    objs.push(deep);
    const root = dirEntry('good', '/good', objs);
    DataTransferItem.prototype.webkitGetAsEntry = function () { return root; };
    const dt = new DataTransfer();
    dt.items.add(new File([''], 'good'));
    const zone = document.querySelector('[data-testid=dropzone]');
    zone.dispatchEvent(new DragEvent('dragenter', { bubbles: true, cancelable: true, dataTransfer: dt }));
    zone.dispatchEvent(new DragEvent('drop', { bubbles: true, cancelable: true, dataTransfer: dt }));
  }, files);
  await modelDone(page);
  const calls = await page.evaluate(() => window.__readEntriesCalls);
  assert.equal(calls['/good'], 3, 'readEntries is called until it returns an empty batch');
  assert.equal(calls['/good/original'], 2);
  assert.equal(calls['/good/d/d/d/d/d/d/d/d'], 2, 'the 8th level below the dropped folder is read');
  assert.equal(calls['/good/d/d/d/d/d/d/d/d/d'], undefined, 'the 9th is not');
  // A .pth is a PyTorch file: inspected on its own tab (this one is no pickle: an error
  // verdict), never merged into the safetensors model.
  await page.waitForFunction(() => document.querySelectorAll('[data-testid=tab] .mark.reading').length === 0);
  assert.equal(await page.locator('[data-testid=tab][title="good/original/consolidated.pth"]').count(), 1);
  assert.equal(await page.locator('[data-testid=ignored-row][data-name="good/original/consolidated.pth"]').count(), 0);
  const notes = await page.$$eval('[data-testid=ignored-row]', (r) => r.map((x) => x.dataset.name));
  assert.ok(notes.some((n) => n.includes('deeper than 8 folder levels')), notes.join(' | '));
  await checkGood(page, 'good/');
  // README.md is listed as ignored and never read.
  assert.equal(await page.locator('[data-testid=ignored-row][data-name="good/README.md"]').count(), 1);
  // the shards' headers, the JSON and the 11 bytes of "not a model" (the .pth, whole)
  assert.equal(await bytesRead(page), expectedReads(dir) + 'not a model'.length);
  assert.deepEqual(errors, []);
  await context.close();
});

test('broken checkpoints: a missing shard, a wrong k_proj shape, a tensor in the wrong shard (loose files)', async () => {
  const { context, page, errors } = await openPage(env.browser, env.server.url);
  // Missing shard: the exact sentence, in the findings and in the shards table.
  await page.setInputFiles('[data-testid=folder-input]', path.join(CKPT, 'missing_shard'));
  await modelDone(page);
  const sentence = 'model-00002-of-00002.safetensors is referenced by the index but was not provided';
  assert.equal(await page.getAttribute('[data-testid=model-verdict]', 'data-verdict'), 'errors');
  const f = page.locator('[data-testid=model-finding][data-code=MissingShard]');
  assert.equal(await f.count(), 1);
  assert.equal(await f.locator('.msg').textContent(), sentence);
  assert.equal(await text(page, '[data-testid=shard-missing] td.bad'), sentence);
  assert.equal(await text(page, '[data-testid=model-tensor-count]'), th(EXPECTED.variants.missing_shard.tensors));
  assert.equal(await page.locator('[data-testid=model-finding]').count(), 1);

  // Wrong k_proj: ShapeMismatch naming the tensor and the expected shape.
  await page.setInputFiles('[data-testid=folder-input]', path.join(CKPT, 'wrong_k_proj'));
  await page.waitForSelector('[data-testid=model-view][data-state=done] [data-testid=model-finding][data-code=ShapeMismatch]');
  const want = EXPECTED.variants.wrong_k_proj.findings[0];
  const sm = page.locator('[data-testid=model-finding][data-code=ShapeMismatch]');
  assert.equal(await sm.count(), 1);
  const msg = await sm.locator('.msg').textContent();
  assert.ok(msg.includes(want.tensor), msg);
  assert.ok(msg.includes(`[${want.expected_shape.join(', ')}]`), msg);
  assert.ok(msg.includes(`[${want.actual_shape.join(', ')}]`), msg);
  assert.equal(await sm.locator('.where code').last().textContent(), 'shape');
  assert.ok((await sm.locator('.where').textContent()).includes(want.tensor));
  assert.equal(await text(page, '[data-testid=audit-shape]'), '1');

  // Loose files (Choose files… with every file of the folder) form a checkpoint too.
  const ws = path.join(CKPT, 'wrong_shard');
  await page.setInputFiles('[data-testid=file-input]', fs.readdirSync(ws).map((f) => path.join(ws, f)));
  await page.waitForSelector('[data-testid=model-view][data-state=done] [data-testid=model-finding][data-code=TensorInWrongShard]');
  const wrong = page.locator('[data-testid=model-finding][data-code=TensorInWrongShard]');
  assert.equal(await wrong.count(), 1);
  assert.ok((await wrong.locator('.where').textContent()).includes(EXPECTED.variants.wrong_shard.findings[0].tensor));
  assert.equal(await text(page, '[data-testid=model-view] h2'), 'checkpoint');
  assert.deepEqual(errors, []);
  await context.close();
});

test('a sparse 6.4 GB Llama-3.2-3B-shaped checkpoint: headers and JSON only', async (t) => {
  if (!fs.existsSync(SPARSE)) {
    t.skip(`run python3 tests/make_sparse_checkpoint.py ${SPARSE}`);
    return;
  }
  const runs = [];
  for (let i = 0; i < 3; i++) {
    const { context, page, errors } = await openPage(env.browser, env.server.url);
    const t0 = Date.now();
    await page.setInputFiles('[data-testid=folder-input]', SPARSE);
    await modelDone(page);
    const wall = Date.now() - t0;
    const line = await text(page, '[data-testid=model-bytes-read]');
    const inPage = Number(line.match(/· (\d+) ms/)?.[1]);
    runs.push({ wall, inPage, read: await bytesRead(page) });
    if (i === 0) {
      assert.equal(await text(page, '[data-testid=model-tensor-count]'), '254');
      assert.match(await text(page, '[data-testid=model-params]'), /^3,212,749,824/);
      assert.equal(await text(page, '[data-testid=audit-share]'), '12.26 %');
      assert.equal(await text(page, '[data-testid=audit-expected]'), '254');
      assert.equal(await text(page, '[data-testid=arch-attention]'),
        '24 query heads share 8 KV heads (3 per group, grouped-query attention)');
      const shards = fs.readdirSync(SPARSE).filter((f) => f.endsWith('.safetensors')).sort();
      const sizes = shards.map((f) => fs.statSync(path.join(SPARSE, f)).size);
      const headers = shards.map((f) => headerLen(path.join(SPARSE, f)));
      const fileBytes = sizes.reduce((a, b) => a + b, 0);
      const hsum = headers.reduce((a, b) => a + b, 0);
      assert.equal(fileBytes, 6425499648 + hsum + 8 * shards.length);
      assert.equal(await text(page, '[data-testid=model-equation]'),
        `${th(fileBytes)} = ${th(6425499648)} + ${th(hsum)} + ${th(8 * shards.length)}`);
      assert.equal(await page.getAttribute('[data-testid=model-verdict]', 'data-verdict'), 'sound');
      assert.equal(await page.locator('[data-testid=shard-row]').count(), 2);
      assert.equal(runs[0].read, expectedReads(SPARSE));
      assert.deepEqual(errors, []);
    }
    await context.close();
  }
  const med = (k) => runs.map((r) => r[k]).sort((a, b) => a - b)[1];
  const figures = { runs, median_wall_ms: med('wall'), median_in_page_ms: med('inPage'), bytes_read: runs[0].read };
  fs.writeFileSync(path.join(OUT, 'checkpoint-figures.json'), JSON.stringify(figures, null, 2));
  console.log('sparse checkpoint figures', JSON.stringify(figures));
});
