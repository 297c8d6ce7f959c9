//! Request headers (v1, v2) and response headers (v0, v1), and whole-frame encoding and decoding.

use bytes::{BufMut, Bytes, BytesMut};

use crate::api::{ApiKey, Request, Response, ResponseBody};
use crate::wire::{
    read_tagged_fields, write_tagged_fields, Ctx, Encoder, Reader, UnknownTaggedFields, Wire,
};
use crate::{DecodeError, EncodeError};

/// The header in front of every request.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RequestHeader {
    /// The numeric API key (kept raw so a broker can answer unknown keys).
    pub api_key: i16,
    /// The API version of the body.
    pub api_version: i16,
    /// Echoed back in the response header; matches responses to requests.
    pub correlation_id: i32,
    /// The client id. It stays a classic (non-compact) nullable string even in header v2.
    pub client_id: Option<String>,
    /// Header v2 tagged fields.
    pub unknown_tagged_fields: UnknownTaggedFields,
}

const CLASSIC: Ctx = Ctx {
    version: 0,
    flexible: false,
};

impl RequestHeader {
    /// Appends the header at `header_version` (1 or 2).
    pub fn encode(&self, buf: &mut BytesMut, header_version: i16) -> Result<(), EncodeError> {
        Encoder::wrap(buf, |enc| self.encode_into(enc, header_version))
    }

    fn encode_into(&self, buf: &mut Encoder, header_version: i16) -> Result<(), EncodeError> {
        buf.put_i16(self.api_key);
        buf.put_i16(self.api_version);
        buf.put_i32(self.correlation_id);
        self.client_id.write(buf, CLASSIC)?;
        if header_version >= 2 {
            write_tagged_fields(buf, Vec::new(), &self.unknown_tagged_fields);
        }
        Ok(())
    }

    /// Reads a header; the header version follows from the API key and version it carries.
    /// Unknown API keys are read as header v1 so that the broker can still answer them.
    pub fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let mut h = RequestHeader {
            api_key: r.i16()?,
            api_version: r.i16()?,
            correlation_id: r.i32()?,
            client_id: Wire::read(r, CLASSIC)?,
            ..Default::default()
        };
        let flexible = ApiKey::from_i16(h.api_key)
            .is_some_and(|k| k.request_header_version(h.api_version) >= 2);
        if flexible {
            read_tagged_fields(r, &mut h.unknown_tagged_fields, |_, _| Ok(false))?;
        }
        Ok(h)
    }
}

/// The header in front of every response.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ResponseHeader {
    /// The request's correlation id.
    pub correlation_id: i32,
    /// Header v1 tagged fields.
    pub unknown_tagged_fields: UnknownTaggedFields,
}

impl ResponseHeader {
    /// Appends the header at `header_version` (0 or 1).
    pub fn encode(&self, buf: &mut BytesMut, header_version: i16) {
        buf.put_i32(self.correlation_id);
        if header_version >= 1 {
            write_tagged_fields(buf, Vec::new(), &self.unknown_tagged_fields);
        }
    }

    /// Reads a header at `header_version` (0 or 1).
    pub fn decode(r: &mut Reader<'_>, header_version: i16) -> Result<Self, DecodeError> {
        let mut h = ResponseHeader {
            correlation_id: r.i32()?,
            ..Default::default()
        };
        if header_version >= 1 {
            read_tagged_fields(r, &mut h.unknown_tagged_fields, |_, _| Ok(false))?;
        }
        Ok(h)
    }
}

/// Reserves a 4-byte size prefix, runs `body`, then fills the prefix in.
fn sized(
    buf: &mut Encoder,
    body: impl FnOnce(&mut Encoder) -> Result<(), EncodeError>,
) -> Result<(), EncodeError> {
    let start = buf.encoded_len();
    // Where the prefix is in the buffer: before any field spliced after it.
    let at = buf.len();
    buf.put_i32(0);
    let size = match body(buf) {
        Ok(()) => buf.encoded_len() - start - 4,
        Err(e) => {
            buf.truncate(start);
            return Err(e);
        }
    };
    let Ok(size) = i32::try_from(size) else {
        buf.truncate(start);
        return Err(EncodeError::TooLong {
            what: "frame",
            len: size,
        });
    };
    buf[at..at + 4].copy_from_slice(&size.to_be_bytes());
    Ok(())
}

/// Appends a complete request frame: size prefix, header and body.
/// On error nothing is appended.
pub fn encode_request<R: Request>(
    buf: &mut BytesMut,
    request: &R,
    version: i16,
    correlation_id: i32,
    client_id: Option<&str>,
) -> Result<(), EncodeError> {
    Encoder::wrap(buf, |enc| {
        encode_request_into(enc, request, version, correlation_id, client_id)
    })
}

/// Like [`encode_request`], into an [`Encoder`], which may keep large byte fields (a produce
/// request's record batches) out of its buffer, to be sent from their own.
pub fn encode_request_into<R: Request>(
    buf: &mut Encoder,
    request: &R,
    version: i16,
    correlation_id: i32,
    client_id: Option<&str>,
) -> Result<(), EncodeError> {
    let header = RequestHeader {
        api_key: R::API_KEY.key(),
        api_version: version,
        correlation_id,
        client_id: client_id.map(str::to_owned),
        unknown_tagged_fields: Default::default(),
    };
    sized(buf, |buf| {
        header.encode_into(buf, R::API_KEY.request_header_version(version))?;
        request.encode_into(buf, version)
    })
}

