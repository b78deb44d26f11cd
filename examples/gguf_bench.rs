//! Times the GGUF header parse on a file: `cargo run --release --example gguf_bench -- FILE`.
//! Prints the driver's rounds, bytes read and milliseconds (whole inspection and one parse
//! of the final prefix).
use std::time::Instant;
use tensorpeek::formats::{gguf, Step};
use tensorpeek::source::inspect::gguf_read_hint;
use tensorpeek::source::{self, file::FileSource};

fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: gguf_bench FILE");
        std::process::exit(2);
    };
    let src = match FileSource::open(std::path::Path::new(&path)) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    // First run (cold allocator and page cache), then the best of three.
    let mut times = Vec::new();
    let mut ins = None;
    for _ in 0..4 {
        let t = Instant::now();
        ins = Some(pollster::block_on(source::inspect(&src, &path)));
        times.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let Some(ins) = ins else { return };
    let first_ms = times.first().copied().unwrap_or(0.0);
    let inspect_ms = times.iter().skip(1).copied().fold(f64::INFINITY, f64::min);
    // Replay the driver's plan to count rounds and time each parse.
    let data = {
        use std::io::Read;
        let mut f = std::fs::File::open(&path).expect("open");
        let mut v = vec![0u8; ins.bytes_read as usize];
        f.read_exact(&mut v).expect("read");
        v
    };
    let len = ins.size;
    let mut have = 8u64;
    let mut rounds = 0;
    let mut parse_ms = Vec::new();
    let mut resume = gguf::Resume::default();
    loop {
        rounds += 1;
        let t = Instant::now();
        let step = gguf::parse_resumable(&data[..have as usize], len, &mut resume);
        parse_ms.push(t.elapsed().as_secs_f64() * 1e3);
        match step {
            Step::Need(n) => have = gguf_read_hint(have, n).min(len),
            Step::Done(_) => break,
        }
    }
    let t = Instant::now();
    let _ = gguf::parse(&data, len);
    let one_ms = t.elapsed().as_secs_f64() * 1e3;
    println!("one parse of the whole header: {one_ms:.1} ms");
    println!(
        "inspect first {first_ms:.1} ms, best {inspect_ms:.1} ms, bytes_read {}, data_start {:?}, rounds {rounds}, parse ms per round {:?}",
        ins.bytes_read,
        ins.data_start(),
        parse_ms.iter().map(|m| (m * 10.0).round() / 10.0).collect::<Vec<_>>()
    );
}
