//! The output of encoding: a growing buffer, plus (when asked for) large byte fields left out
//! of it and sent from their own buffers, so that a produce request does not copy its batches.
//!
//! A produce request is almost all record batches, which the producer has already built.
//! Copying each batch into the request frame cost a tenth of the producer's CPU with large
//! records; an adapter that writes vectored (`writev`) can send the batch from where it is.

use std::ops::{Deref, DerefMut};

use bytes::{Bytes, BytesMut};

/// Where an encoding goes. It derefs to the [`BytesMut`] written in place; byte fields of at
/// least the splice size (none, unless set with [`splicing`](Self::splicing)) are kept aside,
/// each with the offset where it belongs, and [`into_parts`](Self::into_parts) interleaves
/// them again.
#[derive(Debug, Default)]
pub struct Encoder {
    buf: BytesMut,
    /// Byte fields at least this large are spliced; 0 means never.
    splice_min: usize,
    /// Each spliced field, with the length `buf` had when it was written.
    spliced: Vec<(usize, Bytes)>,
    /// Their total length.
    spliced_len: usize,
}

impl Encoder {
    /// An encoder that writes everything into `buf`.
    pub fn new(buf: BytesMut) -> Self {
        Encoder {
            buf,
            ..Default::default()
        }
    }

    /// An encoder that keeps byte fields of `min` bytes or more out of `buf`.
    pub fn splicing(buf: BytesMut, min: usize) -> Self {
        Encoder {
            buf,
            splice_min: min.max(1),
            ..Default::default()
        }
    }

    /// Runs `f` on an encoder writing into `buf` (without splicing).
    pub(crate) fn wrap<T>(buf: &mut BytesMut, f: impl FnOnce(&mut Encoder) -> T) -> T {
        let mut enc = Encoder::new(std::mem::take(buf));
        let out = f(&mut enc);
        *buf = enc.into_inner();
        out
    }

    /// Bytes encoded so far, spliced ones included.
    pub fn encoded_len(&self) -> usize {
        self.buf.len() + self.spliced_len
    }

    /// Appends a byte field's contents: spliced if large enough, else copied.
    pub fn put_shared(&mut self, bytes: &Bytes) {
        if self.splice_min > 0 && bytes.len() >= self.splice_min {
            self.spliced.push((self.buf.len(), bytes.clone()));
            self.spliced_len += bytes.len();
        } else {
            self.buf.extend_from_slice(bytes);
        }
    }

    /// Drops everything written from `len` on (`len` as [`encoded_len`](Self::encoded_len)
    /// counts it): undoes a failed encoding. (It shadows `BytesMut::truncate`, which would
    /// count only the bytes in the buffer.)
    pub fn truncate(&mut self, len: usize) {
        while let Some((at, b)) = self.spliced.last_mut() {
            let start = *at + self.spliced_len - b.len();
            if start < len {
                // A mark inside a spliced field keeps the field's head.
                let cut = b.len().saturating_sub(len - start);
                b.truncate(b.len() - cut);
                self.spliced_len -= cut;
                break;
            }
            self.spliced_len -= b.len();
            self.spliced.pop();
        }
        self.buf.truncate(len.saturating_sub(self.spliced_len));
    }

    /// The written buffer, with no spliced field in it.
    ///
    /// # Panics
    /// If a field was spliced: only an encoder made with [`splicing`](Self::splicing) splices,
    /// and it is taken apart with [`into_parts`](Self::into_parts).
    pub fn into_inner(self) -> BytesMut {
        assert!(self.spliced.is_empty(), "a splicing encoder taken whole");
        self.buf
    }

    /// The encoding, as buffers to send one after another. Without spliced fields, it is one.
    pub fn into_parts(self) -> Vec<Bytes> {
        let mut buf = self.buf.freeze();
        let mut parts = Vec::with_capacity(2 * self.spliced.len() + 1);
        let mut taken = 0;
        for (at, b) in self.spliced {
            if at > taken {
                parts.push(buf.split_to(at - taken));
                taken = at;
            }
            parts.push(b);
        }
        if !buf.is_empty() || parts.is_empty() {
            parts.push(buf);
        }
        parts
    }
}

impl Deref for Encoder {
    type Target = BytesMut;
    fn deref(&self) -> &BytesMut {
        &self.buf
    }
}

impl DerefMut for Encoder {
    fn deref_mut(&mut self) -> &mut BytesMut {
        &mut self.buf
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::BufMut;

    #[test]
    fn spliced_fields_come_back_in_place() {
        let mut e = Encoder::splicing(BytesMut::new(), 4);
        e.put_u8(1);
        e.put_shared(&Bytes::from_static(b"abcd"));
        e.put_shared(&Bytes::from_static(b"xy")); // small: copied
        e.put_shared(&Bytes::from_static(b"efgh"));
        e.put_shared(&Bytes::from_static(b"ijkl"));
        e.put_u8(2);
        assert_eq!(e.encoded_len(), 16);
        let parts = e.into_parts();
        let lens: Vec<usize> = parts.iter().map(Bytes::len).collect();
        assert_eq!(lens, [1, 4, 2, 4, 4, 1]);
        assert_eq!(parts.concat(), b"\x01abcdxyefghijkl\x02");
    }

    #[test]
    fn truncating_drops_spliced_fields_past_the_mark() {
        let mut e = Encoder::splicing(BytesMut::new(), 4);
        e.put_u8(1);
        e.put_shared(&Bytes::from_static(b"abcd"));
        let mark = e.encoded_len();
        e.put_u8(2);
        e.put_shared(&Bytes::from_static(b"efgh"));
        e.put_u8(3);
        e.truncate(mark);
        assert_eq!(e.encoded_len(), mark);
        assert_eq!(e.into_parts().concat(), b"\x01abcd");
        let mut plain = Encoder::new(BytesMut::new());
        plain.put_shared(&Bytes::from_static(b"abcd"));
        assert_eq!(plain.into_parts(), [Bytes::from_static(b"abcd")]);
    }

    #[test]
    fn truncating_inside_a_spliced_field_keeps_its_head() {
        let mut e = Encoder::splicing(BytesMut::new(), 4);
        e.put_u8(1);
        e.put_shared(&Bytes::from_static(b"abcdef"));
        e.put_u8(2);
        e.truncate(4);
        assert_eq!(e.encoded_len(), 4);
        assert_eq!(e.into_parts().concat(), b"\x01abc");
    }
}
