//! Protocol 0's text arguments, and LONG1 / LONG4's bytes, decoded: the string decodings
//! ([`text`], [`latin1`], [`unrepr`] for STRING, [`raw_unicode_escape`] for UNICODE), the
//! integer lines of INT / LONG / GET / PUT ([`parse_int_line`]) and [`long_bytes`].

use super::value::{int_value, Value};

pub(super) fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

pub(super) fn latin1(bytes: &[u8]) -> String {
    bytes.iter().map(|&b| char::from(b)).collect()
}

/// Python 2 `repr` of a str (protocol 0 STRING): quotes removed, backslash escapes undone.
pub(super) fn unrepr(line: &[u8]) -> Option<Vec<u8>> {
    let (first, rest) = line.split_first()?;
    let (last, inner) = rest.split_last()?;
    if first != last || !(*first == b'\'' || *first == b'"') {
        return None;
    }
    let mut out = Vec::with_capacity(inner.len());
    let mut it = inner.iter().copied().peekable();
    while let Some(c) = it.next() {
        if c != b'\\' {
            out.push(c);
            continue;
        }
        let Some(e) = it.next() else {
            out.push(b'\\');
            break;
        };
        match e {
            b'n' => out.push(b'\n'),
            b't' => out.push(b'\t'),
            b'r' => out.push(b'\r'),
            b'0'..=b'7' => {
                let mut v = u32::from(e - b'0');
                for _ in 0..2 {
                    match it.peek() {
                        Some(&d @ b'0'..=b'7') => {
                            v = v * 8 + u32::from(d - b'0');
                            it.next();
                        }
                        _ => break,
                    }
                }
                out.push((v & 0xff) as u8);
            }
            b'x' => {
                let hi = it.next().and_then(|d| char::from(d).to_digit(16));
                let lo = it.next().and_then(|d| char::from(d).to_digit(16));
                match (hi, lo) {
                    (Some(h), Some(l)) => out.push((h * 16 + l) as u8),
                    _ => return None,
                }
            }
            b'\\' | b'\'' | b'"' => out.push(e),
            other => {
                out.push(b'\\');
                out.push(other);
            }
        }
    }
    Some(out)
}

/// `raw-unicode-escape` (protocol 0 UNICODE): `\uXXXX` / `\UXXXXXXXX`, other bytes latin-1.
pub(super) fn raw_unicode_escape(line: &[u8]) -> String {
    let mut out = String::with_capacity(line.len());
    let mut i = 0;
    while let Some(&c) = line.get(i) {
        let width = match (c, line.get(i + 1)) {
            (b'\\', Some(b'u')) => 4,
            (b'\\', Some(b'U')) => 8,
            _ => 0,
        };
        if width > 0 {
            let hex = line
                .get(i + 2..i + 2 + width)
                .and_then(|h| std::str::from_utf8(h).ok());
            if let Some(ch) = hex
                .and_then(|h| u32::from_str_radix(h, 16).ok())
                .and_then(char::from_u32)
            {
                out.push(ch);
                i += 2 + width;
                continue;
            }
        }
        out.push(char::from(c));
        i += 1;
    }
    out
}

pub(super) fn parse_int_line(line: &[u8]) -> Option<Value> {
    let s = std::str::from_utf8(line).ok()?.trim();
    let s = s.strip_suffix('L').unwrap_or(s);
    match s {
        "00" => return Some(Value::Bool(false)),
        "01" => return Some(Value::Bool(true)),
        _ => {}
    }
    if let Ok(v) = s.parse::<i128>() {
        return Some(int_value(v));
    }
    let digits = s.strip_prefix(['-', '+']).unwrap_or(s);
    (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())).then_some(Value::BigInt)
}

/// LONG1 / LONG4: little-endian two's complement.
pub(super) fn long_bytes(b: &[u8]) -> Value {
    if b.is_empty() {
        return Value::Int(0);
    }
    if b.len() > 16 {
        return Value::BigInt;
    }
    let neg = b.last().is_some_and(|&x| x & 0x80 != 0);
    let mut buf = if neg { [0xffu8; 16] } else { [0u8; 16] };
    if let Some(dst) = buf.get_mut(..b.len()) {
        dst.copy_from_slice(b);
    }
    int_value(i128::from_le_bytes(buf))
}
