//! Kafka's primitive types: fixed-width ints, varints, (compact, nullable) strings, bytes and arrays, and UUIDs.
//!
//! Decoding reads from a [`Reader`] over a shared [`Bytes`], so byte fields are zero-copy slices.
//! Every length is checked against what remains before anything is allocated.

use bytes::{BufMut, Bytes, BytesMut};
use uuid::Uuid;

pub use crate::encoder::Encoder;
use crate::error::{DecodeError, EncodeError};

/// The encoding context every value is read and written in: the message version,
/// and whether that version is "flexible" (compact lengths and tagged fields, KIP-482).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ctx {
    /// The API version of the enclosing message.
    pub version: i16,
    /// Whether `version` uses the flexible (compact) encoding.
    pub flexible: bool,
}

/// A cursor over a received buffer. Sub-slices are handed out as zero-copy [`Bytes`].
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    src: &'a Bytes,
    pos: usize,
    end: usize,
}

impl<'a> Reader<'a> {
    /// A reader over all of `src`.
    pub fn new(src: &'a Bytes) -> Self {
        Reader {
            src,
            pos: 0,
            end: src.len(),
        }
    }

    /// A reader over `src` starting at byte `pos`.
    pub fn at(src: &'a Bytes, pos: usize) -> Self {
        Reader {
            src,
            pos: pos.min(src.len()),
            end: src.len(),
        }
    }

    /// The position in the underlying buffer.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Bytes not yet consumed.
    #[inline]
    pub fn remaining(&self) -> usize {
        self.end - self.pos
    }

