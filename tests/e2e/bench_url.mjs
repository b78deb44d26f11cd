// Bench: the sparse Llama-3.2-3B-shaped safetensors and GGUF opened by URL from a local
// server (Range + CORS, another port) against the same files picked from disk — requests,
// bytes the server sent, and milliseconds from the action (Open URL pressed / file picked)
// to the rendered inventory; medians of RUNS. Prints the figures of README's performance
// section. Run after `trunk build --release --offline` and the sparse files of
// scripts/test.sh:  node tests/e2e/bench_url.mjs [RUNS]
import path from 'node:path';
import fs from 'node:fs';
import { serve, launch, openPage, OUT } from './harness.mjs';
import { fileServer } from './fileserver.mjs';

const RUNS = Number(process.argv[2] ?? 5);
const inputs = [
  ['safetensors', path.join(OUT, 'llama32-3b.sparse.safetensors')],
  ['gguf', path.join(OUT, 'llama32-3b.sparse.gguf')],
];
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const server = await serve();
const browser = await launch();
const files = await fileServer({ files: Object.fromEntries(inputs.map(([, f]) => [`/${path.basename(f)}`, f])) });
try {
  for (const [kind, file] of inputs) {
    if (!fs.existsSync(file)) throw new Error(`${file} is missing: run scripts/test.sh (the sparse files) first`);
    const url = { ms: [], requests: 0, bytes: 0 };
    const local = { ms: [] };
    for (let i = 0; i < RUNS; i++) {
      for (const how of ['url', 'local']) {
        const { context, page } = await openPage(browser, server.url, { countWorkerReads: false });
        const from = files.log.length;
        const t0 = Date.now();
        if (how === 'url') {
          await page.fill('[data-testid=url-input]', `${files.url}${path.basename(file)}`);
          await page.click('[data-testid=url-open]');
        } else {
          await page.setInputFiles('[data-testid=file-input]', file);
        }
        await page.waitForSelector('[data-testid=file-view][data-state=done] [data-testid=tensor-row]', { timeout: 60_000 }).catch(async (e) => {
          await page.screenshot({ path: path.join(OUT, 'bench-url-failed.png') });
          throw e;
        });
        const ms = Date.now() - t0;
        if (how === 'url') {
          url.ms.push(ms);
          url.requests = files.gets(from).length;
          url.bytes = files.sent(from);
        } else {
          local.ms.push(ms);
        }
        await context.close();
      }
    }
    console.log(JSON.stringify({
      kind,
      by_url: { requests: url.requests, bytes_sent: url.bytes, median_ms: median(url.ms), ms: url.ms },
      local_file: { median_ms: median(local.ms), ms: local.ms },
    }));
  }
} finally {
  await browser.close();
  await server.close();
  await files.close();
}
