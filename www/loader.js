// Starts the app — once the first view has painted. The first view (index.html's #shell:
// the drop zone, the file and folder buttons, the URL field) is plain HTML and CSS; the
// parse worker loads right after its first paint and the app's wasm when the page is first
// idle after its load event (requestIdleCallback), so that a file dropped with no sign
// before it finds them ready — or earlier, on the first sign that a file is coming: a drag entering the window,
// the pointer over the drop zone or a button, focus, a key, a touch — or at once when the
// address names files (?url=, ?hf=, #file=) or asks for the embedded layout. With `?lazy`
// in the address (or the browser's Save-Data on) only the first sign starts them. A file
// chosen, dropped or a URL given before the app runs is kept here
// (window.__tensorpeek.pending) and handed to it (web/shell.rs).
//
// The parse worker comes first, the app after it: a file that arrives before the app runs
// is read by the parse worker at once, and its first rows (the worker's `rows` answer) are
// put in the first view here, before the app's wasm is fetched; the app then takes over
// the worker and its answers (`early`, web/worker/pool.rs) and shows the file's whole view
// without reading it again. A parse worker not used by then becomes the app's spare
// (`spare`). The page's Content-Security-Policy allows one inline script, by its hash
// (index.html: it asks for the first stage's wasm), and no other: Trunk.toml's
// `pattern_script` names the app's (hashed) script and wasm in data-* attributes, and
// `pattern_preload` is empty so that nothing else is fetched before then.
const tag = document.querySelector('script[data-tensorpeek-js]');
const base = document.baseURI;
const shell = document.getElementById('shell');
const query = new URLSearchParams(location.search);
const PARSE_URL = new URL('tensorpeek-worker_loader.js', base).href;
const PARSE_WASM = new URL('tensorpeek-worker_bg.wasm', base).href;
// The first stage (src/peek.rs, src/bin/peek.rs): a safetensors or GGUF file's first rows,
// read and parsed here on the main thread while the parse worker's ~290 KB are still coming.
const PEEK_WASM = new URL('tensorpeek-peek_bg.wasm', base).href;
// The name that tells the parse worker's loader its wasm comes from here
// (www/tensorpeek-worker_loader.js `HANDED`).
const HANDED = 'tensorpeek-parse: module from the page';
// Rows of a first inventory in its first frame: what a 900-pixel window shows below the
// first view's header (~26 px a row; a 1,080-pixel screen ~32); the others follow a frame
// later. Its style and layout are most of that frame (below).
const FIRST_EARLY_ROWS = 24;
// How long an early parse may keep the app waiting: past it the app is fetched anyway.
const EARLY_WAIT_MS = 2000;
let loading = null;
let wanted = false;
let loaded;
const ready = new Promise((ok) => { loaded = ok; });
// How the address starts the page (index.html's inline script judged it, and asked for the
// first stage's wasm unless it is one of these): `named` — it names files (?url=, ?hf=,
// #file=), so the app starts at once; `embedded` — ?embed (any value) hides the first view
// until the app shows its own; `quiet` — ?lazy or Save-Data, only a first sign of a file
// starts anything. The app reads the first two here rather than judging the address again
// (web/warm.rs).
const { named, embedded, quiet } = window.__tensorpeekAddress;
const tp = { pending: null, started: null, start, spare: null, early: null, running: false, named, embedded };
window.__tensorpeek = tp;

