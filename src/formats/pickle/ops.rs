//! The pickle opcode table (protocols 0–5) and a decoder for one opcode and its argument.
//!
//! The table is a fact of the format: codes, names, argument encodings and the protocol
//! that introduced each opcode are those documented in CPython's `Lib/pickletools.py`
//! (`opcodes`). The decoder is written here from that description. It never allocates:
//! an argument is a borrowed slice of the input, and every length is checked against the
//! bytes that remain before it is used.
//!
//! Hand-written rather than built on `serde-pickle`: that crate decodes a stream into
//! values; it does not report every import with its opcode and byte offset, nor walk
//! nested pickles, which is the point here.

/// Longest newline-terminated argument (protocol 0 `INT`, `GLOBAL` lines, `STRING` reprs,
/// `UNICODE`) we accept. CPython has no limit; a real protocol-0 line is a number or a
/// dotted name (well under 1 KiB), and a protocol-0 string of model metadata can be
/// longer, so 16 MiB bounds the scan for the newline without refusing real files.
pub const MAX_LINE_LEN: usize = 16 << 20;

/// How an opcode's argument is encoded (the `ArgumentDescriptor`s of pickletools).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArgKind {
    /// No argument.
    None,
    /// 1-byte unsigned (`uint1`).
    U1,
    /// 2-byte little-endian unsigned (`uint2`).
    U2,
    /// 4-byte little-endian signed (`int4`).
    I4,
    /// 4-byte little-endian unsigned (`uint4`).
    U4,
    /// 8-byte little-endian unsigned (`uint8`).
    U8,
    /// 8-byte big-endian IEEE double (`float8`).
    F8,
    /// A `uint1` length then that many bytes (`string1`, `bytes1`, `unicodestring1`, `long1`).
    Counted1,
    /// A 4-byte length then that many bytes; `signed` for `string4` / `long4`, where a
    /// negative length is an error (`bytes4`, `unicodestring4` are unsigned).
    Counted4 { signed: bool },
    /// An 8-byte unsigned length then that many bytes (`bytes8`, `unicodestring8`, `bytearray8`).
    Counted8,
    /// One line up to `\n` (`decimalnl_*`, `floatnl`, `stringnl*`, `unicodestringnl`).
    Line,
    /// Two lines (`stringnl_noescape_pair`: GLOBAL and INST's module and name).
    Line2,
}

/// Every opcode of protocols 0–5.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    Mark,
    Stop,
    Pop,
    PopMark,
    Dup,
    Float,
    Int,
    BinInt,
    BinInt1,
    Long,
    BinInt2,
    None,
    PersId,
    BinPersId,
    Reduce,
    String,
    BinString,
    ShortBinString,
    Unicode,
    BinUnicode,
    Append,
    Build,
    Global,
    Dict,
    EmptyDict,
    Appends,
    Get,
    BinGet,
    Inst,
    LongBinGet,
    List,
    EmptyList,
    Obj,
    Put,
    BinPut,
    LongBinPut,
    SetItem,
    Tuple,
    EmptyTuple,
    SetItems,
    BinFloat,
    Proto,
    NewObj,
    Ext1,
    Ext2,
    Ext4,
    Tuple1,
    Tuple2,
    Tuple3,
    NewTrue,
    NewFalse,
    Long1,
    Long4,
    BinBytes,
    ShortBinBytes,
    ShortBinUnicode,
    BinUnicode8,
    BinBytes8,
    EmptySet,
    AddItems,
    FrozenSet,
    NewObjEx,
    StackGlobal,
    Memoize,
    Frame,
    ByteArray8,
    NextBuffer,
    ReadonlyBuffer,
}

/// One row of the table.
#[derive(Clone, Copy, Debug)]
pub struct OpInfo {
    pub code: u8,
    pub op: Op,
    /// The name pickletools prints (`BINUNICODE`, `STACK_GLOBAL`, …).
    pub name: &'static str,
    pub arg: ArgKind,
    /// The protocol that introduced the opcode.
    pub proto: u8,
}

macro_rules! row {
    ($code:expr, $op:ident, $name:expr, $arg:expr, $proto:expr) => {
        OpInfo {
            code: $code,
            op: Op::$op,
            name: $name,
            arg: $arg,
            proto: $proto,
        }
    };
}

use ArgKind as A;

