// Starts the app. The page's Content-Security-Policy allows no inline script, so instead of
// the inline loader Trunk writes by default, index.html loads this file: Trunk.toml's
// `pattern_script` names the app's (hashed) script and wasm in data-* attributes.
const tag = document.querySelector('script[data-tensorpeek-js]');
const base = document.baseURI;
const { default: init } = await import(new URL(tag.dataset.tensorpeekJs, base).href);
await init({ module_or_path: new URL(tag.dataset.tensorpeekWasm, base).href });