    /// The unconsumed input as a slice.
    #[inline]
    pub fn rest(&self) -> &'a [u8] {
        &self.src[self.pos..self.end]
    }

    /// Takes the next `N` bytes. A fixed-size read is one bounds check and one load: these are
    /// the decoder's innermost steps (a Produce answer of 10,000 partitions reads 50,000 of them).
    #[inline]
    fn array<const N: usize>(&mut self) -> Result<[u8; N], DecodeError> {
        let rest = self.rest();
        match rest.first_chunk::<N>() {
            Some(a) => {
                self.pos += N;
                Ok(*a)
            }
            None => Err(DecodeError::UnexpectedEnd {
                needed: N - rest.len(),
            }),
        }
    }

    /// Reads a big-endian i8.
    #[inline]
    pub fn i8(&mut self) -> Result<i8, DecodeError> {
        self.array().map(i8::from_be_bytes)
    }
    /// Reads a big-endian i16.
    #[inline]
    pub fn i16(&mut self) -> Result<i16, DecodeError> {
        self.array().map(i16::from_be_bytes)
    }
    /// Reads a big-endian i32.
    #[inline]
    pub fn i32(&mut self) -> Result<i32, DecodeError> {
        self.array().map(i32::from_be_bytes)
    }
    /// Reads a big-endian i64.
    #[inline]
    pub fn i64(&mut self) -> Result<i64, DecodeError> {
        self.array().map(i64::from_be_bytes)
    }
    /// Reads a big-endian u16.
    #[inline]
    pub fn u16(&mut self) -> Result<u16, DecodeError> {
        self.array().map(u16::from_be_bytes)
    }
    /// Reads a big-endian u32.
    #[inline]
    pub fn u32(&mut self) -> Result<u32, DecodeError> {
        self.array().map(u32::from_be_bytes)
    }
    /// Reads a big-endian IEEE-754 f64.
    pub fn f64(&mut self) -> Result<f64, DecodeError> {
        self.array().map(f64::from_be_bytes)
    }

    /// Reads an unsigned LEB128 varint of at most 5 bytes (a u32).
    #[inline]
    pub fn uvarint(&mut self) -> Result<u32, DecodeError> {
        let v = self.uvarint_n(5)?;
        u32::try_from(v).map_err(|_| DecodeError::VarintTooLong { max_bytes: 5 })
    }

    /// Reads an unsigned LEB128 varint of at most `max_bytes` bytes, from the unread slice
    /// at once rather than a checked byte read each (varints were a fifth of the consumer's
    /// instructions per record, callgrind).
    #[inline]
    fn uvarint_n(&mut self, max_bytes: usize) -> Result<u64, DecodeError> {
        let rest = self.rest();
        let mut value: u64 = 0;
        for (i, &b) in rest.iter().take(max_bytes).enumerate() {
            value |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                self.pos += i + 1;
                return Ok(value);
            }
        }
        if rest.len() < max_bytes {
            // The input ended inside the varint: one more byte was needed at least.
            self.pos = self.end;
            Err(DecodeError::UnexpectedEnd { needed: 1 })
        } else {
            self.pos += max_bytes;
            Err(DecodeError::VarintTooLong { max_bytes })
        }
    }

    /// Reads a zigzag-encoded signed varint (an i32, as in record headers).
    #[inline]
    pub fn varint(&mut self) -> Result<i32, DecodeError> {
        let raw = self.uvarint()?;
        Ok(((raw >> 1) as i32) ^ -((raw & 1) as i32))
    }

    /// Reads a zigzag-encoded signed varlong (an i64).
    #[inline]
    pub fn varlong(&mut self) -> Result<i64, DecodeError> {
        let raw = self.uvarint_n(10)?;
        Ok(((raw >> 1) as i64) ^ -((raw & 1) as i64))
    }

    /// Takes the next `n` bytes as a zero-copy slice.
    #[inline]
    pub fn take(&mut self, n: usize) -> Result<Bytes, DecodeError> {
        if n > self.remaining() {
            return Err(DecodeError::UnexpectedEnd {
                needed: n - self.remaining(),
            });
        }
        let out = self.src.slice(self.pos..self.pos + n);
        self.pos += n;
        Ok(out)
    }

    /// Splits off the next `n` bytes as a reader of their own.
    pub fn sub(&mut self, n: usize) -> Result<Reader<'a>, DecodeError> {
        if n > self.remaining() {
            return Err(DecodeError::UnexpectedEnd {
                needed: n - self.remaining(),
            });
        }
        let sub = Reader {
            src: self.src,
            pos: self.pos,
            end: self.pos + n,
        };
        self.pos += n;
        Ok(sub)
    }

    /// Fails unless every byte was consumed.
    pub fn finish(&self) -> Result<(), DecodeError> {
        match self.remaining() {
            0 => Ok(()),
            n => Err(DecodeError::TrailingBytes(n)),
        }
    }

    /// Reads a length prefix: i32/i16 (-1 = null) in classic versions, uvarint (0 = null, else len+1) in flexible ones.
    /// Returns `None` for null. `width` is 2 for strings and 4 for bytes and arrays.
    fn length(&mut self, ctx: Ctx, width: u8) -> Result<Option<usize>, DecodeError> {
        let raw: i64 = if ctx.flexible {
            i64::from(self.uvarint()?) - 1
        } else if width == 2 {
            i64::from(self.i16()?)
        } else {
            i64::from(self.i32()?)
        };
        match raw {
            -1 => Ok(None),
            n if n < 0 => Err(DecodeError::InvalidLength(n)),
            n => Ok(Some(n as usize)),
        }
    }

    /// Reads a length that must fit in what remains (byte-wise payloads).
    fn payload_len(&mut self, ctx: Ctx, width: u8) -> Result<Option<usize>, DecodeError> {
        match self.length(ctx, width)? {
            Some(n) if n > self.remaining() => Err(DecodeError::UnexpectedEnd {
                needed: n - self.remaining(),
            }),
            other => Ok(other),
        }
    }

    /// Reads an array count, refusing counts that the remaining bytes cannot hold
    /// (every element takes at least one byte), so a forged count cannot force a huge allocation.
    pub fn array_len(&mut self, ctx: Ctx) -> Result<Option<usize>, DecodeError> {
        match self.length(ctx, 4)? {
            Some(n) if n > self.remaining() => Err(DecodeError::ArrayTooLong {
                len: n,
                remaining: self.remaining(),
            }),
            other => Ok(other),
        }
    }

    fn string_bytes(&mut self, ctx: Ctx) -> Result<Option<&'a [u8]>, DecodeError> {
        match self.payload_len(ctx, 2)? {
            None => Ok(None),
            // Compact strings could say more, but Kafka caps every string at i16::MAX bytes.
            Some(n) if n > i16::MAX as usize => Err(DecodeError::InvalidLength(n as i64)),
            Some(n) => {
                let s = &self.src[self.pos..self.pos + n];
                self.pos += n;
                Ok(Some(s))
            }
        }
    }
}