// The parse worker (its record: the worker, whether it said ready or failed, the early
// job's request, names and answers).
function spawn() {
  if (tp.spare || tp.early || tp.running) return tp.spare;
  performance.mark('tensorpeek: parse worker started');
  // `held`: what its wasm's handoff and the early job's request wait for (early(): the first
  // stage's rows on screen), or null.
  const w = { worker: new Worker(PARSE_URL, { name: HANDED }), handed: false, ready: false, failed: false, job: null, names: null, messages: [], answered: false, held: null };
  // Its wasm is fetched and compiled here while the worker starts and loads its script (on
  // a cold load those came one after the other: ~70 ms at 40 ms RTT), then handed over;
  // failing that, the worker fetches it itself.
  WebAssembly.compileStreaming(fetch(PARSE_WASM)).then((module) => after(w, () => {
    w.worker.postMessage({ module });
    w.handed = true;
    gate();
  }), () => after(w, () => w.worker.postMessage({ module: null })));
  w.worker.onmessage = (e) => {
    const m = e.data;
    if (m?.kind === 'ready') {
      performance.mark('tensorpeek: parse worker ready');
      w.ready = true;
    } else if (w.job) {
      w.messages.push(m);
      if (m?.kind === 'rows') rows({ ...m, by: 'parse worker' });
      // an answer: rows, an inspection, the end, a failure (not the start of a read)
      if (!['reading', 'fetched', 'progress'].includes(m?.kind)) w.answered = true;
    }
    gate();
  };
  w.worker.onerror = () => { w.failed = true; gate(); };
  tp.spare = w;
  return w;
}

// Runs `f` once what the worker `w` is held for is done (at once if nothing holds it).
const after = (w, f) => (w.held ? w.held.then(f) : f());

// Resolves once the frame after now has been painted (the task after its animation
// callbacks).
const painted = () => new Promise((ok) => requestAnimationFrame(() => setTimeout(ok, 0)));

// The first stage's exports (null if it could not be had), fetched and instantiated once.
// Its few imports are wasm-bindgen's own (the crate links it; the first stage calls none of
// them: src/bin/peek.rs), answered by functions that would only say so.
// index.html's inline script asked for it as the HTML was read (window.__tensorpeekStage:
// the response; not for a named, embedded or quiet address), else it is asked for here.
let stage = null;
let stageReady = false;
function firstStage() {
  stage ??= WebAssembly.compileStreaming(window.__tensorpeekStage ?? fetch(PEEK_WASM)).then((module) => {
    const imports = {};
    for (const i of WebAssembly.Module.imports(module)) {
      if (i.kind !== 'function') continue;
      imports[i.module] ??= {};
      imports[i.module][i.name] = () => { throw new Error(`tensorpeek's first stage called ${i.name}`); };
    }
    return WebAssembly.instantiate(module, imports);
  }).then((instance) => {
    // once over a made-up header, so that V8 compiles the parse (lazily, on a function's
    // first call) now rather than when a file comes: 20–40 ms of a cold drop otherwise
    instance.exports.peek_warm();
    stageReady = true;
    performance.mark('tensorpeek: first stage ready');
    return instance.exports;
  }, () => null);
  return stage;
}

// A safetensors or GGUF file's first rows from the first stage, or null (not loaded, not a
// header it takes: src/peek.rs leaves those to the parse worker). The wasm says what it
// needs (`need`: the file's first N bytes, src/peek.rs `Peek`); the bytes past those it
// has are read and written into its memory. A safetensors header takes three rounds
// (nothing, the 8-byte length, the N bytes after it), a GGUF one reads of 1 MiB growing
// fourfold up to 16 MiB (src/peek.rs `GGUF_READ_GROWTH`, `MAX_PEEK_GGUF`: five rounds at
// most, tests/peek.rs); each asks for more than the last, and MAX_PEEK_ROUNDS bounds them
// here too.
const MAX_PEEK_ROUNDS = 8;
async function peekRows(file) {
  const x = await firstStage();
  if (!x) return null;
  x.peek_start();
  let have = 0;
  for (let round = 0; round < MAX_PEEK_ROUNDS; round++) {
    const len = x.peek_run(BigInt(file.size));
    const answer = JSON.parse(new TextDecoder().decode(new Uint8Array(x.memory.buffer, x.peek_answer(), len)));
    if (answer.need === undefined) return answer.rows ? answer : null;
    const more = new Uint8Array(await file.slice(have, answer.need).arrayBuffer());
    if (!more.length) return null;
    // its memory may grow in peek_extend (its old buffer then detached): the view comes after
    const at = x.peek_extend(have + more.length);
    new Uint8Array(x.memory.buffer, at, more.length).set(more);
    have += more.length;
  }
  return null;
}

