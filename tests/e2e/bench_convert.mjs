// Bench: PyTorch zip → safetensors, for a (sparse) multi-GB checkpoint.
// 1. the page: click "Convert to safetensors" → download complete (Chromium writes the Blob
//    of the header and File.slice() pieces to disk), with the browser's memory (all its
//    processes, PSS) sampled every 200 ms: the peak above what it held before the click;
// 2. the native CLI, `tensorpeek convert FILE -o OUT` (whole process);
// 3. the disk alone: `cp FILE OUT` of the same input — the bound both should meet.
// Medians of RUNS runs (default 3); each output is deleted at once.
// Usage: node tests/e2e/bench_convert.mjs FILE CLI_BINARY
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { serve, launch, openPage, OUT, chromiumPss } from './harness.mjs';

const [file, cli] = process.argv.slice(2);
if (!file || !cli) throw new Error('usage: node tests/e2e/bench_convert.mjs FILE CLI_BINARY');
const RUNS = Number(process.env.RUNS ?? 3);
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };
const runs = (xs) => xs.map((x) => x.toFixed(0)).join(', ');
const rate = (bytes, ms) => `${(bytes / 1e9 / (ms / 1000)).toFixed(2)} GB/s`;

fs.mkdirSync(OUT, { recursive: true });
const server = await serve();
const browser = await launch();
const page_ = { ms: [], offered: [], above: 0, bytes: 0 };
for (let i = 0; i < RUNS; i++) {
  const { context, page } = await openPage(browser, server.url);
  await page.setInputFiles('[data-testid=file-input]', file);
  await page.waitForSelector('[data-testid=file-view][data-state=done]', { timeout: 60_000 });
  await new Promise((ok) => setTimeout(ok, 500));
  const idle = chromiumPss();
  let peak = idle;
  const sampler = setInterval(() => { peak = Math.max(peak, chromiumPss()); }, 200);
  const t0 = performance.now();
  const [dl] = await Promise.all([page.waitForEvent('download'), page.click('[data-testid=convert]')]);
  const saved = await dl.path();
  page_.ms.push(performance.now() - t0);
  clearInterval(sampler);
  page_.above = Math.max(page_.above, peak - idle);
  page_.offered.push(Number(await page.getAttribute('[data-testid=convert-done]', 'data-ms')));
  page_.bytes = fs.statSync(saved).size;
  fs.rmSync(saved);
  await context.close();
}
await browser.close();
await server.close();
console.log(`file: ${file} (${fs.statSync(file).size} bytes)`);
console.log(`page (Chromium): click → download complete median ${median(page_.ms).toFixed(0)} ms (${rate(page_.bytes, median(page_.ms))}; runs ${runs(page_.ms)}) ` +
  `for ${page_.bytes} bytes; Blob offered after ${median(page_.offered).toFixed(0)} ms; browser memory peak ${(page_.above / 2 ** 20).toFixed(1)} MiB above idle`);

const out = path.join(OUT, 'bench-convert.safetensors');
const timed = (cmd, args) => {
  const ms = [];
  for (let i = 0; i < RUNS; i++) {
    fs.rmSync(out, { force: true });
    const t0 = performance.now();
    const r = spawnSync(cmd, args, { encoding: 'utf8' });
    ms.push(performance.now() - t0);
    if (r.status !== 0) throw new Error(`${cmd} exited ${r.status}: ${r.stderr}`);
  }
  const size = fs.statSync(out).size;
  fs.rmSync(out, { force: true });
  return { ms, size };
};
const native = timed(cli, ['convert', file, '-o', out]);
console.log(`native CLI (tensorpeek convert): median ${median(native.ms).toFixed(0)} ms (${rate(native.size, median(native.ms))}; runs ${runs(native.ms)})`);
const cp = timed('cp', ['--sparse=never', file, out]);
console.log(`disk alone (cp --sparse=never of the input, no fsync): median ${median(cp.ms).toFixed(0)} ms (${rate(cp.size, median(cp.ms))}; runs ${runs(cp.ms)})`);