/// The opcodes, as listed by pickletools (code, name, argument, protocol).
pub const OPCODES: [OpInfo; 68] = [
    row!(b'(', Mark, "MARK", A::None, 0),
    row!(b'.', Stop, "STOP", A::None, 0),
    row!(b'0', Pop, "POP", A::None, 0),
    row!(b'1', PopMark, "POP_MARK", A::None, 1),
    row!(b'2', Dup, "DUP", A::None, 0),
    row!(b'F', Float, "FLOAT", A::Line, 0),
    row!(b'I', Int, "INT", A::Line, 0),
    row!(b'J', BinInt, "BININT", A::I4, 1),
    row!(b'K', BinInt1, "BININT1", A::U1, 1),
    row!(b'L', Long, "LONG", A::Line, 0),
    row!(b'M', BinInt2, "BININT2", A::U2, 1),
    row!(b'N', None, "NONE", A::None, 0),
    row!(b'P', PersId, "PERSID", A::Line, 0),
    row!(b'Q', BinPersId, "BINPERSID", A::None, 1),
    row!(b'R', Reduce, "REDUCE", A::None, 0),
    row!(b'S', String, "STRING", A::Line, 0),
    row!(
        b'T',
        BinString,
        "BINSTRING",
        A::Counted4 { signed: true },
        1
    ),
    row!(b'U', ShortBinString, "SHORT_BINSTRING", A::Counted1, 1),
    row!(b'V', Unicode, "UNICODE", A::Line, 0),
    row!(
        b'X',
        BinUnicode,
        "BINUNICODE",
        A::Counted4 { signed: false },
        1
    ),
    row!(b'a', Append, "APPEND", A::None, 0),
    row!(b'b', Build, "BUILD", A::None, 0),
    row!(b'c', Global, "GLOBAL", A::Line2, 0),
    row!(b'd', Dict, "DICT", A::None, 0),
    row!(b'}', EmptyDict, "EMPTY_DICT", A::None, 1),
    row!(b'e', Appends, "APPENDS", A::None, 1),
    row!(b'g', Get, "GET", A::Line, 0),
    row!(b'h', BinGet, "BINGET", A::U1, 1),
    row!(b'i', Inst, "INST", A::Line2, 0),
    row!(b'j', LongBinGet, "LONG_BINGET", A::U4, 1),
    row!(b'l', List, "LIST", A::None, 0),
    row!(b']', EmptyList, "EMPTY_LIST", A::None, 1),
    row!(b'o', Obj, "OBJ", A::None, 1),
    row!(b'p', Put, "PUT", A::Line, 0),
    row!(b'q', BinPut, "BINPUT", A::U1, 1),
    row!(b'r', LongBinPut, "LONG_BINPUT", A::U4, 1),
    row!(b's', SetItem, "SETITEM", A::None, 0),
    row!(b't', Tuple, "TUPLE", A::None, 0),
    row!(b')', EmptyTuple, "EMPTY_TUPLE", A::None, 1),
    row!(b'u', SetItems, "SETITEMS", A::None, 1),
    row!(b'G', BinFloat, "BINFLOAT", A::F8, 1),
    row!(0x80, Proto, "PROTO", A::U1, 2),
    row!(0x81, NewObj, "NEWOBJ", A::None, 2),
    row!(0x82, Ext1, "EXT1", A::U1, 2),
    row!(0x83, Ext2, "EXT2", A::U2, 2),
    row!(0x84, Ext4, "EXT4", A::I4, 2),
    row!(0x85, Tuple1, "TUPLE1", A::None, 2),
    row!(0x86, Tuple2, "TUPLE2", A::None, 2),
    row!(0x87, Tuple3, "TUPLE3", A::None, 2),
    row!(0x88, NewTrue, "NEWTRUE", A::None, 2),
    row!(0x89, NewFalse, "NEWFALSE", A::None, 2),
    row!(0x8a, Long1, "LONG1", A::Counted1, 2),
    row!(0x8b, Long4, "LONG4", A::Counted4 { signed: true }, 2),
    row!(b'B', BinBytes, "BINBYTES", A::Counted4 { signed: false }, 3),
    row!(b'C', ShortBinBytes, "SHORT_BINBYTES", A::Counted1, 3),
    row!(0x8c, ShortBinUnicode, "SHORT_BINUNICODE", A::Counted1, 4),
    row!(0x8d, BinUnicode8, "BINUNICODE8", A::Counted8, 4),
    row!(0x8e, BinBytes8, "BINBYTES8", A::Counted8, 4),
    row!(0x8f, EmptySet, "EMPTY_SET", A::None, 4),
    row!(0x90, AddItems, "ADDITEMS", A::None, 4),
    row!(0x91, FrozenSet, "FROZENSET", A::None, 4),
    row!(0x92, NewObjEx, "NEWOBJ_EX", A::None, 4),
    row!(0x93, StackGlobal, "STACK_GLOBAL", A::None, 4),
    row!(0x94, Memoize, "MEMOIZE", A::None, 4),
    row!(0x95, Frame, "FRAME", A::U8, 4),
    row!(0x96, ByteArray8, "BYTEARRAY8", A::Counted8, 5),
    row!(0x97, NextBuffer, "NEXT_BUFFER", A::None, 5),
    row!(0x98, ReadonlyBuffer, "READONLY_BUFFER", A::None, 5),
];

