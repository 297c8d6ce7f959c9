//! The scripted broker: one connection's broker side, answering each request with whatever the
//! test's handler says, and logging every request for assertions.
//!
//! It speaks real Kafka bytes: feed it what the client sent, get back what the broker would
//! write. ApiVersions is answered by default from a configurable version table, including the
//! UNSUPPORTED_VERSION v0 reply that real brokers send to a too-new request.

use bytes::{Bytes, BytesMut};
use kafka_proto::api::{ApiKey, RequestBody, ResponseBody};
use kafka_proto::messages::api_versions_response::{ApiVersion, ApiVersionsResponse};
use kafka_proto::{decode_request, encode_response, DecodeError, FrameDecoder, RequestHeader};

/// What the broker does with one request.
#[derive(Debug, Clone)]
pub enum Reply {
    /// Answer with this body, encoded at the request's version.
    Respond(ResponseBody),
    /// Answer with this body encoded at another version (as brokers do for UNSUPPORTED_VERSION).
    RespondAt(ResponseBody, i16),
    /// Close the connection without answering.
    Close,
    /// Never answer (the client's request timeout must fire).
    Ignore,
    /// Answer after this long (a long-polling Fetch, a slow broker). Responses on a connection
    /// stay in request order, as a broker sends them, so later ones wait behind it.
    After(std::time::Duration, Box<Reply>),
}

/// The broker's output after being fed bytes.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Output {
    /// Bytes to deliver to the client, in order.
    pub bytes: Bytes,
    /// Whether the broker closed the connection (after `bytes`).
    pub closed: bool,
}

type Handler = Box<dyn FnMut(&RequestHeader, &RequestBody) -> Reply + Send>;

/// Virtual time as the broker sees it: time since the simulation started.
pub type SimTime = std::time::Duration;

/// One broker connection driven by a script.
pub struct ScriptedBroker {
    versions: Vec<(i16, i16, i16)>,
    frames: FrameDecoder,
    handler: Handler,
    requests: Vec<(RequestHeader, RequestBody)>,
    closed: bool,
    now: SimTime,
    /// Encoded responses not yet due, in send order: (due, bytes, close after).
    queued: std::collections::VecDeque<(SimTime, Bytes, bool)>,
    /// An error code to answer the ApiVersions handshake with.
    refuse_handshake: Option<i16>,
    /// Closes the connection on an ApiVersions request that names a cluster (KIP-1242), as
    /// Tansu 0.6 does.
    close_on_cluster_check: bool,
}

impl std::fmt::Debug for ScriptedBroker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScriptedBroker")
            .field("requests", &self.requests.len())
            .field("closed", &self.closed)
            .finish()
    }
}

/// The APIs a broker advertises by default: every one this codec implements, at its versions,
/// except KIP-714 telemetry, which Apache Kafka offers only with a telemetry receiver
/// configured (advertise it with [`ScriptedBroker::with_versions`]), and up to the versions
/// the simulated coordinators answer: they find topics by name, so not OffsetCommit and
/// OffsetFetch v10 or TxnOffsetCommit v6, which name them only by id.
pub fn default_versions() -> Vec<(i16, i16, i16)> {
    ApiKey::ALL
        .iter()
        .filter(|k| !matches!(k, ApiKey::GetTelemetrySubscriptions | ApiKey::PushTelemetry))
        .map(|k| {
            let max = match k {
                ApiKey::OffsetCommit | ApiKey::OffsetFetch => 9,
                ApiKey::TxnOffsetCommit => 5,
                k => k.max_version(),
            };
            (k.key(), k.min_version(), max)
        })
        .collect()
}

impl ScriptedBroker {
    /// A broker advertising every API (but telemetry: see [`default_versions`]) at the
    /// versions this codec implements, answering
    /// everything but ApiVersions through `handler`.
    pub fn new(
        handler: impl FnMut(&RequestHeader, &RequestBody) -> Reply + Send + 'static,
    ) -> Self {
        ScriptedBroker {
            versions: default_versions(),
            frames: FrameDecoder::default(),
            handler: Box::new(handler),
            requests: Vec::new(),
            closed: false,
            now: SimTime::ZERO,
            queued: Default::default(),
            refuse_handshake: None,
            close_on_cluster_check: false,
        }
    }

