// End-to-end tests of the architecture card (src/web/views/arch_view.rs) in Debian's
// Chromium: on a GGUF tab its layer strip, experts and active parameters are the CLI's
// (`tensorpeek inspect FILE --json`, `details.architecture`) for the family fixtures
// written by transformers and converted by llama.cpp's converter; on a checkpoint's Model
// tab, read from config.json, the strip is the converted GGUF's and the parameters a token
// leaves unused are the same number; the layers are reachable by keyboard and say what
// they are. Run after `trunk build --release --offline` (and with the CLI built).
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { useBrowser, openPage, cliBinary, FIXTURES, ROOT, shown, screenshot } from './harness.mjs';

const env = useBrowser();
const FAM = path.join(FIXTURES, 'families');

let BIN;
before(() => { BIN = cliBinary(); });

function inspect(file) {
  const r = spawnSync(BIN, ['inspect', file, '--json'], { encoding: 'utf8', maxBuffer: 64 << 20 });
  assert.ok(r.status === 0 || r.status === 1, `tensorpeek inspect exited ${r.status}: ${r.stderr}`);
  return JSON.parse(r.stdout).files[0];
}

async function card(page, testid) {
  const sel = `[data-testid=${testid}]`;
  await page.waitForSelector(sel, { timeout: 30_000 });
  return page.locator(sel).evaluate((c) => ({
    pattern: c.querySelector('[data-testid=arch-strip]').dataset.pattern,
    cells: c.querySelectorAll('.arch-layer').length,
    labels: [...c.querySelectorAll('.arch-layer')].map((l) => l.getAttribute('aria-label')),
    active: c.dataset.active === undefined ? null : Number(c.dataset.active),
    total: c.dataset.total === undefined ? null : Number(c.dataset.total),
    experts: c.querySelector('[data-testid=arch-experts]')?.textContent ?? null,
    swa: c.querySelector('[data-testid=arch-swa]')?.textContent ?? null,
    mla: c.querySelector('[data-testid=arch-mla]')?.textContent ?? null,
    recurrent: c.querySelector('[data-testid=arch-recurrent]')?.textContent ?? null,
    html: c.querySelectorAll('script, iframe, img').length,
  }));
}

const FAMILIES = ['gemma3', 'qwen3moe', 'deepseek3', 'gptoss', 'granitehybrid', 'mamba2'];

test('a GGUF tab: the strip, experts and active parameters are the CLI\'s, for six families', async () => {
  for (const family of FAMILIES) {
    const file = path.join(FAM, 'gguf', `${family}-BF16.gguf`);
    const want = inspect(file).details.architecture;
    const { context, page, errors } = await openPage(env.browser, env.server.url);
    await page.setInputFiles('[data-testid=file-input]', file);
    const got = await card(page, 'gguf-arch');
    assert.equal(got.pattern, want.pattern, `${family}: pattern`);
    assert.equal(got.cells, want.description.layers.length, `${family}: one cell a layer`);
    assert.equal(got.active, want.active_params ?? null, `${family}: active parameters`);
    const moe = want.description.layers.find((l) => l.ffn.kind === 'moe');
    if (moe) {
      assert.match(got.experts, new RegExp(`^${moe.ffn.experts} experts, ${moe.ffn.used} used per token`), family);
      assert.ok(got.active < got.total, family);
    } else {
      assert.equal(got.experts, null, family);
    }
    assert.equal(got.swa !== null, want.description.swa !== null, `${family}: sliding window line`);
    assert.equal(got.mla !== null, want.description.mla !== null, `${family}: MLA line`);
    assert.equal(got.recurrent !== null, want.description.recurrent !== null, `${family}: recurrent line`);
    assert.equal(got.html, 0);
    assert.deepEqual(errors, [], family);
    await context.close();
  }
});

test('gemma3 and deepseek3: each layer says what it is, and is reached by keyboard', async () => {
  const { context, page } = await openPage(env.browser, env.server.url);
  await page.setInputFiles('[data-testid=file-input]', path.join(FAM, 'gguf', 'gemma3-BF16.gguf'));
  const got = await card(page, 'gguf-arch');
  assert.equal(got.pattern, 'SSSSSFS');
  assert.match(got.labels[5], /^layer 5: full attention, 2 heads \/ 1 KV heads, head 32; dense feed-forward 64$/);
  assert.match(got.labels[0], /^layer 0: sliding attention/);
  assert.match(got.swa, /^64 tokens/);
  // Tab from the strip's first cell to its second.
  await page.focus('[data-testid=gguf-arch] .arch-layer >> nth=0');
  await page.keyboard.press('Tab');
  assert.equal(await page.evaluate(() => document.activeElement.getAttribute('aria-label')), got.labels[1]);
  await context.close();

  const o = await openPage(env.browser, env.server.url);
  await o.page.setInputFiles('[data-testid=file-input]', path.join(FAM, 'gguf', 'deepseek3-BF16.gguf'));
  const d = await card(o.page, 'gguf-arch');
  assert.equal(d.pattern, 'MMM');
  assert.match(d.experts, /^8 experts, 2 used per token, 1 shared; 1 leading dense layer$/);
  assert.match(d.labels[0], /dense feed-forward 128$/);
  assert.match(d.labels[1], /8 experts of 32, 2 used, 1 shared$/);
  assert.match(d.mla, /^KV rank 64, RoPE part 16, Q rank 32/);
  if (process.env.UPDATE_SCREENSHOTS) await screenshot(o.page.locator('[data-testid=gguf-arch]'), { path: path.join(ROOT, 'docs/screenshot-ui-arch.png') });
  await o.context.close();
});

test('a checkpoint\'s Model tab: read from config.json, the same strip as its GGUF and the same unused parameters', async () => {
  for (const family of ['gemma3', 'qwen3moe', 'deepseek3', 'gptoss', 'granitehybrid']) {
    const dir = path.join(FAM, 'hf', family);
    const files = ['config.json', 'model.safetensors'].map((f) => path.join(dir, f));
    const gguf = inspect(path.join(FAM, 'gguf', `${family}-BF16.gguf`)).details.architecture;
    const { context, page, errors } = await openPage(env.browser, env.server.url);
    await page.setInputFiles('[data-testid=file-input]', files);
    await page.waitForSelector(shown('model'), { timeout: 30_000 });
    const got = await card(page, 'model-arch');
    assert.equal(got.pattern, gguf.pattern, `${family}: config.json's strip is the GGUF's`);
    if (gguf.active_params != null) {
      const ggufTotal = gguf.description ? inspect(path.join(FAM, 'gguf', `${family}-BF16.gguf`)).totals.params : 0;
      assert.equal(got.total - got.active, ggufTotal - gguf.active_params, `${family}: parameters a token does not use`);
    } else {
      assert.equal(got.active, null, family);
    }
    assert.deepEqual(errors, [], family);
    await context.close();
  }
});
