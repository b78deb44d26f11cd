// The packed npm package in Chromium (playwright-core, Debian's Chromium): a page imports the
// installed package by its name (an import map to node_modules/tensorpeek), inspects a
// fixture by URL and as a Blob — in the package's module worker — and renders
// <tensorpeek-view>. Names and counts are compared with our CLI's `--json` (TP_CLI).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { serve } from './server.mjs';

const ROOT = process.env.TP_ROOT;
const CLI = process.env.TP_CLI;
const HERE = process.cwd();
const { chromium } = await import(path.join(ROOT, 'node_modules/playwright-core/index.mjs'));
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

const cli = (...args) => JSON.parse(execFileSync(CLI, [...args, '--json'], { encoding: 'utf8' }));
const FIXTURE = 'tiny_model.safetensors';
const want = cli('inspect', path.join(ROOT, 'tests/fixtures', FIXTURE));
const wantNames = want.files[0].tensors.map((t) => t.name);

const PAGE = `<!doctype html><html><head><meta charset="utf-8">
<script type="importmap">{ "imports": { "tensorpeek": "/node_modules/tensorpeek/lib/browser.js",
  "tensorpeek/view": "/node_modules/tensorpeek/lib/view.js" } }</script></head><body>
<script type="module">
  import * as tp from 'tensorpeek';
  window.tp = tp;
  window.tpReady = true;
</script></body></html>`;

const VIEW = `<!doctype html><html><head><meta charset="utf-8">
<script type="importmap">{ "imports": { "tensorpeek/view": "/node_modules/tensorpeek/lib/view.js" } }</script>
<script type="module">import 'tensorpeek/view';</script></head><body>
<tensorpeek-view id="plain" src="/fixtures/${FIXTURE}" tab="metadata"></tensorpeek-view>
<tensorpeek-view id="stats" src="/fixtures/${FIXTURE}" tensor="model.embed_tokens.weight"></tensorpeek-view>
</body></html>`;

