#!/usr/bin/env python3
"""Writes src/dtype/grids.rs: the lookup tables of ggml's i-quants, copied as data from
ggml's ggml/src/ggml-common.h (the GGML_TABLE_BEGIN(type, name, size) … GGML_TABLE_END()
blocks, C branch).

Usage: python3 scripts/gen_ggml_grids.py PATH/TO/ggml/src/ggml-common.h > src/dtype/grids.rs

Only the numbers are carried over (each table re-emitted with its C element type mapped to
the Rust one); the element count of every table is checked against the size in its
GGML_TABLE_BEGIN line.
"""

import hashlib
import re
import sys

TABLES = [
    # (C name, Rust name, doc)
    ("ksigns_iq2xs", "KSIGNS_IQ2XS",
     "Sign patterns of IQ2_XXS/IQ2_XS/IQ3_XXS: entry i is the 7 bits of i plus an 8th bit\n"
     "/// that makes the count of set bits even. Bit j set = element j negative."),
    ("iq2xxs_grid", "IQ2XXS_GRID", "IQ2_XXS: 256 groups of 8 magnitudes (bytes; element j = byte j of the little-endian\n/// u64)."),
    ("iq2xs_grid", "IQ2XS_GRID", "IQ2_XS: 512 groups of 8 magnitudes (element j = byte j)."),
    ("iq2s_grid", "IQ2S_GRID", "IQ2_S: 1024 groups of 8 magnitudes (element j = byte j)."),
    ("iq3xxs_grid", "IQ3XXS_GRID", "IQ3_XXS: 256 groups of 4 magnitudes (element j = byte j of the u32)."),
    ("iq3s_grid", "IQ3S_GRID", "IQ3_S: 512 groups of 4 magnitudes (element j = byte j of the u32)."),
    ("iq1s_grid", "IQ1S_GRID", "IQ1_S/IQ1_M: 2048 groups of 8 values in {-1, 0, 1} (element j = byte j, as i8)."),
    ("kvalues_iq4nl", "KVALUES_IQ4NL", "IQ4_NL/IQ4_XS: the 16 non-linear levels."),
]

RUST_TYPE = {"uint8_t": "u8", "int8_t": "i8", "uint32_t": "u32", "uint64_t": "u64"}
DEFINES = {"NGRID_IQ1S": 2048}


def parse(text):
    out = {}
    pat = re.compile(r"GGML_TABLE_BEGIN\((\w+),\s*(\w+),\s*(\w+)\)(.*?)GGML_TABLE_END\(\)", re.S)
    for ctype, name, size, body in pat.findall(text):
        if name in out or not (size.isdigit() or size in DEFINES):
            continue  # the first definition is the C one; skip the macro definitions
        n = int(DEFINES.get(size, size))
        vals = [int(v, 0) for v in re.findall(r"-?(?:0x[0-9a-fA-F]+|\d+)", body)]
        assert len(vals) == n, (name, len(vals), n)
        out[name] = (ctype, vals)
    return out


def main():
    src = sys.argv[1]
    text = open(src).read()
    tables = parse(text)
    print("//! Lookup tables of ggml's i-quants — data, not code: copied from ggml's")
    print("//! `ggml/src/ggml-common.h` (ggml-org/llama.cpp, the tree vendored by")
    print("//! llama-cpp-python 0.3.36; sha256 of that file:")
    print(f"//! {hashlib.sha256(text.encode()).hexdigest()}) by")
    print("//! `scripts/gen_ggml_grids.py`.")
    print("//! Do not edit by hand; regenerate with that script. tests/iquants.rs checks these")
    print("//! tables against gguf-py's own (differently encoded) copies.")
    print()
    for cname, rname, doc in TABLES:
        ctype, vals = tables[cname]
        rt = RUST_TYPE[ctype]
        per_line = {"u8": 16, "i8": 16, "u32": 8, "u64": 4}[rt]
        width = {"u32": 8, "u64": 16}.get(rt)
        print(f"/// {doc}")
        print(f"/// ggml-common.h `{cname}`.")
        print("#[rustfmt::skip]")
        print(f"pub static {rname}: [{rt}; {len(vals)}] = [")
        for i in range(0, len(vals), per_line):
            row = vals[i : i + per_line]
            if width:
                cells = [f"0x{v:0{width}x}" for v in row]
            else:
                cells = [str(v) for v in row]
            print("    " + ", ".join(cells) + ",")
        print("];")
        print()


if __name__ == "__main__":
    main()
