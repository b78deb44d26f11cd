//! Number formatting, all of it, as text: the CLI prints these strings and the page's
//! components (`web::views::format`) wrap them in markup.

/// 1234567 → "1,234,567".
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Bytes in binary units with three significant digits: 6425499648 → "5.98 GiB".
pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 6] = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut value = n as f64;
    let mut unit = "B";
    for u in UNITS {
        if value < 1024.0 {
            break;
        }
        value /= 1024.0;
        unit = u;
    }
    if value >= 100.0 {
        format!("{value:.0} {unit}")
    } else if value >= 10.0 {
        format!("{value:.1} {unit}")
    } else {
        format!("{value:.2} {unit}")
    }
}

/// Parameter counts in short decimal units: 3212749824 → "3.21 B".
pub fn human_count(n: u64) -> String {
    let v = n as f64;
    if n >= 1_000_000_000 {
        format!("{:.2} B", v / 1e9)
    } else if n >= 1_000_000 {
        format!("{:.2} M", v / 1e6)
    } else if n >= 1_000 {
        format!("{:.2} K", v / 1e3)
    } else {
        n.to_string()
    }
}

/// A shape as "[3072, 3072]".
pub fn shape(dims: &[u64]) -> String {
    let parts: Vec<String> = dims.iter().map(u64::to_string).collect();
    format!("[{}]", parts.join(", "))
}

/// A value for reading: up to 6 significant digits, exponent form outside 1e-3..1e7.
pub fn short(v: f64) -> String {
    if v.is_nan() {
        return "NaN".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "+Inf".into() } else { "−Inf".into() };
    }
    if v == 0.0 {
        return if v.is_sign_negative() { "-0".into() } else { "0".into() };
    }
    let a = v.abs();
    if (1e-3..1e7).contains(&a) {
        let int_digits = a.log10().floor() as i32 + 1;
        let prec = usize::try_from((6 - int_digits).clamp(0, 9)).unwrap_or(0);
        let s = format!("{v:.prec$}");
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        }
    } else {
        format!("{v:.5e}")
    }
}

/// The exact value: the shortest text that reads back to the same f64.
pub fn exact(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 {
            "Infinity".into()
        } else {
            "-Infinity".into()
        }
    } else {
        format!("{v:?}")
    }
}

/// A float from a file's metadata: whole numbers with thousands separators
/// ("500,000"), others as Rust prints them.
pub fn float(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        let sign = if v < 0.0 { "-" } else { "" };
        format!("{sign}{}", thousands(v.abs() as u64))
    } else {
        format!("{v}")
    }
}

/// A rate in bytes per second: "1.82 GB/s", "480 MB/s", "12 kB/s".
pub fn rate(bytes_per_s: f64) -> String {
    if bytes_per_s >= 1e9 {
        format!("{:.2} GB/s", bytes_per_s / 1e9)
    } else if bytes_per_s >= 1e6 {
        format!("{:.0} MB/s", bytes_per_s / 1e6)
    } else {
        format!("{:.0} kB/s", bytes_per_s / 1e3)
    }
}

/// A signed byte difference: "+350,208", "−1,024", "0".
pub fn signed(n: i128) -> String {
    let mag = thousands(u64::try_from(n.unsigned_abs()).unwrap_or(u64::MAX));
    match n {
        0 => "0".into(),
        n if n > 0 => format!("+{mag}"),
        _ => format!("−{mag}"),
    }
}

/// "a, b, c" — or "a, b, c and 12 more" when `others` (every other tensor over the same
/// storage) exceeds the names listed.
pub fn shared_with(names: &[String], others: usize) -> String {
    let more = others.saturating_sub(names.len());
    if more == 0 {
        names.join(", ")
    } else {
        format!("{} and {} more", names.join(", "), thousands(more as u64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_numbers() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(6_425_499_648), "6,425,499,648");
        assert_eq!(thousands(u64::MAX), "18,446,744,073,709,551,615");
        assert_eq!(human_bytes(1023), "1023 B");
        assert_eq!(human_bytes(1536), "1.50 KiB");
        assert_eq!(human_bytes(6_425_499_648), "5.98 GiB");
        assert_eq!(human_count(3_212_749_824), "3.21 B");
        assert_eq!(shape(&[2, 3]), "[2, 3]");
        assert_eq!(short(0.015625), "0.015625");
        assert_eq!(short(1234567.0), "1234567");
        assert_eq!(short(1e-7), "1.00000e-7");
        assert_eq!(short(f64::NEG_INFINITY), "−Inf");
        assert_eq!(exact(0.1), "0.1");
        assert_eq!(exact(f64::INFINITY), "Infinity");
        assert_eq!(rate(1.82e9), "1.82 GB/s");
        assert_eq!(rate(4.8e8), "480 MB/s");
        assert_eq!(signed(350_208), "+350,208");
        assert_eq!(signed(-1024), "−1,024");
        assert_eq!(signed(0), "0");
        assert_eq!(float(500000.0), "500,000");
        assert_eq!(float(0.5), "0.5");
    }
}
