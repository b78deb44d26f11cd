// The parse worker's loader (web/worker/pool.rs `PARSE_URL`): the worker's
// wasm-bindgen glue (no-modules), then its wasm. In place of Trunk's `data-loader-shim`,
// whose shim passes the wasm's path as a bare string — wasm-bindgen's glue then warns
// "using deprecated parameters for the initialization function" on every load.
// The wasm is asked for before the glue is fetched, so that the two download together (on a
// cold load one round trip and the glue's transfer less before the worker is ready);
// wasm-bindgen's init takes the pending response.
const wasm = fetch('./tensorpeek-worker_bg.wasm');
importScripts('./tensorpeek-worker.js');
wasm_bindgen({ module_or_path: wasm });