/// Code → row, built at compile time (256 entries, `None` for bytes that are no opcode).
const BY_CODE: [Option<OpInfo>; 256] = {
    let mut t: [Option<OpInfo>; 256] = [None; 256];
    let mut i = 0;
    while i < OPCODES.len() {
        t[OPCODES[i].code as usize] = Some(OPCODES[i]);
        i += 1;
    }
    t
};

/// The row of an opcode byte, if it is one.
pub fn info(code: u8) -> Option<&'static OpInfo> {
    BY_CODE.get(code as usize).and_then(|o| o.as_ref())
}

/// The table's name equal to `name` (an opcode name read back from a serialized form), or
/// "?" when no opcode has it.
pub fn static_name(name: &str) -> &'static str {
    OPCODES.iter().find(|r| r.name == name).map_or("?", |r| r.name)
}

impl Op {
    /// The pickletools name of the opcode.
    pub fn name(self) -> &'static str {
        OPCODES
            .iter()
            .find(|r| r.op == self)
            .map_or("?", |r| r.name)
    }
}

/// A decoded argument, borrowed from the input.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Arg<'a> {
    None,
    /// U1, U2, I4, U4, U8 (U8 values above i64::MAX are kept exact in the u64 cast back).
    Int(i64),
    /// U8 arguments (FRAME) as read.
    U64(u64),
    Float(f64),
    /// A counted byte string (also LONG1/LONG4's two's complement bytes).
    Bytes(&'a [u8]),
    /// One line without its `\n`.
    Line(&'a [u8]),
    /// GLOBAL / INST: module and name lines.
    Pair(&'a [u8], &'a [u8]),
}

/// Why an opcode could not be decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecodeError {
    /// The input ends inside the opcode; `need` is the end offset it would need (saturated).
    Truncated { need: u64 },
    /// The byte is not an opcode.
    UnknownOpcode(u8),
    /// A negative length (`BINSTRING`, `LONG4`).
    NegativeLength(i64),
    /// No `\n` within [`MAX_LINE_LEN`] bytes although the input goes on.
    LineTooLong,
}

/// One decoded opcode.
#[derive(Clone, Copy, Debug)]
pub struct Decoded<'a> {
    pub info: &'static OpInfo,
    pub arg: Arg<'a>,
    /// Offset just past the opcode and its argument.
    pub next: usize,
}

fn take(data: &[u8], at: usize, n: u64) -> Result<&[u8], DecodeError> {
    let end = (at as u64).saturating_add(n);
    let Ok(end_us) = usize::try_from(end) else {
        return Err(DecodeError::Truncated { need: end });
    };
    data.get(at..end_us)
        .ok_or(DecodeError::Truncated { need: end })
}

fn fixed<const N: usize>(data: &[u8], at: usize) -> Result<[u8; N], DecodeError> {
    let s = take(data, at, N as u64)?;
    let mut b = [0u8; N];
    b.copy_from_slice(s);
    Ok(b)
}

fn line(data: &[u8], at: usize) -> Result<(&[u8], usize), DecodeError> {
    let rest = data.get(at..).unwrap_or(&[]);
    let window = rest.get(..MAX_LINE_LEN.min(rest.len())).unwrap_or(rest);
    match window.iter().position(|&b| b == b'\n') {
        Some(i) => Ok((window.get(..i).unwrap_or(&[]), at + i + 1)),
        None if rest.len() > MAX_LINE_LEN => Err(DecodeError::LineTooLong),
        None => Err(DecodeError::Truncated {
            need: (data.len() as u64).saturating_add(1),
        }),
    }
}

