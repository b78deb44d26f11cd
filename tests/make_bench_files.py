#!/usr/bin/env python3
"""Writes the sparse files the page benchmark (tests/e2e/bench_page.mjs) reads, beside the
Llama-3.2-3B-shaped ones of make_sparse_safetensors.py / make_sparse_gguf.py:

    python3 tests/make_bench_files.py OUT_DIR

- moe-100k.sparse.safetensors: 100,352 tensors with DeepSeek-V3's names and shapes (MLA
  attention, 256 routed experts per layer, FP8 weights with their F32 `weight_scale_inv`
  blocks), the list continued past V3's 61 layers until it holds 100,352 tensors
  (DeepSeek-V3 itself has ~91,000 across its 163 shards). A ~11 MB header; the data, a
  hole of ~760 GB apparent size, takes no disk.
- moe-ckpt/: the same 100,352 tensors as a checkpoint of 163 shards
  (model-000kk-of-00163.safetensors, ~616 tensors each, in order), with its
  model.safetensors.index.json and a config.json naming DeepSeek-V3 — what a person drops
  as a folder.
- f32-1gib.sparse.safetensors: one F32 tensor of 65,536 × 4,096 (exactly 1 GiB of data).
- q4k.sparse.gguf: one Q4_K tensor of 131,072 × 4,096 = 536,870,912 values (302 MB), its
  header written by PyPI `gguf`'s GGUFWriter.

Headers are written here (json + struct for safetensors, GGUFWriter for GGUF); the data
sections are holes made with truncate, so every value reads as zero. Files that already
exist with the expected size are left alone (the script is cheap to re-run).

For the values rows, whose speed depends on the values (a block of zeros is counted at
once), the same tensors are also written with their data filled (2.1 GB of disk,
regenerated only when missing; seeded, so always the same bytes):
- bf16-embed.dense.safetensors: the 128,256 × 3,072 BF16 embedding (788 MB), N(0, 0.02);
- f32-1gib.dense.safetensors: 65,536 × 4,096 F32, N(0, 0.02);
- q4k.dense.gguf: the Q4_K tensor above, every block's bytes random but for its two f16
  scales (d and dmin in [1e-3, 1e-2)).
"""

import json
import os
import struct
import sys

import numpy as np
from gguf import GGMLQuantizationType as QT
from gguf import GGUFWriter

MOE_TENSORS = 100_352
HIDDEN, VOCAB, EXPERTS, MOE_INTER, DENSE_INTER, DENSE_LAYERS = 7168, 129_280, 256, 2048, 18_432, 3
Q_LORA, KV_LORA, HEADS, QK_NOPE, QK_ROPE, V_HEAD = 1536, 512, 128, 128, 64, 128
FP8_BLOCK = 128


def fp8(name, shape):
    """An FP8 weight and its per-128×128-block F32 inverse scales, as DeepSeek-V3 ships them."""
    yield name + ".weight", "F8_E4M3", shape
    yield name + ".weight_scale_inv", "F32", [-(-shape[0] // FP8_BLOCK), -(-shape[1] // FP8_BLOCK)]


def deepseek_tensors():
    yield "model.embed_tokens.weight", "BF16", [VOCAB, HIDDEN]
    layer = 0
    while True:
        p = f"model.layers.{layer}."
        yield p + "input_layernorm.weight", "BF16", [HIDDEN]
        yield p + "post_attention_layernorm.weight", "BF16", [HIDDEN]
        yield from fp8(p + "self_attn.q_a_proj", [Q_LORA, HIDDEN])
        yield p + "self_attn.q_a_layernorm.weight", "BF16", [Q_LORA]
        yield from fp8(p + "self_attn.q_b_proj", [HEADS * (QK_NOPE + QK_ROPE), Q_LORA])
        yield from fp8(p + "self_attn.kv_a_proj_with_mqa", [KV_LORA + QK_ROPE, HIDDEN])
        yield p + "self_attn.kv_a_layernorm.weight", "BF16", [KV_LORA]
        yield from fp8(p + "self_attn.kv_b_proj", [HEADS * (QK_NOPE + V_HEAD), KV_LORA])
        yield from fp8(p + "self_attn.o_proj", [HIDDEN, HEADS * V_HEAD])
        if layer < DENSE_LAYERS:
            yield from fp8(p + "mlp.gate_proj", [DENSE_INTER, HIDDEN])
            yield from fp8(p + "mlp.up_proj", [DENSE_INTER, HIDDEN])
            yield from fp8(p + "mlp.down_proj", [HIDDEN, DENSE_INTER])
        else:
            yield p + "mlp.gate.weight", "BF16", [EXPERTS, HIDDEN]
            yield p + "mlp.gate.e_score_correction_bias", "F32", [EXPERTS]
            for e in range(EXPERTS):
                q = f"{p}mlp.experts.{e}."
                yield from fp8(q + "gate_proj", [MOE_INTER, HIDDEN])
                yield from fp8(q + "up_proj", [MOE_INTER, HIDDEN])
                yield from fp8(q + "down_proj", [HIDDEN, MOE_INTER])
            yield from fp8(p + "mlp.shared_experts.gate_proj", [MOE_INTER, HIDDEN])
            yield from fp8(p + "mlp.shared_experts.up_proj", [MOE_INTER, HIDDEN])
            yield from fp8(p + "mlp.shared_experts.down_proj", [HIDDEN, MOE_INTER])
        layer += 1


SIZES = {"BF16": 2, "F32": 4, "F8_E4M3": 1}


def write_safetensors(path, tensors):
    """The header in the given order with contiguous data offsets, then a hole."""
    header, offset = {}, 0
    for name, dtype, shape in tensors:
        n = SIZES[dtype] * int(np.prod(shape, dtype=np.uint64))
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + n]}
        offset += n
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)
    size = 8 + len(raw) + offset
    if os.path.exists(path) and os.path.getsize(path) == size:
        return size, len(header), len(raw)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(raw)))
        f.write(raw)
        f.truncate(size)
    return size, len(header), len(raw)


