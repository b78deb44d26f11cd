// <tensorpeek-view src="https://…/model.safetensors" tensor="…" tab="tensors|metadata|stats">:
// the embed layout — verdict, totals, the tensor table with a filter, the metadata, and a
// tensor's stats when `tensor` is given — in a custom element with its own shadow DOM. It
// reads the file through the library (`inspect`, `stats`). Everything that comes from the
// file is set as text (textContent, attribute values), never parsed as HTML.
import { inspect, stats } from './browser.js';

/** Rows rendered at once (the filter narrows the rest). */
export const MAX_ROWS = 500;

const STYLE = `
:host { display: block; font: 14px/1.45 system-ui, sans-serif; color: CanvasText; background: Canvas;
  border: 1px solid #8884; border-radius: 8px; padding: .75rem 1rem; }
.verdict { font-weight: 600; padding: .25rem .5rem; border-radius: 4px; display: inline-block; }
.ok { background: #1a7f3722; color: #1a7f37; } .bad { background: #cf222e22; color: #cf222e; }
.name { font-weight: 600; margin-left: .5rem; word-break: break-all; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: .1rem 1rem; margin: .5rem 0; }
dt { opacity: .7; } dd { margin: 0; font-variant-numeric: tabular-nums; word-break: break-word; }
nav { display: flex; gap: .25rem; margin: .5rem 0; }
nav button { font: inherit; border: 1px solid #8886; background: none; color: inherit; border-radius: 4px; padding: .1rem .6rem; cursor: pointer; }
nav button[aria-selected="true"] { background: #8883; }
input { font: inherit; width: 100%; box-sizing: border-box; margin: .25rem 0; padding: .2rem .4rem; }
.scroll { max-height: 22rem; overflow: auto; }
table { border-collapse: collapse; width: 100%; font-size: 13px; }
th, td { text-align: left; padding: .1rem .5rem .1rem 0; border-bottom: 1px solid #8882; white-space: nowrap; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.findings li { margin: .1rem 0; } .dim { opacity: .7; }
`;

const n = (x) => (typeof x === 'number' ? x.toLocaleString('en-US') : x == null ? '—' : String(x));
const bytes = (x) => {
  if (typeof x !== 'number') return '—';
  const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = x;
  let i = 0;
  while (v >= 1024 && i < u.length - 1) { v /= 1024; i += 1; }
  return i === 0 ? `${x} B` : `${v.toFixed(v < 10 ? 2 : 1)} ${u[i]}`;
};

/** An element with text (never HTML) and attributes. */
function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === 'text') e.textContent = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v);
  }
  for (const c of children) if (c) e.append(c);
  return e;
}

function dl(rows) {
  const d = el('dl');
  for (const [k, v] of rows) d.append(el('dt', { text: k }), el('dd', { text: v }));
  return d;
}

const metaText = (v) => (typeof v === 'string' ? v : JSON.stringify(v));

export class TensorpeekView extends HTMLElement {
  static observedAttributes = ['src', 'tensor', 'tab'];

  constructor() {
    super();
    this.root = this.attachShadow({ mode: 'open' });
    this.report = null;
    this.tensorReport = null;
    this.filter = '';
    this.loading = 0;
  }

  connectedCallback() { this.load(); }

  attributeChangedCallback(name, was, now) {
    if (!this.isConnected || was === now) return;
    if (name === 'src') this.load();
    else if (name === 'tensor') this.loadTensor();
    else this.render();
  }

  async load() {
    const src = this.getAttribute('src');
    const job = ++this.loading;
    this.report = null;
    this.tensorReport = null;
    this.error = null;
    this.render();
    if (!src) return;
    try {
      const r = await inspect(src);
      if (job !== this.loading) return;
      this.report = r;
    } catch (e) {
      if (job !== this.loading) return;
      this.error = String(e?.message ?? e);
    }
    this.render();
    this.dispatchEvent(new CustomEvent('tensorpeek-load', { detail: this.report }));
    await this.loadTensor();
  }

  async loadTensor() {
    const name = this.getAttribute('tensor');
    const src = this.getAttribute('src');
    this.tensorReport = null;
    if (!name || !src || !this.report) { this.render(); return; }
    const job = this.loading;
    try {
      const r = await stats(src, name);
      if (job !== this.loading) return;
      this.tensorReport = r;
    } catch (e) {
      this.tensorReport = { error: String(e?.message ?? e) };
    }
    this.render();
  }

  get tab() {
    const t = this.getAttribute('tab');
    if (t === 'metadata' || t === 'tensors' || (t === 'stats' && this.getAttribute('tensor'))) return t;
    return this.getAttribute('tensor') ? 'stats' : 'tensors';
  }

