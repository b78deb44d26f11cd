// The browser's module worker: the wasm runs here, off the page's thread. A message
// `{ id, op, args }` (Blobs and Files cloned, URLs as `{ url }`) is answered
// `{ id, result }` or `{ id, error }`.
import init, * as wasm from '../wasm/tensorpeek_js.js';
import { describe, run } from './core.js';

const ready = init({ module_or_path: new URL('../wasm/tensorpeek_js_bg.wasm', import.meta.url) });

self.onmessage = async ({ data: { id, op, args } }) => {
  try {
    await ready;
    const described = args.map((a) => (Array.isArray(a) ? a.map(describe) : a));
    self.postMessage({ id, result: await run(wasm, op, described) });
  } catch (e) {
    self.postMessage({ id, error: String(e?.message ?? e) });
  }
};
