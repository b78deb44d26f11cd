// The values worker's loader (web/worker/pool.rs `VALUES_URL`, and the nested hashing
// worker's): its wasm-bindgen glue (no-modules), then its wasm — as
// tensorpeek-worker_loader.js does for the parse worker.
importScripts('./tensorpeek-values.js');
wasm_bindgen({ module_or_path: './tensorpeek-values_bg.wasm' });