/// Writes an unsigned LEB128 varint.
pub fn put_uvarint(buf: &mut BytesMut, mut v: u64) {
    while v >= 0x80 {
        buf.put_u8((v as u8) | 0x80);
        v >>= 7;
    }
    buf.put_u8(v as u8);
}

/// Writes a zigzag-encoded signed varint.
pub fn put_varint(buf: &mut BytesMut, v: i32) {
    put_uvarint(buf, u64::from(((v << 1) ^ (v >> 31)) as u32));
}

/// Writes a zigzag-encoded signed varlong.
pub fn put_varlong(buf: &mut BytesMut, v: i64) {
    put_uvarint(buf, ((v << 1) ^ (v >> 63)) as u64);
}

/// Bytes a zigzag varint of `v` takes.
pub fn varint_len(v: i32) -> usize {
    uvarint_len(u64::from(((v << 1) ^ (v >> 31)) as u32))
}

/// Bytes a zigzag varlong of `v` takes.
pub fn varlong_len(v: i64) -> usize {
    uvarint_len(((v << 1) ^ (v >> 63)) as u64)
}

/// Bytes an unsigned varint of `v` takes.
pub fn uvarint_len(v: u64) -> usize {
    // ceil(bits / 7) as (bits * 9 + 64) / 64, exact for 1..=64 bits: a multiply and a shift
    // instead of a division (this runs several times for every record a producer encodes).
    let bits = 64 - (v | 1).leading_zeros();
    ((bits * 9 + 64) >> 6) as usize
}

/// Writes a length prefix (see [`Reader::length`]); `None` writes null.
fn put_length(
    buf: &mut BytesMut,
    ctx: Ctx,
    width: u8,
    len: Option<usize>,
    what: &'static str,
) -> Result<(), EncodeError> {
    let max = if width == 2 {
        i16::MAX as usize
    } else {
        i32::MAX as usize
    };
    match len {
        Some(n) if n > max => Err(EncodeError::TooLong { what, len: n }),
        Some(n) if ctx.flexible => {
            put_uvarint(buf, n as u64 + 1);
            Ok(())
        }
        None if ctx.flexible => {
            buf.put_u8(0);
            Ok(())
        }
        Some(n) if width == 2 => {
            buf.put_i16(n as i16);
            Ok(())
        }
        Some(n) => {
            buf.put_i32(n as i32);
            Ok(())
        }
        None if width == 2 => {
            buf.put_i16(-1);
            Ok(())
        }
        None => {
            buf.put_i32(-1);
            Ok(())
        }
    }
}

