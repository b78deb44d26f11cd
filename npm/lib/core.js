// The four calls over the wasm module (src/js/), given input descriptors — `{ url }` or
// `{ name, size, read(offset, length) → Promise<Uint8Array> }`. Shared by the Node entry
// (node.js) and the browser's module worker (worker.js). The wasm returns the report as the
// CLI's `--json` text; it is parsed here.

/** A reader over a Blob/File: only the asked range is read (`Blob.slice`). */
export function blobInput(blob, name) {
  return {
    name: name ?? blob.name ?? 'blob',
    size: blob.size,
    read: async (offset, length) => new Uint8Array(await blob.slice(offset, offset + length).arrayBuffer()),
  };
}

const isBlob = (x) => typeof Blob !== 'undefined' && x instanceof Blob;

/** A descriptor for an input the calling side already resolved: a Blob, `{ url }`, or a
 * reader object given by the user. */
export function describe(input) {
  if (isBlob(input)) return blobInput(input);
  if (input && typeof input === 'object' && (typeof input.url === 'string' || typeof input.read === 'function')) return input;
  throw new TypeError('tensorpeek: an input is a File/Blob, a URL, a path (Node) or { name, size, read }');
}

/** Runs one operation over the wasm exports `wasm` with descriptors already made (a list
 * per group of inputs; `stats`' list holds one file). */
export async function run(wasm, op, args) {
  switch (op) {
    case 'inspect':
      return JSON.parse(await wasm.inspect(args[0]));
    case 'stats':
      if (args[0].length !== 1) throw new TypeError('tensorpeek: stats reads one file');
      return JSON.parse(await wasm.stats(args[0][0], String(args[1])));
    case 'audit':
      return JSON.parse(await wasm.audit(args[0], args[1], Boolean(args[2]?.firstMismatch)));
    case 'fit':
      return JSON.parse(await wasm.fit(args[0], JSON.stringify(args[1] ?? {})));
    default:
      throw new Error(`tensorpeek: no operation ${op}`);
  }
}

/** Checks the arity of the public calls and turns one input into a list. */
export const list = (input) => (Array.isArray(input) ? input : [input]);
export function one(input) {
  if (Array.isArray(input)) {
    if (input.length !== 1) throw new TypeError('tensorpeek: stats reads one file');
    return input[0];
  }
  return input;
}