// Fetches the app once it is wanted and the parse worker has what it needs first: its wasm
// in (or ready, or failed) when idle — not its warm-up, which then runs while the app
// downloads: the app took over ~100–200 ms sooner, before a file given 1 s after the load
// event rather than as it came (README, Performance: the cold drop) —, the first answer of an
// early job (at most EARLY_WAIT_MS).
function gate() {
  if (loading || !wanted) return;
  const w = tp.early ?? tp.spare;
  if (w && !w.failed && !(tp.early ? w.answered : w.ready || w.handed)) return;
  load();
}

// The app's script and wasm — and its views' style sheets in force (index.html: media="print"
// until now, so that the first view's paint did not wait for them; fetched by then).
function load() {
  tp.started = performance.now();
  for (const link of document.querySelectorAll('link[data-tensorpeek-view-style]')) link.media = 'all';
  loading = (async () => {
    const { default: init } = await import(new URL(tag.dataset.tensorpeekJs, base).href);
    await init({ module_or_path: new URL(tag.dataset.tensorpeekWasm, base).href });
  })().then(loaded, loaded);
}

function start() {
  wanted = true;
  firstStage();
  spawn();
  gate();
  return ready;
}

// 1234567 → "1,234,567", as the app prints counts (src/fmt.rs `thousands`). By hand: the
// first toLocaleString of a page loads the browser's locale data — 28–46 ms in a fresh page
// (Chromium 156, 2026-12-07, a build running beside it; the next call ~0.1 ms) — and here it
// came right when the first rows are put in (a cold drop's probe: 41–96 ms for that step).
const thousands = (n) => String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ',');

// The first rows of a file read by the early job, in the first view (text nodes only).
function rows(m) {
  const main = shell?.querySelector('main');
  // shown once: by the first stage or the parse worker, whichever answered first
  if (!main || main.querySelector('[data-testid=early-inventory]')) return;
  main.querySelector('[data-testid=empty]')?.setAttribute('hidden', '');
  const sec = document.createElement('section');
  sec.className = 'card early';
  sec.dataset.testid = 'early-inventory';
  const h = document.createElement('h2');
  h.textContent = m.name;
  const p = document.createElement('p');
  p.className = 'dim';
  const n = thousands(m.tensors);
  p.textContent = m.tensors > m.rows.length ? `${n} tensors (the first ${m.rows.length} here; the whole view is loading)` : `${n} tensors (the whole view is loading)`;
  const table = document.createElement('table');
  const head = table.createTHead().insertRow();
  for (const t of ['#', 'Name', 'Dtype', 'Shape', 'Parameters', 'Bytes']) head.append(Object.assign(document.createElement('th'), { textContent: t, scope: 'col' }));
  const body = table.createTBody();
  const add = (from, to) => m.rows.slice(from, to).forEach((r, k) => {
    const tr = body.insertRow();
    tr.className = 'row';
    tr.dataset.testid = 'tensor-row';
    tr.dataset.name = r[0];
    [String(from + k), ...r].forEach((v, c) => { const td = tr.insertCell(); td.textContent = v; if (c === 0 || c > 3) td.className = 'n'; });
  });
  // The rows a screen shows first, the rest once those are painted: the style and layout of
  // the rows took 17–97 ms of the first frame in Chromium traces of a cold drop (2026-12-07,
  // 40 rows; 100 before), the rows' text shaped cell by cell.
  add(0, FIRST_EARLY_ROWS);
  if (m.rows.length > FIRST_EARLY_ROWS) painted().then(() => add(FIRST_EARLY_ROWS, m.rows.length));
  sec.append(h, p, table);
  main.append(sec);
  tp.firstRows = performance.now();
  tp.firstRowsBy = m.by;
  if (m.by === 'first stage') performance.mark('tensorpeek: first stage rows');
}