/// Decodes the opcode at `pos`.
pub fn decode(data: &[u8], pos: usize) -> Result<Decoded<'_>, DecodeError> {
    let Some(&code) = data.get(pos) else {
        return Err(DecodeError::Truncated {
            need: pos as u64 + 1,
        });
    };
    let Some(info) = info(code) else {
        return Err(DecodeError::UnknownOpcode(code));
    };
    let at = pos + 1;
    let (arg, next) = match info.arg {
        A::None => (Arg::None, at),
        A::U1 => (
            Arg::Int(i64::from(u8::from_le_bytes(fixed(data, at)?))),
            at + 1,
        ),
        A::U2 => (
            Arg::Int(i64::from(u16::from_le_bytes(fixed(data, at)?))),
            at + 2,
        ),
        A::I4 => (
            Arg::Int(i64::from(i32::from_le_bytes(fixed(data, at)?))),
            at + 4,
        ),
        A::U4 => (
            Arg::Int(i64::from(u32::from_le_bytes(fixed(data, at)?))),
            at + 4,
        ),
        A::U8 => (Arg::U64(u64::from_le_bytes(fixed(data, at)?)), at + 8),
        A::F8 => (Arg::Float(f64::from_be_bytes(fixed(data, at)?)), at + 8),
        A::Counted1 => {
            let n = u64::from(u8::from_le_bytes(fixed(data, at)?));
            let s = take(data, at + 1, n)?;
            (Arg::Bytes(s), at + 1 + s.len())
        }
        A::Counted4 { signed } => {
            let raw = fixed::<4>(data, at)?;
            let n = if signed {
                let v = i32::from_le_bytes(raw);
                if v < 0 {
                    return Err(DecodeError::NegativeLength(i64::from(v)));
                }
                v as u64
            } else {
                u64::from(u32::from_le_bytes(raw))
            };
            let s = take(data, at + 4, n)?;
            (Arg::Bytes(s), at + 4 + s.len())
        }
        A::Counted8 => {
            let n = u64::from_le_bytes(fixed(data, at)?);
            let s = take(data, at + 8, n)?;
            (Arg::Bytes(s), at + 8 + s.len())
        }
        A::Line => {
            let (l, next) = line(data, at)?;
            (Arg::Line(l), next)
        }
        A::Line2 => {
            let (a, mid) = line(data, at)?;
            let (b, next) = line(data, mid)?;
            (Arg::Pair(a, b), next)
        }
    };
    Ok(Decoded { info, arg, next })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_complete_and_unique() {
        let mut seen = std::collections::HashSet::new();
        for r in OPCODES.iter() {
            assert!(seen.insert(r.code), "duplicate code {:#x}", r.code);
            assert_eq!(info(r.code).map(|i| i.name), Some(r.name));
        }
        // pickletools: 68 opcodes in protocols 0-5; highest code 0x98
        assert_eq!(seen.len(), 68);
        assert!(info(0x99).is_none());
        assert!(info(b'A').is_none());
    }

    #[test]
    fn decodes_arguments() {
        let d = decode(b"J\xff\xff\xff\xff", 0).unwrap();
        assert_eq!((d.info.name, d.arg, d.next), ("BININT", Arg::Int(-1), 5));
        let d = decode(b"cos\nsystem\n.", 0).unwrap();
        assert_eq!(d.arg, Arg::Pair(b"os", b"system"));
        assert_eq!(d.next, 11);
        let d = decode(b"\x8c\x02ab", 0).unwrap();
        assert_eq!(d.arg, Arg::Bytes(b"ab"));
        assert_eq!(
            decode(b"\x8c\x05ab", 0).unwrap_err(),
            DecodeError::Truncated { need: 7 }
        );
        assert_eq!(
            decode(b"T\xff\xff\xff\xffab", 0).unwrap_err(),
            DecodeError::NegativeLength(-1)
        );
        assert_eq!(
            decode(b"\xff", 0).unwrap_err(),
            DecodeError::UnknownOpcode(0xff)
        );
        // a huge 8-byte count must not allocate or overflow
        let d = decode(b"\x8e\xff\xff\xff\xff\xff\xff\xff\xff", 0).unwrap_err();
        assert_eq!(d, DecodeError::Truncated { need: u64::MAX });
        assert_eq!(
            decode(b"Iabc", 0).unwrap_err(),
            DecodeError::Truncated { need: 5 }
        );
        let d = decode(b"G?\xf0\x00\x00\x00\x00\x00\x00", 0).unwrap();
        assert_eq!(d.arg, Arg::Float(1.0));
    }
}
