//! Element decoding: stored bytes → f64 values, for every safetensors dtype and (through
//! [`super::quant`]) every GGUF type we can dequantize.
//!
//! A [`Codec`] is chosen once per tensor. It decodes whole *units* (one element, or the
//! smallest group of packed elements / one quantization block) from a byte slice into a
//! reusable `f64` buffer, so the per-element work is a tight loop with no dynamic dispatch.
//! [`ValueDecoder`] adds streaming: it accepts the tensor's bytes in chunks of any size
//! and carries a partial unit across chunk boundaries.
//!
//! Encodings (facts from the OCP Microscaling Formats (MX) v1.0 spec and the ml_dtypes
//! definitions; checked against `ml_dtypes` by tests/fixtures/make_values.py):
//! - F8_E4M3 (`float8_e4m3fn`): bias 7, no infinities, S.1111.111 is NaN, max 448.
//! - F8_E5M2 (`float8_e5m2`): IEEE-like, bias 15, infinities and NaNs.
//! - F8_E4M3FNUZ / F8_E5M2FNUZ: bias 8 / 16, no infinities, no −0: 0x80 is the only NaN.
//! - F8_E8M0 (`float8_e8m0fnu`, the MX scale type): unsigned exponent only, 2^(e−127),
//!   0xFF is NaN; no zero, no subnormals.
//! - F6_E2M3 / F6_E3M2 / F4 (E2M1): bias 1 / 3 / 1, all encodings finite (no Inf/NaN).
//!
//! Sub-byte packing (how the elements sit in the stored bytes):
//! - F4: two elements per byte, element 2k in the low nibble (bits 3..0), element 2k+1 in
//!   the high nibble (bits 7..4). This is PyTorch's `float4_e2m1fn_x2` layout ("val1 :
//!   val0" from MSB to LSB, c10/util/Float4_e2m1fn_x2.h), which is what safetensors
//!   stores for F4.
//! - F6_*: four elements in three bytes, as a little-endian bit stream: with
//!   `w = b0 | b1<<8 | b2<<16`, element 4k+j is `(w >> 6j) & 0x3F`. No reference writer
//!   for packed F6 exists (PyTorch has no F6 dtype; ml_dtypes keeps one F6 per byte), so
//!   this is the natural extension of the F4 order; the fixture script packs the same way.
//!
//! C64 (complex64: f32 real, f32 imaginary) is decoded as magnitudes `|re + i·im|`
//! computed in f64 ([`Codec::note`] says so for the page and the report).

use super::Value;
use super::quant::{self, QuantKind};
use super::{Dtype, TensorDtype};

/// How many decoded values a [`ValueDecoder`] hands out at a time. 16 Ki f64 = 128 KiB:
/// stays in L2 while the stats make their passes over it.
pub const DECODE_BATCH_VALUES: usize = 16 * 1024;

/// The largest unit (bytes) any codec decodes at once: a Q8_K block (292 bytes).
pub const MAX_UNIT_BYTES: usize = quant::MAX_BLOCK_BYTES;

/// Why a tensor's values cannot be decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NotDecoded {
    /// A known type whose decoding is not implemented (the ids ggml removed: Q4_0_4_4, …).
    Unsupported(String),
    /// A type name we do not know at all.
    Unknown(String),
}

impl NotDecoded {
    pub fn message(&self) -> String {
        match self {
            NotDecoded::Unsupported(t) => format!("values not decoded for this type ({t})"),
            NotDecoded::Unknown(t) => format!("values not decoded: unknown type {:?}", crate::error::clip(t)),
        }
    }
}

/// A decoder for one element type. Every variant decodes whole units of
/// [`Codec::unit_bytes`] bytes into [`Codec::unit_values`] values.
#[derive(Clone, Debug)]
pub enum Codec {
    Bool,
    U8,
    I8,
    U16,
    I16,
    U32,
    I32,
    U64,
    I64,
    F16,
    Bf16,
    F32,
    F64,
    /// complex64 as magnitudes.
    C64,
    /// An 8-bit type through a 256-entry table (all F8 variants), with the type's
    /// smallest normal magnitude.
    Lut8(Box<[f64; 256]>, f64),
    /// Two 4-bit elements per byte, low nibble first.
    Lut4x2(Box<[f64; 16]>, f64),
    /// Four 6-bit elements per three bytes, little-endian bit stream.
    Lut6x4(Box<[f64; 64]>, f64),
    /// A ggml block-quantized type.
    Quant(QuantKind),
}