    /// Closes the connection on an ApiVersions request naming a cluster (KIP-1242's check),
    /// as Tansu 0.6 does.
    pub fn closing_on_cluster_check(mut self) -> Self {
        self.close_on_cluster_check = true;
        self
    }

    /// Answers the ApiVersions handshake with `code` (say REBOOTSTRAP_REQUIRED, 129: a broker
    /// that is not the node the client named, KIP-1242).
    pub fn refusing_handshake(mut self, code: i16) -> Self {
        self.refuse_handshake = Some(code);
        self
    }

    /// Advertises exactly these `(api key, min, max)` ranges, in this order (real brokers
    /// need not sort them).
    pub fn with_versions(mut self, versions: Vec<(i16, i16, i16)>) -> Self {
        self.versions = versions;
        self
    }

    /// Every request received so far, decoded.
    pub fn requests(&self) -> &[(RequestHeader, RequestBody)] {
        &self.requests
    }

    /// Whether the broker has closed the connection.
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// Feeds bytes the client sent; returns what the broker writes back now.
    ///
    /// A malformed request closes the connection, as Kafka brokers do.
    pub fn receive(&mut self, data: &[u8]) -> Result<Output, DecodeError> {
        if self.closed {
            return Ok(Output {
                bytes: Bytes::new(),
                closed: true,
            });
        }
        self.frames.extend(data);
        while let Some(frame) = self.frames.next_frame()? {
            let (header, body) = match decode_request(&frame) {
                Ok(r) => r,
                Err(e) => {
                    self.closed = true;
                    return Err(e);
                }
            };
            let reply = self.reply(&header, &body);
            self.requests.push((header.clone(), body));
            let key = ApiKey::from_i16(header.api_key).expect("decode_request checked the key");
            let mut delay = SimTime::ZERO;
            let mut reply = reply;
            while let Reply::After(d, inner) = reply {
                delay += d;
                reply = *inner;
            }
            // Never earlier than a response queued before it.
            let due = (self.now + delay).max(self.queued.back().map_or(SimTime::ZERO, |q| q.0));
            let (resp, version) = match reply {
                Reply::Respond(r) => (r, header.api_version),
                Reply::RespondAt(r, v) => (r, v),
                Reply::Ignore => continue,
                Reply::Close => {
                    self.queued.push_back((due, Bytes::new(), true));
                    break;
                }
                Reply::After(..) => unreachable!("unwrapped above"),
            };
            let mut out = BytesMut::new();
            encode_response(&mut out, key, version, header.correlation_id, &resp)
                .expect("a scripted response must encode at its version");
            self.queued.push_back((due, out.freeze(), false));
        }
        Ok(self.take_due())
    }

    /// Moves the broker's clock to `now` and returns the responses that became due.
    pub fn advance(&mut self, now: SimTime) -> Output {
        self.now = self.now.max(now);
        self.take_due()
    }

    /// When the next queued response is due, if any.
    pub fn next_due(&self) -> Option<SimTime> {
        self.queued.front().map(|q| q.0)
    }

    fn take_due(&mut self) -> Output {
        let mut out = BytesMut::new();
        while let Some((due, _, _)) = self.queued.front() {
            if *due > self.now {
                break;
            }
            let (_, bytes, close) = self.queued.pop_front().expect("checked");
            out.extend_from_slice(&bytes);
            if close {
                self.closed = true;
                self.queued.clear();
                break;
            }
        }
        Output {
            bytes: out.freeze(),
            closed: self.closed,
        }
    }

    fn reply(&mut self, header: &RequestHeader, body: &RequestBody) -> Reply {
        if let RequestBody::ApiVersions(req) = body {
            if self.close_on_cluster_check && req.cluster_id.is_some() {
                return Reply::Close;
            }
            if let Some(code) = self.refuse_handshake {
                let resp = ApiVersionsResponse {
                    error_code: code,
                    ..Default::default()
                };
                return Reply::Respond(ResponseBody::ApiVersions(resp));
            }
            return self.api_versions(header.api_version);
        }
        (self.handler)(header, body)
    }

