#!/usr/bin/env python3
"""Writes the fuzz dictionaries (fuzz/dict/*.dict, committed) and the seed corpora
(fuzz/corpus/<target>/seed-*, not committed: rebuilt from tests/fixtures by
scripts/fuzz.sh). Deterministic; standard library only."""
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
FIX = os.path.join(ROOT, "tests", "fixtures")


def entry(b: bytes) -> str:
    return '"' + "".join(chr(c) if 32 <= c < 127 and c not in (34, 92) else f"\\x{c:02x}" for c in b) + '"'


def write_dict(name, items):
    seen, lines = set(), []
    for it in items:
        b = it.encode() if isinstance(it, str) else it
        if b and b not in seen:
            seen.add(b)
            lines.append(entry(b))
    with open(os.path.join(HERE, "dict", name), "w") as f:
        f.write(f"# {name}: written by fuzz/make_dicts_and_seeds.py\n")
        f.write("\n".join(lines) + "\n")


DTYPES = ["BOOL", "U8", "I8", "I16", "U16", "F16", "BF16", "I32", "U32", "F32", "F64", "I64", "U64", "C64",
          "F8_E5M2", "F8_E4M3", "F8_E8M0", "F8_E4M3FNUZ", "F8_E5M2FNUZ", "F4", "F6_E2M3", "F6_E3M2"]
HOSTILE = ["\\u0000", "\\u202e", "\\u2066", "\\ud800", "<script>", "<img src=x onerror=", "javascript:",
           "{{ cycler.__init__.__globals__ }}", "__class__", "{%", "%}", "{{", "}}"]
NUMBERS = ["0", "1", "-1", "1e308", "0.5", "18446744073709551615", "18446744073709551616", "9223372036854775808", "4294967296"]

write_dict("safetensors.dict", ["{", "}", "[", "]", ",", ":", '"', '"dtype"', '"shape"', '"data_offsets"', '"__metadata__"',
                                '"format"', '"pt"', " ", "\\n"] + [f'"{d}"' for d in DTYPES] + NUMBERS + HOSTILE)

GGUF_KEYS = ["general.architecture", "general.alignment", "general.name", "general.file_type", "general.quantization_version",
             "llama.context_length", "llama.embedding_length", "llama.block_count", "llama.attention.head_count",
             "llama.attention.head_count_kv", "llama.rope.freq_base", "tokenizer.ggml.model", "tokenizer.ggml.pre",
             "tokenizer.ggml.tokens", "tokenizer.ggml.token_type", "tokenizer.ggml.merges", "tokenizer.ggml.scores",
             "tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id", "tokenizer.chat_template",
             "tokenizer.chat_template.tool_use", "split.no", "split.count", "split.tensors.count", "blk.0.attn_q.weight",
             "token_embd.weight", "output.weight"]
ggufb = [b"GGUF", struct.pack("<I", 3), struct.pack("<I", 2), struct.pack("<I", 1), struct.pack(">I", 3)]
ggufb += [struct.pack("<I", t) for t in range(13)] + [struct.pack("<I", t) for t in (30, 31, 39, 42, 43)]
ggufb += [struct.pack("<Q", n) for n in (0, 1, 4, 32, 64, 256, 1 << 32, 1 << 62, (1 << 64) - 1)]
ggufb += [struct.pack("<Q", len(k)) + k.encode() for k in GGUF_KEYS] + [k.encode() for k in GGUF_KEYS]
ggufb += [s.encode() for s in HOSTILE] + [b"\xe2\x80\xae", b"\x00" * 8, b"\xff" * 8]
write_dict("gguf.dict", ggufb)

JSON_KEYS = ["weight_map", "metadata", "total_size", "model_type", "architectures", "num_hidden_layers", "hidden_size",
             "intermediate_size", "num_attention_heads", "num_key_value_heads", "vocab_size", "head_dim",
             "tie_word_embeddings", "attention_bias", "mlp_bias", "rope_theta", "rope_scaling", "max_position_embeddings",
             "torch_dtype", "added_tokens", "model", "vocab", "merges", "type", "special", "content", "id", "chat_template",
             "name", "template", "bos_token", "eos_token", "pad_token", "unk_token", "added_tokens_decoder", "tokenizer_class",
             "model_max_length", "version"]
JSON_VALUES = ["llama", "mistral", "qwen2", "qwen3", "gemma", "gemma2", "gemma3_text", "phi3", "BPE", "Unigram",
               "LlamaForCausalLM", "model-00001-of-00002.safetensors", "model.embed_tokens.weight", "lm_head.weight",
               "model.layers.0.self_attn.q_proj.weight", "bfloat16"]
