//! Record-batch compression: gzip, snappy, lz4 and zstd, each behind a default-on feature.
//!
//! Every decompressor is capped: output beyond the limit is a typed
//! [`DecodeError::DecompressedTooLarge`], never an out-of-memory.

use std::io::Read;

use bytes::Bytes;

use crate::{DecodeError, EncodeError};

#[cfg(feature = "snappy")]
mod snappy;

/// The default cap on one batch's decompressed size: 256 MiB, well above Kafka's largest
/// practical batch and far below what a compression bomb would ask for.
pub const DEFAULT_MAX_DECOMPRESSED: usize = 256 * 1024 * 1024;

/// A record-batch compression codec (the low three bits of the batch attributes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Compression {
    /// No compression.
    #[default]
    None,
    /// gzip (RFC 1952).
    Gzip,
    /// snappy, written with Java's xerial framing.
    Snappy,
    /// LZ4 frame format.
    Lz4,
    /// Zstandard.
    Zstd,
}

impl Compression {
    /// Every codec.
    pub const ALL: [Compression; 5] = [
        Compression::None,
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ];

    /// The codec for an attributes id.
    pub fn from_id(id: u8) -> Result<Self, DecodeError> {
        Ok(match id {
            0 => Compression::None,
            1 => Compression::Gzip,
            2 => Compression::Snappy,
            3 => Compression::Lz4,
            4 => Compression::Zstd,
            other => return Err(DecodeError::UnknownCompression(other)),
        })
    }

    /// The attributes id.
    pub fn id(self) -> u8 {
        match self {
            Compression::None => 0,
            Compression::Gzip => 1,
            Compression::Snappy => 2,
            Compression::Lz4 => 3,
            Compression::Zstd => 4,
        }
    }

    /// The name Kafka's `compression.type` uses.
    pub fn name(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Gzip => "gzip",
            Compression::Snappy => "snappy",
            Compression::Lz4 => "lz4",
            Compression::Zstd => "zstd",
        }
    }

    /// Parses a `compression.type` value.
    pub fn from_name(name: &str) -> Option<Self> {
        Compression::ALL.into_iter().find(|c| c.name() == name)
    }

    /// Whether [`compress_at`](Self::compress_at) applies a level to this codec: gzip only.
    pub fn applies_level(self) -> bool {
        matches!(self, Compression::Gzip)
    }

    /// Whether this build can encode and decode the codec.
    pub fn is_enabled(self) -> bool {
        match self {
            Compression::None => true,
            Compression::Gzip => cfg!(feature = "gzip"),
            Compression::Snappy => cfg!(feature = "snappy"),
            Compression::Lz4 => cfg!(feature = "lz4"),
            Compression::Zstd => cfg!(feature = "zstd"),
        }
    }

    /// Compresses `data` at the codec's default level.
    pub fn compress(self, data: &[u8]) -> Result<Vec<u8>, EncodeError> {
        self.compress_at(data, None)
    }

    /// Compresses `data` at `level` (KIP-390's `compression.<codec>.level`; `None`: the
    /// codec's default). gzip takes 1 (fastest) to 9 (smallest), as Java's Deflater; a level
    /// outside that range is the default, 6. The pure-Rust lz4 and zstd encoders have one
    /// level each (lz4's fast mode, zstd's level 1), so their levels are not applied:
    /// [`Compression::applies_level`] says so, and the producer warns when one is set.
    pub fn compress_at(self, data: &[u8], level: Option<i32>) -> Result<Vec<u8>, EncodeError> {
        match self {
            Compression::None => Ok(data.to_vec()),
            #[cfg(feature = "gzip")]
            Compression::Gzip => {
                use std::io::Write;
                let level = match level {
                    Some(l @ 1..=9) => flate2::Compression::new(l as u32),
                    _ => flate2::Compression::default(),
                };
                let mut enc =
                    flate2::write::GzEncoder::new(Vec::with_capacity(data.len() / 2), level);
                enc.write_all(data)
                    .and_then(|_| enc.finish())
                    .map_err(|e| compress_err("gzip", e))
            }
            #[cfg(feature = "snappy")]
            Compression::Snappy => snappy::compress_xerial(data),
            #[cfg(feature = "lz4")]
            Compression::Lz4 => Ok(lz4_frame(data)),
            #[cfg(feature = "zstd")]
            Compression::Zstd => Ok(ruzstd::encoding::compress_to_vec(
                data,
                ruzstd::encoding::CompressionLevel::Fastest,
            )),
            #[allow(unreachable_patterns)]
            disabled => Err(EncodeError::CompressionDisabled(disabled.name())),
        }
    }

    /// Decompresses `data`, failing once the output would exceed `limit` bytes.
    pub fn decompress(self, data: &[u8], limit: usize) -> Result<Bytes, DecodeError> {
        match self {
            Compression::None => {
                if data.len() > limit {
                    return Err(DecodeError::DecompressedTooLarge { limit });
                }
                Ok(Bytes::copy_from_slice(data))
            }
            #[cfg(feature = "gzip")]
            Compression::Gzip => read_capped("gzip", flate2::read::GzDecoder::new(data), limit),
            #[cfg(feature = "snappy")]
            Compression::Snappy => snappy::decompress(data, limit),
            #[cfg(feature = "lz4")]
            Compression::Lz4 => read_capped("lz4", lz4_flex::frame::FrameDecoder::new(data), limit),
            #[cfg(feature = "zstd")]
            Compression::Zstd => {
                // Cap the window too: a forged frame header could otherwise ask for a huge one.
                let window = (limit as u64).clamp(1 << 10, 1 << 31);
                let dec =
                    ruzstd::decoding::StreamingDecoder::new_with_max_window_size(data, window)
                        .map_err(|e| decompress_err("zstd", e))?;
                read_capped("zstd", dec, limit)
            }
            #[allow(unreachable_patterns)]
            disabled => Err(DecodeError::CompressionDisabled(disabled.name())),
        }
    }
}

