//! Request headers (v1, v2) and response headers (v0, v1), and whole-frame encoding and decoding.

use bytes::{BufMut, Bytes, BytesMut};

use crate::api::{ApiKey, Request, Response, ResponseBody};
use crate::wire::{
    read_tagged_fields, write_tagged_fields, Ctx, Reader, UnknownTaggedFields, Wire,
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
    buf: &mut BytesMut,
    body: impl FnOnce(&mut BytesMut) -> Result<(), EncodeError>,
) -> Result<(), EncodeError> {
    let start = buf.len();
    buf.put_i32(0);
    if let Err(e) = body(buf) {
        buf.truncate(start);
        return Err(e);
    }
    let size = buf.len() - start - 4;
    let size = i32::try_from(size).map_err(|_| EncodeError::TooLong {
        what: "frame",
        len: size,
    })?;
    buf[start..start + 4].copy_from_slice(&size.to_be_bytes());
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
    let header = RequestHeader {
        api_key: R::API_KEY.key(),
        api_version: version,
        correlation_id,
        client_id: client_id.map(str::to_owned),
        unknown_tagged_fields: Default::default(),
    };
    sized(buf, |buf| {
        header.encode(buf, R::API_KEY.request_header_version(version))?;
        request.encode(buf, version)
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
    sized(buf, |buf| {
        header.encode(buf, key.response_header_version(version));
        body.encode(buf, version)
    })
}