/// A value with a Kafka wire encoding that may depend on the message version.
pub trait Wire: Sized {
    /// Appends the encoding of `self`.
    fn write(&self, buf: &mut Encoder, ctx: Ctx) -> Result<(), EncodeError>;
    /// Reads one value.
    fn read(r: &mut Reader<'_>, ctx: Ctx) -> Result<Self, DecodeError>;
    /// Whether this is the null value of a nullable type.
    fn is_null(&self) -> bool {
        false
    }
}

macro_rules! fixed_wire {
    ($($t:ty => $get:ident, $put:ident;)*) => {$(
        impl Wire for $t {
            fn write(&self, buf: &mut Encoder, _: Ctx) -> Result<(), EncodeError> {
                buf.$put(*self);
                Ok(())
            }
            fn read(r: &mut Reader<'_>, _: Ctx) -> Result<Self, DecodeError> {
                r.$get()
            }
        }
    )*};
}

fixed_wire! {
    i8 => i8, put_i8;
    i16 => i16, put_i16;
    i32 => i32, put_i32;
    i64 => i64, put_i64;
    u16 => u16, put_u16;
    u32 => u32, put_u32;
    f64 => f64, put_f64;
}

impl Wire for bool {
    fn write(&self, buf: &mut Encoder, _: Ctx) -> Result<(), EncodeError> {
        buf.put_u8(u8::from(*self));
        Ok(())
    }
    fn read(r: &mut Reader<'_>, _: Ctx) -> Result<Self, DecodeError> {
        // Kafka treats any non-zero byte as true.
        Ok(r.i8()? != 0)
    }
}

impl Wire for Uuid {
    fn write(&self, buf: &mut Encoder, _: Ctx) -> Result<(), EncodeError> {
        buf.put_slice(self.as_bytes());
        Ok(())
    }
    fn read(r: &mut Reader<'_>, _: Ctx) -> Result<Self, DecodeError> {
        let hi = r.i64()? as u64;
        let lo = r.i64()? as u64;
        Ok(Uuid::from_u64_pair(hi, lo))
    }
}

fn put_str(buf: &mut BytesMut, ctx: Ctx, s: Option<&str>) -> Result<(), EncodeError> {
    put_length(buf, ctx, 2, s.map(str::len), "string")?;
    if let Some(s) = s {
        buf.put_slice(s.as_bytes());
    }
    Ok(())
}

fn read_str(r: &mut Reader<'_>, ctx: Ctx) -> Result<Option<String>, DecodeError> {
    match r.string_bytes(ctx)? {
        None => Ok(None),
        Some(b) => std::str::from_utf8(b)
            .map(|s| Some(s.to_owned()))
            .map_err(|_| DecodeError::InvalidUtf8),
    }
}

impl Wire for String {
    fn write(&self, buf: &mut Encoder, ctx: Ctx) -> Result<(), EncodeError> {
        put_str(buf, ctx, Some(self))
    }
    fn read(r: &mut Reader<'_>, ctx: Ctx) -> Result<Self, DecodeError> {
        read_str(r, ctx)?.ok_or(DecodeError::UnexpectedNull)
    }
}

impl Wire for Option<String> {
    fn write(&self, buf: &mut Encoder, ctx: Ctx) -> Result<(), EncodeError> {
        put_str(buf, ctx, self.as_deref())
    }
    fn read(r: &mut Reader<'_>, ctx: Ctx) -> Result<Self, DecodeError> {
        read_str(r, ctx)
    }
    fn is_null(&self) -> bool {
        self.is_none()
    }
}

fn read_bytes(r: &mut Reader<'_>, ctx: Ctx) -> Result<Option<Bytes>, DecodeError> {
    match r.payload_len(ctx, 4)? {
        None => Ok(None),
        Some(n) => r.take(n).map(Some),
    }
}

impl Wire for Bytes {
    fn write(&self, buf: &mut Encoder, ctx: Ctx) -> Result<(), EncodeError> {
        put_length(buf, ctx, 4, Some(self.len()), "bytes")?;
        buf.put_shared(self);
        Ok(())
    }
    fn read(r: &mut Reader<'_>, ctx: Ctx) -> Result<Self, DecodeError> {
        read_bytes(r, ctx)?.ok_or(DecodeError::UnexpectedNull)
    }
}

impl Wire for Option<Bytes> {
    fn write(&self, buf: &mut Encoder, ctx: Ctx) -> Result<(), EncodeError> {
        match self {
            Some(b) => b.write(buf, ctx),
            None => put_length(buf, ctx, 4, None, "bytes"),
        }
    }
    fn read(r: &mut Reader<'_>, ctx: Ctx) -> Result<Self, DecodeError> {
        read_bytes(r, ctx)
    }
    fn is_null(&self) -> bool {
        self.is_none()
    }
}

fn put_array<T: Wire>(buf: &mut Encoder, ctx: Ctx, items: Option<&[T]>) -> Result<(), EncodeError> {
    put_length(buf, ctx, 4, items.map(<[T]>::len), "array")?;
    for item in items.unwrap_or_default() {
        item.write(buf, ctx)?;
    }
    Ok(())
}

fn read_array<T: Wire>(r: &mut Reader<'_>, ctx: Ctx) -> Result<Option<Vec<T>>, DecodeError> {
    let Some(n) = r.array_len(ctx)? else {
        return Ok(None);
    };
    // The count is already bounded by the remaining bytes, but an element can be far larger in
    // memory than on the wire; so pre-allocate little and let growth follow decoded elements.
    let mut out = Vec::with_capacity(n.min(64));
    for _ in 0..n {
        out.push(T::read(r, ctx)?);
    }
    Ok(Some(out))
}

impl<T: Wire> Wire for Vec<T> {
    fn write(&self, buf: &mut Encoder, ctx: Ctx) -> Result<(), EncodeError> {
        put_array(buf, ctx, Some(self))
    }
    fn read(r: &mut Reader<'_>, ctx: Ctx) -> Result<Self, DecodeError> {
        read_array(r, ctx)?.ok_or(DecodeError::UnexpectedNull)
    }
}

impl<T: Wire> Wire for Option<Vec<T>> {
    fn write(&self, buf: &mut Encoder, ctx: Ctx) -> Result<(), EncodeError> {
        put_array(buf, ctx, self.as_deref())
    }
    fn read(r: &mut Reader<'_>, ctx: Ctx) -> Result<Self, DecodeError> {
        read_array(r, ctx)
    }
    fn is_null(&self) -> bool {
        self.is_none()
    }
}

/// Tagged fields this version of the codec does not know, kept verbatim so that
/// a decode → encode round trip loses nothing (tag → raw value bytes).
pub type UnknownTaggedFields = std::collections::BTreeMap<u32, Bytes>;

/// Reads a tagged-field section, handing known tags to `known` (which returns false
/// for tags it does not own) and keeping the rest in `unknown`.
pub fn read_tagged_fields(
    r: &mut Reader<'_>,
    unknown: &mut UnknownTaggedFields,
    mut known: impl FnMut(u32, &mut Reader<'_>) -> Result<bool, DecodeError>,
) -> Result<(), DecodeError> {
    let count = r.uvarint()? as usize;
    if count > r.remaining() {
        // Each tagged field takes at least two bytes (tag and size).
        return Err(DecodeError::ArrayTooLong {
            len: count,
            remaining: r.remaining(),
        });
    }
    for _ in 0..count {
        let tag = r.uvarint()?;
        let size = r.uvarint()? as usize;
        let mut sub = r.sub(size)?;
        if known(tag, &mut sub)? {
            if sub.remaining() != 0 {
                return Err(DecodeError::TaggedFieldSize {
                    tag,
                    declared: size,
                    used: size - sub.remaining(),
                });
            }
        } else {
            unknown.insert(tag, sub.take(size)?);
        }
    }
    Ok(())
}

/// Writes a tagged-field section from already-encoded `(tag, value)` pairs plus the unknown ones,
/// in ascending tag order as the protocol requires.
pub fn write_tagged_fields(
    buf: &mut BytesMut,
    mut known: Vec<(u32, BytesMut)>,
    unknown: &UnknownTaggedFields,
) {
    // Nearly every struct has none: an empty section is one zero byte (a Produce request
    // writes two per partition, and the general path cost about 100 instructions each).
    if known.is_empty() && unknown.is_empty() {
        buf.put_u8(0);
        return;
    }
    known.extend(
        unknown
            .iter()
            .filter(|(t, _)| !known.iter().any(|(k, _)| k == *t))
            .map(|(t, v)| (*t, BytesMut::from(&v[..])))
            .collect::<Vec<_>>(),
    );
    known.sort_by_key(|(t, _)| *t);
    put_uvarint(buf, known.len() as u64);
    for (tag, value) in known {
        put_uvarint(buf, u64::from(tag));
        put_uvarint(buf, value.len() as u64);
        buf.put_slice(&value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flex() -> Ctx {
        Ctx {
            version: 0,
            flexible: true,
        }
    }

    #[test]
    fn varints_match_the_protocol_guide() {
        // Values from the Kafka protocol guide and the protobuf varint spec.
        let cases: &[(i64, &[u8])] = &[
            (0, &[0x00]),
            (-1, &[0x01]),
            (1, &[0x02]),
            (-64, &[0x7f]),
            (64, &[0x80, 0x01]),
            (300, &[0xd8, 0x04]),
        ];
        for &(v, bytes) in cases {
            let mut b = BytesMut::new();
            put_varlong(&mut b, v);
            assert_eq!(&b[..], bytes, "encode {v}");
            assert_eq!(varlong_len(v), bytes.len());
            let src = Bytes::copy_from_slice(bytes);
            assert_eq!(Reader::new(&src).varlong().unwrap(), v);
        }
        let mut b = BytesMut::new();
        put_varint(&mut b, i32::MIN);
        let src = b.freeze();
        assert_eq!(Reader::new(&src).varint().unwrap(), i32::MIN);
    }

    #[test]
    fn varint_lengths_match_the_encoder_at_every_width() {
        // uvarint_len computes ceil(bits / 7) without dividing: check each bit width's edges.
        for bits in 0..64 {
            for v in [
                1u64 << bits,
                (1u64 << bits) - 1,
                (1u64 << bits) + 1,
                u64::MAX >> bits,
            ] {
                let mut b = BytesMut::new();
                put_uvarint(&mut b, v);
                assert_eq!(uvarint_len(v), b.len(), "{v:#x}");
            }
        }
    }

    #[test]
    fn uvarint_rejects_overlong_input() {
        let src = Bytes::from_static(&[0xff, 0xff, 0xff, 0xff, 0xff, 0x01]);
        assert_eq!(
            Reader::new(&src).uvarint(),
            Err(DecodeError::VarintTooLong { max_bytes: 5 })
        );
        // Five bytes whose value exceeds u32.
        let src = Bytes::from_static(&[0xff, 0xff, 0xff, 0xff, 0x7f]);
        assert!(Reader::new(&src).uvarint().is_err());
    }

    #[test]
    fn compact_nullable_string_round_trips() {
        let mut b = Encoder::default();
        Some("hi".to_string()).write(&mut b, flex()).unwrap();
        None::<String>.write(&mut b, flex()).unwrap();
        assert_eq!(&b[..], &[3, b'h', b'i', 0]);
        let src = b.into_inner().freeze();
        let mut r = Reader::new(&src);
        assert_eq!(
            Option::<String>::read(&mut r, flex()).unwrap(),
            Some("hi".into())
        );
        assert_eq!(Option::<String>::read(&mut r, flex()).unwrap(), None);
        r.finish().unwrap();
    }

    #[test]
    fn forged_array_count_is_refused_before_allocating() {
        let classic = Ctx {
            version: 0,
            flexible: false,
        };
        let src = Bytes::from_static(&[0x7f, 0xff, 0xff, 0xff, 0, 0]);
        let err = Vec::<i32>::read(&mut Reader::new(&src), classic).unwrap_err();
        assert_eq!(
            err,
            DecodeError::ArrayTooLong {
                len: i32::MAX as usize,
                remaining: 2
            }
        );
    }
}
