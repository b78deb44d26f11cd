//! Times the element decoders alone, and decode + statistics (the values worker's inner
//! loop, without reads): `cargo run --profile bench-native --example decode_bench -- Q4_K
//! F32 …` (GGUF type names). Each type works through the 16 MiB of synthetic data
//! `bench-values` uses (`bench::synthetic`): the decoders into f32 (as the values scan
//! does) in batches of 16 Ki values, 6 times; then a whole scan (`TensorScanner`, 8 MiB
//! chunks, no SHA-256), RUNS times (7), of which the best run is printed (on a busy
//! machine the fastest run is the one least disturbed).
use std::time::Instant;
use tensorpeek::bench::synthetic;
use tensorpeek::dtype::decode::{Codec, DECODE_BATCH_VALUES};
use tensorpeek::values::TensorScanner;

fn main() {
    let types: Vec<String> = std::env::args().skip(1).collect();
    if types.is_empty() {
        eprintln!("usage: decode_bench GGML_TYPE...");
        std::process::exit(2);
    }
    let runs: usize = std::env::var("RUNS").ok().and_then(|r| r.parse().ok()).unwrap_or(7);
    for t in types {
        let Ok(codec) = Codec::for_ggml(&t) else {
            eprintln!("{t}: not decoded");
            continue;
        };
        let buf = synthetic(&t, &codec);
        let unit = codec.unit_bytes();
        let batch = (DECODE_BATCH_VALUES / codec.unit_values()).max(1) * unit;
        let mut out: Vec<f32> = Vec::with_capacity(DECODE_BATCH_VALUES + codec.unit_values());
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
        let decode = n as f64 / start.elapsed().as_secs_f64() / 1e6;

        let values = (buf.len() / unit * codec.unit_values()) as u64;
        let mut best = f64::INFINITY;
        for _ in 0..runs {
            let start = Instant::now();
            let mut scan = TensorScanner::new(codec.clone(), &[values], buf.len() as u64, false);
            for c in buf.chunks(8 << 20) {
                scan.feed(c);
            }
            if scan.finish().is_err() {
                eprintln!("{t}: scan failed");
                std::process::exit(1);
            }
            best = best.min(start.elapsed().as_secs_f64());
        }
        println!("{t:8} decode {decode:6.0} M values/s; decode + stats {:6.0} M values/s (best of {runs})", values as f64 / best / 1e6);
    }
}