write_dict("json.dict", ["{", "}", "[", "]", ",", ":", "true", "false", "null"] + [f'"{k}"' for k in JSON_KEYS]
           + [f'"{v}"' for v in JSON_VALUES] + NUMBERS + HOSTILE)


def read(*p):
    with open(os.path.join(FIX, *p), "rb") as f:
        return f.read()


def seeds(target, items):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    for name, data in items:
        with open(os.path.join(d, "seed-" + name), "wb") as f:
            f.write(data)


def head(b, n=65536):
    return b[:n]


ST = ["one_tensor.safetensors", "tiny_model.safetensors", "truncated.safetensors", "values_np.safetensors",
      "values_ml.safetensors"]
def sized(body, total):
    """The fuzz input's length prefix for a header-only body of a `total`-byte file."""
    return b"\xff" + struct.pack("<Q", total - len(body))


def st_seed(b):
    hl = 8 + struct.unpack("<Q", b[:8])[0]
    body = b[:hl] if hl <= len(b) else b[:65536]
    return sized(body, max(len(b), len(body))) + body


seeds("safetensors", [(n, st_seed(read(n))) for n in ST]
      + [("shard1", st_seed(read("checkpoint", "good", "model-00001-of-00002.safetensors")))])

GG = ["stories260K.gguf", "values.gguf", os.path.join("gguf", "align64.gguf"), os.path.join("gguf", "all_types.gguf"),
      os.path.join("gguf", "big_endian.gguf"), os.path.join("gguf", "split-00001-of-00003.gguf")]
def gguf_seed(b, step):
    body = head(b, 65536)
    return b"\xff" + bytes([step]) + struct.pack("<Q", len(b) - len(body)) + body


seeds("gguf", [(f"{os.path.basename(n)}-{step}", gguf_seed(read(n), step)) for n in GG for step in (0, 3)])

COMP = ["model.safetensors.index.json", "config.json", "tokenizer.json", "tokenizer_config.json", "generation_config.json"]
seeds("companions", [(n, bytes([k]) + head(read("checkpoint", "good", n))) for k, n in enumerate(COMP)])


def record(kind, part, b):
    b = b[:65535]
    return bytes([kind, part]) + struct.pack("<H", len(b)) + b


good = os.path.join("checkpoint", "good")
shard_head = lambda n: read(good, n)[: 8 + struct.unpack("<Q", read(good, n)[:8])[0]]
asm = record(0, 64, shard_head("model-00001-of-00002.safetensors")) + record(0, 65, shard_head("model-00002-of-00002.safetensors"))
asm += record(2, 0, read(good, "model.safetensors.index.json")) + record(3, 0, read(good, "config.json"))
splits = b"".join(record(1, 128 + i, head(read("gguf", f"split-0000{i + 1}-of-00003.gguf"), 8192)) for i in range(3))
seeds("assembly", [("checkpoint", asm), ("split", splits)])

vals = read("values_np.safetensors")
n = struct.unpack("<Q", vals[:8])[0]
data = vals[8 + n: 8 + n + 4096]
gvals = read("values.gguf")[-8192:]
seeds("decode", [(f"type{t}", bytes([t, 7]) + (gvals if t >= 22 else data)) for t in range(65)])
# ------------------------------------------------------------------ pickle and torch
import io
import pickle as _pickle
import zipfile

PICKLE_OPCODES = b"(.0123FGIJKLMNPQRSTUVXabcdefghijklmopqrstu}])~\x80\x81\x82\x83\x84\x85\x86\x87\x88\x89\x8a\x8b\x8c\x8d\x8e\x8f\x90\x91\x92\x93\x94\x95\x96\x97\x98"
PICKLE_GLOBALS = [("torch._utils", "_rebuild_tensor_v2"), ("torch._utils", "_rebuild_tensor_v3"), ("torch._utils", "_rebuild_parameter"),
                  ("torch", "FloatStorage"), ("torch", "HalfStorage"), ("torch", "BFloat16Storage"), ("torch", "LongStorage"),
                  ("torch", "bfloat16"), ("torch", "float8_e4m3fn"), ("torch.storage", "UntypedStorage"), ("collections", "OrderedDict"),
                  ("__builtin__", "set"), ("__builtin__", "getattr"), ("builtins", "getattr"), ("builtins", "eval"), ("builtins", "exec"),
                  ("posix", "system"), ("os", "system"), ("nt", "system"), ("subprocess", "Popen"), ("_codecs", "encode"),
                  ("pickle", "loads"), ("_pickle", "loads"), ("numpy.core.multiarray", "_reconstruct"), ("numpy", "ndarray"),
                  ("numpy", "dtype"), ("copy_reg", "_reconstructor"), ("functools", "partial"), ("operator", "attrgetter")]
