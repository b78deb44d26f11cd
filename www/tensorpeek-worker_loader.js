// The parse worker's loader (web/worker/pool.rs `PARSE_URL`): the worker's
// wasm-bindgen glue (no-modules), then its wasm. In place of Trunk's `data-loader-shim`,
// whose shim passes the wasm's path as a bare string — wasm-bindgen's glue then warns
// "using deprecated parameters for the initialization function" on every load.
importScripts('./tensorpeek-worker.js');
wasm_bindgen({ module_or_path: './tensorpeek-worker_bg.wasm' });
