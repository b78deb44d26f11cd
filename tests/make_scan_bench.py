#!/usr/bin/env python3
"""Writes the 10,000 model files `scripts/bench_scan.sh` scans:

    python3 tests/make_scan_bench.py OUT_DIR [FOLDERS]

FOLDERS (default 1,000) folders `m0000/`…, each a small checkpoint of ten model files —
five large ones whose data is a hole (sparse: truncate), five small ones written whole:

- model-00001-of-00002.safetensors, model-00002-of-00002.safetensors: one F32 tensor of
  16,384 × 16,384 each (1 GiB of data, a hole), with model.safetensors.index.json and
  config.json beside them (the folder merges as a checkpoint);
- model.gguf: one Q4_K tensor of 262,144 × 4,096 (604 MB, a hole), its header written by
  PyPI `gguf`'s GGUFWriter;
- big.npy: a 16,384 × 16,384 float32 array (1 GiB, a hole), its header written by numpy's
  `write_array_header_1_0`;
- model-q8.gguf: the same tensor as Q8_0 (1.1 GB, a hole);
- lora/adapter.safetensors (safetensors.numpy.save_file), tiny.gguf (GGUFWriter), arr.npy
  (numpy.save), arrays.npz (numpy.savez), state.pkl (pickle of a dict of numpy arrays):
  small and whole.

Safetensors headers of the sparse files are json + struct, as the format defines them.
Every value of a hole reads as zero; nothing but headers is read by a scan. Files that
exist are left alone (cheap to re-run).
"""

import json
import os
import pickle
import struct
import sys

import numpy as np
from gguf import GGMLQuantizationType as QT
from gguf import GGUFWriter
from safetensors.numpy import save_file


def sparse_safetensors(path, name, dtype, shape, size_of):
    nbytes = size_of
    for d in shape:
        nbytes *= d
    header = json.dumps({"__metadata__": {"format": "pt"}, name: {"dtype": dtype, "shape": shape, "data_offsets": [0, nbytes]}}).encode()
    header += b" " * (-len(header) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(header)))
        f.write(header)
        f.truncate(8 + len(header) + nbytes)
    return nbytes


def sparse_gguf(path, rows, cols, qt=QT.Q4_K):
    block, size = {QT.Q4_K: (256, 144), QT.Q8_0: (32, 34)}[qt]
    nbytes = rows * (cols // block) * size
    w = GGUFWriter(path, "llama")
    w.add_name("scan bench")
    w.add_tensor_info("token_embd.weight", (rows, cols // block * size), np.dtype(np.uint8), nbytes, raw_dtype=qt)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    fout = w.fout[0]
    data_start = (fout.tell() + w.data_alignment - 1) // w.data_alignment * w.data_alignment
    fout.truncate(data_start + nbytes)
    w.close()


def sparse_npy(path, shape):
    with open(path, "wb") as f:
        np.lib.format.write_array_header_1_0(f, {"descr": "<f4", "fortran_order": False, "shape": shape})
        f.truncate(f.tell() + 4 * shape[0] * shape[1])


def small_gguf(path, rng):
    w = GGUFWriter(path, "llama")
    w.add_name("tiny")
    w.add_tensor("output_norm.weight", rng.standard_normal(64).astype(np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def folder(d, rng):
    os.makedirs(d, exist_ok=True)
    p = lambda n: os.path.join(d, n)
    if os.path.exists(p("state.pkl")):
        return
    n = 16_384
    weight_map = {}
    for k, name in ((1, "model.embed_tokens.weight"), (2, "lm_head.weight")):
        shard = f"model-0000{k}-of-00002.safetensors"
        sparse_safetensors(p(shard), name, "F32", [n, n], 4)
        weight_map[name] = shard
    with open(p("model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": 2 * 4 * n * n}, "weight_map": weight_map}, f)
    with open(p("config.json"), "w") as f:
        json.dump({"model_type": "scan-bench", "architectures": ["ScanBench"]}, f)
    sparse_gguf(p("model.gguf"), 262_144, 4_096)
    sparse_npy(p("big.npy"), (n, n))
    sparse_gguf(p("model-q8.gguf"), 262_144, 4_096, QT.Q8_0)
    os.makedirs(p("lora"), exist_ok=True)
    save_file({"lora_a": rng.standard_normal((8, 64)).astype(np.float32), "lora_b": rng.standard_normal((64, 8)).astype(np.float32)}, p("lora/adapter.safetensors"))
    small_gguf(p("tiny.gguf"), rng)
    np.save(p("arr.npy"), rng.standard_normal((4, 4)).astype(np.float32))
    np.savez(p("arrays.npz"), a=np.arange(10), b=np.ones((2, 3)))
    with open(p("state.pkl"), "wb") as f:
        pickle.dump({"w": rng.standard_normal((3, 3)), "b": np.zeros(3)}, f, protocol=4)


def main():
    out = sys.argv[1]
    folders = int(sys.argv[2]) if len(sys.argv) > 2 else 1_000
    rng = np.random.default_rng(7)
    for i in range(folders):
        folder(os.path.join(out, f"m{i:04d}"), rng)
    print(f"{folders} folders, {folders * 10} model files in {out}")


if __name__ == "__main__":
    main()
