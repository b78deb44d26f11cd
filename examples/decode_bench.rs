//! Times the element decoders alone (no statistics): `cargo run --profile bench-native
//! --example decode_bench -- Q4_K IQ2_XXS …` (GGUF type names). Each type decodes the
//! 16 MiB of synthetic blocks `bench-values` uses (`bench::synthetic`), 6 times, in batches
//! of 16 Ki values, and prints M values/s.
use std::time::Instant;
use tensorpeek::bench::synthetic;
use tensorpeek::dtype::decode::{Codec, DECODE_BATCH_VALUES};


fn main() {
    let types: Vec<String> = std::env::args().skip(1).collect();
    if types.is_empty() {
        eprintln!("usage: decode_bench GGML_TYPE...");
        std::process::exit(2);
    }
    for t in types {
        let Ok(codec) = Codec::for_ggml(&t) else {
            eprintln!("{t}: not decoded");
            continue;
        };
        let buf = synthetic(&t, &codec);
        let unit = codec.unit_bytes();
        let batch = (DECODE_BATCH_VALUES / codec.unit_values()).max(1) * unit;
        let mut out = Vec::with_capacity(DECODE_BATCH_VALUES + codec.unit_values());
        let mut n = 0usize;
        let start = Instant::now();
        for _ in 0..6 {
            for c in buf.chunks(batch) {
                out.clear();
                codec.decode(c, &mut out);
                n += out.len();
                std::hint::black_box(&out);
            }
        }
        let s = start.elapsed().as_secs_f64();
        println!("{t:8} {:6.0} M values/s  ({n} values in {s:.3} s)", n as f64 / s / 1e6);
    }
}
