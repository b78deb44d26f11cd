// Starts the app — once the first view has painted. The first view (index.html's #shell:
// the drop zone, the file and folder buttons, the URL field) is plain HTML and CSS; the
// app's wasm and the parse worker load when the page is first idle after its load event
// (requestIdleCallback), so that a file dropped with no sign before it finds them ready —
// or earlier, on the first sign that a file is coming: a drag entering the window, the
// pointer over the drop zone or a button, focus, a key, a touch — or at once when the
// address names files (?url=, ?hf=, #file=) or asks for the embedded layout. With `?lazy`
// in the address (or the browser's Save-Data on) only the first sign starts it. A file chosen,
// dropped or a URL given before the app runs is kept here (window.__tensorpeek.pending)
// and handed to it (web/shell.rs). The page's Content-Security-Policy allows no inline
// script: Trunk.toml's `pattern_script` names the app's (hashed) script and wasm in data-*
// attributes, and `pattern_preload` is empty so that nothing is fetched before then.
const tag = document.querySelector('script[data-tensorpeek-js]');
const base = document.baseURI;
const shell = document.getElementById('shell');
let loading = null;
const tp = { pending: null, started: null, start };
window.__tensorpeek = tp;

function start() {
  if (!loading) {
    tp.started = performance.now();
    loading = (async () => {
      const { default: init } = await import(new URL(tag.dataset.tensorpeekJs, base).href);
      await init({ module_or_path: new URL(tag.dataset.tensorpeekWasm, base).href });
    })();
  }
  return loading;
}

const query = new URLSearchParams(location.search);
if (query.has('url') || query.has('hf') || query.has('embed') || /(^#|&)file=/.test(location.hash)) {
  if (query.has('embed')) shell?.classList.add('embed-wait');
  start();
} else if (shell) {
  const events = ['dragenter', 'pointerover', 'focusin', 'keydown', 'touchstart'];
  const intent = (e) => {
    if (e.type === 'pointerover' && !e.target.closest?.('button, input, label, .empty, .pick')) return;
    for (const t of events) removeEventListener(t, intent, true);
    start();
  };
  for (const t of events) addEventListener(t, intent, true);
  // Idle time after the first paint: the load event, then the browser's first idle moment
  // (at most 2 s later).
  if (!query.has('lazy') && !navigator.connection?.saveData) {
    const idle = () => (window.requestIdleCallback ?? ((f) => setTimeout(f, 50)))(() => start(), { timeout: 2000 });
    if (document.readyState === 'complete') idle();
    else addEventListener('load', idle, { once: true });
  }
  const hand = (pending) => {
    tp.pending = pending;
    shell.classList.add('starting');
    start();
    // The app may be running already (it took over while a file dialog opened from here was
    // open): it takes the hand-off on this event (web/app.rs).
    dispatchEvent(new Event('tensorpeek-pending'));
  };
  for (const input of shell.querySelectorAll('input[type=file]')) {
    input.addEventListener('change', () => hand({ files: [...input.files], folder: input.hasAttribute('webkitdirectory') }));
  }
  for (const t of ['dragenter', 'dragover']) shell.addEventListener(t, (e) => { e.preventDefault(); shell.classList.add('dragging'); });
  shell.addEventListener('dragleave', (e) => { if (!e.relatedTarget) shell.classList.remove('dragging'); });
  shell.addEventListener('drop', (e) => {
    e.preventDefault();
    shell.classList.remove('dragging');
    // The entries must be taken now: the DataTransfer is emptied after this handler.
    const items = [...e.dataTransfer.items].filter((i) => i.kind === 'file');
    const entries = items.map((i) => i.webkitGetAsEntry?.()).filter(Boolean);
    hand({ entries, files: [...e.dataTransfer.files], directory: entries.some((x) => x.isDirectory) });
  });
  shell.querySelector('form')?.addEventListener('submit', (e) => {
    e.preventDefault();
    hand({ url: shell.querySelector('#url-input').value });
  });
}
