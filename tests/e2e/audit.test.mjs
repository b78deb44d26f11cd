// The Audit tab in Chromium: the fixture checkpoint of tests/fixtures/audit (saved by
// transformers) picked together with the GGUF llama.cpp's converter made of it, audited in
// the page's worker; the exported audit checked field by field against the Python reference
// audit (expected/*.json, computed with the safetensors package and gguf-py), the tampered
// file's mismatch and its hint, and Cancel on the sparse 2 × 6.4 GB pair.
// Run after `trunk build --release --offline`, `python3 tests/make_sparse_checkpoint.py
// tests/e2e/out/llama32-3b-ckpt` and `python3 tests/make_sparse_gguf.py
// tests/e2e/out/llama32-3b.bf16.sparse.gguf --dtype bf16 --rope-freqs`.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { useBrowser, openPage, readJson, FIXTURES, OUT } from './harness.mjs';

const AUD = path.join(FIXTURES, 'audit');
const TIED = fs.readdirSync(path.join(AUD, 'tied')).map((f) => path.join(AUD, 'tied', f));
const SPARSE_CKPT = path.join(OUT, 'llama32-3b-ckpt');
const SPARSE_GGUF = path.join(OUT, 'llama32-3b.bf16.sparse.gguf');

const env = useBrowser();

/** Picks `files`, opens the Audit tab and runs the audit to its end. */
async function runAudit(page, files) {
  await page.setInputFiles('[data-testid=file-input]', files);
  await page.click('[data-testid=audit-tab]', { timeout: 60_000 });
  await page.click('[data-testid=audit-run]:not([disabled])');
  await page.waitForSelector('[data-testid=audit-summary]', { timeout: 120_000 });
}

const close = (a, b) => a === b || (typeof a === 'number' && typeof b === 'number' && Math.abs(a - b) <= 1e-9 * Math.max(Math.abs(a), Math.abs(b)));

/** The exported audit against the oracle's: every field it gives (reasons by presence). */
function compare(got, want) {
  for (const k of ['ok', 'complete', 'architecture', 'summary']) assert.deepEqual(got[k], want[k], k);
  for (const side of ['source', 'target']) assert.deepEqual(got[side], want[side], side);
  assert.equal(got.pairs.length, want.pairs.length);
  for (const w of want.pairs) {
    const g = got.pairs.find((p) => p.source === w.source && p.target === w.target);
    assert.ok(g, `pair ${w.source} ↔ ${w.target}`);
    for (const k of ['source_dtype', 'target_dtype', 'transforms', 'verdict', 'count', 'max_abs', 'requant_exact', 'first_mismatch']) {
      assert.deepEqual(g[k], w[k], `${w.target}: ${k}`);
    }
    assert.ok(close(g.rmse, w.rmse), `${w.target}: rmse ${g.rmse} vs ${w.rmse}`);
    assert.equal(g.reason === null, w.reason === null, `${w.target}: reason`);
    if ('hint' in w) assert.equal(g.hint, w.hint);
  }
  for (const part of ['tensor_bytes', 'file_bytes']) {
    const [g, w] = [got.reconciliation[part], want.reconciliation[part]];
    assert.equal(g.source, w.source);
    assert.equal(g.target, w.target);
    assert.equal(g.adds_up, true);
    assert.equal(g.terms.length, w.terms.length, part);
    for (const t of w.terms) {
      const m = g.terms.find((x) => x.key === t.key && x.what === t.what);
      assert.ok(m, `${part}: ${t.what}`);
      for (const [k, v] of Object.entries(t)) assert.deepEqual(m[k], v, `${part} ${t.what}: ${k}`);
    }
  }
}

test('a faithful BF16 conversion: 20/20 exact, the export equals the reference audit', async () => {
  const { page, errors, context } = await openPage(env.browser, env.server.url);
  const want = readJson(path.join(AUD, 'expected/tied-bf16.json'));
  await runAudit(page, [...TIED, path.join(AUD, 'gguf/tied-BF16.gguf')]);
  assert.equal((await page.locator('[data-testid=audit-summary]').textContent()).trim(), '20/20 exact, 1 generated_ok');
  assert.equal(want.summary_line, '20/20 exact, 1 generated_ok (ok)');
  assert.equal(await page.getAttribute('[data-testid=audit-verdict]', 'data-ok'), 'true');
  assert.equal(await page.locator('[data-testid=audit-pair]').count(), 21);
  assert.equal(await page.locator('[data-testid=audit-pair][data-verdict=exact]').count(), 20);
  const [dl] = await Promise.all([page.waitForEvent('download'), page.click('[data-testid=audit-export]')]);
  const report = JSON.parse(fs.readFileSync(await dl.path(), 'utf8'));
  assert.equal(report.tool, 'tensorpeek');
  compare(report.audit, want.audit);
  assert.deepEqual(errors, []);
  await context.close();
});

test('a Q/K permutation left out is a mismatch with its hint; a Q8_0 target is close', async () => {
  const { page, errors, context } = await openPage(env.browser, env.server.url);
  await runAudit(page, [...TIED, path.join(AUD, 'tampered/tied-BF16-noperm.gguf')]);
  assert.equal((await page.locator('[data-testid=audit-summary]').textContent()).trim(), '19/20 exact, 1 mismatch, 1 generated_ok');
  assert.equal(await page.getAttribute('[data-testid=audit-verdict]', 'data-ok'), 'false');
  const row = page.locator('[data-testid=audit-pair][data-verdict=mismatch]');
  assert.equal(await row.count(), 1);
  assert.match(await row.textContent(), /target equals the source without the Q\/K row permutation/);
  assert.match(await row.textContent(), /first at \[64\]/);
  await context.close();

  const second = await openPage(env.browser, env.server.url);
  const want = readJson(path.join(AUD, 'expected/tied-q8_0.json'));
  await runAudit(second.page, [...TIED, path.join(AUD, 'gguf/tied-Q8_0.gguf')]);
  assert.equal((await second.page.locator('[data-testid=audit-summary]').textContent()).trim(), want.summary_line.replace(/ \((not )?ok\)$/, ''));
  const [dl] = await Promise.all([second.page.waitForEvent('download'), second.page.click('[data-testid=audit-export]')]);
  compare(JSON.parse(fs.readFileSync(await dl.path(), 'utf8')).audit, want.audit);
  assert.deepEqual([...errors, ...second.errors], []);
  await second.context.close();
});

test('Cancel stops an audit of the sparse 2 × 6.4 GB pair', async () => {
  const { page, errors, context } = await openPage(env.browser, env.server.url);
  const files = fs.readdirSync(SPARSE_CKPT).map((f) => path.join(SPARSE_CKPT, f));
  await page.setInputFiles('[data-testid=file-input]', [...files, SPARSE_GGUF]);
  await page.click('[data-testid=audit-tab]', { timeout: 60_000 });
  await page.click('[data-testid=audit-run]:not([disabled])');
  await page.waitForSelector('[data-testid=audit-done]', { timeout: 60_000 });
  await page.click('[data-testid=audit-cancel]');
  await page.waitForSelector('[data-testid=audit-cancelled]');
  assert.equal(await page.locator('[data-testid=audit-summary]').count(), 0);
  assert.deepEqual(errors, []);
  await context.close();
});
