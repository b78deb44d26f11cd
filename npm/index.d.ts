// tensorpeek's JavaScript library: hand-written declarations of the JSON report
// (docs/report.md, the contract shared with `tensorpeek … --json`). Fields the contract marks
// as additive, and objects it leaves open (GGUF metadata, config.json), are typed loosely.
// Byte counts are JSON integers (u64); past 2^53 JSON.parse rounds them, as any JSON reader.

/** A File/Blob (browser, Node), a URL (`https://…`, or relative to the page in a browser),
 * a filesystem path or a folder (Node), or a reader of your own. */
export type Input = Blob | string | URL | Reader;
/** One file, or several read together (a checkpoint's shards + config.json, a split GGUF). */
export type Inputs = Input | Input[];

export interface Reader {
  name: string;
  /** The file's length in bytes. */
  size: number;
  /** Exactly `length` bytes at `offset`. */
  read(offset: number, length: number): Promise<Uint8Array>;
  /** Inspect it even if its name and first bytes say it is no model file (default true). */
  explain?: boolean;
}

export type FileFormat =
  | 'safetensors' | 'gguf' | 'safetensors-index' | 'config' | 'pytorch-zip' | 'pytorch-legacy'
  | 'pickle' | 'npy' | 'npz' | 'unknown';

export interface Finding {
  /** A finding's code (README.md's table); never renamed. */
  code: string;
  message: string;
  offset: number | null;
  tensor: string | null;
  field?: string | null;
  /** The file a finding of a checkpoint or split model concerns. */
  file?: string | null;
  /** How many more findings of this code were left out (0 on all but the last). */
  more?: number;
}

export interface Histogram { lo: number; hi: number; counts: number[] }
export interface Preview { rows: number; cols: number; row_len: number; values: (number | null)[] }

export interface Stats {
  count: number;
  min: number | null;
  max: number | null;
  mean: number | null;
  std: number | null;
  nan: number;
  pos_inf: number;
  neg_inf: number;
  zeros: number;
  subnormals: number;
  /** Of the tensor's stored bytes ("" when not hashed). */
  sha256: string;
  histogram?: Histogram | null;
  preview?: Preview | null;
  note?: string | null;
}

export interface Tensor {
  name: string;
  /** safetensors dtype name, or the ggml type name for GGUF (e.g. "Q4_K"). */
  dtype: string;
  /** Row-major, outermost first, for every format. */
  shape: number[];
  /** GGUF: the dims as stored, ne[0] first. */
  ggml_dims?: number[] | null;
  params: number;
  start: number | null;
  end: number | null;
  abs_start: number | null;
  bytes: number | null;
  header_offset?: number | null;
  stats: Stats | null;
  /** Pickle-based files. */
  stride?: number[];
  storage?: string;
  storage_offset?: number;
  contiguous?: boolean;
  shares_storage_with?: string[];
}

export interface DtypeTotals { tensors: number; params: number; bytes: number }
export interface Totals extends DtypeTotals { by_dtype: Record<string, DtypeTotals> }

export interface FileReport {
  name: string;
  size: number;
  format: FileFormat;
  ok: boolean;
  errors: Finding[];
  warnings: Finding[];
  bytes_read: number;
  /** safetensors: N, the header's length. */
  header_len?: number | null;
  gguf_version?: number | null;
  alignment?: number | null;
  kv_count?: number | null;
  data_start: number | null;
  /** safetensors `__metadata__`; GGUF's KV map (long arrays summarised). */
  metadata: Record<string, unknown> | null;
  tensors: Tensor[];
  totals: Totals;
  /** Pickle-based files: the safety verdict and the imports. */
  safety?: { verdict: 'safe' | 'suspicious' | 'dangerous' | 'error'; globals: unknown[]; more_globals?: unknown };
  [more: string]: unknown;
}

export interface ModelTensor extends Tensor { file: string }

/** A checkpoint (shards, index, config.json, tokenizer files) or a split GGUF. */
export interface ModelSection {
  format?: 'safetensors-checkpoint' | 'pytorch-checkpoint';
  kind?: 'gguf-split';
  ok?: boolean;
  errors: Finding[];
  warnings: Finding[];
  tensors: ModelTensor[];
  totals: Totals;
  architecture?: unknown;
  [more: string]: unknown;
}

