// Bench: for the sparse ~6 GB Llama-3.2-3B-shaped file, bytes read and milliseconds from
// handing the file to the page until the tensor table is on screen (Chromium), and for
// the native CLI (`tensorpeek inspect FILE --json`). Median of RUNS runs.
// Usage: node tests/e2e/bench.mjs FILE CLI_BINARY
import { spawnSync } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { serve, launch, openPage, bytesRead } from './harness.mjs';

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
  // In the page: the file input's change event (the moment the page has the file) to
  // the first tensor row in the DOM.
  await page.evaluate(() => {
    window.__bench = {};
    document.addEventListener('change', () => { window.__bench.t0 = performance.now(); }, true);
    new MutationObserver((_, obs) => {
      if (document.querySelector('[data-testid=tensor-row]')) {
        window.__bench.t1 = performance.now();
        obs.disconnect();
      }
    }).observe(document.body, { childList: true, subtree: true });
  });
  const t0 = performance.now();
  await page.setInputFiles('[data-testid=file-input]', file);
  await page.waitForSelector('[data-testid=tensor-table] [data-testid=tensor-row]');
  wall.push(performance.now() - t0);
  bytes = await bytesRead(page);
  const b = await page.evaluate(() => window.__bench);
  inPage.push(b.t1 - b.t0);
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
console.log(`browser (Chromium, ${RUNS} runs): bytes read ${bytes}; setInputFiles → table visible median ${f(median(wall))} ms (min ${f(Math.min(...wall))}, max ${f(Math.max(...wall))}); in page, change event → first row in the DOM median ${f(median(inPage))} ms (min ${f(Math.min(...inPage))}, max ${f(Math.max(...inPage))})`);
console.log(`native CLI (${RUNS} runs): bytes read ${cliBytes}; inspect --json median ${f(median(cliMs))} ms (min ${f(Math.min(...cliMs))}, max ${f(Math.max(...cliMs))})`);
