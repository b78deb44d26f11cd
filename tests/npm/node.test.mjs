// The packed npm package in Node 20, imported by its name from a folder where only the
// tarball was installed (scripts/test-npm.sh). Every answer is compared with our own CLI's
// `--json` for the same files (TP_CLI), and with the expectations committed beside the
// fixtures (written by third-party readers).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { inspect, stats, audit, fit } from 'tensorpeek';
import { serve } from './server.mjs';

const ROOT = process.env.TP_ROOT;
const CLI = process.env.TP_CLI;
const FX = path.join(ROOT, 'tests/fixtures');
const fx = (p) => path.join(FX, p);

/** The CLI's report (its exit status says sound or not; the JSON is on stdout either way). */
function cli(...args) {
  try {
    return JSON.parse(execFileSync(CLI, args, { encoding: 'utf8', maxBuffer: 1 << 28 }));
  } catch (e) {
    if (e.stdout) return JSON.parse(e.stdout);
    throw e;
  }
}

let server;
before(async () => { server = await serve(FX); });
after(async () => { await server.close(); });

test('inspect: a safetensors file by path is the CLI report, and the committed expectation', async () => {
  const ours = await inspect(fx('tiny_model.safetensors'));
  assert.deepEqual(ours, cli('inspect', fx('tiny_model.safetensors'), '--json'));
  const f = ours.files[0];
  const expected = JSON.parse(fs.readFileSync(fx('tiny_model.safetensors.expected.json'), 'utf8'));
  for (const k of ['name', 'size', 'header_len', 'data_start', 'bytes_read', 'metadata']) assert.deepEqual(f[k], expected[k], k);
  assert.equal(f.tensors.length, expected.tensors.length);
  for (const t of expected.tensors) {
    const ours = f.tensors.find((x) => x.name === t.name);
    for (const [k, v] of Object.entries(t)) assert.deepEqual(ours?.[k], v, `${t.name}.${k}`);
  }
});

test('inspect: a GGUF file by path is the CLI report; counts as gguf-py read them', async () => {
  const ours = await inspect(fx('stories260K.gguf'));
  assert.deepEqual(ours, cli('inspect', fx('stories260K.gguf'), '--json'));
  const expected = JSON.parse(fs.readFileSync(fx('stories260K.expected.json'), 'utf8'));
  const f = ours.files[0];
  assert.equal(f.format, 'gguf');
  assert.equal(f.size, expected.file_size);
  assert.equal(f.tensors.length, expected.tensor_count);
  assert.equal(f.kv_count, expected.kv_count);
  assert.equal(f.data_start, expected.data_offset);
  assert.ok(f.bytes_read < f.size, `read ${f.bytes_read} of ${f.size} bytes`);
});

test('inspect: a checkpoint folder and its files as an array are the CLI report of the folder', async () => {
  const dir = fx('checkpoint/good');
  const want = cli('inspect', dir, '--json');
  assert.ok(want.model, 'the CLI merged a checkpoint');
  assert.deepEqual(await inspect(dir), want);
  const files = fs.readdirSync(dir).sort().map((n) => path.join(dir, n));
  const asArray = await inspect(files);
  assert.deepEqual(asArray.model, want.model);
  assert.deepEqual(asArray.files.map((f) => f.name), want.files.map((f) => f.name));
});

