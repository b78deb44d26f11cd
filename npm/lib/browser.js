// tensorpeek in a browser: inputs are Files/Blobs or URLs (absolute, or relative to the
// page), read in a module worker (lib/worker.js) — only the byte ranges the read loops ask
// for. Where a worker cannot start (a page whose CSP forbids it, a package served from
// another origin), the same code runs in this thread.
import { list, one } from './core.js';

let worker = null;
let inThread = null;
let next = 1;
const pending = new Map();

function startWorker() {
  try {
    const w = new Worker(new URL('./worker.js', import.meta.url), { type: 'module' });
    w.onmessage = ({ data }) => {
      const p = pending.get(data.id);
      if (!p) return;
      pending.delete(data.id);
      if ('error' in data) p.reject(new Error(data.error));
      else p.resolve(data.result);
    };
    w.onerror = (e) => {
      // The worker failed to load: answer what waits with the reason, run in the thread from now on.
      e.preventDefault?.();
      worker = false;
      const waiting = [...pending.values()];
      pending.clear();
      for (const p of waiting) p.retry();
    };
    return w;
  } catch {
    return false;
  }
}

async function runInThread(op, args) {
  inThread ??= (async () => {
    const [{ default: init, ...wasm }, core] = await Promise.all([import('../wasm/tensorpeek_js.js'), import('./core.js')]);
    await init({ module_or_path: new URL('../wasm/tensorpeek_js_bg.wasm', import.meta.url) });
    return { wasm, core };
  })();
  const { wasm, core } = await inThread;
  return core.run(wasm, op, args.map((a) => (Array.isArray(a) ? a.map(core.describe) : a)));
}

const base = () => (typeof document !== 'undefined' ? document.baseURI : self.location.href);

/** URLs (strings or URL objects) as `{ url }`, absolute; Blobs and readers as they are. */
function resolve(input) {
  if (typeof input === 'string' || input instanceof URL) return { url: new URL(String(input), base()).href };
  return input;
}

function call(op, args) {
  const prepared = args.map((a) => (Array.isArray(a) ? a.map(resolve) : a));
  // Readers given as functions cannot be sent to a worker.
  const local = prepared.some((a) => Array.isArray(a) && a.some((d) => typeof d?.read === 'function'));
  if (worker === null && !local) worker = startWorker();
  if (!worker || local) return runInThread(op, prepared);
  return new Promise((resolveP, reject) => {
    const id = next++;
    const retry = () => runInThread(op, prepared).then(resolveP, reject);
    pending.set(id, { resolve: resolveP, reject, retry });
    worker.postMessage({ id, op, args: prepared });
  });
}

export const inspect = (input) => call('inspect', [list(input)]);
export const stats = (input, tensor) => call('stats', [[one(input)], tensor]);
export const audit = (source, target, options = {}) => call('audit', [list(source), list(target), options]);
export const fit = (input, options = {}) => call('fit', [list(input), options]);
