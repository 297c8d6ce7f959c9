//! Bytes arriving on a connection: framing, the ApiVersions handshake, SASL and responses
//! matched to their requests, and a malformed answer closing its connection.

use bytes::Bytes;

use super::failure::Closing;
use super::*;

/// Whether [`Network::handle_received`] goes on to the next frame.
enum Flow {
    Next,
    /// The connection failed (malformed or unexpected): its other bytes are dropped with it.
    Stop,
}

impl<T> Network<T> {
    /// Bytes arrived on a connection.
    pub fn handle_received(&mut self, conn: ConnId, data: &[u8], now: Instant) {
        let Some(c) = self.conns.get_mut(&conn) else {
            return;
        };
        c.last_active = now;
        if c.tls.is_some() {
            if !self.receive_tls(conn, data, now) {
                return;
            }
        } else {
            c.frames.extend(data);
        }
        // Until the bytes hold no whole frame, or a frame closed the connection.
        while let Some(c) = self.conns.get_mut(&conn) {
            let frame = match c.frames.next_frame() {
                Ok(Some(f)) => f,
                Ok(None) => break,
                Err(error) => return self.malformed(conn, error, now),
            };
            if let Flow::Stop = self.on_frame(conn, frame, now) {
                return;
            }
        }
        self.close_idle_bootstrap(now);
        self.telemetry_step(now);
    }

    /// TLS records arrived on connection `conn`: their plaintext goes to its frames, and the
    /// handshake's end starts the Kafka handshake. False when the connection failed.
    fn receive_tls(&mut self, conn: ConnId, data: &[u8], now: Instant) -> bool {
        let Some(c) = self.conns.get_mut(&conn) else {
            return false;
        };
        let Some(tls) = &mut c.tls else {
            return true;
        };
        let mut plain = std::mem::take(&mut self.plain);
        plain.clear();
        let received = tls.receive(data, &mut plain);
        self.transmits
            .extend(tls.output().map(|bytes| Transmit::Send { conn, bytes }));
        let handshaken = matches!(c.state, State::Tls { .. }) && !tls.handshaking();
        c.frames.extend(&plain);
        self.plain = plain;
        if let Err(cause) = received {
            self.auth_failed(conn, now, |addr, _| AuthError::Tls { addr, cause });
            return false;
        }
        if handshaken {
            tracing::debug!(conn = conn.0, addr = %c.addr, "TLS handshake done");
            c.state = State::Handshake;
            self.send_api_versions(conn, ApiKey::ApiVersions.max_version(), now);
        }
        true
    }

    /// One whole response frame on connection `conn`: matched to the request it answers,
    /// decoded, and handed to the handshake, authentication, telemetry or the client.
    fn on_frame(&mut self, conn: ConnId, frame: Bytes, now: Instant) -> Flow {
        let Some(c) = self.conns.get_mut(&conn) else {
            return Flow::Stop;
        };
        let expected = c.in_flight.front().map(|f| f.correlation_id);
        let got = peek_correlation_id(&frame);
        if let Some(i) = c.unanswered.iter().position(|id| Some(*id) == got) {
            // An answer to a request that expects none (acks=0): Kafka never sends one,
            // Tansu does. Skip it; answers come in order, so older ids will not come.
            c.unanswered.drain(..=i);
            return Flow::Next;
        }
        if expected.is_none() || got != expected {
            self.malformed(conn, DecodeError::UnexpectedResponse, now);
            return Flow::Stop;
        }
        let Some(req) = c.in_flight.pop_front() else {
            self.malformed(conn, DecodeError::UnexpectedResponse, now);
            return Flow::Stop;
        };
        let latency = now.saturating_duration_since(req.sent);
        tracing::debug!(
            conn = conn.0,
            node = c.node(),
            api = ?req.api,
            version = req.version,
            correlation_id = req.correlation_id,
            latency_us = latency.as_micros() as u64,
            bytes = frame.len(),
            "response"
        );
        self.metrics
            .response(c.node(), frame.len(), latency.as_secs_f64() * 1e3, now);
        let body = match decode_response_body(req.api, req.version, &frame) {
            Ok((_, body)) => body,
            // UNSUPPORTED_VERSION in a reply that parses neither at the version sent nor at
            // v0 (cut short, say): ask again at v0, which every broker speaks.
            Err(_)
                if matches!(req.tag, Tag::Handshake)
                    && req.version > 0
                    && frame.get(4..6) == Some(&35i16.to_be_bytes()[..]) =>
            {
                self.send_api_versions(conn, 0, now);
                return Flow::Next;
            }
            Err(error) => {
                c.in_flight.push_front(req);
                self.malformed(conn, error, now);
                return Flow::Stop;
            }
        };
        let error = body.top_level_error();
        if error != 0 {
            tracing::debug!(
                conn = conn.0,
                node = c.node(),
                api = ?req.api,
                correlation_id = req.correlation_id,
                error = ?kafka_proto::ErrorCode::from_code(error),
                "error response"
            );
        }
        // A failed handshake's fields mean nothing (librdkafka's mock broker answers an
        // unsupported ApiVersions version with bytes that read as a 20-minute throttle).
        let failed_handshake = matches!(
            (&req.tag, &body),
            (Tag::Handshake, ResponseBody::ApiVersions(r)) if r.error_code != 0
        );
        let throttle = if failed_handshake {
            0
        } else {
            body.throttle_time_ms()
        };
        if throttle > 0 {
            c.muted_until = Some(now + Duration::from_millis(throttle as u64));
        }
        let node = c.node();
        if req.api == ApiKey::Metadata {
            self.on_metadata_answer(conn, error);
        }
        match req.tag {
            Tag::Handshake => self.on_api_versions(conn, body, req.version, now),
            Tag::Auth => self.on_auth(conn, body, now),
            Tag::Telemetry => self.on_telemetry(body, now),
            Tag::User(tag) => self.events.push_back(NetEvent::Response {
                conn,
                node,
                tag,
                version: req.version,
                body,
            }),
        }
        Flow::Next
    }

