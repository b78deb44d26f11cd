// The page's audit of the sparse Llama-3.2-3B-shaped pair (2 shards + config, 6.4 GB,
// against the BF16 GGUF, 6.4 GB), or with MOE=1 the sparse Qwen3-30B-A3B-shaped one: time from Run audit to the summary, GB/s of source bytes,
// the worker's wasm memory and the browser's memory (all Chromium processes' PSS sampled
// every 200 ms, the peak above what it held before the click). RUNS (default 3) runs.
//   node tests/e2e/bench_audit.mjs   (after trunk build and the sparse files: scripts/bench_audit.sh)
import fs from 'node:fs';
import path from 'node:path';
import { serve, launch, openPage, OUT, chromiumPss } from './harness.mjs';

// MOE=1: the Qwen3-30B-A3B-shaped pair instead (13 shards, 18,867 tensors, 61 GB, each
// expert its own tensor, against the BF16 GGUF's stacked experts; scripts/bench_audit.sh MOE=1).
const RUNS = Number(process.env.RUNS ?? 3);
const MOE = process.env.MOE === '1';
const CKPT = path.join(OUT, MOE ? 'qwen3moe-30b-ckpt' : 'llama32-3b-ckpt');
const GGUF = path.join(OUT, MOE ? 'qwen3moe-30b.bf16.sparse.gguf' : 'llama32-3b.bf16.sparse.gguf');

const server = await serve();
const browser = await launch();
const { page, context } = await openPage(browser, server.url);
const files = fs.readdirSync(CKPT).map((f) => path.join(CKPT, f));
await page.setInputFiles('[data-testid=file-input]', [...files, GGUF]);
await page.click('[data-testid=audit-tab]', { timeout: 120_000 });
for (let i = 0; i < RUNS; i++) {
  await page.waitForSelector('[data-testid=audit-run]:not([disabled])');
  await new Promise((ok) => setTimeout(ok, 1000));
  const idle = chromiumPss();
  let peak = idle;
  const sampler = setInterval(() => { peak = Math.max(peak, chromiumPss()); }, 200);
  const t0 = Date.now();
  await page.click('[data-testid=audit-run]');
  await page.waitForSelector('[data-testid=audit-summary]', { timeout: 0 });
  const ms = Date.now() - t0;
  clearInterval(sampler);
  const summary = (await page.locator('[data-testid=audit-summary]').textContent()).trim();
  const read = (await page.locator('[data-testid=audit-read]').textContent()).trim();
  // The source's tensor bytes (the checkpoint's, read once each).
  const bytes = MOE ? 60_870_258_688 : 6_425_499_648;
  console.log(`run ${i + 1}: ${summary}; ${ms} ms from the click (${(bytes / ms / 1e6).toFixed(2)} GB/s of source bytes); ` +
    `${read}; browser memory peak ${((peak - idle) / 2 ** 20).toFixed(1)} MiB above idle`);
}
await context.close();
await browser.close();
await server.close();
