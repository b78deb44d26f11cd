//! File formats. Every parser is a synchronous function over (prefix bytes, total file
//! length) that either finishes or says how long a prefix it needs ([`Step::Need`]); the
//! async driver in `source` fetches that many bytes and calls it again.

pub mod checkpoint;
pub mod gguf;
pub mod gguf_split;
pub mod safetensors;
pub mod npy;
pub mod pickle;
pub mod torch;
pub mod zip;

use crate::report::Format;

/// The outcome of one parse attempt over a prefix of the file.
#[derive(Clone, Debug, PartialEq)]
pub enum Step<T> {
    /// The parser is finished (possibly with findings).
    Done(T),
    /// The parser needs a prefix of at least this many bytes (never more than the file).
    Need(u64),
}

/// Bytes needed to tell the formats apart.
pub const SNIFF_LEN: u64 = 9;

/// Tells the format from the first bytes alone (no side effects, no allocation).
/// `GGUF` magic → GGUF; a plausible u64 header length followed by `{` (or JSON
/// whitespace) → safetensors; anything else → unknown.
pub fn sniff(prefix: &[u8], file_len: u64) -> Format {
    if prefix.get(..4) == Some(b"GGUF".as_slice()) {
        return Format::Gguf;
    }
    let Some(n_bytes) = prefix.get(..8) else {
        return Format::Unknown;
    };
    let mut n = [0u8; 8];
    n.copy_from_slice(n_bytes);
    let n = u64::from_le_bytes(n);
    let fits = n
        .checked_add(safetensors::LEN_PREFIX)
        .is_some_and(|end| end <= file_len);
    match prefix.get(8) {
        Some(b'{' | b' ' | b'\t' | b'\n' | b'\r') if fits => Format::Safetensors,
        _ => Format::Unknown,
    }
}

/// Format guessed from a file name, for files too short or too broken to sniff.
pub fn format_from_name(name: &str) -> Format {
    let lower = name.to_ascii_lowercase();
    if lower.ends_with(".gguf") {
        Format::Gguf
    } else if lower.ends_with(".safetensors") {
        Format::Safetensors
    } else {
        Format::Unknown
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sniffs() {
        assert_eq!(sniff(b"GGUF\x03\0\0\0", 100), Format::Gguf);
        let mut st = 2u64.to_le_bytes().to_vec();
        st.extend_from_slice(b"{}");
        assert_eq!(sniff(&st, 10), Format::Safetensors);
        assert_eq!(sniff(&st, 9), Format::Unknown, "header past the end");
        assert_eq!(sniff(b"PK\x03\x04abcdef", 100), Format::Unknown);
        assert_eq!(sniff(b"", 0), Format::Unknown);
        assert_eq!(format_from_name("A.SafeTensors"), Format::Safetensors);
    }
}