/// Decodes a small float with `ebits` exponent and `mbits` mantissa bits (sign bit above
/// them) and the given bias, treating every encoding as finite. Callers patch NaN/Inf.
fn minifloat(bits: u32, ebits: u32, mbits: u32, bias: i32) -> f64 {
    let sign = if (bits >> (ebits + mbits)) & 1 == 1 { -1.0 } else { 1.0 };
    let e = ((bits >> mbits) & ((1 << ebits) - 1)) as i32;
    let m = f64::from(bits & ((1 << mbits) - 1));
    let frac = m / f64::from(1u32 << mbits);
    let mag = if e == 0 {
        frac * 2f64.powi(1 - bias)
    } else {
        (1.0 + frac) * 2f64.powi(e - bias)
    };
    sign * mag
}

/// The smallest positive normal number of a float type with this bias: `2^(1 − bias)`.
fn min_normal(bias: i32) -> f64 {
    2f64.powi(1 - bias)
}

fn lut8(f: impl Fn(u8) -> f64) -> Box<[f64; 256]> {
    let mut t = Box::new([0.0f64; 256]);
    for (i, slot) in (0u8..=255).zip(t.iter_mut()) {
        *slot = f(i);
    }
    t
}

fn lut_n<const N: usize>(f: impl Fn(u32) -> f64) -> [f64; N] {
    let mut t = [0.0f64; N];
    for (i, slot) in (0u32..).zip(t.iter_mut()) {
        *slot = f(i);
    }
    t
}

impl Codec {
    /// The codec for a safetensors dtype.
    pub fn for_safetensors(d: Dtype) -> Codec {
        match d {
            Dtype::Bool => Codec::Bool,
            Dtype::U8 => Codec::U8,
            Dtype::I8 => Codec::I8,
            Dtype::U16 => Codec::U16,
            Dtype::I16 => Codec::I16,
            Dtype::U32 => Codec::U32,
            Dtype::I32 => Codec::I32,
            Dtype::U64 => Codec::U64,
            Dtype::I64 => Codec::I64,
            Dtype::F16 => Codec::F16,
            Dtype::Bf16 => Codec::Bf16,
            Dtype::F32 => Codec::F32,
            Dtype::F64 => Codec::F64,
            Dtype::C64 => Codec::C64,
            Dtype::F8E4m3 => Codec::Lut8(
                lut8(|b| {
                    if b & 0x7F == 0x7F {
                        f64::NAN
                    } else {
                        minifloat(u32::from(b), 4, 3, 7)
                    }
                }),
                min_normal(7),
            ),
            Dtype::F8E5m2 => Codec::Lut8(lut8(|b| {
                let v = minifloat(u32::from(b), 5, 2, 15);
                match (b >> 2) & 0x1F {
                    0x1F if b & 3 == 0 => {
                        if b & 0x80 != 0 {
                            f64::NEG_INFINITY
                        } else {
                            f64::INFINITY
                        }
                    }
                    0x1F => f64::NAN,
                    _ => v,
                }
            }), min_normal(15)),
            Dtype::F8E4m3Fnuz => Codec::Lut8(lut8(|b| {
                if b == 0x80 {
                    f64::NAN
                } else {
                    minifloat(u32::from(b), 4, 3, 8)
                }
            }), min_normal(8)),
            Dtype::F8E5m2Fnuz => Codec::Lut8(lut8(|b| {
                if b == 0x80 {
                    f64::NAN
                } else {
                    minifloat(u32::from(b), 5, 2, 16)
                }
            }), min_normal(16)),
            Dtype::F8E8m0 => Codec::Lut8(lut8(|b| {
                if b == 0xFF {
                    f64::NAN
                } else {
                    2f64.powi(i32::from(b) - 127)
                }
            }), 0.0),
            Dtype::F4 => Codec::Lut4x2(Box::new(lut_n(|b| minifloat(b, 2, 1, 1))), min_normal(1)),
            Dtype::F6E2m3 => Codec::Lut6x4(Box::new(lut_n(|b| minifloat(b, 2, 3, 1))), min_normal(1)),
            Dtype::F6E3m2 => Codec::Lut6x4(Box::new(lut_n(|b| minifloat(b, 3, 2, 3))), min_normal(3)),
        }
    }