let server;
let browser;
before(async () => {
  fs.writeFileSync(path.join(HERE, 'page.html'), PAGE);
  fs.writeFileSync(path.join(HERE, 'view.html'), VIEW);
  if (!fs.existsSync(path.join(HERE, 'fixtures'))) fs.symlinkSync(path.join(ROOT, 'tests/fixtures'), path.join(HERE, 'fixtures'));
  server = await serve(HERE);
  browser = await chromium.launch({ executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium', args: ARGS });
});
after(async () => {
  await browser?.close();
  await server?.close();
});

async function open(file) {
  const page = await browser.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(`${server.url}/${file}`);
  return { page, errors };
}

test('Chromium: the installed package inspects a fixture by URL and as a Blob, in its module worker', async () => {
  server.log.length = 0;
  const { page, errors } = await open('page.html');
  await page.waitForFunction(() => window.tpReady === true);
  const byUrl = await page.evaluate(async (f) => {
    const r = await window.tp.inspect(`/fixtures/${f}`);
    return { count: r.files[0].totals.tensors, names: r.files[0].tensors.map((t) => t.name), ok: r.files[0].ok };
  }, FIXTURE);
  assert.equal(byUrl.count, want.files[0].totals.tensors);
  assert.deepEqual(byUrl.names, wantNames);
  assert.equal(byUrl.ok, true);
  const byBlob = await page.evaluate(async (f) => {
    const bytes = await (await fetch(`/fixtures/${f}`)).arrayBuffer();
    const r = await window.tp.inspect(new File([bytes], f));
    const s = await window.tp.stats(new Blob([bytes]), 'model.embed_tokens.weight');
    return { name: r.files[0].name, names: r.files[0].tensors.map((t) => t.name), count: s.files[0].tensors.find((t) => t.name === 'model.embed_tokens.weight').stats.count };
  }, FIXTURE);
  assert.equal(byBlob.name, FIXTURE);
  assert.deepEqual(byBlob.names, wantNames);
  assert.equal(byBlob.count, 1024);
  // The wasm ran in the worker: the worker module was fetched, and the file was read by ranges.
  assert.ok(server.log.some((r) => r.path.endsWith('/lib/worker.js')), JSON.stringify(server.log.map((r) => r.path)));
  assert.ok(server.log.filter((r) => r.path === `/fixtures/${FIXTURE}` && r.range).every((r) => r.status === 206));
  const rejected = await page.evaluate(() => window.tp.stats('/fixtures/tiny_model.safetensors', 'nope').then(() => 'resolved', (e) => e.message));
  assert.match(rejected, /no tensor named "nope"/);
  assert.deepEqual(errors, []);
  await page.close();
});

test('Chromium: <tensorpeek-view> renders the tensor count, the names and a tensor\'s stats; the file\'s HTML stays text', async () => {
  const { page, errors } = await open('view.html');
  await page.waitForFunction(() => document.querySelector('#plain')?.shadowRoot?.querySelector('[data-testid=totals]'));
  const plain = await page.evaluate(() => {
    const root = document.querySelector('#plain').shadowRoot;
    const dd = [...root.querySelectorAll('[data-testid=metadata] dd')].map((d) => d.textContent);
    return {
      verdict: root.querySelector('[data-testid=verdict]').textContent,
      findings: [...root.querySelectorAll('[data-testid=findings] li')].map((l) => l.textContent),
      totals: root.querySelector('[data-testid=totals]').textContent,
      tab: root.querySelector('nav [aria-selected=true]').dataset.tab,
      dd,
      injected: root.querySelectorAll('b, img, script').length,
      html: root.innerHTML,
    };
  });
  const warned = want.files[0].warnings.length;
  assert.equal(plain.verdict, warned ? `Sound, ${warned} warning(s)` : 'Sound');
  assert.deepEqual(plain.findings, want.files[0].warnings.map((w) => `${w.code}: ${w.message}`));
  assert.match(plain.totals, new RegExp(`tensors${want.files[0].totals.tensors}`));
  assert.equal(plain.tab, 'metadata');
  assert.ok(plain.dd.includes('<img src=x onerror=alert(1)> <b>not html</b>'), JSON.stringify(plain.dd));
  assert.equal(plain.injected, 0, 'no element from the file');
  assert.ok(plain.html.includes('&lt;b&gt;not html&lt;/b&gt;'));
  // the tensors tab: every name, and the filter
  const names = await page.evaluate(async () => {
    const el = document.querySelector('#plain');
    el.setAttribute('tab', 'tensors');
    const root = el.shadowRoot;
    const all = [...root.querySelectorAll('td.tname')].map((t) => t.textContent);
    const filter = root.querySelector('[data-testid=filter]');
    filter.value = 'layers.1.';
    filter.dispatchEvent(new Event('input'));
    return { all, filtered: [...root.querySelectorAll('td.tname')].map((t) => t.textContent), shown: root.querySelector('[data-testid=shown]').textContent };
  });
  assert.deepEqual(names.all, wantNames);
  assert.deepEqual(names.filtered, wantNames.filter((n) => n.includes('layers.1.')));
  assert.match(names.shown, /of \d+ shown/);
  // tensor=: the stats tab, the CLI's figures
  const cliStats = cli('stats', path.join(ROOT, 'tests/fixtures', FIXTURE), '--tensor', 'model.embed_tokens.weight').files[0].tensors.find((t) => t.name === 'model.embed_tokens.weight').stats;
  await page.waitForFunction(() => document.querySelector('#stats').shadowRoot.querySelector('[data-testid=stats] dl'));
  const stats = await page.evaluate(() => [...document.querySelector('#stats').shadowRoot.querySelectorAll('[data-testid=stats] dd')].map((d) => d.textContent));
  assert.ok(stats.includes(cliStats.sha256), JSON.stringify(stats));
  assert.ok(stats.includes(cliStats.count.toLocaleString('en-US')));
  assert.deepEqual(errors, []);
  await page.close();
});

test('Chromium: www/embed-example.html shows <tensorpeek-view> beside the iframes, rendering a GGUF fixture', async () => {
  const gguf = cli('inspect', path.join(ROOT, 'tests/fixtures/stories260K.gguf')).files[0];
  const example = fs.readFileSync(path.join(ROOT, 'www/embed-example.html'), 'utf8')
    .replace('./npm/lib/view.js', '/node_modules/tensorpeek/lib/view.js')
    .replace('src="https://huggingface.co/ggml-org/models/resolve/main/tinyllamas/stories260K.gguf"', 'src="/fixtures/stories260K.gguf"')
    .replace(/<iframe[^>]*><\/iframe>/gs, '');
  assert.ok(example.includes('src="/fixtures/stories260K.gguf"'), 'the component is on the page');
  fs.writeFileSync(path.join(HERE, 'embed-example.html'), example);
  const { page, errors } = await open('embed-example.html');
  const root = '[data-testid=component-gguf]';
  await page.waitForFunction((s) => document.querySelector(s)?.shadowRoot?.querySelector('td.tname'), root);
  const seen = await page.evaluate((s) => {
    const r = document.querySelector(s).shadowRoot;
    return { totals: r.querySelector('[data-testid=totals]').textContent, names: [...r.querySelectorAll('td.tname')].map((t) => t.textContent), name: r.querySelector('[data-testid=file-name]').textContent };
  }, root);
  assert.equal(seen.name, 'stories260K.gguf');
  assert.match(seen.totals, new RegExp(`tensors${gguf.totals.tensors}parameters`));
  assert.deepEqual(seen.names, gguf.tensors.map((t) => t.name));
  assert.deepEqual(errors, []);
  await page.close();
});
