// Bench: BF16 → stats throughput of the page's values worker in Chromium. Median of RUNS
// runs of each (wasm alone, without reads, is tests/wasm_bench.rs):
// 2. the browser's bare read rate: a plain JS worker reading the same 788 MB range of FILE
//    the way the values worker does (a BYOB reader over Blob.slice().stream(), two 8 MiB
//    buffers, the next read started before the last one is looked at), touching nothing;
// 3. end to end: the page's values panel on the 788 MB embedding of the sparse
//    Llama-3.2-3B-shaped FILE, with and without SHA-256 (the worker's own timing, first read
//    to stats) and its WebAssembly memory size.
// Usage: node tests/e2e/bench_values.mjs FILE
import fs from 'node:fs';
import { serve, launch, openPage, addFileInput, chromiumPss } from './harness.mjs';

const [file] = process.argv.slice(2);
const RUNS = Number(process.env.RUNS ?? 5);
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

const rate = (bytes, ms) => `${(bytes / ms / 1e6).toFixed(2)} GB/s`;
const runs = (ms) => ms.map((x) => x.toFixed(0)).join(', ');

// 2. The browser's bare read rate over the same range.
{
  // The tensor's byte range, from the file's safetensors header.
  const fd = fs.openSync(file, 'r');
  const head = Buffer.alloc(8);
  fs.readSync(fd, head, 0, 8, 0);
  const n = Number(head.readBigUInt64LE(0));
  const json = Buffer.alloc(n);
  fs.readSync(fd, json, 0, n, 8);
  fs.closeSync(fd);
  const [a, b] = JSON.parse(json.toString('utf8'))[TENSOR].data_offsets;
  const span = { start: 8 + n + a, len: b - a };
  // A plain JS worker, served same-origin (the page's CSP allows workers from 'self' only).
  await context.route('**/__bench_read.js', (route) => route.fulfill({ contentType: 'text/javascript', body: `
    onmessage = async (e) => { try {
      const { file, start, len } = e.data;
      const CHUNK = 8 << 20;
      const t0 = performance.now();
      const reader = file.slice(start, start + len).stream().getReader({ mode: 'byob' });
      const free = [new ArrayBuffer(CHUNK), new ArrayBuffer(CHUNK)];
      let got = 0;
      let next = reader.read(new Uint8Array(free.pop()));
      for (;;) {
        const { done, value } = await next;
        if (done) break;
        got += value.byteLength;
        next = reader.read(new Uint8Array(free.pop()));
        free.push(value.buffer);
      }
      postMessage({ ms: performance.now() - t0, bytes: got });
    } catch (err) { postMessage({ error: String(err) }); } };` }));
  await addFileInput(page, 'bench-read-input', file);
  const ms = [];
  let bytes = 0;
  for (let i = 0; i < RUNS; i++) {
    const r = await page.evaluate(({ start, len }) => new Promise((ok, fail) => {
      const w = new Worker('./__bench_read.js');
      w.onerror = (e) => fail(new Error(e.message));
      w.onmessage = (e) => { w.terminate(); e.data.error ? fail(new Error(e.data.error)) : ok(e.data); };
      const file = document.getElementById('bench-read-input').files[0];
      w.postMessage({ file, start, len });
    }), span);
    ms.push(r.ms);
    bytes = r.bytes;
  }
  const m = median(ms);
  console.log(`browser Blob reads alone, ${bytes} bytes (BYOB stream reader, 8 MiB buffers, no decoding): ` +
    `median ${m.toFixed(0)} ms (${rate(bytes, m)}; runs ${runs(ms)})`);
}

// 3. End to end, from the file, with the browser's memory (all its processes) sampled every
// 200 ms: the peak above what it held just before the click.
for (const sha of [false, true]) {
  const ms = [];
  let bytes = 0;
  let memory = 0;
  let hashing = '';
  let above = 0;
  for (let i = 0; i < RUNS; i++) {
    const box = page.locator('[data-testid=values-sha]');
    if ((await box.isChecked()) !== sha) await box.click();
    await new Promise((ok) => setTimeout(ok, 500));
    const idle = chromiumPss();
    let peak = idle;
    const sampler = setInterval(() => { peak = Math.max(peak, chromiumPss()); }, 200);
    await page.click('[data-testid=read-values]');
    await page.waitForSelector('[data-testid=read-values]:not([disabled])', { timeout: 600_000 });
    clearInterval(sampler);
    above = Math.max(above, peak - idle);
    const t = page.locator('[data-testid=values-timing]');
    ms.push(Number(await t.getAttribute('data-ms')));
    bytes = Number(await t.getAttribute('data-bytes-read'));
    memory = Math.max(memory, Number(await t.getAttribute('data-wasm-memory')));
    hashing = await t.getAttribute('data-hashing');
  }
  const m = median(ms);
  console.log(`values worker from the file, BF16 ${bytes} bytes, SHA-256 ${sha ? 'on ' : 'off'}: median ${m.toFixed(0)} ms ` +
    `(${rate(bytes, m)}; runs ${runs(ms)}), wasm memory ${memory} bytes` + (sha ? `, hashed in the ${hashing}` : '') +
    `; browser memory peak ${(above / 2 ** 20).toFixed(1)} MiB above idle`);
}
await context.close();
await browser.close();
await server.close();
