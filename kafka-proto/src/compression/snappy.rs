//! Snappy in both forms Kafka clients write: Java's xerial framing and librdkafka's raw block.

use bytes::Bytes;

use super::{compress_err, decompress_err};
use crate::{DecodeError, EncodeError};

/// The xerial stream header: magic, then version 1 and minimum compatible version 1.
const XERIAL_HEADER: [u8; 16] = [
    0x82, b'S', b'N', b'A', b'P', b'P', b'Y', 0, 0, 0, 0, 1, 0, 0, 0, 1,
];

/// Java's SnappyOutputStream block size.
const XERIAL_BLOCK: usize = 32 * 1024;

/// Compresses into xerial framing: the header, then `[u32 length][raw snappy block]` per 32 KiB.
pub(super) fn compress_xerial(data: &[u8]) -> Result<Vec<u8>, EncodeError> {
    let mut out = Vec::with_capacity(16 + data.len() / 2);
    out.extend_from_slice(&XERIAL_HEADER);
    let mut enc = snap::raw::Encoder::new();
    for chunk in data.chunks(XERIAL_BLOCK) {
        let block = enc
            .compress_vec(chunk)
            .map_err(|e| compress_err("snappy", e))?;
        out.extend_from_slice(&(block.len() as u32).to_be_bytes());
        out.extend_from_slice(&block);
    }
    Ok(out)
}

/// Decompresses either form, checking each block's declared size against `limit` first.
pub(super) fn decompress(data: &[u8], limit: usize) -> Result<Bytes, DecodeError> {
    if !data.starts_with(&XERIAL_HEADER[..8]) {
        return raw_block(data, limit, 0).map(Bytes::from);
    }
    if data.len() < XERIAL_HEADER.len() {
        return Err(decompress_err("snappy", "truncated xerial header"));
    }
    let mut rest = &data[XERIAL_HEADER.len()..];
    let mut out = Vec::new();
    while !rest.is_empty() {
        let Some((len, tail)) = rest.split_first_chunk::<4>() else {
            return Err(decompress_err("snappy", "truncated xerial block length"));
        };
        let len = u32::from_be_bytes(*len) as usize;
        if len > tail.len() {
            return Err(decompress_err("snappy", "xerial block runs past the input"));
        }
        let block = raw_block(&tail[..len], limit, out.len())?;
        out.extend_from_slice(&block);
        rest = &tail[len..];
    }
    Ok(out.into())
}

fn raw_block(block: &[u8], limit: usize, already: usize) -> Result<Vec<u8>, DecodeError> {
    let n = snap::raw::decompress_len(block).map_err(|e| decompress_err("snappy", e))?;
    // A snappy copy op of 3 bytes yields at most 64, so no real block expands more than ~22x:
    // a larger claim is forged, and is refused before its buffer is allocated.
    if n > block.len().saturating_mul(24).saturating_add(64) {
        return Err(decompress_err(
            "snappy",
            "block claims an impossible decompressed size",
        ));
    }
    if already + n > limit {
        return Err(DecodeError::DecompressedTooLarge { limit });
    }
    snap::raw::Decoder::new()
        .decompress_vec(block)
        .map_err(|e| decompress_err("snappy", e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_librdkafka_raw_and_java_xerial() {
        let data = b"hello hello hello hello snappy".repeat(3000);
        let raw = snap::raw::Encoder::new().compress_vec(&data).unwrap();
        assert_eq!(&decompress(&raw, 1 << 20).unwrap()[..], &data[..]);
        let framed = compress_xerial(&data).unwrap();
        assert_eq!(&framed[..16], &XERIAL_HEADER);
        assert!(framed.len() > 16 + 4 * (data.len() / XERIAL_BLOCK));
        assert_eq!(&decompress(&framed, 1 << 20).unwrap()[..], &data[..]);
    }
}