    /// The codec for a ggml type name ("F32", "Q4_K", …).
    pub fn for_ggml(name: &str) -> Result<Codec, NotDecoded> {
        Ok(match name {
            "F32" => Codec::F32,
            "F16" => Codec::F16,
            "BF16" => Codec::Bf16,
            "F64" => Codec::F64,
            "I8" => Codec::I8,
            "I16" => Codec::I16,
            "I32" => Codec::I32,
            "I64" => Codec::I64,
            other => match QuantKind::from_name(other) {
                Some(q) => Codec::Quant(q),
                None if quant::is_known_undecoded(other) => {
                    return Err(NotDecoded::Unsupported(other.to_string()))
                }
                None => return Err(NotDecoded::Unknown(other.to_string())),
            },
        })
    }

    /// The codec for a tensor's element type.
    pub fn for_dtype(dtype: &TensorDtype) -> Result<Codec, NotDecoded> {
        match dtype {
            TensorDtype::Safetensors(d) => Ok(Codec::for_safetensors(*d)),
            TensorDtype::Ggml(_) => Codec::for_ggml(&dtype.name()),
            TensorDtype::Unknown(name) => Err(NotDecoded::Unknown(name.clone())),
        }
    }

    /// Bytes per unit.
    pub fn unit_bytes(&self) -> usize {
        match self {
            Codec::Bool | Codec::U8 | Codec::I8 | Codec::Lut8(..) | Codec::Lut4x2(..) => 1,
            Codec::U16 | Codec::I16 | Codec::F16 | Codec::Bf16 => 2,
            Codec::U32 | Codec::I32 | Codec::F32 => 4,
            Codec::U64 | Codec::I64 | Codec::F64 | Codec::C64 => 8,
            Codec::Lut6x4(..) => 3,
            Codec::Quant(q) => q.block_bytes(),
        }
    }

    /// Values per unit.
    pub fn unit_values(&self) -> usize {
        match self {
            Codec::Lut4x2(..) => 2,
            Codec::Lut6x4(..) => 4,
            Codec::Quant(q) => q.block_values(),
            _ => 1,
        }
    }

    /// The smallest positive normal value of the *source* type: a nonzero value with a
    /// smaller magnitude is counted as subnormal. 0 for types without subnormals
    /// (integers, BOOL, E8M0). Quantized types count subnormals of the dequantized f32
    /// (ggml dequantizes to f32); C64 counts magnitudes below the f32 minimum normal.
    pub fn min_normal(&self) -> f64 {
        match self {
            Codec::F16 => min_normal(15),
            Codec::Bf16 | Codec::F32 | Codec::C64 | Codec::Quant(_) => f64::from(f32::MIN_POSITIVE),
            Codec::F64 => f64::MIN_POSITIVE,
            Codec::Lut8(_, m) | Codec::Lut4x2(_, m) | Codec::Lut6x4(_, m) => *m,
            _ => 0.0,
        }
    }