    fn api_versions(&self, version: i16) -> Reply {
        let max = self
            .versions
            .iter()
            .find(|v| v.0 == ApiKey::ApiVersions.key())
            .map_or(0, |v| v.2);
        match api_versions_answer(&self.versions, max, version) {
            (body, Some(at)) => Reply::RespondAt(body, at),
            (body, None) => Reply::Respond(body),
        }
    }
}

/// An ApiVersions answer listing `table` (`(api key, min, max)`), for a request at `version`
/// to a broker that speaks ApiVersions up to `max`. A too-new request gets error 35 in a v0
/// body (the `Some(0)`: the version to encode at), listing what the broker does speak.
pub(crate) fn api_versions_answer(
    table: &[(i16, i16, i16)],
    max: i16,
    version: i16,
) -> (ResponseBody, Option<i16>) {
    let api_keys = table
        .iter()
        .map(|&(api_key, min_version, max_version)| ApiVersion {
            api_key,
            min_version,
            max_version,
            ..Default::default()
        })
        .collect();
    let too_new = version > max;
    let resp = ApiVersionsResponse {
        error_code: if too_new { 35 } else { 0 },
        api_keys,
        ..Default::default()
    };
    (ResponseBody::ApiVersions(resp), too_new.then_some(0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_proto::messages::api_versions_request::ApiVersionsRequest;
    use kafka_proto::messages::metadata_request::MetadataRequest;
    use kafka_proto::messages::metadata_response::MetadataResponse;
    use kafka_proto::{decode_response, encode_request};

    fn frame_of(out: &Output) -> Bytes {
        let mut d = FrameDecoder::default();
        d.extend(&out.bytes);
        d.next_frame().unwrap().expect("one whole response frame")
    }

    #[test]
    fn answers_api_versions_and_falls_back_to_v0_when_too_new() {
        let mut b =
            ScriptedBroker::new(|_, _| Reply::Ignore).with_versions(vec![(3, 0, 12), (18, 0, 2)]);
        let mut req = BytesMut::new();
        encode_request(&mut req, &ApiVersionsRequest::default(), 3, 1, Some("t")).unwrap();
        let out = b.receive(&req).unwrap();
        // The reply is a v0 body with error 35; the client's decoder falls back to v0.
        let (h, resp) = decode_response::<ApiVersionsResponse>(&frame_of(&out), 3).unwrap();
        assert_eq!(
            (h.correlation_id, resp.error_code, resp.api_keys.len()),
            (1, 35, 2)
        );

        let mut req = BytesMut::new();
        encode_request(&mut req, &ApiVersionsRequest::default(), 2, 2, Some("t")).unwrap();
        let (_, resp) =
            decode_response::<ApiVersionsResponse>(&frame_of(&b.receive(&req).unwrap()), 2)
                .unwrap();
        assert_eq!(resp.error_code, 0);
        assert_eq!(b.requests().len(), 2);
    }

    #[test]
    fn handler_replies_ignores_and_closes() {
        let mut n = 0;
        let mut b = ScriptedBroker::new(move |_, body| {
            assert!(matches!(body, RequestBody::Metadata(_)));
            n += 1;
            match n {
                1 => Reply::Respond(ResponseBody::Metadata(MetadataResponse::default())),
                2 => Reply::Ignore,
                _ => Reply::Close,
            }
        });
        let mut req = BytesMut::new();
        for id in 0..3 {
            encode_request(&mut req, &MetadataRequest::default(), 12, id, None).unwrap();
        }
        // Split anywhere: the broker reframes.
        let first = b.receive(&req[..7]).unwrap();
        assert!(first.bytes.is_empty() && !first.closed);
        let out = b.receive(&req[7..]).unwrap();
        assert!(out.closed);
        let (h, _) = decode_response::<MetadataResponse>(&frame_of(&out), 12).unwrap();
        assert_eq!(h.correlation_id, 0);
        assert_eq!(b.requests().len(), 3);
    }
}
