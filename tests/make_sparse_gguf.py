#!/usr/bin/env python3
"""Writes a sparse GGUF shaped like Llama 3.2 3B Instruct (F16), for the bench and the
browser e2e test: only the header (metadata + tensor infos) is written, by PyPI `gguf`'s
GGUFWriter; the data section is a hole made with truncate (~6.4 GB apparent, a few MB on disk).

    python3 tests/make_sparse_gguf.py OUT_PATH [--dtype f16|bf16] [--rope-freqs]

Shape (the published model's): llama arch, 28 blocks, embedding 3072, FFN 8192, 24 heads,
8 KV heads, context 131072, RoPE base 500000 (llama3 scaling factor 32), tied embeddings
(no output.weight), 255 tensors (28 × 9 + token_embd + output_norm + rope_freqs).
Tokenizer: 128,256 tokens (256 byte tokens, 127,744 synthetic BPE-like tokens of realistic
length, 256 special tokens as in Llama 3), token types, 280,147 merges, BOS 128000,
EOS 128009, a chat template. Tensor types: F16 matrices, F32 norms and rope_freqs
(general.file_type = MOSTLY_F16). The strings are synthetic but deterministic, so the
header size is stable (~10 MB of tokenizer metadata).

--dtype bf16 writes the matrices as BF16 (general.file_type = MOSTLY_BF16): the shape of
`convert_hf_to_gguf.py --outtype bf16` on the checkpoint of tests/make_sparse_checkpoint.py
(the same 254 tensors, renamed, plus rope_freqs), the target of the audit benchmark
(scripts/bench_audit.sh). --rope-freqs writes rope_freqs.weight's 64 values — the llama3
factors of that checkpoint's config.json (theta 500000, factor 32, low 1, high 4, original
context 8192), computed in float32 as the converter does — into the otherwise empty data.
"""
import argparse
import math
import random

import numpy as np
from gguf import GGUFWriter, GGMLQuantizationType as QT

N_VOCAB = 128_256
N_MERGES = 280_147
N_BLOCKS = 28
D = 3072
FF = 8192
HEADS = 24
KV_HEADS = 8
HEAD_DIM = D // HEADS

SPECIAL = {128000: "<|begin_of_text|>", 128001: "<|end_of_text|>", 128006: "<|start_header_id|>",
           128007: "<|end_header_id|>", 128008: "<|eom_id|>", 128009: "<|eot_id|>", 128010: "<|python_tag|>"}

CHAT_TEMPLATE = """{{- bos_token }}
{%- if messages[0]['role'] == 'system' %}
    {%- set system_message = messages[0]['content']|trim %}
    {%- set messages = messages[1:] %}
{%- else %}
    {%- set system_message = "" %}
{%- endif %}
{{- "<|start_header_id|>system<|end_header_id|>\\n\\n" }}
{{- system_message }}
{{- "<|eot_id|>" }}
{%- for message in messages %}
    {{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' + message['content'] | trim + '<|eot_id|>' }}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}
{%- endif %}
"""


def tokens():
    rng = random.Random(3)
    letters = "etaoinshrdlucmfwypvbgkjqxz"
    out = [f"<0x{b:02X}>" if b < 32 or b > 126 else chr(b) for b in range(256)]
    seen = set(out)
    while len(out) < 128_000:
        n = min(1 + int(rng.expovariate(1 / 5.5)), 24)
        w = "".join(rng.choice(letters) for _ in range(n))
        if rng.random() < 0.6:
            w = "Ġ" + w
        if w not in seen:
            seen.add(w)
            out.append(w)
    for i in range(128_000, N_VOCAB):
        out.append(SPECIAL.get(i, f"<|reserved_special_token_{i - 128_000}|>"))
    return out


def merges(toks):
    rng = random.Random(4)
    normal = toks[256:128_000]
    return [f"{rng.choice(normal)} {rng.choice(normal)}" for _ in range(N_MERGES)]


