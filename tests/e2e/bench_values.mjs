// Bench: BF16 → stats throughput of the page's values worker in Chromium, for the 788 MB
// embedding (128256 × 3072 BF16) of the sparse Llama-3.2-3B-shaped file, with and without
// SHA-256; the worker's own timing (first read to stats) and its WebAssembly memory size.
// Median of RUNS runs. Usage: node tests/e2e/bench_values.mjs FILE
import { serve, launch, openPage } from './harness.mjs';

const [file] = process.argv.slice(2);
const RUNS = Number(process.env.RUNS ?? 3);
const TENSOR = 'model.embed_tokens.weight';
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };

const server = await serve();
const browser = await launch();
const { context, page } = await openPage(browser, server.url);
await page.setInputFiles('[data-testid=file-input]', file);
await page.waitForSelector('[data-testid=file-view][data-state=done]');
await page.fill('[data-testid=filter]', TENSOR);
await page.locator(`[data-testid=tensor-row][data-name="${TENSOR}"]`).click({ position: { x: 4, y: 4 } });
await page.waitForSelector('[data-testid=values-panel]');
for (const sha of [false, true]) {
  const ms = [];
  let bytes = 0;
  let memory = 0;
  for (let i = 0; i < RUNS; i++) {
    const box = page.locator('[data-testid=values-sha]');
    if ((await box.isChecked()) !== sha) await box.click();
    await page.click('[data-testid=read-values]');
    await page.waitForSelector('[data-testid=read-values]:not([disabled])', { timeout: 600_000 });
    const t = page.locator('[data-testid=values-timing]');
    ms.push(Number(await t.getAttribute('data-ms')));
    bytes = Number(await t.getAttribute('data-bytes-read'));
    memory = Math.max(memory, Number(await t.getAttribute('data-wasm-memory')));
  }
  const m = median(ms);
  console.log(`values worker, BF16 ${bytes} bytes, SHA-256 ${sha ? 'on ' : 'off'}: median ${m.toFixed(0)} ms ` +
    `(${(bytes / m / 1e6).toFixed(2)} GB/s; runs ${ms.map((x) => x.toFixed(0)).join(', ')}), wasm memory ${memory} bytes`);
}
await context.close();
await browser.close();
await server.close();
