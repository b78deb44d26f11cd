//! The `.npy` header (numpy's `numpy/lib/format.py` layout): the magic `\x93NUMPY`, a
//! major and minor version byte, the header length (u16 little-endian in version 1, u32 in
//! versions 2 and 3), then a Python literal dict `{'descr': '<f4', 'fortran_order': False,
//! 'shape': (3, 4), }` padded with spaces and ending in `\n` (ASCII in versions 1–2,
//! UTF-8 in 3). The array data follows. An object array (`descr` `|O`) stores a pickle
//! instead of raw data.
//!
//! The literal dict is parsed by a small hand-written reader (strings, integers, booleans,
//! None, tuples, lists, dicts — what numpy writes), never evaluated. Not `npyz` /
//! `ndarray-npy`: they read whole arrays through `Read`; here only the header is wanted,
//! from a byte range, inside a zip member as well.

use crate::error::{Code, Finding};

pub const MAGIC: &[u8; 6] = b"\x93NUMPY";
/// Bytes before the header text: magic, version, a u16 length (version 1).
pub const PREFIX_V1: u64 = 10;
/// Bytes before the header text in versions 2 and 3 (a u32 length).
pub const PREFIX_V2: u64 = 12;
/// Longest header text we read. numpy's reader refuses more than 10,000 bytes unless told
/// otherwise (`max_header_size`); 1 MiB leaves room for wide structured dtypes.
pub const MAX_HEADER_LEN: u64 = 1 << 20;
/// Deepest literal nesting (structured dtypes nest a few levels).
pub const MAX_LITERAL_DEPTH: usize = 32;

/// A parsed header.
#[derive(Clone, Debug, PartialEq)]
pub struct Header {
    pub major: u8,
    pub minor: u8,
    /// `descr` as written (`<f4`), or `structured` for a list descr.
    pub descr: String,
    pub fortran_order: bool,
    pub shape: Vec<u64>,
    /// Bytes from the start of the .npy to its first data byte.
    pub data_offset: u64,
    /// The safetensors dtype name, when there is one (little-endian or byte-order-free).
    pub dtype: Option<&'static str>,
    /// Bytes per element, when known.
    pub element_size: Option<u64>,
    /// `descr` is `|O`: the data is a pickle.
    pub object: bool,
    pub big_endian: bool,
}

/// How many bytes the whole header takes, from the first [`PREFIX_V2`] bytes (fewer are
/// fine for version 1). Err when the magic or version is wrong.
pub fn header_len(prefix: &[u8], at: u64) -> Result<Option<u64>, Finding> {
    let bad = |m: String| {
        Finding::error(Code::NpyMalformed, m)
            .at(at)
            .field("npy header")
    };
    let Some(magic) = prefix.get(..6) else {
        return Ok(None);
    };
    if magic != MAGIC {
        return Err(bad("no \\x93NUMPY magic".into()));
    }
    let (Some(&major), Some(_minor)) = (prefix.get(6), prefix.get(7)) else {
        return Ok(None);
    };
    let (len, pre) = match major {
        1 => match prefix.get(8..10) {
            Some(b) => (
                u64::from(u16::from_le_bytes([
                    *b.first().unwrap_or(&0),
                    *b.get(1).unwrap_or(&0),
                ])),
                PREFIX_V1,
            ),
            None => return Ok(None),
        },
        2 | 3 => match prefix.get(8..12) {
            Some(b) => {
                let mut a = [0u8; 4];
                a.copy_from_slice(b);
                (u64::from(u32::from_le_bytes(a)), PREFIX_V2)
            }
            None => return Ok(None),
        },
        v => return Err(bad(format!("unknown .npy version {v}"))),
    };
    if len > MAX_HEADER_LEN {
        return Err(bad(format!(
            "a {len}-byte header exceeds the {MAX_HEADER_LEN}-byte limit"
        )));
    }
    Ok(Some(pre + len))
}