def rope_freqs(theta=500_000.0, factor=32.0, low=1.0, high=4.0, original=8192):
    """The converter's llama3 factors (LlamaModel.generate_extra_tensors), in float32."""
    freqs = (1.0 / (np.float32(theta) ** (np.arange(0, HEAD_DIM, 2, dtype=np.float32) / np.float32(HEAD_DIM)))).astype(np.float32)
    out = []
    for f in freqs:
        wavelen = np.float32(2 * math.pi) / f
        if wavelen < original / high:
            out.append(1.0)
        elif wavelen > original / low:
            out.append(factor)
        else:
            smooth = (np.float32(original) / wavelen - np.float32(low)) / np.float32(high - low)
            out.append(np.float32(1) / ((np.float32(1) - smooth) / np.float32(factor) + smooth))
    return np.array(out, dtype=np.float32)


def write_sparse(w):
    """Writes the header, metadata and tensor infos, and makes the data section a hole of the
    tensors' padded size; returns (file, header end, data start, data bytes)."""
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    align = w.data_alignment
    fout = w.fout[0]
    end = fout.tell()
    data_start = (end + align - 1) // align * align
    data = sum(GGUFWriter.ggml_pad(ti.nbytes, align) for ti in w.tensors[0].values())
    fout.truncate(data_start + data)
    return fout, end, data_start, data


def main():
    ap = argparse.ArgumentParser(usage=__doc__)
    ap.add_argument("out")
    ap.add_argument("--dtype", choices=["f16", "bf16"], default="f16")
    ap.add_argument("--rope-freqs", action="store_true")
    args = ap.parse_args()
    out = args.out
    bf16 = args.dtype == "bf16"
    w = GGUFWriter(out, "llama")
    w.add_type("model")
    w.add_name("Llama 3.2 3B Instruct")
    w.add_finetune("Instruct")
    w.add_basename("Llama-3.2")
    w.add_size_label("3B")
    w.add_license("llama3.2")
    w.add_tags(["facebook", "meta", "pytorch", "llama", "llama-3", "text-generation"])
    w.add_languages(["en", "de", "fr", "it", "pt", "hi", "es", "th"])
    w.add_block_count(N_BLOCKS)
    w.add_context_length(131_072)
    w.add_embedding_length(D)
    w.add_feed_forward_length(FF)
    w.add_head_count(HEADS)
    w.add_head_count_kv(KV_HEADS)
    w.add_rope_freq_base(500_000.0)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_key_length(HEAD_DIM)
    w.add_value_length(HEAD_DIM)
    w.add_file_type(32 if bf16 else 1)
    w.add_vocab_size(N_VOCAB)
    w.add_rope_dimension_count(HEAD_DIM)
    w.add_quantization_version(2)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("llama-bpe")
    toks = tokens()
    w.add_token_list(toks)
    w.add_token_types([3 if i >= 128_000 else 1 for i in range(N_VOCAB)])
    w.add_token_merges(merges(toks))
    w.add_bos_token_id(128_000)
    w.add_eos_token_id(128_009)
    w.add_chat_template(CHAT_TEMPLATE)

    def t(name, shape, f32=False):
        n = int(np.prod(shape))
        if f32:
            w.add_tensor_info(name, shape, np.dtype(np.float32), n * 4)
        elif bf16:
            w.add_tensor_info(name, shape, np.dtype(np.uint16), n * 2, raw_dtype=QT.BF16)
        else:
            w.add_tensor_info(name, shape, np.dtype(np.float16), n * 2)

    t("rope_freqs.weight", (HEAD_DIM // 2,), f32=True)
    t("token_embd.weight", (N_VOCAB, D))
    for i in range(N_BLOCKS):
        p = f"blk.{i}."
        t(p + "attn_norm.weight", (D,), f32=True)
        t(p + "ffn_down.weight", (D, FF))
        t(p + "ffn_gate.weight", (FF, D))
        t(p + "ffn_up.weight", (FF, D))
        t(p + "ffn_norm.weight", (D,), f32=True)
        t(p + "attn_k.weight", (KV_HEADS * HEAD_DIM, D))
        t(p + "attn_output.weight", (D, D))
        t(p + "attn_q.weight", (D, D))
        t(p + "attn_v.weight", (KV_HEADS * HEAD_DIM, D))
    t("output_norm.weight", (D,), f32=True)

    fout, end, data_start, data = write_sparse(w)
    if args.rope_freqs:
        # rope_freqs.weight is the first tensor: offset 0 of the data section.
        fout.seek(data_start)
        fout.write(rope_freqs().astype("<f4").tobytes())
    w.close()
    print(f"{out}: header {end} bytes, data starts at {data_start}, file {data_start + data} bytes")


if __name__ == "__main__":
    main()
