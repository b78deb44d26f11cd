// The page survives a parser that panics and one that never finishes: files are parsed in
// a Web Worker, a panic there (or a watchdog that stops a silent worker) closes only the
// file's tab and names it in an error panel, and the other files — given together with
// it, or later — are read as usual. The faults are staged by the page's test switch
// (`?faults=1`: a file named `*.panic.*` panics, `*.hang.*` never finishes; `&stall=MS`
// shortens the watchdog).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { useBrowser, openPage, FIXTURES, OUT, screenshot } from './harness.mjs';

const env = useBrowser();
const STALL_MS = 1500;

function copies() {
  // A sound file (tiny_model.safetensors's metadata holds HTML on purpose: a warning).
  const good = path.join(FIXTURES, 'one_tensor.safetensors');
  const out = {};
  for (const name of ['a.safetensors', 'x.panic.safetensors', 'y.hang.safetensors', 'z.safetensors']) {
    out[name] = path.join(OUT, name);
    fs.copyFileSync(good, out[name]);
  }
  return out;
}

test('a panicking parse and a parse that never ends: their tabs close, an error panel names them, the rest is read', async () => {
  const files = copies();
  const { context, page, errors } = await openPage(env.browser, `${env.server.url}?faults=1&stall=${STALL_MS}`);
  const t0 = Date.now();
  await page.setInputFiles('[data-testid=file-input]', [files['a.safetensors'], files['x.panic.safetensors'], files['y.hang.safetensors'], files['z.safetensors']]);
  await page.waitForFunction(() => document.querySelectorAll('[data-testid=error-item]').length === 2, null, { timeout: 30_000 });
  await page.waitForFunction(() => document.querySelectorAll('[data-testid=tab] .mark.reading').length === 0);
  const waited = Date.now() - t0;

  // The two faulty files are named, each with what happened; their tabs are gone.
  const items = await page.locator('[data-testid=error-item]').evaluateAll((li) => li.map((x) => [x.dataset.name, x.innerText]));
  const byName = Object.fromEntries(items);
  assert.match(byName['x.panic.safetensors'], /the parser stopped: .*forced panic/);
  assert.match(byName['y.hang.safetensors'], /could not be read in time \(parser stopped after \d+ s\)/);
  assert.ok(waited >= STALL_MS, `the watchdog waited ${waited} ms`);
  const tabs = await page.$$eval('[data-testid=tab]', (t) => t.map((x) => x.title));
  assert.deepEqual(tabs, ['a.safetensors', 'z.safetensors']);

  // The others were read in full: z after the panic and the hang, by a fresh worker.
  for (const name of ['a.safetensors', 'z.safetensors']) {
    await page.click(`[data-testid=tab][title="${name}"]`);
    await page.waitForSelector('[data-testid=file-view][data-state=done]');
    assert.equal(await page.getAttribute('[data-testid=verdict]', 'data-verdict'), 'sound', name);
  }
  // The page stays usable: the panel can be dismissed, a new file opens.
  await page.click('[data-testid=error-dismiss] >> nth=0');
  assert.equal(await page.locator('[data-testid=error-item]').count(), 1);
  await page.setInputFiles('[data-testid=file-input]', path.join(FIXTURES, 'one_tensor.safetensors'));
  await page.waitForFunction(() => [...document.querySelectorAll('[data-testid=tab]')].some((t) => t.title === 'one_tensor.safetensors'));
  await page.click('[data-testid=tab][title="one_tensor.safetensors"]');
  await page.waitForSelector('[data-testid=file-view][data-state=done]');
  assert.equal(await page.locator('[data-testid=page-panic]').count(), 0, 'the page itself never panicked');
  await screenshot(page, { path: path.join(OUT, 'robust.png'), fullPage: true });
  // The worker's panic reaches the console as an uncaught error in the worker only; the
  // page logs none of its own.
  assert.deepEqual(errors.filter((e) => !/unreachable|RuntimeError|panicked/.test(e)), []);
  await context.close();
});

test('without the test switch, file names stage nothing', async () => {
  const files = copies();
  const { context, page } = await openPage(env.browser, env.server.url);
  await page.setInputFiles('[data-testid=file-input]', files['x.panic.safetensors']);
  await page.waitForSelector('[data-testid=file-view][data-state=done]');
  assert.equal(await page.getAttribute('[data-testid=verdict]', 'data-verdict'), 'sound');
  assert.equal(await page.locator('[data-testid=error-panel]').count(), 0);
  await context.close();
});
