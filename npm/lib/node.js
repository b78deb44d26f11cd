// tensorpeek in Node 20: inputs are paths (read with FileHandle.read at the offsets the read
// loops ask for — never the whole file; a folder is its files, one level, as the CLI reads
// it), URLs (range requests through Node's global fetch, read by the wasm itself), Blobs, or
// readers `{ name, size, read }`. The wasm runs in this thread (its reads are async).
import { open, readdir, stat, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { initSync } from '../wasm/tensorpeek_js.js';
import * as wasm from '../wasm/tensorpeek_js.js';
import { describe, list, one, run } from './core.js';

let ready = null;
function init() {
  ready ??= readFile(fileURLToPath(new URL('../wasm/tensorpeek_js_bg.wasm', import.meta.url))).then((bytes) => {
    initSync({ module: bytes });
  });
  return ready;
}

const isUrl = (s) => /^https?:\/\//i.test(s);

async function fileInput(p, explain, handles) {
  const fh = await open(p, 'r');
  handles.push(fh);
  const { size } = await fh.stat();
  return {
    name: path.basename(p),
    size,
    explain,
    read: async (offset, length) => {
      const buf = new Uint8Array(length);
      let done = 0;
      while (done < length) {
        const { bytesRead } = await fh.read(buf, done, length - done, offset + done);
        if (bytesRead === 0) throw new Error(`${p}: the file ended at ${offset + done} (asked ${length} bytes at ${offset})`);
        done += bytesRead;
      }
      return buf;
    },
  };
}

/** Descriptors for the inputs; `handles` collects the files opened (closed after the call). */
async function prepare(inputs, handles) {
  const out = [];
  for (const input of inputs) {
    if (input instanceof URL && input.protocol === 'file:') {
      out.push(await fileInput(fileURLToPath(input), true, handles));
    } else if (input instanceof URL || (typeof input === 'string' && isUrl(input))) {
      out.push({ url: String(input) });
    } else if (typeof input === 'string') {
      if ((await stat(input)).isDirectory()) {
        const names = (await readdir(input, { withFileTypes: true })).filter((e) => e.isFile()).map((e) => e.name).sort();
        for (const n of names) out.push(await fileInput(path.join(input, n), false, handles));
      } else {
        out.push(await fileInput(input, true, handles));
      }
    } else {
      out.push(describe(input));
    }
  }
  return out;
}

async function call(op, groups, ...rest) {
  await init();
  const handles = [];
  try {
    const args = [];
    for (const g of groups) args.push(await prepare(g, handles));
    return await run(wasm, op, [...args, ...rest]);
  } finally {
    await Promise.all(handles.map((h) => h.close()));
  }
}

export const inspect = (input) => call('inspect', [list(input)]);
export const stats = (input, tensor) => call('stats', [[one(input)]], tensor);
export const audit = (source, target, options = {}) => call('audit', [list(source), list(target)], options);
export const fit = (input, options = {}) => call('fit', [list(input)], options);