/// Parses the whole header (`bytes` holds at least [`header_len`] bytes; `at` is the
/// absolute offset of the `.npy` start, for findings).
pub fn parse(bytes: &[u8], at: u64) -> Result<Header, Finding> {
    let bad = |m: String| {
        Finding::error(Code::NpyMalformed, m)
            .at(at)
            .field("npy header")
    };
    let total = match header_len(bytes, at)? {
        Some(t) => t,
        None => return Err(bad("the header is cut short".into())),
    };
    let major = bytes.get(6).copied().unwrap_or(0);
    let minor = bytes.get(7).copied().unwrap_or(0);
    let pre = if major == 1 { PREFIX_V1 } else { PREFIX_V2 };
    let text = usize::try_from(total)
        .ok()
        .and_then(|t| bytes.get(pre as usize..t))
        .ok_or_else(|| bad("the header is cut short".into()))?;
    let text = std::str::from_utf8(text).map_err(|_| bad("the header is not text".into()))?;
    let mut p = Lit::parser(text);
    let lit = p.value(0).ok_or_else(|| {
        bad(format!(
            "the header is not a Python literal: {:?}",
            text.trim()
        ))
    })?;
    let Lit::Dict(items) = lit else {
        return Err(bad("the header is not a dict".into()));
    };
    let get = |k: &str| {
        items
            .iter()
            .find(|(key, _)| matches!(key, Lit::Str(s) if s == k))
            .map(|(_, v)| v)
    };
    let descr = match get("descr") {
        Some(Lit::Str(s)) => s.clone(),
        Some(Lit::List(_)) => "structured".to_string(),
        _ => return Err(bad("no 'descr' string".into())),
    };
    let fortran_order = match get("fortran_order") {
        Some(Lit::Bool(b)) => *b,
        _ => return Err(bad("no 'fortran_order' boolean".into())),
    };
    let shape = match get("shape") {
        Some(Lit::Tuple(t)) => t
            .iter()
            .map(|d| match d {
                Lit::Int(i) => Some(*i),
                _ => None,
            })
            .collect::<Option<Vec<u64>>>()
            .ok_or_else(|| bad("a 'shape' entry is not a non-negative integer".into()))?,
        _ => return Err(bad("no 'shape' tuple".into())),
    };
    let (dtype, element_size, big_endian) = descr_info(&descr);
    Ok(Header {
        major,
        minor,
        object: descr.trim_start_matches(['|', '<', '>', '=']) == "O",
        descr,
        fortran_order,
        shape,
        data_offset: total,
        dtype,
        element_size,
        big_endian,
    })
}

/// (safetensors name, bytes per element, big-endian) of a numpy type string. The name is
/// `None` for big-endian data (safetensors is little-endian) and for kinds safetensors has
/// no name for.
pub fn descr_info(descr: &str) -> (Option<&'static str>, Option<u64>, bool) {
    let (order, rest) = match descr.chars().next() {
        Some(c @ ('<' | '>' | '|' | '=')) => (c, descr.get(1..).unwrap_or("")),
        _ => ('=', descr),
    };
    let big = order == '>';
    let (name, size) = match rest {
        "f2" => (Some("F16"), 2),
        "f4" => (Some("F32"), 4),
        "f8" => (Some("F64"), 8),
        "i1" => (Some("I8"), 1),
        "i2" => (Some("I16"), 2),
        "i4" => (Some("I32"), 4),
        "i8" => (Some("I64"), 8),
        "u1" => (Some("U8"), 1),
        "u2" => (Some("U16"), 2),
        "u4" => (Some("U32"), 4),
        "u8" => (Some("U64"), 8),
        "b1" => (Some("BOOL"), 1),
        "c8" => (Some("C64"), 8),
        "c16" => (None, 16),
        "O" => (None, 8),
        _ => {
            // e.g. "S10", "U5", "V16": kind + size
            let digits: String = rest.chars().skip(1).collect();
            let size = digits.parse::<u64>().ok();
            let size = match rest.chars().next() {
                Some('U') => size.and_then(|s| s.checked_mul(4)),
                _ => size,
            };
            return (None, size, big);
        }
    };
    let name = if big && size > 1 { None } else { name };
    (name, Some(size), big)
}

/// The literal values numpy writes.
#[derive(Clone, Debug, PartialEq)]
enum Lit {
    Str(String),
    Int(u64),
    Bool(bool),
    None,
    Tuple(Vec<Lit>),
    List(Vec<Lit>),
    Dict(Vec<(Lit, Lit)>),
}

struct LitParser<'a> {
    s: &'a [u8],
    i: usize,
}

impl Lit {
    fn parser(text: &str) -> LitParser<'_> {
        LitParser {
            s: text.as_bytes(),
            i: 0,
        }
    }
}

