// End-to-end tests of the GGUF view in Debian's Chromium: a real llama.cpp-written file
// (stories260K.gguf, numbers from gguf-py's GGUFReader), a sparse 6.4 GB Llama-3.2-3B-shaped
// GGUF with a 128,256-token tokenizer, the three parts of a split model (and two of them),
// and corrupted copies. Run after `trunk build --release --offline`.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { serve, useBrowser, openPage, th, readJson, FIXTURES, OUT, ROOT, bytesRead, network, shown, screenshot, done } from './harness.mjs';

const env = useBrowser();

const text = (page, sel) => page.locator(sel).first().innerText();
const KIB = 1024;
const MIB = 1024 * 1024;

/** A string shown as the page shows it: Rust's `{:?}` quoting (invisible and control
 *  characters as \u{…}), undone to the plain string. */
const unquote = (shown) => JSON.parse(shown
  .replace(/\\0/g, '\\u0000')
  .replace(/\\u\{([0-9a-f]+)\}/g, (_, h) => JSON.stringify(String.fromCodePoint(parseInt(h, 16))).slice(1, -1)
    .replace(/[\u0000-\u001f\u007f-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)));

/** Sum of the layout table's terms (BigInt: the sparse file passes 2^32). */
async function layoutSum(page) {
  const bytes = await page.locator('[data-testid=layout-term]').evaluateAll((rs) => rs.map((r) => r.dataset.bytes));
  return bytes.reduce((a, b) => a + BigInt(b), 0n);
}

test('stories260K.gguf (llama.cpp): header, card, tokenizer, layout, metadata, export, bytes read', async () => {
  const fixture = path.join(FIXTURES, 'stories260K.gguf');
  const want = readJson(path.join(FIXTURES, 'stories260K.expected.json'));
  const kv = Object.fromEntries(want.kv.map((k) => [k.key, k]));
  const { context, page, requests, errors } = await openPage(env.browser, env.server.url);
  const before = { requests: requests.length, served: env.server.log.length };

  await page.setInputFiles('[data-testid=file-input]', fixture);
  await done(page);
  await page.waitForSelector('[data-testid=gguf]');

  // Header only: within data start + 64 KiB + the 1 MiB read granularity.
  const read = await bytesRead(page);
  console.log(`stories260K: ${read} bytes read`);
  assert.ok(read <= want.data_offset + 64 * KIB + MIB, `read ${read}`);
  assert.ok(read >= want.data_offset, `read ${read}`);

  // Header card.
  assert.equal(await text(page, '[data-testid=g-magic]'), 'GGUF');
  assert.equal(await text(page, '[data-testid=g-version]'), String(want.version));
  assert.equal(await text(page, '[data-testid=g-endian]'), want.big_endian ? 'big-endian' : 'little-endian');
  assert.equal(await text(page, '[data-testid=g-tensor-count]'), th(want.tensor_count));
  assert.equal(await text(page, '[data-testid=g-kv-count]'), th(want.kv_count));
  assert.equal(await text(page, '[data-testid=g-alignment]'), th(want.alignment));
  assert.equal(await text(page, '[data-testid=g-data-start]'), th(want.data_offset));

  // Model card, from the reference reader's KV values.
  assert.equal(await text(page, '[data-testid=c-arch]'), kv['general.architecture'].value);
  assert.equal(await text(page, '[data-testid=c-context]'), th(kv['llama.context_length'].value));
  assert.equal(await text(page, '[data-testid=c-embedding]'), th(kv['llama.embedding_length'].value));
  assert.equal(await text(page, '[data-testid=c-blocks]'), th(kv['llama.block_count'].value));
  assert.equal(await text(page, '[data-testid=c-heads]'),
    `${kv['llama.attention.head_count'].value} / ${kv['llama.attention.head_count_kv'].value}`);
  const params = want.tensors.reduce((a, t) => a + t.n_elements, 0);
  assert.match(await text(page, '[data-testid=c-params]'), new RegExp(`^${th(params)}`));
  const bytes = want.tensors.reduce((a, t) => a + t.n_bytes, 0);
  assert.equal(await text(page, '[data-testid=c-bpw]'), (bytes * 8 / params).toFixed(2));

  // Tokenizer: count, types adding up to it, special tokens with their strings.
  const tokens = kv['tokenizer.ggml.tokens'];
  assert.equal(await text(page, '[data-testid=t-model]'), kv['tokenizer.ggml.model'].value);
  assert.equal(await text(page, '[data-testid=t-tokens]'), th(tokens.len));
  const typeCounts = await page.locator('[data-testid=t-types] tbody td.n').allInnerTexts();
  assert.equal(typeCounts.reduce((a, s) => a + Number(s.replace(/,/g, '')), 0), tokens.len);
  const bos = kv['tokenizer.ggml.bos_token_id'].value;
  assert.equal(await text(page, '[data-testid=t-bos]'), `${bos} ${JSON.stringify(tokens.head[bos])}`);
  const eos = kv['tokenizer.ggml.eos_token_id'].value;
  assert.equal(await text(page, '[data-testid=t-eos]'), `${eos} ${JSON.stringify(tokens.head[eos])}`);

  // Layout: the terms add up to the file size.
  assert.equal(await layoutSum(page), BigInt(want.file_size));
  assert.equal(await text(page, '[data-testid=layout-sum]'), th(want.file_size));
  const kinds = await page.locator('[data-testid=layout-term]').evaluateAll((rs) => rs.map((r) => r.dataset.kind));
  for (const k of ['header', 'kv', 'tensor_infos', 'tensor_data']) assert.ok(kinds.includes(k), kinds.join());

  // Metadata: every key with its type; the filter; the token array pages on demand.
  assert.equal(await page.locator('[data-testid=kv-row]').count(), want.kv.length);
  for (const k of want.kv) {
    const row = page.locator(`[data-testid=kv-row][data-key="${k.key}"]`);
    const type = k.type === 'ARRAY' ? `ARRAY of ${k.elem_type}` : k.type;
    assert.equal(await row.locator('td.type').innerText(), type, k.key);
  }
  await page.fill('[data-testid=kv-filter]', 'llama.');
  assert.equal(await page.locator('[data-testid=kv-row]').count(), want.kv.filter((k) => k.key.toLowerCase().includes('llama.')).length);
  await page.fill('[data-testid=kv-filter]', 'tokenizer.ggml.tokens');
  const row = page.locator('[data-testid=kv-row][data-key="tokenizer.ggml.tokens"]');
  assert.equal(await row.locator('[data-testid=arr-len]').innerText(), `${tokens.len} × STRING`);
  await row.locator('[data-testid=arr-open]').click();
  const items = row.locator('[data-testid=arr-elems] li');
  assert.equal(await items.count(), tokens.head.length);
  // The rest comes from the file on request, checked against GGUFReader's full list.
  const all = JSON.parse(execFileSync('python3', ['-c', `
import json, sys
from gguf import GGUFReader
f = GGUFReader(sys.argv[1]).fields['tokenizer.ggml.tokens']
print(json.dumps([bytes(f.parts[i]).decode('utf-8') for i in f.data]))`, fixture], { encoding: 'utf8' }));
  assert.equal(all.length, tokens.len);
  await row.locator('[data-testid=arr-more]').click();
  await page.waitForFunction((n) => document.querySelectorAll('[data-key="tokenizer.ggml.tokens"] [data-testid=arr-elems] li').length === n, tokens.head.length + 200);
  const shown = await items.locator('code').allInnerTexts();
  assert.deepEqual(shown.map(unquote), all.slice(0, tokens.head.length + 200));
  await row.locator('[data-testid=arr-more]').click();
  await row.locator('[data-testid=arr-more]').click();
  await page.waitForFunction((n) => document.querySelectorAll('[data-key="tokenizer.ggml.tokens"] [data-testid=arr-elems] li').length === n, tokens.len);
  assert.equal(await row.locator('[data-testid=arr-more]').count(), 0);
  assert.equal(unquote(await items.last().locator('code').innerText()), all.at(-1));
  assert.deepEqual((await items.locator('code').allInnerTexts()).map(unquote), all);
  await page.fill('[data-testid=kv-filter]', '');

  // Tensors: the shared table plus the GGUF dims (as stored) vs the row-major shape.
  assert.equal(await page.locator('[data-testid=tensor-row]').count(), want.tensor_count);
  await page.click('[data-testid=dims-details] summary');
  for (const t of want.tensors.slice(0, 5)) {
    const cells = await page.locator(`[data-testid=dims-row][data-name="${t.name}"] td`).allInnerTexts();
    assert.equal(cells[1].split(' ')[0], t.type, t.name);
    assert.equal(cells[2], `ne = [${t.ggml_dims.map(th).join(', ')}]`, t.name);
    assert.equal(cells[3], `[${[...t.ggml_dims].reverse().map(th).join(', ')}]`, t.name);
    assert.equal(cells[6], th(t.abs_offset), t.name);
  }
  // The selected tensor's panel gives both orders.
  const t0 = want.tensors[0];
  await page.locator(`[data-testid=tensor-row][data-name="${t0.name}"]`).click();
  assert.equal(await text(page, '[data-testid=sel-ggml-dims]'), `[${t0.ggml_dims.map(th).join(', ')}]`);
  assert.equal(await text(page, '[data-testid=sel-shape]'), `[${[...t0.ggml_dims].reverse().map(th).join(', ')}]`);
  // The ggml type table marks the types this file uses.
  const used = await page.locator('[data-testid=ggml-types] tr[data-used=true]').evaluateAll((rs) => rs.map((r) => r.dataset.type));
  assert.deepEqual(used.sort(), [...new Set(want.tensors.map((t) => t.type))].sort());
  assert.equal(await page.locator('[data-testid=ggml-types] tbody tr').count(), 43, 'ids 0–42');

  // Export JSON: the report with the GGUF fields.
  const [download] = await Promise.all([page.waitForEvent('download'), page.click('[data-testid=export-json]')]);
  const saved = path.join(OUT, 'export-gguf.json');
  await download.saveAs(saved);
  const f = readJson(saved).files[0];
  assert.equal(f.format, 'gguf');
  assert.equal(f.gguf_version, want.version);
  assert.equal(f.kv_count, want.kv_count);
  assert.equal(f.alignment, want.alignment);
  assert.equal(f.data_start, want.data_offset);
  assert.equal(f.size, want.file_size);
  assert.equal(f.tensors.length, want.tensor_count);
  for (const t of want.tensors) {
    const g = f.tensors.find((x) => x.name === t.name);
    assert.equal(g.dtype, t.type, t.name);
    assert.deepEqual(g.ggml_dims, t.ggml_dims, t.name);
    assert.equal(g.abs_start, t.abs_offset, t.name);
    assert.equal(g.bytes, t.n_bytes, t.name);
  }
  const layout = f.details.layout;
  assert.equal(layout.terms.reduce((a, t) => a + t.bytes, 0), want.file_size);

  // No network request after the page loaded; no script error.
  const net = network(requests, before.requests);
  assert.deepEqual(net, []);
  assert.deepEqual(network(env.server.log, before.served), []);
  assert.deepEqual(errors, []);
  await context.close();
});

test('a sparse 6.4 GB Llama-3.2-3B GGUF: 128,256 tokens without slowing the page', async () => {
  const file = path.join(OUT, 'llama32-3b.sparse.gguf');
  if (!fs.existsSync(file)) {
    execFileSync('python3', [path.join(ROOT, 'tests/make_sparse_gguf.py'), file]);
  }
  const size = fs.statSync(file).size;
  assert.equal(size, 6_436_298_400);
  const { context, page, requests, errors } = await openPage(env.browser, env.server.url);
  const nreq = requests.length;
  const t0 = Date.now();
  await page.setInputFiles('[data-testid=file-input]', file);
  await done(page);
  await page.waitForSelector('[data-testid=gguf-metadata]');
  await page.waitForSelector('[data-testid=tensor-row]');
  const ms = Date.now() - t0;
  console.log(`sparse GGUF: setInputFiles → inventory rendered in ${ms} ms`);
  assert.ok(ms < 15_000, `took ${ms} ms`);

  const read = await bytesRead(page);
  console.log(`sparse GGUF: ${read} bytes read`);
  assert.ok(read < 11_000_000, `read ${read}`);
  assert.ok(read >= 10_448_288, `read ${read}`);

  assert.equal(await page.getAttribute('[data-testid=verdict]', 'data-verdict'), 'sound');
  assert.equal(await text(page, '[data-testid=g-tensor-count]'), '255');
  assert.equal(await text(page, '[data-testid=g-data-start]'), '10,448,288');
  assert.equal(await text(page, '[data-testid=t-tokens]'), '128,256');
  assert.equal(await text(page, '[data-testid=t-merges]'), '280,147');
  assert.equal(await text(page, '[data-testid=t-model]'), 'gpt2');
  assert.equal(await text(page, '[data-testid=t-pre]'), 'llama-bpe');
  assert.match(await text(page, '[data-testid=t-bos]'), /^128,000 "/);
  assert.match(await text(page, '[data-testid=t-eos]'), /^128,009 "/);
  assert.match(await text(page, '[data-testid=c-file-type]'), /^MOSTLY_F16/);
  assert.equal(await text(page, '[data-testid=c-context]'), '131,072');
  assert.equal(await text(page, '[data-testid=c-heads]'), '24 / 8');
  assert.equal(await text(page, '[data-testid=c-vocab]'), '128,256');
  assert.match(await text(page, '[data-testid=c-rope]'), /freq base 500,000/);
  assert.equal(await layoutSum(page), BigInt(size));
  assert.equal(await text(page, '[data-testid=layout-sum]'), th(size));
  const tok = page.locator('[data-testid=layout-term][data-kind=kv]', { hasText: 'tokenizer' });
  assert.equal(await tok.getAttribute('data-bytes'), '10431998');

  // The chat template is text in a <pre>, never markup.
  const tpl = await text(page, '[data-testid=chat-template-text]');
  assert.match(tpl, /add_generation_prompt/);
  assert.equal(await page.locator('[data-testid=chat-template-text] *').count(), 0);

  // The token array renders a page, not 128,256 items; the page answers at once.
  const row = page.locator('[data-testid=kv-row][data-key="tokenizer.ggml.tokens"]');
  await row.locator('[data-testid=arr-open]').click();
  assert.equal(await row.locator('[data-testid=arr-elems] li').count(), 64);
  const t1 = Date.now();
  await row.locator('[data-testid=arr-more]').click();
  await page.waitForFunction(() => document.querySelectorAll('[data-key="tokenizer.ggml.tokens"] [data-testid=arr-elems] li').length === 264);
  const moreMs = Date.now() - t1;
  console.log(`sparse GGUF: 200 more tokens in ${moreMs} ms`);
  assert.equal(await row.locator('[data-testid=arr-shown]').innerText(), 'showing 264 of 128,256');
  const t2 = Date.now();
  await page.fill('[data-testid=kv-filter]', 'rope');
  const filterMs = Date.now() - t2;
  console.log(`sparse GGUF: metadata filter in ${filterMs} ms`);
  assert.ok(filterMs < 2_000, `filter took ${filterMs} ms`);
  assert.ok(await page.locator('[data-testid=kv-row]').count() >= 2);
  assert.ok(await page.locator('li').count() < 5_000);
  await page.fill('[data-testid=kv-filter]', '');
  // The merges too: one page at a time.
  const merges = page.locator('[data-testid=kv-row][data-key="tokenizer.ggml.merges"]');
  assert.equal(await merges.locator('[data-testid=arr-len]').innerText(), '280,147 × STRING');

  // Totals by ggml type (the generator: F32 for the 2 × 28 + 1 norms and rope_freqs, F16 for the rest).
  const byType = async (t) => (await page.locator(`[data-testid=by-dtype] tr[data-dtype=${t}] td`).allInnerTexts())[1];
  assert.equal(await byType('F32'), '58');
  assert.equal(await byType('F16'), '197');
  // Grouping by block: the tree's `blk` group holds 28 blocks of 9 tensors.
  await page.check('[data-testid=tree-toggle]');
  assert.match(await page.locator('[data-testid=group-row][data-path=blk]').innerText(), /252 tensors/);
  await page.locator('[data-testid=group-row][data-path=blk] button').click();
  assert.equal(await page.locator('[data-testid=group-row][data-path^="blk."]').count(), 28);
  await page.uncheck('[data-testid=tree-toggle]');
  assert.equal(await page.locator('[data-testid=tensor-row]').count() > 0, true);
  assert.deepEqual(network(requests, nreq), []);
  assert.deepEqual(errors, []);
  if (process.env.UPDATE_SCREENSHOTS) {
    await page.evaluate(() => document.querySelector('[data-testid=gguf]').scrollIntoView());
    await page.mouse.move(0, 0);
    await screenshot(page, { path: path.join(ROOT, 'docs/screenshot-ui-gguf.png'), fullPage: false });
  }
  await screenshot(page, { path: path.join(OUT, 'gguf-sparse.png'), fullPage: true });
  await context.close();
});

const SPLIT = [1, 2, 3].map((i) => path.join(FIXTURES, 'gguf', `split-0000${i}-of-00003.gguf`));

test('split GGUF: three parts make one model; two name the missing one', async () => {
  const wants = [1, 2, 3].map((i) => readJson(path.join(FIXTURES, 'gguf', `split-0000${i}-of-00003.expected.json`)));
  const { context, page, requests, errors } = await openPage(env.browser, env.server.url);
  const nreq = requests.length;
  await page.setInputFiles('[data-testid=file-input]', SPLIT);
  await page.waitForFunction(() => document.querySelectorAll('[data-testid=tab]').length === 3
    && document.querySelectorAll('[data-testid=tab] .mark.reading').length === 0);
  await page.waitForSelector('[data-testid=split-model]');
  assert.equal(await page.getAttribute('[data-testid=split-model]', 'data-complete'), 'true');
  const all = wants.flatMap((w, i) => w.tensors.map((t) => ({ ...t, file: path.basename(SPLIT[i]) })));
  assert.equal(await text(page, '[data-testid=split-tensor-count]'), th(all.length));
  assert.match(await text(page, '[data-testid=split-params]'), new RegExp(`^${th(all.reduce((a, t) => a + t.n_elements, 0))}`));
  assert.match(await text(page, '[data-testid=split-tensor-bytes]'), new RegExp(`^${th(all.reduce((a, t) => a + t.n_bytes, 0))}\\b`));
  const parts = await page.locator('[data-testid=split-part]').evaluateAll((rs) => rs.map((r) => [r.dataset.state, r.querySelector('code').textContent]));
  assert.deepEqual(parts, SPLIT.map((p) => ['open', path.basename(p)]));
  assert.equal(await page.locator('[data-testid=split-finding]').count(), 0);
  // The merged table names each tensor's file.
  await page.click('[data-testid=split-tensor-details] summary');
  for (const t of all) {
    const r = page.locator(`[data-testid=split-model] [data-testid=tensor-row][data-name="${t.name}"]`);
    assert.equal(await r.locator('[data-testid=tensor-file]').innerText(), t.file, t.name);
    assert.equal(await r.locator('[data-testid=abs-start]').innerText(), th(t.abs_offset), t.name);
  }
  // The merged view shows on every part's tab.
  await page.locator('[data-testid=tab]').first().click();
  await page.waitForSelector('[data-testid=split-model]');
  // Export of the model: every part and the merged `model`.
  const [dl] = await Promise.all([page.waitForEvent('download'), page.click('[data-testid=export-model]')]);
  const saved = path.join(OUT, 'export-split.json');
  await dl.saveAs(saved);
  const report = readJson(saved);
  assert.equal(report.files.length, 3);
  assert.equal(report.model.kind, 'gguf-split');
  assert.equal(report.model.split_count, 3);
  assert.deepEqual(report.model.parts.map((p) => p.name), SPLIT.map((p) => path.basename(p)));
  assert.deepEqual(report.model.tensors.map((t) => [t.name, t.file]), all.map((t) => [t.name, t.file]));
  assert.deepEqual(report.model.errors, []);
  // "Export all JSON" carries the same model.
  const [dl2] = await Promise.all([page.waitForEvent('download'), page.click('[data-testid=export-all]')]);
  const saved2 = path.join(OUT, 'export-split-all.json');
  await dl2.saveAs(saved2);
  assert.deepEqual(readJson(saved2).model, report.model);
  assert.deepEqual(network(requests, nreq), []);
  assert.deepEqual(errors, []);
  await context.close();

  // Two of three: the missing part is named.
  const two = await openPage(env.browser, env.server.url);
  await two.page.setInputFiles('[data-testid=file-input]', [SPLIT[0], SPLIT[2]]);
  await two.page.waitForSelector('[data-testid=split-model]');
  await two.page.waitForFunction(() => document.querySelectorAll('[data-testid=split-part]').length === 3);
  assert.equal(await two.page.getAttribute('[data-testid=split-model]', 'data-complete'), 'false');
  const missing = two.page.locator('[data-testid=split-finding][data-code=SplitMissing]');
  assert.equal(await missing.count(), 1);
  assert.match(await missing.innerText(), /part 2 of 3 is missing: split-00002-of-00003\.gguf/);
  const row = two.page.locator('[data-testid=split-part][data-state=missing]');
  assert.match(await row.innerText(), /split-00002-of-00003\.gguf\s+missing/);
  await screenshot(two.page, { path: path.join(OUT, 'gguf-split-missing.png'), fullPage: true });
  assert.deepEqual(two.errors, []);
  await two.context.close();
});

test('corrupted GGUF files show findings, not a blank page', async () => {
  const good = fs.readFileSync(path.join(FIXTURES, 'stories260K.gguf'));
  const badMagic = Buffer.from(good);
  badMagic.write('GGUX', 0);
  // The first key's length (at byte 24) claims 2^63 bytes.
  const hugeString = Buffer.from(good);
  hugeString.writeBigUInt64LE(1n << 63n, 24);
  const truncated = good.subarray(0, 5000);
  const cases = [
    ['bad-magic.gguf', badMagic, 'BadMagic'],
    ['huge-string.gguf', hugeString, 'CountTooLarge'],
    ['truncated.gguf', truncated, 'FileTooShort'],
  ];
  const { context, page, errors } = await openPage(env.browser, env.server.url);
  await page.setInputFiles('[data-testid=file-input]', cases.map(([name, buffer]) => ({ name, mimeType: 'application/octet-stream', buffer })));
  await page.waitForFunction(() => document.querySelectorAll('[data-testid=tab]').length === 3
    && document.querySelectorAll('[data-testid=tab] .mark.reading').length === 0);
  const tabs = page.locator('[data-testid=tab]');
  for (const [i, [name, buffer, code]] of cases.entries()) {
    await tabs.nth(i).click();
    await done(page);
    assert.equal(await page.getAttribute('[data-testid=verdict]', 'data-verdict'), 'errors', name);
    const codes = await page.locator('[data-testid=finding]').evaluateAll((fs) => fs.map((f) => f.dataset.code));
    assert.ok(codes.includes(code), `${name}: ${codes.join()}`);
    const where = await page.locator(`[data-testid=finding][data-code=${code}]`).first().innerText();
    assert.match(where, /at byte [\d,]+/, name);
    // Whatever could be read is still shown, and the layout still adds up.
    if (await page.locator('[data-testid=gguf-layout]').count()) {
      assert.equal(await layoutSum(page), BigInt(buffer.length), name);
    }
  }
  await screenshot(page, { path: path.join(OUT, 'gguf-broken.png'), fullPage: true });
  assert.deepEqual(errors, []);
  await context.close();
});