    /// A note for the UI and report when the values are not the stored numbers themselves.
    pub fn note(&self) -> Option<&'static str> {
        match self {
            Codec::C64 => Some("complex64 shown as magnitudes |re + i·im| (computed in f64)"),
            Codec::Quant(_) => Some("dequantized values (ggml reference dequantization, f32)"),
            _ => None,
        }
    }

    /// Whether every value of the type is an f32, so that decoding into f32 loses nothing
    /// (see [`Value`]).
    pub fn exact_in_f32(&self) -> bool {
        !matches!(self, Codec::U32 | Codec::I32 | Codec::U64 | Codec::I64 | Codec::F64 | Codec::C64)
    }

    /// Decodes `bytes` (a whole number of units), appending to `out` (f64, or f32 when
    /// [`exact_in_f32`](Self::exact_in_f32); other types round to f32 there).
    pub fn decode<E: Value>(&self, bytes: &[u8], out: &mut Vec<E>) {
        let f = E::from_f32;
        let d = E::from_f64;
        match self {
            Codec::Bool => out.extend(bytes.iter().map(|&b| f(f32::from(u8::from(b != 0))))),
            Codec::U8 => out.extend(bytes.iter().map(|&b| f(f32::from(b)))),
            Codec::I8 => out.extend(bytes.iter().map(|&b| f(f32::from(b as i8)))),
            Codec::U16 => out.extend(le::<2>(bytes).map(|a| f(f32::from(u16::from_le_bytes(a))))),
            Codec::I16 => out.extend(le::<2>(bytes).map(|a| f(f32::from(i16::from_le_bytes(a))))),
            Codec::U32 => out.extend(le::<4>(bytes).map(|a| d(f64::from(u32::from_le_bytes(a))))),
            Codec::I32 => out.extend(le::<4>(bytes).map(|a| d(f64::from(i32::from_le_bytes(a))))),
            // Rounds to the nearest f64 above 2^53, as numpy's astype(float64) does.
            Codec::U64 => out.extend(le::<8>(bytes).map(|a| d(u64::from_le_bytes(a) as f64))),
            Codec::I64 => out.extend(le::<8>(bytes).map(|a| d(i64::from_le_bytes(a) as f64))),
            Codec::F16 => out.extend(le::<2>(bytes).map(|a| f(half::f16::from_le_bytes(a).to_f32()))),
            Codec::Bf16 => out.extend(le::<2>(bytes).map(|a| f(f32::from_bits(u32::from(u16::from_le_bytes(a)) << 16)))),
            Codec::F32 => out.extend(le::<4>(bytes).map(|a| f(f32::from_le_bytes(a)))),
            Codec::F64 => out.extend(le::<8>(bytes).map(|a| d(f64::from_le_bytes(a)))),
            Codec::C64 => out.extend(le::<8>(bytes).map(|a| {
                let [r0, r1, r2, r3, i0, i1, i2, i3] = a;
                let re = f64::from(f32::from_le_bytes([r0, r1, r2, r3]));
                let im = f64::from(f32::from_le_bytes([i0, i1, i2, i3]));
                d(re.hypot(im))
            })),
            Codec::Lut8(t, _) => out.extend(bytes.iter().map(|&b| d(t.get(usize::from(b)).copied().unwrap_or(f64::NAN)))),
            Codec::Lut4x2(t, _) => {
                for &b in bytes {
                    let lo = t.get(usize::from(b & 0x0F)).copied().unwrap_or(f64::NAN);
                    let hi = t.get(usize::from(b >> 4)).copied().unwrap_or(f64::NAN);
                    out.push(d(lo));
                    out.push(d(hi));
                }
            }
            Codec::Lut6x4(t, _) => {
                for [b0, b1, b2] in le::<3>(bytes) {
                    let w = u32::from(b0) | u32::from(b1) << 8 | u32::from(b2) << 16;
                    for j in 0..4 {
                        let code = ((w >> (6 * j)) & 0x3F) as usize;
                        out.push(d(t.get(code).copied().unwrap_or(f64::NAN)));
                    }
                }
            }
            Codec::Quant(q) => q.decode(bytes, out),
        }
    }
}

/// Fixed-size little-endian groups of a byte slice (a trailing partial group is ignored;
/// callers pass whole units). An exact-size iterator, so that `extend` reserves once and
/// writes without a capacity check per value.
fn le<const N: usize>(bytes: &[u8]) -> impl ExactSizeIterator<Item = [u8; N]> + '_ {
    // `try_from` cannot fail on a chunk of exactly N bytes.
    bytes.chunks_exact(N).map(|c| <[u8; N]>::try_from(c).unwrap_or([0; N]))
}

/// Streaming decoder: feed the tensor's bytes in chunks of any size; whole units are
/// decoded into batches of at most [`DECODE_BATCH_VALUES`] values handed to `sink`. A unit
/// split by a chunk boundary waits in a small carry buffer.
pub struct ValueDecoder<E: Value = f64> {
    codec: Codec,
    carry: Vec<u8>,
    buf: Vec<E>,
    units_per_batch: usize,
}

impl ValueDecoder<f64> {
    /// A decoder into f64 values.
    pub fn new(codec: Codec) -> Self {
        Self::typed(codec)
    }
}

impl<E: Value> ValueDecoder<E> {
    /// A decoder into `E` values (f32 only for a codec that is
    /// [`exact_in_f32`](Codec::exact_in_f32)).
    pub fn typed(codec: Codec) -> Self {
        let units_per_batch = (DECODE_BATCH_VALUES / codec.unit_values()).max(1);
        let carry = Vec::with_capacity(codec.unit_bytes());
        ValueDecoder {
            buf: Vec::with_capacity(units_per_batch * codec.unit_values()),
            codec,
            carry,
            units_per_batch,
        }
    }

