// A small TypeScript consumer of the installed package: `tsc --noEmit` checks it against the
// package's declarations (scripts/test-npm.sh).
import { inspect, stats, audit, fit, type Report, type Tensor, type FitOptions } from 'tensorpeek';
import { TensorpeekView } from 'tensorpeek/view';

async function main(file: File): Promise<void> {
  const r: Report = await inspect([file, 'https://example.com/config.json']);
  const names: string[] = r.files.flatMap((f) => f.tensors.map((t: Tensor) => t.name));
  const first = r.files[0];
  const ok: boolean = first.ok && first.errors.every((e) => typeof e.code === 'string');
  const s = await stats(file, names[0] ?? '');
  const mean: number | null | undefined = s.files[0].tensors[0].stats?.mean;
  const options: FitOptions = { ctxSize: 8192, gpu: ['24GiB'], fit: true, flashAttn: 'on' };
  const m = await fit('model.gguf', options);
  const left: number | null = m.memory.devices[0].left;
  const a = await audit(['model.safetensors', 'config.json'], 'model.gguf', { firstMismatch: true });
  const line: string = a.audit.summary_line;
  const view: TensorpeekView = document.createElement('tensorpeek-view');
  view.setAttribute('src', 'https://example.com/model.safetensors');
  console.log(ok, mean, left, line, view.report?.files.length);
}

void main;

// The declarations are checked, not `any`: a call without the tensor's name does not compile.
// @ts-expect-error stats takes the tensor's name
void stats(new Blob([]));