    /// A Metadata answer's top-level error, for KIP-1102: a good answer stops the rebootstrap
    /// trigger's count, REBOOTSTRAP_REQUIRED starts over at once (the client's metadata
    /// handles the error as a failed request and asks again, of a bootstrap server; found by
    /// the test of an admin client asking the same stale broker again on its open
    /// connection).
    fn on_metadata_answer(&mut self, conn: ConnId, error: i16) {
        if error == 0 {
            self.recovery.metadata_answered();
        } else if error == kafka_proto::ErrorCode::RebootstrapRequired.code() {
            self.rebootstrap_required(conn, "Metadata");
        }
    }

    /// A broker answered `what` with REBOOTSTRAP_REQUIRED (KIP-1102 in Metadata; KIP-1242 in
    /// the handshake, where it is not the node or cluster the client meant): with
    /// `metadata.recovery.strategy=rebootstrap`, start over from bootstrap.servers, asking
    /// nothing more of that broker (its connection closes once idle).
    fn rebootstrap_required(&mut self, conn: ConnId, what: &str) {
        if !self.cfg.rebootstrap {
            return;
        }
        tracing::info!(
            conn = conn.0,
            "a broker answered {what} with REBOOTSTRAP_REQUIRED; starting over from bootstrap.servers"
        );
        self.rebootstrap();
        if let Some(c) = self.conns.get_mut(&conn) {
            c.close_when_idle = true;
        }
    }

    fn on_api_versions(&mut self, conn: ConnId, body: ResponseBody, sent: i16, now: Instant) {
        let ResponseBody::ApiVersions(resp) = body else {
            unreachable!("tagged as handshake")
        };
        let versions = BrokerVersions::from_response(&resp);
        if resp.error_code == ErrorCode::UnsupportedVersion.code() {
            // UNSUPPORTED_VERSION: retry once at the highest ApiVersions version the broker
            // listed (v0 if it listed none), as Java does. Only ever downwards, so no loop.
            let max = versions
                .broker_range(ApiKey::ApiVersions)
                .map_or(0, |r| r.1);
            if max < sent {
                return self.send_api_versions(conn, max.max(0), now);
            }
        }
        if let Some(code) = kafka_proto::ErrorCode::from_code(resp.error_code) {
            if code == kafka_proto::ErrorCode::RebootstrapRequired {
                self.rebootstrap_required(conn, "the ApiVersions handshake");
            }
            if let Some(c) = self.conns.get(&conn) {
                self.last_problem = stamp(
                    now,
                    format!("{} refused the ApiVersions handshake: {code}", c.addr),
                );
            }
            return self.fail_connection(
                conn,
                now,
                |addr| RequestError::Handshake { addr, code },
                Closing::Ours,
            );
        }
        if resp.finalized_features_epoch > self.features.0 {
            self.features = (
                resp.finalized_features_epoch,
                resp.finalized_features
                    .iter()
                    .map(|f| (f.name.clone(), f.max_version_level))
                    .collect(),
            );
        }
        let c = self.conns.get_mut(&conn).expect("present");
        c.versions = versions;
        if self.cfg.security.protocol.sasl() {
            return self.start_sasl(conn, now);
        }
        c.state = State::Ready;
        let addr = c.addr.clone();
        // A broker answers: the client is not cut off (KIP-1102's trigger counts that).
        self.recovery.broker_found(true, now);
        tracing::debug!(
            conn = conn.0,
            node = c.node(),
            %addr,
            api_versions = sent,
            "connection ready"
        );
        if let Some(f) = self.failures.remove(&addr) {
            if f.count >= WARN_AFTER_FAILURES {
                tracing::info!(%addr, failures = f.count, "connected again after failures");
            }
        }
    }

    fn malformed(&mut self, conn: ConnId, error: DecodeError, now: Instant) {
        if let Some(c) = self.conns.get(&conn) {
            self.last_problem = stamp(
                now,
                if c.state == State::Ready {
                    format!("{} sent a malformed response: {error}", c.addr)
                } else {
                    format!(
                    "{} did not answer the ApiVersions handshake like a Kafka broker ({error}): \
                     is it a Kafka listener, and does it need TLS? (see security.protocol)",
                    c.addr
                )
                },
            );
        }
        self.fail_connection(
            conn,
            now,
            |addr| RequestError::Malformed {
                addr,
                error: error.clone(),
            },
            Closing::Ours,
        );
    }
}
