// Bench: for the sparse ~6 GB Llama-3.2-3B-shaped file, bytes read and milliseconds from
// handing the file to the page until the tensor table is on screen (Chromium), and for
// the native CLI (`tensorpeek inspect FILE --json`). Median of RUNS runs.
// Usage: node tests/e2e/bench.mjs FILE CLI_BINARY
import { spawnSync } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { serve, launch, openPage } from './harness.mjs';

const [file, cli] = process.argv.slice(2);
const RUNS = Number(process.env.RUNS ?? 7);
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };

const server = await serve();
const browser = await launch();
const wall = [];
const inPage = [];
let bytes = null;
for (let i = 0; i < RUNS; i++) {
  const { context, page } = await openPage(browser, server.url);
  const t0 = performance.now();
  await page.setInputFiles('[data-testid=file-input]', file);
  await page.waitForSelector('[data-testid=tensor-table] [data-testid=tensor-row]');
  wall.push(performance.now() - t0);
  bytes = await page.evaluate(() => window.__bytesRead());
  // The page's own drop → rendered time (performance.now() in the page).
  const readLine = await page.innerText('[data-testid=bytes-read]');
  const m = readLine.match(/· (\d+) ms/);
  if (m) inPage.push(Number(m[1]));
  await context.close();
}
await browser.close();
await server.close();

const cliMs = [];
let cliBytes = null;
for (let i = 0; i < RUNS; i++) {
  const t0 = performance.now();
  const r = spawnSync(cli, ['inspect', file, '--json'], { encoding: 'utf8' });
  cliMs.push(performance.now() - t0);
  if (r.status !== 0) throw new Error(`CLI exited ${r.status}: ${r.stderr}`);
  cliBytes = JSON.parse(r.stdout).files[0].bytes_read;
}
const f = (x) => x.toFixed(1);
console.log(`file: ${file}`);
console.log(`browser (Chromium, ${RUNS} runs): bytes read ${bytes}; setInputFiles → table visible median ${f(median(wall))} ms (min ${f(Math.min(...wall))}, max ${f(Math.max(...wall))}); in-page drop → rendered median ${median(inPage)} ms`);
console.log(`native CLI (${RUNS} runs): bytes read ${cliBytes}; inspect --json median ${f(median(cliMs))} ms (min ${f(Math.min(...cliMs))}, max ${f(Math.max(...cliMs))})`);