    pub fn codec(&self) -> &Codec {
        &self.codec
    }

    /// Decodes every whole unit now available. `sink` receives full batches of exactly
    /// [`batch_values`](Self::batch_values) values, so the batches (and any statistic
    /// computed batch by batch) do not depend on how the bytes were chunked; call
    /// [`finish`](Self::finish) for the last, partial batch.
    pub fn feed(&mut self, mut bytes: &[u8], mut sink: impl FnMut(&[E])) {
        let unit = self.codec.unit_bytes();
        let per_unit = self.codec.unit_values();
        let batch = self.units_per_batch * per_unit;
        if !self.carry.is_empty() {
            let take = (unit - self.carry.len()).min(bytes.len());
            let (head, rest) = bytes.split_at(take);
            self.carry.extend_from_slice(head);
            bytes = rest;
            if self.carry.len() < unit {
                return;
            }
            self.codec.decode(&self.carry, &mut self.buf);
            self.carry.clear();
            if self.buf.len() >= batch {
                sink(&self.buf);
                self.buf.clear();
            }
        }
        while bytes.len() >= unit {
            let room_units = (batch - self.buf.len()) / per_unit;
            let n = (bytes.len() / unit).min(room_units.max(1));
            let (body, rest) = bytes.split_at(n * unit);
            self.codec.decode(body, &mut self.buf);
            bytes = rest;
            if self.buf.len() >= batch {
                sink(&self.buf);
                self.buf.clear();
            }
        }
        self.carry.extend_from_slice(bytes);
    }

    /// Hands out the last, partial batch.
    pub fn finish(&mut self, mut sink: impl FnMut(&[E])) {
        if !self.buf.is_empty() {
            sink(&self.buf);
            self.buf.clear();
        }
    }

    /// Values per full batch.
    pub fn batch_values(&self) -> usize {
        self.units_per_batch * self.codec.unit_values()
    }