test('stats: a tensor\'s values are the CLI\'s stats --json', async () => {
  for (const [file, tensor] of [['tiny_model.safetensors', 'model.embed_tokens.weight'], ['stories260K.gguf', 'blk.0.attn_q.weight']]) {
    const ours = await stats(fx(file), tensor);
    assert.deepEqual(ours, cli('stats', fx(file), '--tensor', tensor, '--json'), `${file} ${tensor}`);
    const t = ours.files[0].tensors.find((x) => x.name === tensor);
    assert.ok(t.stats && t.stats.count === t.params && t.stats.sha256.length === 64, `${tensor}: ${JSON.stringify(t.stats)?.slice(0, 80)}`);
  }
  await assert.rejects(stats(fx('tiny_model.safetensors'), 'no.such.tensor'), /no tensor named "no.such.tensor" \(16 tensors/);
});

test('inspect and stats by URL: range requests to a local server, the same report as by path', async () => {
  server.log.length = 0;
  const url = `${server.url}/stories260K.gguf`;
  const byUrl = await inspect(url);
  const byPath = await inspect(fx('stories260K.gguf'));
  assert.deepEqual(byUrl.files[0].tensors, byPath.files[0].tensors);
  assert.deepEqual(byUrl.files[0].metadata, byPath.files[0].metadata);
  assert.equal(byUrl.files[0].name, 'stories260K.gguf');
  assert.ok(server.log.length > 0 && server.log.every((r) => r.range && r.status === 206), JSON.stringify(server.log));
  const sent = server.log.reduce((a, r) => a + r.sent, 0);
  assert.ok(sent < byPath.files[0].size, `the server sent ${sent} bytes of ${byPath.files[0].size}`);
  const s = await stats(`${server.url}/tiny_model.safetensors`, 'model.embed_tokens.weight');
  assert.deepEqual(s.files[0].tensors, cli('stats', fx('tiny_model.safetensors'), '--tensor', 'model.embed_tokens.weight', '--json').files[0].tensors);
  await assert.rejects(inspect(`${server.url}/missing.gguf`), /404/);
});

test('inspect: a Blob and a reader of one\'s own are read as the path is', async () => {
  const bytes = fs.readFileSync(fx('tiny_model.safetensors'));
  const byPath = await inspect(fx('tiny_model.safetensors'));
  const blob = await inspect(new File([bytes], 'tiny_model.safetensors'));
  assert.deepEqual(blob, byPath);
  const asked = [];
  const reader = { name: 'tiny_model.safetensors', size: bytes.length, read: async (o, n) => { asked.push([o, n]); return bytes.subarray(o, o + n); } };
  assert.deepEqual(await inspect(reader), byPath);
  const total = asked.reduce((a, [, n]) => a + n, 0);
  assert.equal(total, byPath.files[0].bytes_read, 'only the header was read');
});

test('fit: the memory section is the CLI\'s fit --json with the same flags', async () => {
  const ours = await fit(fx('stories260K.gguf'), { ctxSize: 4096, gpu: ['1GiB'], fit: true, cacheTypeK: 'q8_0', flashAttn: 'on' });
  const want = cli('fit', fx('stories260K.gguf'), '-c', '4096', '--gpu', '1GiB', '--fit', '-ctk', 'q8_0', '-fa', 'on', '--json');
  assert.deepEqual(ours, want);
  assert.equal(ours.memory.params.n_ctx, 4096);
  assert.equal(ours.memory.kv.type_k, 'q8_0');
  await assert.rejects(fit(fx('stories260K.gguf'), { cacheTypeK: 'q9' }), /-ctk: q9 is not one of/);
  await assert.rejects(fit(fx('stories260K.gguf'), { ctxsize: 1 }), /unknown field `ctxsize`/);
  await assert.rejects(fit(fx('tiny_model.safetensors')), /no GGUF model among the files/);
});

test('audit: a conversion audit is the CLI\'s audit --json', async () => {
  const dir = fx('audit/untied');
  const target = fx('audit/gguf/untied-BF16.gguf');
  const ours = await audit(dir, target);
  const want = cli('audit', dir, '--against', target, '--json');
  assert.deepEqual(ours, want);
  assert.equal(ours.audit.ok, true, ours.audit.summary_line);
  assert.match(ours.audit.summary_line, /exact/);
  const flip = fx('audit/tampered/tied-BF16-flip.gguf');
  const stopped = await audit(fx('audit/tied'), flip, { firstMismatch: true });
  assert.deepEqual(stopped, cli('audit', fx('audit/tied'), '--against', flip, '--first-mismatch', '--json'));
  assert.equal(stopped.audit.ok, false);
  assert.equal(stopped.audit.complete, false);
});