/// Reads a whole stream, refusing to buffer more than `limit` bytes.
#[allow(dead_code)]
fn read_capped(codec: &'static str, r: impl Read, limit: usize) -> Result<Bytes, DecodeError> {
    let mut out = Vec::new();
    // One byte past the limit tells "exactly at the limit" from "over it".
    r.take(limit as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|e| decompress_err(codec, e))?;
    if out.len() > limit {
        return Err(DecodeError::DecompressedTooLarge { limit });
    }
    Ok(out.into())
}

#[allow(dead_code)]
fn decompress_err(codec: &'static str, e: impl std::fmt::Display) -> DecodeError {
    DecodeError::Decompression {
        codec,
        reason: e.to_string(),
    }
}

#[allow(dead_code)]
fn compress_err(codec: &'static str, e: impl std::fmt::Display) -> EncodeError {
    EncodeError::Compression {
        codec,
        reason: e.to_string(),
    }
}

/// The LZ4 frame header for 64 KiB independent blocks without checksums, what Java's
/// KafkaLZ4BlockOutputStream writes: magic, FLG, BD, and the header checksum.
#[cfg(feature = "lz4")]
const LZ4_HEADER: [u8; 7] = [0x04, 0x22, 0x4d, 0x18, 0x60, 0x40, 0x82];