pk = [bytes([c]) for c in PICKLE_OPCODES]
for m, n in PICKLE_GLOBALS:
    pk += [f"c{m}\n{n}\n".encode(), m.encode(), n.encode(), b"\x8c" + bytes([len(m)]) + m.encode(), b"\x8c" + bytes([len(n)]) + n.encode()]
pk += [b"\x80\x02", b"\x80\x04\x95", b"\x80\x05", b"q\x00", b"h\x00", b"r\x00\x00\x00\x00", b"j\x00\x00\x00\x00", b"\x94", b"K\x00",
       b"J\xff\xff\xff\xff", b"\x8a\x08", b"X\x00\x00\x00\x00", b"\x8c\x07storage", b"storage", b"cpu", b"cuda:0", b"latin1",
       b"\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19.", b"\x80\x02M\xe9\x03.",
       b"PK\x03\x04", b"PK\x01\x02", b"PK\x05\x06", b"PK\x06\x06", b"PK\x06\x07", b"PK\x07\x08", b"data.pkl", b"archive/data.pkl",
       b"archive/data/0", b"data/0", b"archive/version", b".format_version", b"byteorder", b"little", b"\x93NUMPY\x01\x00",
       b"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", b"|O", b"<f4", b">i4",
       b"\x00\x00", b"\xff\xff", b"\xff\xff\xff\xff", b"\x01\x00\x01\x00", struct.pack("<Q", (1 << 64) - 1), struct.pack("<Q", 1 << 32)]
write_dict("pickle.dict", pk)

P = os.path.join(FIX, "pickle")
def pread(*p):
    with open(os.path.join(P, *p), "rb") as f:
        return f.read()

pickle_files = sorted(f for f in os.listdir(P) if f.endswith(".pkl") or f in ("plain_evil.bin", "random.bin"))
legacy = sorted(f for f in os.listdir(P) if f.endswith(".pt") and pread(f)[:2] == b"\x80\x02")
zips = sorted(f for f in os.listdir(P) if f.endswith((".pt", ".ckpt", ".npz")) and pread(f)[:2] == b"PK")
zips += [os.path.join("tiny_llama", "pytorch_model.bin"), os.path.join("sharded_llama", "pytorch_model-00001-of-00002.bin"),
         os.path.join("sharded_llama", "pytorch_model-00002-of-00002.bin")]
npys = sorted(f for f in os.listdir(P) if f.endswith(".npy"))


def after_two_pickles(b):
    """A legacy file without its magic and protocol-version pickles."""
    f = io.BytesIO(b)
    _pickle.load(f)
    _pickle.load(f)
    return b[f.tell():]


items = [(f, b"\x00" + pread(f)) for f in pickle_files + legacy + npys]
items += [(f + "-legacy-body", b"\x01" + after_two_pickles(pread(f))) for f in legacy]
for f in zips:
    if f.endswith(".npz") or f == "many_storages.pt":
        continue
    try:
        z = zipfile.ZipFile(io.BytesIO(pread(f)))
    except zipfile.BadZipFile:  # truncated_zip.pt
        continue
    pkl = [i for i in z.infolist() if i.filename.endswith("data.pkl")]
    if pkl:
        items.append((os.path.basename(f) + "-data.pkl", b"\x02" + z.read(pkl[0])))
seeds("pickle", items)


def torch_seed(b, gap_from=None, gap_to=None):
    """[gap byte] ++ [split u16] ++ bytes, the bytes [gap_from, gap_to) made a gap of zeros."""
    if gap_from is None or gap_from > 65535:
        return b"\x00\x00\x00" + b
    return b"\xff" + struct.pack("<H", gap_from) + struct.pack("<Q", gap_to - gap_from) + b[:gap_from] + b[gap_to:]


titems = []
for f in zips + legacy + npys:
    b = pread(f)
    if len(b) > 65536:
        continue
    titems.append((os.path.basename(f), torch_seed(b)))
    if b[:2] == b"PK" and f != "truncated_zip.pt":
        # the largest stored member's data made a gap: the same offsets, no data bytes
        z = zipfile.ZipFile(io.BytesIO(b))
        best = max(z.infolist(), key=lambda i: i.compress_size)
        h = best.header_offset
        n, x = struct.unpack("<HH", b[h + 26:h + 30])
        a = h + 30 + n + x
        titems.append((os.path.basename(f) + "-gap", torch_seed(b, a, a + best.compress_size)))
seeds("torch", titems)

print("dictionaries and seeds written", file=sys.stderr)