impl LitParser<'_> {
    fn ws(&mut self) {
        while self.s.get(self.i).is_some_and(|c| c.is_ascii_whitespace()) {
            self.i += 1;
        }
    }

    fn eat(&mut self, c: u8) -> bool {
        self.ws();
        if self.s.get(self.i) == Some(&c) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn seq(&mut self, close: u8, depth: usize) -> Option<Vec<Lit>> {
        let mut out = Vec::new();
        loop {
            if self.eat(close) {
                return Some(out);
            }
            out.push(self.value(depth + 1)?);
            if !self.eat(b',') {
                return self.eat(close).then_some(out);
            }
        }
    }

    fn value(&mut self, depth: usize) -> Option<Lit> {
        if depth > MAX_LITERAL_DEPTH {
            return None;
        }
        self.ws();
        let c = *self.s.get(self.i)?;
        match c {
            b'{' => {
                self.i += 1;
                let mut out = Vec::new();
                loop {
                    if self.eat(b'}') {
                        return Some(Lit::Dict(out));
                    }
                    let k = self.value(depth + 1)?;
                    if !self.eat(b':') {
                        return None;
                    }
                    let v = self.value(depth + 1)?;
                    out.push((k, v));
                    if !self.eat(b',') {
                        return self.eat(b'}').then_some(Lit::Dict(out));
                    }
                }
            }
            b'(' => {
                self.i += 1;
                self.seq(b')', depth).map(Lit::Tuple)
            }
            b'[' => {
                self.i += 1;
                self.seq(b']', depth).map(Lit::List)
            }
            b'\'' | b'"' => {
                self.i += 1;
                let start = self.i;
                while *self.s.get(self.i)? != c {
                    self.i += 1;
                }
                let v = std::str::from_utf8(self.s.get(start..self.i)?)
                    .ok()?
                    .to_string();
                self.i += 1;
                Some(Lit::Str(v))
            }
            b'0'..=b'9' => {
                let start = self.i;
                while self.s.get(self.i).is_some_and(|d| d.is_ascii_digit()) {
                    self.i += 1;
                }
                let v = std::str::from_utf8(self.s.get(start..self.i)?)
                    .ok()?
                    .parse()
                    .ok()?;
                if self.s.get(self.i) == Some(&b'L') {
                    self.i += 1; // Python 2 long
                }
                Some(Lit::Int(v))
            }
            _ => {
                for (word, lit) in [
                    ("True", Lit::Bool(true)),
                    ("False", Lit::Bool(false)),
                    ("None", Lit::None),
                ] {
                    if self.s.get(self.i..self.i + word.len()) == Some(word.as_bytes()) {
                        self.i += word.len();
                        return Some(lit);
                    }
                }
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn npy(header: &str) -> Vec<u8> {
        let mut v = MAGIC.to_vec();
        v.extend_from_slice(&[1, 0]);
        v.extend_from_slice(&(header.len() as u16).to_le_bytes());
        v.extend_from_slice(header.as_bytes());
        v
    }

    #[test]
    fn parses_numpy_headers() {
        let h = parse(
            &npy("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }        \n"),
            0,
        )
        .unwrap();
        assert_eq!(
            (h.descr.as_str(), h.fortran_order, h.shape.clone(), h.dtype),
            ("<f4", false, vec![3, 4], Some("F32"))
        );
        let h = parse(
            &npy("{'descr': '|O', 'fortran_order': True, 'shape': (), }\n"),
            0,
        )
        .unwrap();
        assert!(h.object && h.fortran_order && h.shape.is_empty());
        let h = parse(
            &npy("{'descr': '>i4', 'fortran_order': False, 'shape': (3,), }\n"),
            0,
        )
        .unwrap();
        assert_eq!(
            (h.dtype, h.big_endian, h.shape.clone()),
            (None, true, vec![3])
        );
        let h = parse(
            &npy("{'descr': [('a', '<i4')], 'fortran_order': False, 'shape': (2,), }\n"),
            0,
        )
        .unwrap();
        assert_eq!(h.descr, "structured");
    }

    #[test]
    fn refuses_broken_headers() {
        assert!(parse(&npy("{'descr': '<f4', 'shape': (3,), }\n"), 0).is_err());
        assert!(parse(&npy("__import__('os')\n"), 0).is_err());
        assert!(
            parse(b"\x93NUMPY\x01\x00\xff\x00{", 0).is_err(),
            "cut short"
        );
        assert!(header_len(b"\x93NUMPY\x09\x00", 0).is_err());
        assert!(
            parse(&npy(&format!("{}\n", "(".repeat(100))), 0).is_err(),
            "too deep"
        );
    }
}