/// Decodes a response frame (without its size prefix) for a request of type `R` sent at `version`.
pub fn decode_response<R: Response>(
    frame: &Bytes,
    version: i16,
) -> Result<(ResponseHeader, R), DecodeError> {
    let mut r = Reader::new(frame);
    let header = ResponseHeader::decode(&mut r, R::API_KEY.response_header_version(version))?;
    let body = frame.slice(frame.len() - r.remaining()..);
    Ok((header, R::decode(&body, version)?))
}

/// Reads just the correlation id of a response frame, to match it to its request.
pub fn peek_correlation_id(frame: &[u8]) -> Option<i32> {
    frame
        .get(..4)
        .map(|b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

/// Decodes any response frame (without its size prefix) for `key` at `version`.
pub fn decode_response_body(
    key: ApiKey,
    version: i16,
    frame: &Bytes,
) -> Result<(ResponseHeader, ResponseBody), DecodeError> {
    let mut r = Reader::new(frame);
    let header = ResponseHeader::decode(&mut r, key.response_header_version(version))?;
    let body = frame.slice(frame.len() - r.remaining()..);
    Ok((header, ResponseBody::decode(key, version, &body)?))
}

/// Decodes a request frame (without its size prefix): the broker's side (feature `broker`).
#[cfg(feature = "broker")]
pub fn decode_request(
    frame: &Bytes,
) -> Result<(RequestHeader, crate::api::RequestBody), DecodeError> {
    let mut r = Reader::new(frame);
    let header = RequestHeader::decode(&mut r)?;
    let key = ApiKey::from_i16(header.api_key).ok_or(DecodeError::UnknownApiKey(header.api_key))?;
    let body = frame.slice(frame.len() - r.remaining()..);
    let req = crate::api::RequestBody::decode(key, header.api_version, &body)?;
    Ok((header, req))
}

/// Appends a complete response frame for `key` at `version`: the broker's side (feature `broker`).
#[cfg(feature = "broker")]
pub fn encode_response(
    buf: &mut BytesMut,
    key: ApiKey,
    version: i16,
    correlation_id: i32,
    body: &ResponseBody,
) -> Result<(), EncodeError> {
    let header = ResponseHeader {
        correlation_id,
        unknown_tagged_fields: Default::default(),
    };
    Encoder::wrap(buf, |buf| {
        sized(buf, |buf| {
            header.encode(buf, key.response_header_version(version));
            body.encode(buf, version)
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::produce_request::{
        PartitionProduceData, ProduceRequest, TopicProduceData,
    };

    /// A produce request spliced around its batches is the same bytes as one written whole,
    /// at every version, flexible or not.
    #[test]
    fn a_spliced_produce_request_is_the_whole_request_in_parts() {
        let batch = |n: u8| Bytes::from(vec![n; 5000]);
        let request = ProduceRequest {
            acks: 1,
            timeout_ms: 30_000,
            topic_data: vec![TopicProduceData {
                name: "t".into(),
                partition_data: (0..3)
                    .map(|i| PartitionProduceData {
                        index: i,
                        records: Some(batch(i as u8)),
                        ..Default::default()
                    })
                    .chain([PartitionProduceData {
                        index: 3,
                        records: Some(Bytes::from_static(b"small")),
                        ..Default::default()
                    }])
                    .collect(),
                ..Default::default()
            }],
            ..Default::default()
        };
        for version in 3..=12 {
            let mut whole = BytesMut::new();
            encode_request(&mut whole, &request, version, 7, Some("c")).unwrap();
            let mut enc = Encoder::splicing(BytesMut::new(), 4096);
            encode_request_into(&mut enc, &request, version, 7, Some("c")).unwrap();
            assert_eq!(enc.encoded_len(), whole.len());
            let parts = enc.into_parts();
            assert_eq!(
                parts.len(),
                7,
                "v{version}: head, then each batch and what follows"
            );
            assert_eq!(parts.concat(), &whole[..], "v{version}");
            // The batches are sent from their own buffers, not copied.
            let from_batches = parts.iter().filter(|p| p.len() == 5000).count();
            assert_eq!(from_batches, 3);
        }
    }

    #[test]
    fn a_failed_spliced_encoding_leaves_nothing() {
        let topic = |name: String| TopicProduceData {
            name,
            partition_data: vec![PartitionProduceData {
                records: Some(Bytes::from(vec![0; 5000])),
                ..Default::default()
            }],
            ..Default::default()
        };
        // The second topic's name is too long for a string, after the first topic's batch
        // was spliced.
        let request = ProduceRequest {
            topic_data: vec![topic("t".into()), topic("x".repeat(40_000))],
            ..Default::default()
        };
        let mut enc = Encoder::splicing(BytesMut::new(), 4096);
        enc.put_u8(1);
        let err = encode_request_into(&mut enc, &request, 8, 7, None).unwrap_err();
        assert!(matches!(err, EncodeError::TooLong { .. }), "{err:?}");
        assert_eq!(enc.encoded_len(), 1);
        assert_eq!(enc.into_parts().concat(), [1]);
    }
}
