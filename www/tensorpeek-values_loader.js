// The values worker's loader (web/worker/pool.rs `VALUES_URL`, and the nested hashing
// worker's): its wasm-bindgen glue (no-modules), then its wasm — as
// tensorpeek-worker_loader.js does for the parse worker.
// The wasm is asked for before the glue is fetched, so that the two download together (on a
// cold load one round trip and the glue's transfer less before the worker is ready);
// wasm-bindgen's init takes the pending response.
const wasm = fetch('./tensorpeek-values_bg.wasm');
importScripts('./tensorpeek-values.js');
wasm_bindgen({ module_or_path: wasm });
