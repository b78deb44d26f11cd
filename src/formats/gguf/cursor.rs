//! Reading numbers and length-prefixed strings from a prefix of a GGUF file, in the file's
//! byte order, with every length checked against what remains in the *file* first.

use super::value::{Value, ValueType};
use super::MAX_GGUF_HEADER_BYTES;
use crate::error::{Code, Finding};

/// Why reading stopped early.
pub(super) enum Stop {
    /// The prefix must be at least this long.
    Need(u64),
    /// The rest cannot be read (the finding says why). Boxed: keeps the hot `Result`s small.
    Fail(Box<Finding>),
}

pub(super) type R<T> = Result<T, Stop>;

/// A position in the prefix of a file, reading numbers in the file's byte order.
pub(super) struct Cursor<'a> {
    pub(super) buf: &'a [u8],
    pub(super) pos: u64,
    pub(super) file_len: u64,
    pub(super) big: bool,
    pub(super) v1: bool,
    /// A lower bound on how far the header must reach, for `Need`.
    pub(super) hint: u64,
}

impl<'a> Cursor<'a> {
    pub(super) fn remaining_in_file(&self) -> u64 {
        self.file_len.saturating_sub(self.pos)
    }

    /// Checks that `bytes` (None = overflowed) fit in what remains of the file.
    #[inline]
    pub(super) fn claim(&self, bytes: Option<u64>, what: impl FnOnce() -> String, at: u64, field: &str) -> R<()> {
        match bytes {
            Some(b) if b <= self.remaining_in_file() => Ok(()),
            _ => Err(Stop::Fail(Box::new(
                Finding::error(
                    Code::CountTooLarge,
                    format!("{}, but only {} bytes remain in the file", what(), self.remaining_in_file()),
                )
                .at(at)
                .field(field),
            ))),
        }
    }

    /// The header must fit in [`MAX_GGUF_HEADER_BYTES`]: checked against the lower bound of
    /// where it ends ([`Cursor::hint`]) as soon as it is known, and against every read. Both
    /// depend on the file alone, not on how much of it was read, so a parse over any prefix
    /// stops at the same place.
    pub(super) fn check_hint(&self, field: &str) -> R<()> {
        if self.hint > MAX_GGUF_HEADER_BYTES {
            return Err(too_large(self.pos, field, format!("the header needs at least {} bytes", self.hint)));
        }
        Ok(())
    }

    #[inline]
    pub(super) fn take(&mut self, n: u64, field: &str) -> R<&'a [u8]> {
        let end = match self.pos.checked_add(n) {
            Some(e) if e <= self.file_len => e,
            _ => {
                return Err(Stop::Fail(Box::new(
                    Finding::error(
                        Code::FileTooShort,
                        format!("the file ends inside the header: {} needs {n} bytes at byte {}, the file has {}", crate::error::clip(field), self.pos, self.file_len),
                    )
                    .at(self.pos)
                    .field(field),
                )))
            }
        };
        if end > MAX_GGUF_HEADER_BYTES {
            return Err(too_large(self.pos, field, format!("{} needs {n} bytes at byte {}", crate::error::clip(field), self.pos)));
        }
        let slice = usize::try_from(self.pos)
            .ok()
            .zip(usize::try_from(end).ok())
            .and_then(|(s, e)| self.buf.get(s..e));
        match slice {
            Some(s) => {
                self.pos = end;
                Ok(s)
            }
            None => Err(Stop::Need(end.max(self.hint).min(self.file_len))),
        }
    }

    #[inline]
    pub(super) fn array<const N: usize>(&mut self, field: &str) -> R<[u8; N]> {
        let s = self.take(N as u64, field)?;
        let mut a = [0u8; N];
        if s.len() == N {
            a.copy_from_slice(s);
        }
        Ok(a)
    }

    #[inline]
    pub(super) fn u32(&mut self, field: &str) -> R<u32> {
        let a = self.array::<4>(field)?;
        Ok(if self.big { u32::from_be_bytes(a) } else { u32::from_le_bytes(a) })
    }

    #[inline]
    pub(super) fn u64(&mut self, field: &str) -> R<u64> {
        let a = self.array::<8>(field)?;
        Ok(if self.big { u64::from_be_bytes(a) } else { u64::from_le_bytes(a) })
    }

    /// A count or length: u32 in version 1, u64 after.
    #[inline]
    pub(super) fn len(&mut self, field: &str) -> R<u64> {
        if self.v1 {
            self.u32(field).map(u64::from)
        } else {
            self.u64(field)
        }
    }

    /// A string's bytes, its length checked against the file first.
    #[inline]
    pub(super) fn string(&mut self, field: &str) -> R<&'a [u8]> {
        let at = self.pos;
        let n = self.len(field)?;
        self.claim(Some(n), || format!("{field} claims a string of {n} bytes"), at, field)?;
        self.take(n, field)
    }

    pub(super) fn scalar(&mut self, t: ValueType, field: &str) -> R<Value> {
        let big = self.big;
        macro_rules! num {
            ($n:literal, $ty:ty, $var:ident) => {{
                let a = self.array::<$n>(field)?;
                Value::$var(if big { <$ty>::from_be_bytes(a) } else { <$ty>::from_le_bytes(a) })
            }};
        }
        Ok(match t {
            ValueType::U8 => num!(1, u8, U8),
            ValueType::I8 => num!(1, i8, I8),
            ValueType::U16 => num!(2, u16, U16),
            ValueType::I16 => num!(2, i16, I16),
            ValueType::U32 => num!(4, u32, U32),
            ValueType::I32 => num!(4, i32, I32),
            ValueType::F32 => num!(4, f32, F32),
            ValueType::Bool => num!(1, u8, Bool),
            ValueType::U64 => num!(8, u64, U64),
            ValueType::I64 => num!(8, i64, I64),
            ValueType::F64 => num!(8, f64, F64),
            ValueType::String => {
                let s = self.string(field)?;
                Value::String(String::from_utf8_lossy(s).into_owned())
            }
            // Arrays are read by `value`.
            ValueType::Array => Value::U8(0),
        })
    }
}

#[cold]
fn too_large(at: u64, field: &str, what: String) -> Stop {
    Stop::Fail(Box::new(
        Finding::error(
            Code::HeaderTooLarge,
            format!("{what}: past the limit of {MAX_GGUF_HEADER_BYTES} bytes for a GGUF header (metadata and tensor infos); the rest is not read"),
        )
        .at(at)
        .field(field),
    ))
}

/// The length-prefixed string at `pos` when it lies wholly in `buf` (the hot path of long
/// string arrays: no `Result`, no finding built). `None` sends the caller to the checked
/// path, which names the problem or asks for more bytes.
#[inline(always)]
pub(super) fn quick_str(buf: &[u8], pos: u64, v1: bool, big: bool) -> Option<(&[u8], u64)> {
    let p = usize::try_from(pos).ok()?;
    let (n, lw) = if v1 {
        let b: [u8; 4] = buf.get(p..p.checked_add(4)?)?.try_into().ok()?;
        (u64::from(if big { u32::from_be_bytes(b) } else { u32::from_le_bytes(b) }), 4usize)
    } else {
        let b: [u8; 8] = buf.get(p..p.checked_add(8)?)?.try_into().ok()?;
        (if big { u64::from_be_bytes(b) } else { u64::from_le_bytes(b) }, 8usize)
    };
    let start = p.checked_add(lw)?;
    let end = start.checked_add(usize::try_from(n).ok()?)?;
    Some((buf.get(start..end)?, end as u64))
}
