#!/usr/bin/env python3
"""Writes a sparse PyTorch zip checkpoint shaped like Llama 3.2 3B (the 254 BF16 tensors of
make_sparse_safetensors.py, ~6.4 GB): the zip as torch.save writes it — members stored,
each member's data aligned to 64 bytes by a padding extra field, `data.pkl` a protocol 2
pickle of an OrderedDict of `torch._utils._rebuild_tensor_v2(persistent storage, …)`,
`data/<key>` one storage per tensor, `byteorder`, `version`, Zip64 records past 4 GiB —
with every storage left a hole (zeros, no disk cost). Standard library only.

Usage: python3 tests/make_sparse_torch.py OUT [--small | --tensors=N]
  --small  a 2-layer, narrow version (a few MB, real zeros) to check the writer against
           torch.load(weights_only=True).
  --tensors=N  N BF16 tensors of 4 × 4 instead, each with its storage: a dense state dict
           for measuring memory (README, Hardening).
Also writes OUT.expected.json: size, tensor count, params, the pickle's offset and length,
the tensors' absolute data offsets, and the safetensors header a conversion must start with
(the safetensors writer's: dtype order then name, `__metadata__` {"format": "pt"}, padded
with spaces to a multiple of 8).
"""
import json
import struct
import sys
import zlib

ALIGN = 64  # torch's kFieldAlignment: member data starts on a 64-byte boundary
PREFIX = "pytorch_model"


def shapes(small, many=None):
    if many is not None:
        for i in range(many):
            yield f"model.layers.{i // 10}.block.{i % 10}.weight", [4, 4]
        return
    hidden, kv, inter, vocab, layers = (64, 16, 128, 256, 2) if small else (3072, 1024, 8192, 128256, 28)
    yield "model.embed_tokens.weight", [vocab, hidden]
    for i in range(layers):
        p = f"model.layers.{i}."
        yield p + "input_layernorm.weight", [hidden]
        yield p + "mlp.down_proj.weight", [hidden, inter]
        yield p + "mlp.gate_proj.weight", [inter, hidden]
        yield p + "mlp.up_proj.weight", [inter, hidden]
        yield p + "post_attention_layernorm.weight", [hidden]
        yield p + "self_attn.k_proj.weight", [kv, hidden]
        yield p + "self_attn.o_proj.weight", [hidden, hidden]
        yield p + "self_attn.q_proj.weight", [hidden, hidden]
        yield p + "self_attn.v_proj.weight", [kv, hidden]
    yield "model.norm.weight", [hidden]


# ---------------------------------------------------------------- the pickle (raw opcodes)

def unicode(s):
    b = s.encode()
    return b"X" + struct.pack("<I", len(b)) + b


def int_(n):
    return b"J" + struct.pack("<i", n) if n < 2**31 else b"\x8a\x08" + struct.pack("<q", n)


def tup(items):
    return b"(" + b"".join(items) + b"t"


def data_pkl(tensors):
    """OrderedDict([(name, _rebuild_tensor_v2(('storage', BFloat16Storage, key, 'cpu',
    numel), 0, shape, stride, False, OrderedDict()))]), globals memoized as torch does."""
    out = [b"\x80\x02", b"ccollections\nOrderedDict\nq\x00)Rq\x01("]
    first = True
    for key, (name, shape, numel) in enumerate(tensors):
        stride = []
        acc = 1
        for d in reversed(shape):
            stride.insert(0, acc)
            acc *= d
        rebuild = b"ctorch._utils\n_rebuild_tensor_v2\nq\x02" if first else b"h\x02"
        storage_cls = b"ctorch\nBFloat16Storage\nq\x03" if first else b"h\x03"
        first = False
        pid = tup([unicode("storage"), storage_cls, unicode(str(key)), unicode("cpu"), int_(numel)]) + b"Q"
        args = tup([pid, b"K\x00", tup([int_(d) for d in shape]), tup([int_(s) for s in stride]), b"\x89", b"h\x00)R"])
        out.append(unicode(name) + rebuild + args + b"R")
    out.append(b"u.")
    return b"".join(out)


# ---------------------------------------------------------------- the zip