/// Compresses into one LZ4 frame, block by block straight from `data` into the frame.
/// (lz4_flex's `FrameEncoder` first copies all input into a buffer of its own, and its
/// `block::compress` returns each block in a fresh vector: extra passes over every batch,
/// about as costly as compressing repetitive data.)
#[cfg(feature = "lz4")]
fn lz4_frame(data: &[u8]) -> Vec<u8> {
    use lz4_flex::block::{compress_into_with_table, get_maximum_output_size, CompressTable};
    const BLOCK: usize = 64 * 1024;
    let mut out = Vec::with_capacity(LZ4_HEADER.len() + data.len() / 2 + 64);
    out.extend_from_slice(&LZ4_HEADER);
    // One hash table for every block (each block is compressed independently: the table is
    // cleared for each), with 16-bit entries while the input allows, as `compress` picks.
    let mut table = if data.len() < u16::MAX as usize {
        CompressTable::small()
    } else {
        CompressTable::large()
    };
    // Each block is compressed into one scratch buffer, zeroed once per frame rather than
    // once per block (zeroing the room a block might take cost as much as compressing
    // repetitive data), and only its compressed bytes are copied into the frame.
    let mut scratch = vec![0u8; get_maximum_output_size(BLOCK.min(data.len()))];
    for block in data.chunks(BLOCK) {
        let written = compress_into_with_table(block, &mut scratch, &mut table);
        // The bound above always suffices; were it not to, the block is stored.
        if let Some(n) = written.ok().filter(|n| *n < block.len()) {
            out.extend_from_slice(&(n as u32).to_le_bytes());
            out.extend_from_slice(&scratch[..n]);
        } else {
            // Stored: the high bit of the size marks an uncompressed block.
            out.extend_from_slice(&(block.len() as u32 | 0x8000_0000).to_le_bytes());
            out.extend_from_slice(block);
        }
    }
    out.extend_from_slice(&0u32.to_le_bytes()); // end mark
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// KIP-390's gzip levels reach the encoder: level 1 and 9 differ in size and in the
    /// header's XFL byte (4: fastest, 2: best, as RFC 1952 and Java's Deflater write them),
    /// both read back, and an out-of-range level is the default.
    #[cfg(feature = "gzip")]
    #[test]
    fn gzip_levels_are_applied() {
        let data: Vec<u8> = (0..200_000u32)
            .flat_map(|i| format!("record {} of {}; ", i % 977, i % 13).into_bytes())
            .collect();
        let fast = Compression::Gzip.compress_at(&data, Some(1)).unwrap();
        let best = Compression::Gzip.compress_at(&data, Some(9)).unwrap();
        assert_eq!((fast[8], best[8]), (4, 2), "XFL of levels 1 and 9");
        assert!(best.len() < fast.len(), "{} vs {}", best.len(), fast.len());
        for c in [&fast, &best] {
            let back = Compression::Gzip.decompress(c, data.len()).unwrap();
            assert_eq!(&back[..], &data[..]);
        }
        let default = Compression::Gzip.compress(&data).unwrap();
        assert_eq!(
            Compression::Gzip.compress_at(&data, Some(0)).unwrap(),
            default
        );
        assert!(Compression::Gzip.applies_level());
        assert!(!Compression::Zstd.applies_level() && !Compression::Lz4.applies_level());
    }

    #[test]
    fn every_codec_round_trips() {
        let data: Vec<u8> = (0..100_000u32)
            .flat_map(|i| (i % 251).to_le_bytes())
            .collect();
        for c in Compression::ALL {
            let z = c.compress(&data).unwrap();
            if c != Compression::None {
                assert!(z.len() < data.len() / 2, "{c:?} did not compress");
            }
            assert_eq!(
                &c.decompress(&z, data.len()).unwrap()[..],
                &data[..],
                "{c:?}"
            );
        }
    }

    #[test]
    fn a_compression_bomb_is_a_typed_error() {
        let zeros = vec![0u8; 8 << 20];
        for c in Compression::ALL {
            let z = c.compress(&zeros).unwrap();
            assert_eq!(
                c.decompress(&z, 1 << 20),
                Err(DecodeError::DecompressedTooLarge { limit: 1 << 20 }),
                "{c:?}"
            );
        }
    }

    #[cfg(feature = "lz4")]
    #[test]
    fn lz4_frames_are_the_bytes_lz4_flex_frame_encoder_writes() {
        use lz4_flex::frame::{BlockMode, BlockSize, FrameEncoder, FrameInfo};
        use std::io::Write;
        let mut rng = 0x2545_f491_4f6c_dd1d_u64;
        let noise: Vec<u8> = (0..200_000)
            .map(|_| {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                rng as u8
            })
            .collect();
        let text: Vec<u8> = (0..300_000).map(|i| b'a' + (i % 26) as u8).collect();
        let inputs: [&[u8]; 6] = [
            b"",
            b"abcabcabcabcabcabcabcabcabcabcabcabc",
            &text[..64 * 1024],
            &text[..64 * 1024 + 1],
            &text,
            &noise, // incompressible: stored blocks
        ];
        for data in inputs {
            let mut info = FrameInfo::new();
            info.block_size = BlockSize::Max64KB;
            info.block_mode = BlockMode::Independent;
            let mut enc = FrameEncoder::with_frame_info(info, Vec::new());
            enc.write_all(data).unwrap();
            let want = enc.finish().unwrap();
            assert_eq!(lz4_frame(data), want, "{} bytes", data.len());
        }
    }

    #[test]
    fn garbage_is_a_typed_error() {
        for c in Compression::ALL.into_iter().skip(1) {
            let err = c.decompress(b"definitely not compressed data", 1 << 20);
            assert!(err.is_err(), "{c:?} accepted garbage");
        }
    }
}