export type Verdict =
  | 'exact' | 'close' | 'mismatch' | 'missing_in_target' | 'missing_in_source'
  | 'generated_ok' | 'generated_mismatch' | 'not_compared';

export interface AuditSide { format: string; files: string[]; tensors: number; params: number; bytes: number }

export interface AuditPair {
  source: string | null;
  target: string | null;
  source_dtype: string | null;
  target_dtype: string | null;
  transforms: string[];
  verdict: Verdict;
  count: number | null;
  max_abs: number | null;
  rmse: number | null;
  max_rel: number | null;
  requant_exact: boolean | null;
  first_mismatch: { index: number; source: number; target: number } | null;
  reason: string | null;
  [more: string]: unknown;
}

export interface Audit {
  ok: boolean;
  complete: boolean;
  architecture: string | null;
  mode: 'conversion' | 'identity';
  summary_line: string;
  source: AuditSide;
  target: AuditSide;
  pairs: AuditPair[];
  summary: Record<Verdict, number>;
  reconciliation: { tensor_bytes: unknown; file_bytes: unknown };
  notes: string[];
}

export interface MemoryBuffer { device: string; buft: string; kind: 'model' | 'context' | 'compute'; bytes: number }
export interface MemoryDevice { device: string; model: number; context: number; compute: number; total: number; memory: number | null; left: number | null }

export interface Memory {
  architecture: { arch: string; n_ctx_train: number; layers: unknown[]; memory: string; [more: string]: unknown };
  params: { n_ctx: number; n_ctx_seq: number; n_seq: number; n_batch: number; n_ubatch: number; flash_attn: boolean; [more: string]: unknown };
  buffers: MemoryBuffer[];
  devices: MemoryDevice[];
  kv: { cells: number; type_k: string; type_v: string; k_bytes: number; v_bytes: number; [more: string]: unknown };
  output_bytes: number;
  layer_devices: string[];
  refused: string | null;
  warnings: string[];
  fitted_args: { n_ctx: number; n_gpu_layers: number; args: string; [more: string]: unknown } | null;
  largest_context: number | null;
}

export interface Report {
  tool: 'tensorpeek';
  version: string;
  files: FileReport[];
  model: ModelSection | null;
  audit?: Audit;
  memory?: Memory;
}

export interface AuditOptions {
  /** Stop at the first mismatching or missing tensor (`--first-mismatch`). */
  firstMismatch?: boolean;
}

/** `tensorpeek fit`'s flags, llama.cpp's long names in camelCase; defaults are llama.cpp's. */
export interface FitOptions {
  ctxSize?: number;
  parallel?: number;
  batchSize?: number;
  ubatchSize?: number;
  cacheTypeK?: string;
  cacheTypeV?: string;
  flashAttn?: 'on' | 'off' | 'auto';
  swaFull?: boolean;
  kvUnified?: boolean;
  nGpuLayers?: number;
  tensorSplit?: number[];
  overrideTensor?: string[];
  cpuMoe?: boolean;
  nCpuMoe?: number;
  noMmap?: boolean;
  loadMode?: 'auto' | 'none' | 'mmap' | 'mlock' | 'mmap+mlock';
  noKvOffload?: boolean;
  /** Each GPU's free memory: "24GiB". */
  gpu?: string[];
  backend?: 'cuda' | 'rpc';
  /** Host memory: "64GiB". */
  ram?: string;
  /** Also the arguments that fit (`fitted_args`). */
  fit?: boolean;
  fitTarget?: number;
  /** MiB to keep free per GPU, in the order of `gpu` (`-fitt 8000,2000`); overrides `fitTarget`. */
  fitTargets?: number[];
  /** `-sm`: only 'layer' (llama.cpp's default) is modelled. */
  splitMode?: 'layer';
  fitCtx?: number;
}

/** Every file's header (`tensorpeek inspect --json`). */
export function inspect(input: Inputs): Promise<Report>;
/** One tensor's values: its `stats` filled in (`tensorpeek stats --json`). */
export function stats(input: Input | [Input], tensor: string): Promise<Report>;
/** Did the values survive a conversion? (`tensorpeek audit --json`). */
export function audit(source: Inputs, target: Inputs, options?: AuditOptions): Promise<Report & { audit: Audit }>;
/** The memory llama.cpp would allocate (`tensorpeek fit --json`). */
export function fit(input: Inputs, options?: FitOptions): Promise<Report & { memory: Memory }>;
