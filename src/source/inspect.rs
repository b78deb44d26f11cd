//! One file's header, read: sniff the format from the first bytes, then drive that format's
//! parser over exactly the prefix it asks for (the pickle family: the ranges it asks for,
//! [`super::ranges`]). Tensor data is never read.

use super::{drive, ranges, ByteSource, DriveError, Prefix};
use crate::error::{Code, Finding};
use crate::formats::{self, gguf, safetensors, torch, Inspection, Parsed};
use crate::vocab::Format;

/// GGUF headers are read in ranges of this granularity: the first read is this long, and
/// each later one extends the prefix to what the parser still needs, rounded up to it. A
/// 1 MiB step keeps a 10 MB tokenizer to ~10 reads while overshooting the data start by
/// less than 1 MiB (the report's `bytes_read` stays within data_start + this).
pub const GGUF_READ_GRANULARITY: u64 = 1 << 20;

/// The GGUF read plan: `need` rounded up to the granularity (at least one granule).
pub fn gguf_read_hint(_have: u64, need: u64) -> u64 {
    let g = GGUF_READ_GRANULARITY;
    need.max(1).div_ceil(g).saturating_mul(g)
}

/// Inspects one file: sniffs the format from its first bytes, then reads only the header.
pub async fn inspect<S: ByteSource + ?Sized>(src: &S, name: &str) -> Inspection {
    let len = src.len();
    let mut prefix = Prefix::new(src);
    // safetensors needs exactly its 8-byte length first; that is also enough to sniff.
    if let Err(e) = prefix.extend_to(safetensors::LEN_PREFIX).await {
        return Inspection::failed(name, len, Format::Unknown, prefix.bytes_read(), DriveError::Read(e).finding());
    }
    let mut format = formats::sniff(prefix.bytes(), len);
    if format == Format::Unknown && prefix.bytes().get(..4) != Some(b"GGUF".as_slice()) {
        // Too short or broken to sniff: trust the name so the person sees why.
        format = formats::format_from_name(name);
    }
    let parsed = match format {
        Format::Safetensors => drive(&mut prefix, safetensors::parse, |_, need| need).await.map(Parsed::Safetensors),
        Format::Gguf => {
            // One resume point across rounds: each round continues after the last whole
            // metadata entry instead of starting over.
            let resume = std::cell::RefCell::new(gguf::Resume::default());
            let parse = |p: &[u8], l: u64| gguf::parse_resumable(p, l, &mut resume.borrow_mut());
            drive(&mut prefix, parse, gguf_read_hint).await.map(|g| Parsed::Gguf(Box::new(g)))
        }
        f if f.is_pickle_family() => {
            let (result, cost) = ranges::read_ranges(src, prefix.bytes()).await;
            return match result {
                Ok(i) => {
                    let file = torch::TorchFile::new(i, name);
                    Inspection::new(name, len, file.format(), cost.bytes, Parsed::Torch(Box::new(file)))
                }
                Err(e) => Inspection::failed(name, len, format, cost.bytes, e.finding()),
            };
        }
        _ => {
            let finding = Finding::error(Code::UnknownFormat, "not a safetensors, GGUF, PyTorch, pickle or numpy file: the first bytes match none of them").at(0);
            return Inspection::failed(name, len, Format::Unknown, prefix.bytes_read(), finding);
        }
    };
    match parsed {
        Ok(p) => Inspection::new(name, len, format, prefix.bytes_read(), p),
        Err(e) => Inspection::failed(name, len, format, prefix.bytes_read(), e.finding()),
    }
}
