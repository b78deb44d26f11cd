// Times @huggingface/gguf parsing a local GGUF's header (metadata + tensor infos), for the
// comparison in docs/gguf.md. Setup and run (npm registry only):
//   cd tests/bench && npm install --no-save @huggingface/gguf && node gguf_hf.mjs FILE [RUNS]
// Prints the first run and the best of the rest, in ms, plus what it found.
import { gguf } from "@huggingface/gguf";

const path = process.argv[2];
const runs = Number(process.argv[3] ?? 5);
if (!path) {
  console.error("usage: node gguf_hf.mjs FILE [RUNS]");
  process.exit(2);
}
const times = [];
let result;
for (let i = 0; i < runs; i++) {
  const t0 = performance.now();
  result = await gguf(path, { allowLocalFile: true });
  times.push(performance.now() - t0);
}
const md = result.metadata;
console.log(JSON.stringify({
  first_ms: +times[0].toFixed(1),
  best_ms: +Math.min(...times.slice(1).concat(times[0])).toFixed(1),
  tensors: result.tensorInfos.length,
  tensor_data_offset: Number(result.tensorDataOffset),
  tokens: md["tokenizer.ggml.tokens"]?.length,
  merges: md["tokenizer.ggml.merges"]?.length,
}));
