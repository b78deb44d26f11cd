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
import { spawnSync } from 'node:child_process';
import { useBrowser, openPage, readJson, cliBinary, FIXTURES, OUT, ROOT, screenshot } from './harness.mjs';

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

// The MoE families (tests/fixtures/families): each expert of the checkpoint against its slice
// of the GGUF's stacked tensor, in the page as in `tensorpeek audit` (whose figures
// tests/audit_families.rs checks against the converter's files).
const FAM = path.join(FIXTURES, 'families');
const familyFiles = (dir) => fs.readdirSync(dir).filter((f) => f === 'config.json' || f.endsWith('.safetensors')).map((f) => path.join(dir, f));

function cliAudit(source, target) {
  const r = spawnSync(cliBinary(), ['audit', source, '--against', target, '--json'], { encoding: 'utf8', maxBuffer: 64 << 20 });
  assert.ok(r.status === 0 || r.status === 1, `tensorpeek audit exited ${r.status}: ${r.stderr}`);
  return JSON.parse(r.stdout).audit;
}

test('MoE families: every expert audited in the page as by the CLI; a changed expert is named', async () => {
  const cases = [
    ['hf/qwen3moe', 'gguf/qwen3moe-Q8_0.gguf'],
    ['hf/deepseek3', 'gguf/deepseek3-BF16.gguf'],
    ['hf/gptoss', 'gguf/gptoss-Q8_0.gguf'],
    ['tampered/qwen3moe-expert5', 'gguf/qwen3moe-BF16.gguf'],
  ];
  for (const [src, tgt] of cases) {
    const { page, errors, context } = await openPage(env.browser, env.server.url);
    const want = cliAudit(path.join(FAM, src), path.join(FAM, tgt));
    await runAudit(page, [...familyFiles(path.join(FAM, src)), path.join(FAM, tgt)]);
    assert.equal((await page.locator('[data-testid=audit-summary]').textContent()).trim(), want.summary_line.replace(/ \((not )?ok\)$/, ''), src);
    const [dl] = await Promise.all([page.waitForEvent('download'), page.click('[data-testid=audit-export]')]);
    const got = JSON.parse(fs.readFileSync(await dl.path(), 'utf8')).audit;
    assert.deepEqual(got.summary, want.summary, `${src}: summary`);
    const key = (p) => `${p.source} → ${p.target} ${JSON.stringify(p.part ?? null)}`;
    assert.deepEqual(got.pairs.map((p) => [key(p), p.verdict, p.transforms, p.requant_exact]), want.pairs.map((p) => [key(p), p.verdict, p.transforms, p.requant_exact]), `${src}: pairs`);
    assert.ok(want.pairs.some((p) => p.part?.kind === 'expert'), `${src}: expert slices`);
    if (src.startsWith('tampered')) {
      const row = page.locator('[data-testid=audit-pair][data-verdict=mismatch]');
      assert.equal(await row.count(), 1);
      const text = await row.textContent();
      assert.match(text, /model\.layers\.1\.mlp\.experts\.5\.up_proj\.weight/);
      assert.match(text, /expert 5 of 8|expert=5 of 8/);
      // A failed audit opens on the pairs that are not exact; the filter finds an expert's pairs.
      assert.equal(await page.getAttribute('[data-testid=audit-shown]', 'data-count'), '1');
      await page.selectOption('[data-testid=audit-show]', 'all');
      await page.waitForFunction((n) => document.querySelector('[data-testid=audit-shown]').dataset.count === String(n), want.pairs.length);
      await page.fill('[data-testid=audit-filter]', 'expert 5 of 8');
      const fifth = want.pairs.filter((p) => p.part?.kind === 'expert' && p.part.index === 5).length;
      assert.ok(fifth >= 6, `${fifth} pairs of expert 5`);
      await page.waitForFunction((n) => document.querySelectorAll('[data-testid=audit-pair]').length === n, fifth);
      await page.fill('[data-testid=audit-filter]', '');
      await page.selectOption('[data-testid=audit-show]', 'not-exact');
      await page.waitForFunction(() => document.querySelectorAll('[data-testid=audit-pair]').length === 1);
      if (process.env.UPDATE_SCREENSHOTS) {
        await page.evaluate(() => document.activeElement?.blur());
        await page.mouse.move(0, 0);
        await screenshot(page.locator('[data-testid=audit-view]'), { path: path.join(ROOT, 'docs/screenshot-audit-moe.png') });
      }
    }
    assert.deepEqual(errors, []);
    await context.close();
  }
});
