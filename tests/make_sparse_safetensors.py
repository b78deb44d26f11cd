#!/usr/bin/env python3
"""Writes a sparse safetensors file shaped like Llama 3.2 3B (254 BF16 tensors,
3,212,749,824 parameters, tied embeddings so no lm_head): the real header, then the file
is extended to its full size (~6.4 GB) with truncate, so no data block is written.

Usage: python3 tests/make_sparse_safetensors.py OUT
Also writes OUT.expected.json (tensor count, params, bytes, header length, and the offsets
of a few tensors, computed here from the shapes).
"""
import json
import os
import struct
import sys

HIDDEN, KV, INTER, VOCAB, LAYERS = 3072, 1024, 8192, 128256, 28


def tensors():
    yield "model.embed_tokens.weight", [VOCAB, HIDDEN]
    for i in range(LAYERS):
        p = f"model.layers.{i}."
        yield p + "input_layernorm.weight", [HIDDEN]
        yield p + "mlp.down_proj.weight", [HIDDEN, INTER]
        yield p + "mlp.gate_proj.weight", [INTER, HIDDEN]
        yield p + "mlp.up_proj.weight", [INTER, HIDDEN]
        yield p + "post_attention_layernorm.weight", [HIDDEN]
        yield p + "self_attn.k_proj.weight", [KV, HIDDEN]
        yield p + "self_attn.o_proj.weight", [HIDDEN, HIDDEN]
        yield p + "self_attn.q_proj.weight", [HIDDEN, HIDDEN]
        yield p + "self_attn.v_proj.weight", [KV, HIDDEN]
    yield "model.norm.weight", [HIDDEN]


def main(out):
    header = {"__metadata__": {"format": "pt"}}
    offset = 0
    listing = []
    for name, shape in tensors():
        n = 1
        for d in shape:
            n *= d
        size = n * 2  # BF16
        header[name] = {"dtype": "BF16", "shape": shape, "data_offsets": [offset, offset + size]}
        listing.append((name, n, offset, offset + size))
        offset += size
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)  # pad like the safetensors writer (8-byte aligned data)
    n = len(text)
    total = 8 + n + offset
    with open(out, "wb") as f:
        f.write(struct.pack("<Q", n))
        f.write(text)
        f.truncate(total)
    last = listing[-1]
    past4g = next(t for t in listing if 8 + n + t[2] > 4 * 2**30)
    expected = {
        "size": total,
        "header_len": n,
        "data_start": 8 + n,
        "tensors": len(listing),
        "params": sum(t[1] for t in listing),
        "bytes": offset,
        "last": {"name": last[0], "start": last[2], "end": last[3], "abs_start": 8 + n + last[2]},
        "first_past_4gib": {"name": past4g[0], "start": past4g[2], "end": past4g[3], "abs_start": 8 + n + past4g[2]},
    }
    assert expected["tensors"] == 254 and expected["params"] == 3_212_749_824, expected
    with open(out + ".expected.json", "w") as f:
        json.dump(expected, f, indent=2)
    print(f"{out}: {total} bytes, header {n}, {len(listing)} tensors")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: make_sparse_safetensors.py OUT")
    main(sys.argv[1])