MOE_SHARDS = 163  # DeepSeek-V3's count


def write_checkpoint(out, tensors, shards):
    """`tensors` in `shards` consecutive safetensors shards, the index and a config.json."""
    os.makedirs(out, exist_ok=True)
    per = -(-len(tensors) // shards)
    weight_map, total = {}, 0
    for k in range(shards):
        part = tensors[k * per:(k + 1) * per]
        name = f"model-{k + 1:05d}-of-{shards:05d}.safetensors"
        size, _, hl = write_safetensors(os.path.join(out, name), part)
        weight_map.update((t[0], name) for t in part)
        total += size - 8 - hl
    with open(os.path.join(out, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f)
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump({"architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3", "hidden_size": HIDDEN,
                   "num_hidden_layers": 61, "n_routed_experts": EXPERTS, "vocab_size": VOCAB}, f)
    return shards


def write_q4k(path):
    rows, cols = 131_072, 4096
    nbytes = rows * cols // 256 * 144
    w = GGUFWriter(path, "llama")
    w.add_type("model")
    w.add_name("Q4_K bench tensor")
    w.add_tensor_info("token_embd.weight", (rows, cols // 256 * 144), np.dtype(np.uint8), nbytes, raw_dtype=QT.Q4_K)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    fout = w.fout[0]
    data_start = (fout.tell() + w.data_alignment - 1) // w.data_alignment * w.data_alignment
    fout.truncate(data_start + nbytes)
    w.close()
    return data_start + nbytes


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    tensors = []
    for t in deepseek_tensors():
        if len(tensors) == MOE_TENSORS:
            break
        tensors.append(t)
    size, n, hl = write_safetensors(os.path.join(out, "moe-100k.sparse.safetensors"), tensors)
    print(f"moe-100k.sparse.safetensors: {n} tensors, header {hl} bytes, file {size} bytes")
    shards = write_checkpoint(os.path.join(out, "moe-ckpt"), tensors, MOE_SHARDS)
    print(f"moe-ckpt/: {len(tensors)} tensors in {shards} shards, an index and a config.json")
    size, n, hl = write_safetensors(os.path.join(out, "f32-1gib.sparse.safetensors"),
                                    [("model.embed_tokens.weight", "F32", [65_536, 4096])])
    print(f"f32-1gib.sparse.safetensors: {n} tensor, file {size} bytes")
    path = os.path.join(out, "q4k.sparse.gguf")
    if not os.path.exists(path):
        size = write_q4k(path)
    print(f"q4k.sparse.gguf: 1 Q4_K tensor, file {os.path.getsize(path)} bytes")
    dense(out)


CHUNK = 1 << 24  # values (or blocks of Q4_K / 16) generated at a time


def fill(path, sparse, make):
    """Copies the sparse file's header and fills its data section with make(rng, n_bytes)."""
    if os.path.exists(path) and os.path.getsize(path) == os.path.getsize(sparse):
        return
    size = os.path.getsize(sparse)
    with open(sparse, "rb") as f:
        head = f.read(8)
        if head[:4] == b"GGUF":
            start = data_start_gguf(sparse)
        else:
            start = 8 + struct.unpack("<Q", head)[0]
        f.seek(0)
        header = f.read(start)
    rng = np.random.default_rng(13)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(header)
        left = size - start
        while left > 0:
            part = make(rng, min(left, CHUNK * 4))
            f.write(part)
            left -= len(part)
    os.replace(tmp, path)


def data_start_gguf(path):
    from gguf import GGUFReader
    return GGUFReader(path).data_offset


def normal_f32(rng, nbytes):
    return (rng.standard_normal(nbytes // 4, dtype=np.float32) * np.float32(0.02)).tobytes()


def normal_bf16(rng, nbytes):
    f = rng.standard_normal(nbytes // 2, dtype=np.float32) * np.float32(0.02)
    return (f.view(np.uint32) >> 16).astype(np.uint16).tobytes()


def random_q4k(rng, nbytes):
    blocks = rng.integers(0, 256, size=(nbytes // 144, 144), dtype=np.uint8)
    scales = rng.uniform(1e-3, 1e-2, size=(len(blocks), 2)).astype(np.float16)
    blocks[:, 0:4] = scales.view(np.uint8).reshape(len(blocks), 4)
    return blocks.tobytes()


def dense(out):
    embed = os.path.join(out, "bf16-embed.sparse.safetensors")
    write_safetensors(embed, [("model.embed_tokens.weight", "BF16", [128_256, 3072])])
    for name, sparse, make in [
        ("bf16-embed.dense.safetensors", embed, normal_bf16),
        ("f32-1gib.dense.safetensors", os.path.join(out, "f32-1gib.sparse.safetensors"), normal_f32),
        ("q4k.dense.gguf", os.path.join(out, "q4k.sparse.gguf"), random_q4k),
    ]:
        path = os.path.join(out, name)
        fill(path, sparse, make)
        print(f"{name}: file {os.path.getsize(path)} bytes, data filled")


if __name__ == "__main__":
    main()
