// The parse worker's loader (web/worker/pool.rs `PARSE_URL`, www/loader.js): the worker's
// wasm-bindgen glue (no-modules), then its wasm. In place of Trunk's `data-loader-shim`,
// whose shim passes the wasm's path as a bare string — wasm-bindgen's glue then warns
// "using deprecated parameters for the initialization function" on every load.
//
// Two ways to get the wasm:
// - The first view's parse worker (www/loader.js, named HANDED): the page fetched and
//   compiled the wasm itself while this worker and its glue loaded, and posts the module
//   as its first message ({ module }; null if it could not, then it is fetched here). On a
//   cold load that overlaps the worker's own start and script with the wasm's download.
// - Any other (the app's spares): the wasm is asked for before the glue is fetched, so that
//   the two download together; wasm-bindgen's init takes the pending response.
// Requests posted before the program runs (www/loader.js posts a file's job at once) are
// kept in `__tensorpeek_queued`; the program takes them when it starts
// (web/worker/entry.rs `take_queued`) and, if one is waiting, answers it before warming up.
const HANDED = 'tensorpeek-parse: module from the page';
// (as `new URL('…')`, which www/sw.js reads from this text to keep the wasm for offline use)
const WASM = new URL('tensorpeek-worker_bg.wasm', self.location.href).href;
const handed = self.name === HANDED;
const wasm = handed ? null : fetch(WASM);
const queued = [];
self.__tensorpeek_queued = queued;
let started = false;
self.onmessage = (e) => {
  if (handed && !started && e.data && 'module' in e.data) {
    started = true;
    wasm_bindgen({ module_or_path: e.data.module ?? fetch(WASM) });
  } else {
    queued.push(e.data);
  }
};
importScripts('./tensorpeek-worker.js');
if (!handed) wasm_bindgen({ module_or_path: wasm });
