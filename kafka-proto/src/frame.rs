//! Incremental framing: buffer bytes as they arrive and hand out whole size-prefixed frames.

use bytes::{Buf, Bytes, BytesMut};

use crate::DecodeError;

/// The default largest frame accepted: 100 MiB, as Java's `socket.request.max.bytes`.
pub const DEFAULT_MAX_FRAME: usize = 100 * 1024 * 1024;

/// Splits a byte stream into Kafka frames (a 4-byte big-endian size, then that many bytes).
///
/// Feed it whatever arrived with [`FrameDecoder::extend`], then call [`FrameDecoder::next_frame`]
/// until it returns `Ok(None)` ("need more bytes"). The size is checked before anything
/// is allocated for the frame, so a forged size cannot exhaust memory.
#[derive(Debug)]
pub struct FrameDecoder {
    buf: BytesMut,
    max_frame: usize,
}

impl Default for FrameDecoder {
    fn default() -> Self {
        Self::new(DEFAULT_MAX_FRAME)
    }
}

impl FrameDecoder {
    /// A decoder refusing frames larger than `max_frame` bytes.
    pub fn new(max_frame: usize) -> Self {
        FrameDecoder {
            buf: BytesMut::new(),
            max_frame,
        }
    }

    /// Appends received bytes.
    pub fn extend(&mut self, data: &[u8]) {
        self.buf.extend_from_slice(data);
    }

    /// The buffer to read into directly, avoiding a copy (reserve, read, then `advance_mut`).
    pub fn buffer_mut(&mut self) -> &mut BytesMut {
        &mut self.buf
    }

    /// Bytes buffered but not yet returned as frames.
    pub fn buffered(&self) -> usize {
        self.buf.len()
    }

    /// The next whole frame (without its size prefix), `Ok(None)` if more bytes are needed,
    /// or an error if the size prefix is invalid. After an error the stream is unusable.
    pub fn next_frame(&mut self) -> Result<Option<Bytes>, DecodeError> {
        let Some(prefix) = self.buf.get(..4) else {
            return Ok(None);
        };
        let size = i32::from_be_bytes([prefix[0], prefix[1], prefix[2], prefix[3]]);
        if size < 0 {
            return Err(DecodeError::NegativeFrameSize(size));
        }
        let size = size as usize;
        if size > self.max_frame {
            return Err(DecodeError::FrameTooLarge {
                size,
                max: self.max_frame,
            });
        }
        if self.buf.len() < 4 + size {
            // Reserve only what this frame still needs, never more than was validated.
            self.buf.reserve(4 + size - self.buf.len());
            return Ok(None);
        }
        self.buf.advance(4);
        Ok(Some(self.buf.split_to(size).freeze()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn needs_more_until_the_whole_frame_arrives() {
        let mut d = FrameDecoder::default();
        let frame = [0, 0, 0, 3, b'a', b'b', b'c', 0, 0];
        for (i, b) in frame.iter().enumerate() {
            d.extend(&[*b]);
            let got = d.next_frame().unwrap();
            if i < 6 {
                assert!(got.is_none(), "byte {i}");
            } else if i == 6 {
                assert_eq!(got.as_deref(), Some(&b"abc"[..]));
            }
        }
        assert_eq!(d.buffered(), 2);
        d.extend(&[0, 0]);
        assert_eq!(d.next_frame().unwrap().as_deref(), Some(&b""[..]));
    }

    #[test]
    fn rejects_negative_and_oversized_before_allocating() {
        let mut d = FrameDecoder::new(10);
        d.extend(&[0xff, 0xff, 0xff, 0xfe]);
        assert_eq!(d.next_frame(), Err(DecodeError::NegativeFrameSize(-2)));
        let mut d = FrameDecoder::new(10);
        d.extend(&[0x7f, 0xff, 0xff, 0xff]);
        assert_eq!(
            d.next_frame(),
            Err(DecodeError::FrameTooLarge {
                size: i32::MAX as usize,
                max: 10
            })
        );
        assert!(d.buffer_mut().capacity() < 1024);
    }
}