  render() {
    const r = this.root;
    r.replaceChildren(el('style', { text: STYLE }));
    if (this.error) {
      r.append(el('p', { class: 'verdict bad', 'data-testid': 'error', text: this.error }));
      return;
    }
    if (!this.report) {
      r.append(el('p', { class: 'dim', 'data-testid': 'loading', text: this.getAttribute('src') ? 'Reading the header…' : 'No src given.' }));
      return;
    }
    const f = this.report.files[0];
    const model = this.report.model;
    const view = model ?? f;
    const errors = view.errors ?? [];
    const warnings = view.warnings ?? [];
    const ok = model ? model.ok !== false && f.ok : f.ok;
    r.append(el('div', {},
      el('span', { class: `verdict ${ok ? 'ok' : 'bad'}`, 'data-testid': 'verdict', text: ok ? (warnings.length ? `Sound, ${warnings.length} warning(s)` : 'Sound') : `${errors.length} error(s)` }),
      el('span', { class: 'name', 'data-testid': 'file-name', text: f.name })));
    const t = view.totals;
    r.append(dl([
      ['format', f.format],
      ['tensors', n(t.tensors)],
      ['parameters', n(t.params)],
      ['tensor data', `${bytes(t.bytes)} (${n(t.bytes)} bytes)`],
      ['file size', `${bytes(f.size)} (${n(f.size)} bytes)`],
      ['dtypes', Object.entries(t.by_dtype ?? {}).map(([d, x]) => `${d} × ${x.tensors}`).join(', ')],
    ]));
    r.lastChild.setAttribute('data-testid', 'totals');
    if (errors.length + warnings.length) {
      const ul = el('ul', { class: 'findings', 'data-testid': 'findings' });
      for (const x of [...errors, ...warnings]) ul.append(el('li', { text: `${x.code}: ${x.message}` }));
      r.append(ul);
    }
    const tabs = [['tensors', `Tensors (${n(t.tensors)})`], ['metadata', 'Metadata']];
    if (this.getAttribute('tensor')) tabs.push(['stats', 'Stats']);
    const nav = el('nav', { role: 'tablist' });
    for (const [id, label] of tabs) {
      nav.append(el('button', { role: 'tab', 'aria-selected': String(this.tab === id), 'data-tab': id, text: label, onclick: () => this.setAttribute('tab', id) }));
    }
    r.append(nav);
    if (this.tab === 'metadata') r.append(this.metadata(f));
    else if (this.tab === 'stats') r.append(this.statsPanel());
    else r.append(this.table(view.tensors));
  }

  table(tensors) {
    const box = el('div', { 'data-testid': 'tensors' });
    const body = el('tbody');
    const count = el('p', { class: 'dim', 'data-testid': 'shown' });
    const fill = () => {
      const q = this.filter.toLowerCase();
      const hits = tensors.filter((x) => x.name.toLowerCase().includes(q));
      body.replaceChildren(...hits.slice(0, MAX_ROWS).map((x) => el('tr', {},
        el('td', { class: 'tname', text: x.name }),
        el('td', { text: x.dtype }),
        el('td', { text: `[${x.shape.join(', ')}]` }),
        el('td', { class: 'num', text: n(x.params) }),
        el('td', { class: 'num', text: n(x.bytes) }))));
      count.textContent = `${n(Math.min(hits.length, MAX_ROWS))} of ${n(hits.length)} shown` + (q ? ` (filter "${this.filter}")` : '');
    };
    const filter = el('input', { type: 'search', placeholder: 'Filter tensors by name', 'aria-label': 'Filter tensors', 'data-testid': 'filter' });
    filter.value = this.filter;
    filter.addEventListener('input', () => { this.filter = filter.value; fill(); });
    fill();
    box.append(filter, count, el('div', { class: 'scroll' },
      el('table', {}, el('thead', {}, el('tr', {}, ...['name', 'dtype', 'shape', 'params', 'bytes'].map((h) => el('th', { text: h })))), body)));
    return box;
  }

  metadata(f) {
    const entries = Object.entries(f.metadata ?? {});
    if (!entries.length) return el('p', { class: 'dim', 'data-testid': 'metadata', text: 'No metadata.' });
    const d = dl(entries.map(([k, v]) => [k, metaText(v)]));
    d.setAttribute('data-testid', 'metadata');
    return d;
  }

  statsPanel() {
    const name = this.getAttribute('tensor');
    const box = el('div', { 'data-testid': 'stats' }, el('p', { class: 'name', text: name }));
    const tr = this.tensorReport;
    if (!tr) { box.append(el('p', { class: 'dim', text: 'Reading the values…' })); return box; }
    if (tr.error) { box.append(el('p', { class: 'verdict bad', text: tr.error })); return box; }
    const tensor = tr.files[0].tensors.find((x) => x.name === name);
    const s = tensor?.stats;
    if (!s) {
      const why = [...tr.files[0].errors, ...tr.files[0].warnings].map((x) => x.message).join('; ');
      box.append(el('p', { class: 'dim', text: why || 'The values were not read.' }));
      return box;
    }
    box.append(dl([
      ['count', n(s.count)], ['min', n(s.min)], ['max', n(s.max)], ['mean', n(s.mean)], ['std', n(s.std)],
      ['NaN / +Inf / −Inf', `${n(s.nan)} / ${n(s.pos_inf)} / ${n(s.neg_inf)}`], ['zeros', n(s.zeros)],
      ['sha256', s.sha256], ...(s.note ? [['note', s.note]] : []),
    ]));
    return box;
  }
}

if (!customElements.get('tensorpeek-view')) customElements.define('tensorpeek-view', TensorpeekView);
