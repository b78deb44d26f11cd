#!/usr/bin/env python3
"""Writes a sparse GGUF shaped like Qwen3-30B-A3B (qwen3moe: 48 blocks, embedding 2048,
32 query / 4 KV heads of 128, 128 experts of 768 with 8 used, context 40960), BF16 matrices,
F32 norms: only the header is written (PyPI `gguf`'s GGUFWriter), the data section is a hole
(~61 GB apparent, a few MB on disk). The tokenizer is make_sparse_gguf.py's synthetic Llama 3
vocabulary (128,256 tokens, `llama-bpe`), so llama.cpp loads the file; the vocabulary size is
therefore Llama 3's, not Qwen's 151,936.

    python3 tests/make_sparse_gguf_moe.py OUT_PATH [--type bf16|q8_0|q4_0] [--layers N]
        [--experts N] [--unmerged]

--unmerged stores every expert as tensors of its own (`blk.N.ffn_gate.E.weight`, as GGUFs
from before llama.cpp merged experts did): with --layers 130 --experts 256 a 100,000-tensor
model, the planner's benchmark (llama.cpp itself no longer loads that layout).
"""
import argparse
import importlib.util
from pathlib import Path

import numpy as np
from gguf import GGUFWriter, GGMLQuantizationType as QT, GGML_QUANT_SIZES

HERE = Path(__file__).resolve().parent
spec = importlib.util.spec_from_file_location("dense", HERE / "make_sparse_gguf.py")
dense = importlib.util.module_from_spec(spec)
spec.loader.exec_module(dense)

D, HEADS, KV_HEADS, HEAD_DIM, FF_EXP, USED = 2048, 32, 4, 128, 768, 8


def main():
    ap = argparse.ArgumentParser(usage=__doc__)
    ap.add_argument("out")
    ap.add_argument("--type", choices=["bf16", "q8_0", "q4_0"], default="bf16")
    ap.add_argument("--layers", type=int, default=48)
    ap.add_argument("--experts", type=int, default=128)
    ap.add_argument("--unmerged", action="store_true")
    a = ap.parse_args()
    qt = {"bf16": QT.BF16, "q8_0": QT.Q8_0, "q4_0": QT.Q4_0}[a.type]
    w = GGUFWriter(a.out, "qwen3moe")
    w.add_name("Qwen3 30B A3B (sparse)")
    w.add_block_count(a.layers)
    w.add_context_length(40_960)
    w.add_embedding_length(D)
    w.add_feed_forward_length(6144)
    w.add_head_count(HEADS)
    w.add_head_count_kv(KV_HEADS)
    w.add_key_length(HEAD_DIM)
    w.add_value_length(HEAD_DIM)
    w.add_rope_freq_base(1_000_000.0)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_expert_count(a.experts)
    w.add_expert_used_count(USED)
    w.add_expert_feed_forward_length(FF_EXP)
    w.add_file_type({"bf16": 32, "q8_0": 7, "q4_0": 2}[a.type])
    w.add_vocab_size(dense.N_VOCAB)
    w.add_quantization_version(2)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("llama-bpe")
    toks = dense.tokens()
    w.add_token_list(toks)
    w.add_token_types([3 if i >= 128_000 else 1 for i in range(dense.N_VOCAB)])
    w.add_token_merges(dense.merges(toks))
    w.add_bos_token_id(128_000)
    w.add_eos_token_id(128_009)

    def t(name, shape, f32=False):
        # shape is numpy order (outermost first); the row (last dim) is the block axis.
        n = int(np.prod(shape))
        if f32:
            w.add_tensor_info(name, shape, np.dtype(np.float32), n * 4)
        elif qt == QT.BF16:
            w.add_tensor_info(name, shape, np.dtype(np.uint16), n * 2, raw_dtype=QT.BF16)
        else:
            # gguf-py takes a quantized tensor's shape in bytes (its last dim: bytes per row).
            blck, size = GGML_QUANT_SIZES[qt]
            byte_shape = (*shape[:-1], shape[-1] // blck * size)
            w.add_tensor_info(name, byte_shape, np.dtype(np.uint8), n // blck * size, raw_dtype=qt)

    t("token_embd.weight", (dense.N_VOCAB, D))
    for i in range(a.layers):
        p = f"blk.{i}."
        t(p + "attn_norm.weight", (D,), f32=True)
        t(p + "attn_q.weight", (HEADS * HEAD_DIM, D))
        t(p + "attn_k.weight", (KV_HEADS * HEAD_DIM, D))
        t(p + "attn_v.weight", (KV_HEADS * HEAD_DIM, D))
        t(p + "attn_output.weight", (D, HEADS * HEAD_DIM))
        t(p + "attn_q_norm.weight", (HEAD_DIM,), f32=True)
        t(p + "attn_k_norm.weight", (HEAD_DIM,), f32=True)
        t(p + "ffn_norm.weight", (D,), f32=True)
        t(p + "ffn_gate_inp.weight", (a.experts, D), f32=True)
        if a.unmerged:
            for e in range(a.experts):
                t(p + f"ffn_gate.{e}.weight", (FF_EXP, D))
                t(p + f"ffn_up.{e}.weight", (FF_EXP, D))
                t(p + f"ffn_down.{e}.weight", (D, FF_EXP))
        else:
            t(p + "ffn_gate_exps.weight", (a.experts, FF_EXP, D))
            t(p + "ffn_up_exps.weight", (a.experts, FF_EXP, D))
            t(p + "ffn_down_exps.weight", (a.experts, D, FF_EXP))
    t("output_norm.weight", (D,), f32=True)
    t("output.weight", (dense.N_VOCAB, D))

    _, end, data_start, data = dense.write_sparse(w)
    w.close()
    n = sum(len(x) for x in w.tensors)
    print(f"{a.out}: {n} tensors, header {end} bytes, data starts at {data_start}, file {data_start + data} bytes")


if __name__ == "__main__":
    main()
