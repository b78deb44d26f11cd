//! The values benchmark in wasm, in headless Chromium: decode + stats of synthetic tensors
//! held in a JS `ArrayBuffer`, each 8 MiB chunk copied into wasm as a read's result is —
//! the worker's work without the reads. Not a test of correctness (the figures print); run
//! by scripts/bench_values.sh with the worker's optimisation profile:
//! `cargo test --profile worker --target wasm32-unknown-unknown --features bench --test wasm_bench -- --nocapture`
#![cfg(all(target_arch = "wasm32", feature = "bench"))]

use tensorpeek::bench::{BenchTensor, BENCH_ROWS};
use tensorpeek::dtype::TensorDtype;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

fn now() -> f64 {
    js_sys::Date::now()
}

/// (dtype, elements, SHA-256): the cases README's values table reports.
const CASES: [(&str, u64, bool); 7] = [
    ("BF16", BENCH_ROWS * 3072, false),
    ("BF16", BENCH_ROWS * 3072, true),
    ("F16", BENCH_ROWS * 3072, false),
    ("F8_E4M3", BENCH_ROWS * 3072, false),
    ("F32", BENCH_ROWS * 1536, false),
    ("Q4_K", BENCH_ROWS * 1024, false),
    ("Q8_0", BENCH_ROWS * 1024, false),
];

/// Runs per case; the median is printed.
const RUNS: usize = 3;

#[wasm_bindgen_test]
fn values_throughput() {
    for (dtype, elements, sha) in CASES {
        let tensor = BenchTensor::new(&TensorDtype::from_name(dtype), elements).expect("a decodable type");
        let js = js_sys::Uint8Array::from(tensor.bytes.as_slice());
        let mut ms = Vec::new();
        let mut count = 0;
        for _ in 0..RUNS {
            let started = now();
            let mut scanner = tensor.scanner(sha);
            for r in tensor.chunks() {
                // The buffer is 16 MiB: its offsets fit u32.
                scanner.feed(&js.subarray(r.start as u32, r.end as u32).to_vec());
            }
            let stats = scanner.finish().expect("stats");
            ms.push(now() - started);
            count = stats.count;
        }
        assert_eq!(count, elements, "{dtype}: every value scanned");
        ms.sort_by(f64::total_cmp);
        let m = ms[RUNS / 2];
        console_log!(
            "wasm decode + stats, {dtype} {} bytes ({elements} values) in memory, SHA-256 {}: median {m:.0} ms ({:.2} GB/s, {:.0} M values/s; runs {:?})",
            tensor.total,
            if sha { "on " } else { "off" },
            tensor.total as f64 / m / 1e6,
            elements as f64 / m / 1e3,
            ms.iter().map(|x| x.round()).collect::<Vec<_>>()
        );
    }
}
