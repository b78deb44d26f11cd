#!/usr/bin/env python3
"""Writes a sparse, Llama-3.2-3B-shaped sharded checkpoint for end-to-end and benchmark use:

    python3 tests/make_sparse_checkpoint.py OUT_DIR [--qwen3moe]

Two shards (model-0000k-of-00002.safetensors) with real headers and holes for the tensor
data (the files report 6.4 GB but take a few KB on disk), model.safetensors.index.json and
config.json. The headers are written here with json + struct, not by the `safetensors`
package: the package would have to write 6.4 GB of data. The layout follows the format
(u64 N, JSON header padded with spaces to a multiple of 8, contiguous data in header
order), so the `safetensors` reader accepts the files; that is checked at the end with
`safe_open` when the package is installed. Numbers to expect: 254 tensors,
3,212,749,824 parameters, 6,425,499,648 tensor bytes, embedding share 12.26 %.
"""
import json
import os
import struct
import sys

CONFIG = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama",
    "hidden_size": 3072, "intermediate_size": 8192, "num_hidden_layers": 28,
    "num_attention_heads": 24, "num_key_value_heads": 8, "head_dim": 128,
    "vocab_size": 128256, "tie_word_embeddings": True, "rope_theta": 500000.0,
    "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                     "original_max_position_embeddings": 8192, "rope_type": "llama3"},
    "torch_dtype": "bfloat16", "max_position_embeddings": 131072,
    "bos_token_id": 128000, "eos_token_id": [128001, 128008, 128009],
}
# --qwen3moe: shaped like Qwen3-30B-A3B and like tests/make_sparse_gguf_moe.py's GGUF (48
# layers, hidden 2048, 32 query / 4 KV heads of 128, 128 experts of 768, one by one as
# transformers 4.57 saves them), with that file's Llama 3 vocabulary (128,256), untied: the
# audit's sparse MoE pair (18,867 tensors, 61 GB).
CONFIG_MOE = {
    "architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe",
    "hidden_size": 2048, "intermediate_size": 6144, "moe_intermediate_size": 768,
    "num_hidden_layers": 48, "num_attention_heads": 32, "num_key_value_heads": 4, "head_dim": 128,
    "num_experts": 128, "num_experts_per_tok": 8, "decoder_sparse_step": 1, "mlp_only_layers": [],
    "vocab_size": 128256, "tie_word_embeddings": False, "rope_theta": 1000000.0,
    "torch_dtype": "bfloat16", "max_position_embeddings": 40960,
}
MAX_SHARD = 5_000_000_000  # transformers' default max_shard_size "5GB"


def tensors():
    h, inter, v = 3072, 8192, 128256
    out = [("model.embed_tokens.weight", [v, h])]
    for i in range(28):
        p = f"model.layers.{i}."
        out += [(p + "input_layernorm.weight", [h]),
                (p + "self_attn.q_proj.weight", [3072, h]),
                (p + "self_attn.k_proj.weight", [1024, h]),
                (p + "self_attn.v_proj.weight", [1024, h]),
                (p + "self_attn.o_proj.weight", [h, 3072]),
                (p + "post_attention_layernorm.weight", [h]),
                (p + "mlp.gate_proj.weight", [inter, h]),
                (p + "mlp.up_proj.weight", [inter, h]),
                (p + "mlp.down_proj.weight", [h, inter])]
    out.append(("model.norm.weight", [h]))
    return out


def tensors_moe():
    h, v, e, ff = 2048, 128256, 128, 768
    out = [("model.embed_tokens.weight", [v, h]), ("lm_head.weight", [v, h])]
    for i in range(48):
        p = f"model.layers.{i}."
        out += [(p + "input_layernorm.weight", [h]),
                (p + "self_attn.q_proj.weight", [4096, h]),
                (p + "self_attn.k_proj.weight", [512, h]),
                (p + "self_attn.v_proj.weight", [512, h]),
                (p + "self_attn.o_proj.weight", [h, 4096]),
                (p + "self_attn.q_norm.weight", [128]),
                (p + "self_attn.k_norm.weight", [128]),
                (p + "post_attention_layernorm.weight", [h]),
                (p + "mlp.gate.weight", [e, h])]
        for x in range(e):
            out += [(p + f"mlp.experts.{x}.gate_proj.weight", [ff, h]),
                    (p + f"mlp.experts.{x}.up_proj.weight", [ff, h]),
                    (p + f"mlp.experts.{x}.down_proj.weight", [h, ff])]
    out.append(("model.norm.weight", [h]))
    return out


def nbytes(shape):
    n = 2  # BF16
    for d in shape:
        n *= d
    return n


def write_shard(path, items):
    header = {"__metadata__": {"format": "pt"}}
    off = 0
    for name, shape in sorted(items):
        b = nbytes(shape)
        header[name] = {"dtype": "BF16", "shape": shape, "data_offsets": [off, off + b]}
        off += b
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        f.truncate(8 + len(text) + off)
    return off


def main():
    moe = sys.argv[2:] == ["--qwen3moe"]
    if len(sys.argv) != 2 and not moe:
        sys.exit(__doc__)
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    shards, cur, size = [], [], 0
    for name, shape in (tensors_moe() if moe else tensors()):
        if cur and size + nbytes(shape) > MAX_SHARD:
            shards.append(cur)
            cur, size = [], 0
        cur.append((name, shape))
        size += nbytes(shape)
    shards.append(cur)
    names = [f"model-{k + 1:05d}-of-{len(shards):05d}.safetensors" for k in range(len(shards))]
    total = 0
    weight_map = {}
    for name, items in zip(names, shards):
        total += write_shard(os.path.join(out, name), items)
        weight_map.update({t: name for t, _ in items})
    with open(os.path.join(out, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": dict(sorted(weight_map.items()))}, f, indent=2)
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(CONFIG_MOE if moe else CONFIG, f, indent=2)
    try:
        from safetensors import safe_open
        count = 0
        for name in names:
            with safe_open(os.path.join(out, name), "np") as f:
                count += len(list(f.keys()))
        assert count == (18_867 if moe else 254), count
    except ImportError:
        pass
    print(f"{out}: {len(names)} shards, {total} tensor bytes", file=sys.stderr)


if __name__ == "__main__":
    main()
