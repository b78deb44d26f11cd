// The parse worker's loader (web/worker/pool.rs `PARSE_URL`): the worker's
// wasm-bindgen glue (no-modules), then its wasm. In place of Trunk's `data-loader-shim`,
// whose shim passes the wasm's path as a bare string — wasm-bindgen's glue then warns
// "using deprecated parameters for the initialization function" on every load.
// Spawned as `…#module` (www/loader.js), the page compiles the wasm and sends the
// `WebAssembly.Module` in its first message (`{ parseModule }`, null if that failed);
// otherwise the wasm is asked for before the glue is fetched, so that the two download
// together (on a cold load one round trip and the glue's transfer less before the worker is
// ready). wasm-bindgen's init takes the pending module or response.
const own = () => fetch('./tensorpeek-worker_bg.wasm');
const wasm = self.location.hash === '#module'
  ? new Promise((ok) => {
    const take = (e) => {
      if (!e.data || !('parseModule' in e.data)) return;
      self.removeEventListener('message', take);
      ok(e.data.parseModule ?? own());
    };
    self.addEventListener('message', take);
  })
  : own();
importScripts('./tensorpeek-worker.js');
wasm_bindgen({ module_or_path: wasm });