// A pick or drop of loose model files (no folder, no JSON, no shards: the app merges
// those into a Model tab itself) is read by the parse worker before the app runs, as the
// app would ask for it (web/hooks.rs: the same names, in order, each `explain`ed).
function early(pending) {
  if (tp.running || tp.early || query.has('faults') || pending.folder || pending.directory || !pending.files?.length) return;
  const names = pending.files.map((f) => f.webkitRelativePath || f.name);
  const lower = names.map((n) => n.toLowerCase());
  const shards = (ext) => lower.filter((n) => n.endsWith(ext) && n.includes('-of-')).length;
  if (pending.files.some((f) => f.webkitRelativePath) || lower.some((n) => n.endsWith('.json')) || shards('.safetensors') > 1 || shards('.bin') > 1) return;
  const w = spawn();
  if (!w || w.failed) return;
  tp.spare = null;
  tp.early = w;
  w.names = names;
  w.job = { open: { inputs: pending.files.map((file, i) => ({ name: names[i], file, explain: true })), classifyByContent: false, rows: true } };
  // how long this job may hold the app (and the first stage the worker)
  const waited = new Promise((ok) => setTimeout(ok, EARLY_WAIT_MS));
  // One safetensors or GGUF file: the first stage shows its first rows if it has them
  // before the parse worker does. If it is ready, the parse worker is held until they are
  // on screen (or the first stage passes, at most EARLY_WAIT_MS): its wasm's handoff, start
  // and read of the same file ran beside the first stage's on a cold load, on two cores
  // already busy with the downloads (README, Performance: the cold drop). If it is still
  // coming, the two race — as they do for a GGUF file when the parse worker is ready
  // already: it has warmed up with a 40,000-token tokenizer (src/samples.rs), and holding
  // it would hold the app's whole view behind the first stage's rows.
  const one = pending.files.length === 1 ? lower[0] : '';
  if (one.endsWith('.safetensors') || one.endsWith('.gguf')) {
    const shown = peekRows(pending.files[0]).then((m) => {
      if (!m) return null;
      rows({ name: names[0], tensors: m.tensors, rows: m.rows, by: 'first stage' });
      return painted();
    }, () => null);
    if (stageReady && !(one.endsWith('.gguf') && w.ready)) w.held = Promise.race([shown, waited]);
  }
  // Ready or not: the worker's loader keeps it until the program runs, which then answers
  // it before warming up.
  after(w, () => w.worker.postMessage(w.job));
  waited.then(() => { w.answered = true; gate(); });
}

if (named || embedded) {
  if (embedded) shell?.classList.add('embed-wait');
  wanted = true;
  spawn();
  load();
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
  if (!quiet) {
    // The first stage at once (its wasm asked for by index.html's inline script as the HTML
    // was read; it comes before the parse worker's, and a file given at the load event
    // finds it ready: README, Performance: the cold drop).
    firstStage();
    // The parse worker as soon as the first view has painted (after the frame this script
    // runs before), not at the load event: a file given at the load event then finds it
    // loading rather than not asked for yet (README, Performance: the cold drop). A worker
    // does not hold the load event back.
    painted().then(spawn);
    const idle = () => (window.requestIdleCallback ?? ((f) => setTimeout(f, 50)))(() => start(), { timeout: 2000 });
    if (document.readyState === 'complete') idle();
    else addEventListener('load', idle, { once: true });
  }
}

// What reaches the first view before the app runs is kept for it — also while a deep link
// (?url=, ?hf=, #file=) is starting it: a file chosen meanwhile is opened beside it.
if (shell) {
  const hand = (pending) => {
    performance.mark('tensorpeek: file given');
    tp.pending = pending;
    shell.classList.add('starting');
    early(pending);
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