def local_header(name, offset, size, crc):
    """A stored member's local header, padded with an extra field so that its data begins
    on an ALIGN boundary (as torch's writer does)."""
    n = name.encode()
    fixed = 30 + len(n)
    pad = (-(offset + fixed + 4)) % ALIGN
    extra = struct.pack("<HH", 0x4246, pad) + b"Z" * pad  # 'FB' padding field, like torch
    head = struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, 0, 0, 0, crc, size, size, len(n), len(extra))
    return head + n + extra


def central_entry(name, offset, size, crc):
    n = name.encode()
    extra = b""
    off32 = offset
    if offset >= 0xFFFFFFFF:
        extra = struct.pack("<HHQ", 0x0001, 8, offset)
        off32 = 0xFFFFFFFF
    return struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 45, 45 if extra else 20, 0, 0, 0, 0, crc, size, size,
                       len(n), len(extra), 0, 0, 0, 0, off32) + n + extra


ZERO_CRC = {}


def zeros_crc(n):
    if n not in ZERO_CRC:
        crc, chunk, left = 0, bytes(1 << 24), n
        while left:
            k = min(left, len(chunk))
            crc = zlib.crc32(chunk[:k] if k < len(chunk) else chunk, crc)
            left -= k
        ZERO_CRC[n] = crc
    return ZERO_CRC[n]


def main(out, small, many=None):
    tensors = []
    for name, shape in shapes(small, many):
        numel = 1
        for d in shape:
            numel *= d
        tensors.append((name, shape, numel))
    pkl = data_pkl(tensors)
    members = [(f"{PREFIX}/data.pkl", pkl), (f"{PREFIX}/byteorder", b"little")]
    members += [(f"{PREFIX}/data/{k}", numel * 2) for k, (_, _, numel) in enumerate(tensors)]
    members += [(f"{PREFIX}/version", b"3\n"), (f"{PREFIX}/.data/serialization_id", b"0" * 40)]
    central = []
    starts = {}
    pos = 0
    with open(out, "wb") as f:
        for name, body in members:
            size = body if isinstance(body, int) else len(body)
            crc = zeros_crc(size) if isinstance(body, int) else zlib.crc32(body)
            head = local_header(name, pos, size, crc)
            f.write(head)
            starts[name] = pos + len(head)
            central.append(central_entry(name, pos, size, crc))
            if isinstance(body, int):
                f.seek(size, 1)  # a hole: zeros without a write
            else:
                f.write(body)
            pos += len(head) + size
        cd = b"".join(central)
        cd_at = pos
        f.seek(cd_at)
        f.write(cd)
        z64_at = cd_at + len(cd)
        count = len(members)
        f.write(struct.pack("<IQHHIIQQQQ", 0x06064B50, 44, 45, 45, 0, 0, count, count, len(cd), cd_at))
        f.write(struct.pack("<IIQI", 0x07064B50, 0, z64_at, 1))
        f.write(struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, min(count, 0xFFFF), min(count, 0xFFFF),
                            min(len(cd), 0xFFFFFFFF), min(cd_at, 0xFFFFFFFF), 0))
        size = f.tell()
    # what a conversion must write: the safetensors writer's header (all BF16: by name)
    header = {"__metadata__": {"format": "pt"}}
    off = 0
    for name, shape, numel in sorted(tensors, key=lambda t: t[0]):
        header[name] = {"dtype": "BF16", "shape": shape, "data_offsets": [off, off + numel * 2]}
        off += numel * 2
    text = json.dumps(header, separators=(",", ":"))
    text += " " * (-len(text) % 8)
    expected = {
        "size": size,
        "tensors": len(tensors),
        "params": sum(t[2] for t in tensors),
        "bytes": sum(t[2] * 2 for t in tensors),
        "pickle": {"offset": starts[f"{PREFIX}/data.pkl"], "len": len(pkl)},
        "abs_start": {name: starts[f"{PREFIX}/data/{k}"] for k, (name, _, _) in enumerate(tensors)},
        "safetensors": {"header": text, "len": 8 + len(text) + off},
    }
    with open(out + ".expected.json", "w") as f:
        json.dump(expected, f, indent=1)
    print(f"{out}: {size} bytes, {len(tensors)} tensors, a {len(pkl)}-byte pickle")


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    if len(args) != 1:
        sys.exit("usage: make_sparse_torch.py OUT [--small | --tensors=N]")
    many = [int(a.split("=", 1)[1]) for a in sys.argv[1:] if a.startswith("--tensors=")]
    main(args[0], "--small" in sys.argv, many[-1] if many else None)
