//! A long metadata array's further elements, read again from the file on request (the
//! page shows 64 tokens of 128,256 and pages through the rest).

use super::cursor::Cursor;
use super::parse::{value, Notes};
use super::value::{Value, ValueType};
use super::{Endian, Header, Kv};

/// Most elements [`array_elements`] returns at once (the page pages through the rest).
pub const MAX_ELEMENTS_PER_READ: u64 = 4096;

/// Elements `start..start+count` (at most [`MAX_ELEMENTS_PER_READ`]) of the array held by
/// `kv`, from `entry`: the entry's bytes as read again from the file
/// (`read_at(kv.offset, kv.bytes)`). The "rest on demand" of a long array. Nested arrays
/// come back with their own heads. Returns `None` when `kv` is not an array or `entry`
/// does not hold it.
pub fn array_elements(entry: &[u8], kv: &Kv, header: &Header, start: u64, count: u64) -> Option<Vec<Value>> {
    let Value::Array(a) = &kv.value else {
        return None;
    };
    let mut c = Cursor {
        buf: entry,
        pos: 0,
        file_len: entry.len() as u64,
        big: header.endian == Some(Endian::Big),
        v1: header.version == Some(1),
        hint: 0,
    };
    c.string("key").ok()?;
    let _type = c.u32("type").ok()?;
    let _elem = c.u32("type").ok()?;
    let len = c.len("len").ok()?;
    if len != a.len {
        return None;
    }
    let end = start.saturating_add(count.min(MAX_ELEMENTS_PER_READ)).min(len);
    let mut out = Vec::new();
    if let Some(size) = a.elem_type.fixed_size() {
        c.pos = c.pos.checked_add(start.checked_mul(size)?)?;
        for _ in start..end {
            out.push(c.scalar(a.elem_type, "element").ok()?);
        }
        return Some(out);
    }
    let mut notes = Notes::default();
    let mut findings = Vec::new();
    for i in 0..end {
        let v = if a.elem_type == ValueType::String {
            let s = c.string("element").ok()?;
            (i >= start).then(|| Value::String(String::from_utf8_lossy(s).into_owned()))
        } else {
            let v = value(&mut c, a.elem_type, 1, "element", &mut notes, &mut findings).ok()?;
            (i >= start).then_some(v)
        };
        out.extend(v);
    }
    Some(out)
}