    /// Bytes of an unfinished unit left over (nonzero at the end means the tensor's byte
    /// length is not a whole number of units).
    pub fn leftover(&self) -> usize {
        self.carry.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dec(c: &Codec, bytes: &[u8]) -> Vec<f64> {
        let mut out = vec![];
        c.decode(bytes, &mut out);
        out
    }

    #[test]
    fn f8_e4m3_known_values() {
        let c = Codec::for_safetensors(Dtype::F8E4m3);
        let v = dec(&c, &[0x00, 0x38, 0x7E, 0xFE, 0x7F, 0x01, 0x08]);
        assert_eq!(&v[..4], &[0.0, 1.0, 448.0, -448.0]);
        assert!(v[4].is_nan());
        assert_eq!(v[5], 2f64.powi(-9));
        assert_eq!(v[6], 2f64.powi(-6));
        assert_eq!(c.min_normal(), 2f64.powi(-6));
    }

    #[test]
    fn f8_e5m2_specials() {
        let c = Codec::for_safetensors(Dtype::F8E5m2);
        let v = dec(&c, &[0x7C, 0xFC, 0x7D, 0x3C, 0x7B]);
        assert_eq!(v[0], f64::INFINITY);
        assert_eq!(v[1], f64::NEG_INFINITY);
        assert!(v[2].is_nan());
        assert_eq!(v[3], 1.0);
        assert_eq!(v[4], 57344.0);
        assert_eq!(c.min_normal(), 2f64.powi(-14));
    }

    #[test]
    fn e8m0_and_fnuz() {
        let c = Codec::for_safetensors(Dtype::F8E8m0);
        let v = dec(&c, &[127, 0, 254, 255]);
        assert_eq!(&v[..3], &[1.0, 2f64.powi(-127), 2f64.powi(127)]);
        assert!(v[3].is_nan());
        assert_eq!(c.min_normal(), 0.0);
        let c = Codec::for_safetensors(Dtype::F8E4m3Fnuz);
        let v = dec(&c, &[0x80, 0x7F, 0x40]);
        assert!(v[0].is_nan());
        assert_eq!(v[1], 240.0);
        assert_eq!(v[2], 1.0);
        assert_eq!(c.min_normal(), 2f64.powi(-7));
        let c = Codec::for_safetensors(Dtype::F8E5m2Fnuz);
        assert_eq!(c.min_normal(), 2f64.powi(-15));
    }

    #[test]
    fn f4_nibble_order_and_f6_bit_order() {
        let c = Codec::for_safetensors(Dtype::F4);
        // 0x2 = 1.0 (low nibble, first element), 0xF = -6.0 (high nibble, second).
        assert_eq!(dec(&c, &[0xF2]), vec![1.0, -6.0]);
        let c = Codec::for_safetensors(Dtype::F6E2m3);
        // codes 0x08 (1.0), 0x1F (7.5), 0x3F (-7.5), 0x01 (0.125) packed LE, 6 bits each.
        let w: u32 = 0x08 | 0x1F << 6 | 0x3F << 12 | 0x01 << 18;
        let b = [w as u8, (w >> 8) as u8, (w >> 16) as u8];
        assert_eq!(dec(&c, &b), vec![1.0, 7.5, -7.5, 0.125]);
        assert_eq!(c.min_normal(), 1.0);
        let c = Codec::for_safetensors(Dtype::F6E3m2);
        assert_eq!(c.min_normal(), 0.25);
        assert_eq!(dec(&c, &[0x1F, 0, 0]), vec![28.0, 0.0, 0.0, 0.0]);
    }

    #[test]
    fn c64_is_magnitude() {
        let mut b = Vec::new();
        b.extend_from_slice(&3.0f32.to_le_bytes());
        b.extend_from_slice(&(-4.0f32).to_le_bytes());
        assert_eq!(dec(&Codec::C64, &b), vec![5.0]);
    }

    #[test]
    fn streaming_splits_units() {
        let bytes: Vec<u8> = (0..=255u8).cycle().take(3 * 1000).collect();
        for codec in [Codec::F32, Codec::for_safetensors(Dtype::F6E3m2), Codec::I16] {
            let mut whole = Vec::new();
            let mut d = ValueDecoder::new(codec.clone());
            d.feed(&bytes, |v| whole.extend_from_slice(v));
            d.finish(|v| whole.extend_from_slice(v));
            for step in [1usize, 5, 7, 4096] {
                let mut got = Vec::new();
                let mut d = ValueDecoder::new(codec.clone());
                let mut sizes = Vec::new();
                for c in bytes.chunks(step) {
                    d.feed(c, |v| {
                        sizes.push(v.len());
                        got.extend_from_slice(v)
                    });
                }
                d.finish(|v| got.extend_from_slice(v));
                assert!(sizes.iter().all(|&n| n == d.batch_values()));
                assert_eq!(got.len(), whole.len());
                assert!(got.iter().zip(&whole).all(|(a, b)| a.to_bits() == b.to_bits()));
                assert_eq!(d.leftover(), 0);
            }
        }
    }

    #[test]
    fn every_current_ggml_type_decodes_with_the_table_s_sizes() {
        use crate::dtype::ggml::GGML_TYPES;
        for t in GGML_TYPES {
            match Codec::for_ggml(t.name) {
                Ok(c) => {
                    assert!(!t.is_removed(), "{}", t.name);
                    assert_eq!((c.unit_values() as u64, c.unit_bytes() as u64), (t.block_size, t.type_size), "{}", t.name);
                    assert!(c.unit_bytes() <= MAX_UNIT_BYTES, "{}", t.name);
                }
                Err(e) => {
                    assert!(t.is_removed(), "{} should decode", t.name);
                    assert_eq!(e, NotDecoded::Unsupported(t.name.to_string()));
                }
            }
        }
    }

    #[test]
    fn unknown_and_unsupported() {
        assert!(matches!(Codec::for_ggml("Q4_0_4_4"), Err(NotDecoded::Unsupported(_))));
        assert!(matches!(Codec::for_ggml("Q4_3"), Err(NotDecoded::Unsupported(_))));
        assert!(matches!(Codec::for_ggml("NOPE"), Err(NotDecoded::Unknown(_))));
        assert!(matches!(Codec::for_dtype(&crate::dtype::TensorDtype::Unknown("Q4_0".into())), Err(NotDecoded::Unknown(_))));
        assert!(matches!(Codec::for_dtype(&crate::dtype::TensorDtype::Ggml(99)), Err(NotDecoded::Unknown(_))));
    }
}
