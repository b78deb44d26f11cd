//! Constants: numbers (FLOAT, INT, LONG and their binary forms), strings (decoded, kept up
//! to [`MAX_STRING_KEPT`]) and bytes (kept as their place in the stream).

use super::{malformed, Machine, Res};
use crate::formats::pickle::eval::text::{latin1, parse_int_line, text, unrepr};
use crate::formats::pickle::eval::value::Value;
use std::rc::Rc;

/// Longest string kept as a value (keys, module and class names); a longer one is kept
/// only as its length and cannot name an import or a tensor.
pub const MAX_STRING_KEPT: usize = 1 << 20;

impl Machine<'_, '_> {
    /// FLOAT.
    pub(super) fn float_line(&mut self, l: &[u8]) -> Res<()> {
        let v = std::str::from_utf8(l)
            .ok()
            .and_then(|s| s.trim().parse::<f64>().ok());
        match v {
            Some(f) => self.push(Value::Float(f)),
            None => malformed(format!("not a float: {:?}", text(l))),
        }
    }

    /// INT, LONG.
    pub(super) fn int_line(&mut self, l: &[u8]) -> Res<()> {
        match parse_int_line(l) {
            Some(v) => self.push(v),
            None => malformed(format!("not an integer: {:?}", text(l))),
        }
    }

    /// STRING: a Python 2 `repr`.
    pub(super) fn quoted_string(&mut self, l: &[u8]) -> Res<()> {
        let Some(b) = unrepr(l) else {
            return malformed("the STRING argument must be quoted");
        };
        self.push_string(&b, latin1)
    }

    /// A string constant, decoded by `decode`.
    pub(super) fn push_string(&mut self, bytes: &[u8], decode: fn(&[u8]) -> String) -> Res<()> {
        let v = self.string(bytes, decode);
        self.push(v)
    }

    /// A bytes constant.
    pub(super) fn push_bytes(&mut self, b: &[u8]) -> Res<()> {
        let v = self.bytes_value(b);
        self.push(v)
    }

    fn string(&mut self, bytes: &[u8], decode: fn(&[u8]) -> String) -> Value {
        if bytes.len() > MAX_STRING_KEPT {
            return Value::LongStr(bytes.len() as u64);
        }
        // the Rc's two counts and the text
        self.sink.hold(16 + bytes.len());
        // ASCII reads the same in every decoding: one allocation
        if bytes.is_ascii() {
            if let Ok(s) = std::str::from_utf8(bytes) {
                return Value::Str(Rc::from(s));
            }
        }
        Value::Str(Rc::from(decode(bytes)))
    }

    fn bytes_value(&self, b: &[u8]) -> Value {
        // b is a sub-slice of self.data: its offset is the pointer difference
        let off = (b.as_ptr() as usize).saturating_sub(self.data.as_ptr() as usize);
        Value::Bytes {
            at: self.abs(off),
            len: b.len() as u64,
        }
    }
}
