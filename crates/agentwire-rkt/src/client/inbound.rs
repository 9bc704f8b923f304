//! What the server sends a client: HELLO_ACK, ERROR, replies and stream chunks put back in
//! `Seq` order.

use super::*;

#[derive(Debug, Default)]
pub(super) struct StreamState {
    pub(super) next_seq: u64,
    pub(super) held: Held,
}

/// Out-of-order chunks by Seq, in a vector sorted by Seq (at most `max_stream_buffer` of them):
/// far less wasm than a `BTreeMap` of its own.
#[derive(Debug, Default)]
pub(super) struct Held(Vec<(u64, Option<String>)>);

impl Held {
    pub(super) fn find(&self, seq: u64) -> Result<usize, usize> {
        self.0.binary_search_by_key(&seq, |(s, _)| *s)
    }

    pub(super) fn contains(&self, seq: u64) -> bool {
        self.find(seq).is_ok()
    }

    pub(super) fn insert(&mut self, seq: u64, body: Option<String>) {
        match self.find(seq) {
            Ok(i) => self.0[i].1 = body,
            Err(i) => self.0.insert(i, (seq, body)),
        }
    }

    pub(super) fn remove(&mut self, seq: u64) -> Option<Option<String>> {
        self.find(seq).ok().map(|i| self.0.remove(i).1)
    }

    pub(super) fn last(&self) -> Option<u64> {
        self.0.last().map(|(s, _)| *s)
    }

    pub(super) fn bytes(&self) -> usize {
        self.0.iter().map(|(_, b)| b.as_ref().map_or(0, String::len)).sum()
    }
}

impl ClientSession {
    pub(super) fn on_message(&mut self, now: Millis, msg: Message) {
        match msg.kind {
            MessageType::HelloAck => self.on_hello_ack(now, msg),
            MessageType::Goodbye => {
                self.events.push_back(ClientEvent::Goodbye);
                self.close(1000, "goodbye");
            }
            MessageType::Ping => {
                let id = self.entropy.uuid_v4();
                let pong = envelope(
                    MessageType::Pong,
                    id,
                    Some(msg.message_id()),
                    &self.session_id,
                    now,
                    None,
                );
                self.send(now, &pong);
            }
            MessageType::Error => self.on_error(msg),
            MessageType::Response
            | MessageType::StreamBegin
            | MessageType::StreamData
            | MessageType::StreamEnd
            | MessageType::AuthOk
            | MessageType::Pong => self.on_reply(now, msg),
            other => {
                let e = RktError::local(ErrorKind::Protocol, format!("a server does not send {other}; dropped"));
                self.dropped(e.for_request(msg.message_id()));
            }
        }
    }

    pub(super) fn on_hello_ack(&mut self, now: Millis, msg: Message) {
        if self.state != ClientState::Handshaking || msg.reply_to() != self.hello_id.as_deref() {
            let e = RktError::local(ErrorKind::Protocol, "unexpected HELLO_ACK; dropped");
            self.dropped(e);
            return;
        }
        // Read at or past the handshake's deadline, before the driver reported it: too late, as
        // if the timer had fired first, with or without `authorization` (so the outcome does not
        // hang on which the driver hands over first, and no AUTH goes out with no time left).
        let handshake_until = self.timers.deadline(&Timer::Handshake);
        if let Some(until) = handshake_until.filter(|u| now >= *u) {
            let m = format!(
                "the HELLO_ACK was read {} ms past the handshake timeout of {} ms",
                now - until,
                self.cfg.handshake_timeout_ms
            );
            return self.handshake_timed_out(m);
        }
        let ack = match msg.body.as_deref().map(HelloAckBody::from_json) {
            Some(Ok(ack)) => ack,
            _ => {
                let e = RktError::local(
                    ErrorKind::Decode,
                    "HELLO_ACK body is not {agreed_version, session_timeout}",
                );
                self.report(e);
                self.close(1002, "bad HELLO_ACK");
                return;
            }
        };
        if !(self.cfg.min_version..=self.cfg.max_version).contains(&ack.agreed_version) {
            let m = format!(
                "server agreed version {} outside {}..={}",
                ack.agreed_version, self.cfg.min_version, self.cfg.max_version
            );
            let mut e = RktError::local(ErrorKind::Version, m);
            e.error.code = Some(crate::errors::codes::VERSION_UNSUPPORTED);
            self.report(e);
            self.close(1000, "version unsupported");
            return;
        }
        self.timers.cancel(&Timer::Handshake);
        self.state = ClientState::Ready;
        self.session_timeout_ms = ack.session_timeout.saturating_mul(1000);
        let server = PeerInfo {
            from: msg.header("From").map(str::to_string),
            user_agent: msg.header("User-Agent").map(str::to_string),
            capabilities: split_list(msg.header("Capabilities")),
        };
        let ready = ClientEvent::Ready {
            agreed_version: ack.agreed_version,
            session_timeout: ack.session_timeout,
            server,
        };
        if self.cfg.authorization.is_none() {
            self.events.push_back(ready);
        } else {
            self.held_ready = Some(ready);
        }
        let queue = std::mem::take(&mut self.queue);
        // Every queued command is pending (`take_pending` takes an ended one out of the queue).
        // Their TTLs restart in call order (before the configured AUTH's, a later call), so that
        // those of the same TTL time out oldest first.
        for q in &queue {
            let Some(p) = self.pending.get_mut(&q.id) else { continue };
            p.sent_at = now;
            self.timers
                .set(Timer::Reply(q.id.clone()), now.saturating_add(p.ttl_ms));
        }
        if let Some(authz) = self.cfg.authorization.clone() {
            let token = bearer_token(&authz).to_string();
            let body = serde_json::to_string(&AuthBody::Bearer {
                token,
                scopes: Vec::new(),
            })
            .unwrap_or_default();
            // Sent ahead of the queue and outside `max_in_flight`: it must never be skipped.
            let id = self.entropy.uuid_v4();
            let mut msg = self.new_message(MessageType::Auth, id.clone(), now, Some(self.cfg.ttl_s));
            msg.headers.set("Priority", Priority::Urgent.as_str());
            msg.body = Some(body);
            self.track(now, id.clone(), Op::Auth, self.cfg.ttl_s, false, Origin::ConfiguredAuth);
            // It completes the handshake: the handshake's deadline (still ahead) bounds it.
            let key = Timer::Reply(id.clone());
            if let Some(until) = handshake_until.filter(|u| self.timers.deadline(&key).is_some_and(|t| t > *u)) {
                self.timers.set(key, until);
                if let Some(p) = self.pending.get_mut(&id) {
                    p.handshake_bound = true;
                }
            }
            self.send_command(now, &msg, id);
        }
        // Sent highest priority first, call order kept within a level (no sort: smaller wasm).
        let levels = [Priority::Urgent, Priority::High, Priority::Normal, Priority::Low];
        for q in levels
            .iter()
            .flat_map(|l| queue.iter().filter(move |q| q.priority == *l))
        {
            if self.pending.contains_key(&q.id) {
                self.send_command(now, &q.msg, q.id.clone());
            }
        }
        self.arm_keepalive();
    }

    pub(super) fn on_error(&mut self, msg: Message) {
        let body = match msg.body.as_deref().map(ErrorBody::from_json) {
            Some(Ok(b)) => b,
            bad => {
                let why = match bad {
                    Some(Err(e)) => e.to_string(),
                    _ => "no body".into(),
                };
                let text = clip(msg.body.as_deref().unwrap_or(""), QUOTE_MAX);
                crate::errors::error_body(0, format!("ERROR without a valid body ({why}): {text}"), None, None)
            }
        };
        let retry_after = msg.header("Retry-After").and_then(retry_after_s);
        let reply_to = msg.reply_to().map(str::to_string).or_else(|| body.request_id.clone());
        let error = RktError::remote(&body, reply_to.as_deref(), retry_after);
        if self.state == ClientState::Handshaking && (reply_to.is_none() || reply_to == self.hello_id) {
            self.report(error);
            self.close(1000, "handshake refused");
            return;
        }
        let taken = match &reply_to {
            Some(id) if !self.is_queued(id) => self.take_pending(id),
            _ => None,
        };
        match (reply_to, taken) {
            (Some(id), Some(p)) => {
                self.timers.cancel(&Timer::Reply(id.clone()));
                self.end(p.origin, ClientEvent::Failed { id, error });
            }
            (Some(id), None) if self.is_forgotten(&id) => {}
            _ => self.report(error),
        }
    }

    pub(super) fn on_reply(&mut self, now: Millis, msg: Message) {
        let id = msg.reply_to().unwrap_or_default().to_string();
        if self.is_queued(&id) {
            let m = format!("{} answers `{id}`, which has not been sent yet; dropped", msg.kind);
            self.dropped(RktError::local(ErrorKind::Protocol, m));
            return;
        }
        let Some(p) = self.pending.get_mut(&id) else {
            if !self.is_forgotten(&id) {
                let m = format!("{} answers unknown message `{id}`; dropped", msg.kind);
                self.dropped(RktError::local(ErrorKind::Protocol, m));
            }
            return;
        };
        let expected = match (msg.kind, p.op, p.stream.is_some()) {
            (MessageType::Pong, Op::Ping, _) => true,
            (MessageType::AuthOk, Op::Auth, _) => true,
            (MessageType::Response, op, _) => !matches!(op, Op::Ping | Op::Auth),
            (MessageType::StreamBegin | MessageType::StreamData | MessageType::StreamEnd, Op::Request, true) => true,
            _ => false,
        };
        if !expected {
            // A stream answering a REQUEST sent without `Stream: true`: no RESPONSE will follow,
            // so the request fails now rather than as a retryable timeout after its TTL.
            let streamed = p.op == Op::Request
                && matches!(
                    msg.kind,
                    MessageType::StreamBegin | MessageType::StreamData | MessageType::StreamEnd
                );
            let m = format!(
                "{} is not a reply to this command{}",
                msg.kind,
                if streamed {
                    " (a REQUEST sent without `Stream: true`)"
                } else {
                    "; dropped"
                }
            );
            let error = RktError::local(ErrorKind::Protocol, m);
            match streamed {
                true => self.fail(id, error),
                false => self.dropped(error.for_request(&id)),
            }
            return;
        }
        match msg.kind {
            MessageType::StreamBegin | MessageType::StreamData => {
                // A stream stays alive while chunks keep coming: each one restarts the TTL.
                let ttl_ms = p.ttl_ms;
                self.timers.set(Timer::Reply(id.clone()), now.saturating_add(ttl_ms));
                if msg.kind == MessageType::StreamBegin {
                    self.events.push_back(ClientEvent::StreamBegin { id, body: msg.body });
                } else {
                    self.on_chunk(id, msg.seq().unwrap_or_default(), msg.body);
                }
            }
            MessageType::StreamEnd => self.on_stream_end(id, msg.body),
            _ if p.stream.as_ref().is_some_and(|s| !s.held.0.is_empty()) => {
                // The chunks held for a missing Seq would be lost without a word.
                let m = format!("{} ended the stream while chunks wait for a missing Seq", msg.kind);
                self.fail(id, RktError::local(ErrorKind::Protocol, m));
            }
            _ => {
                // Found above (`pending.get_mut`); no panic path all the same.
                let Some(p) = self.take_pending(&id) else { return };
                self.timers.cancel(&Timer::Reply(id.clone()));
                let event = match msg.kind {
                    MessageType::Pong => {
                        self.pong_seen = true;
                        ClientEvent::Pong {
                            id,
                            rtt_ms: now.saturating_sub(p.sent_at),
                        }
                    }
                    MessageType::AuthOk => match msg.body.as_deref().map(AuthOkBody::from_json) {
                        Some(Ok(auth)) => ClientEvent::AuthOk { id, auth },
                        _ => ClientEvent::Failed {
                            error: RktError::local(
                                ErrorKind::Decode,
                                "AUTH_OK body is not {session_token, scopes?, expires_in?}",
                            )
                            .for_request(&id),
                            id,
                        },
                    },
                    _ => ClientEvent::Response { id, body: msg.body },
                };
                self.end(p.origin, event);
            }
        }
    }

    pub(super) fn on_chunk(&mut self, id: String, seq: u64, body: Option<String>) {
        let limit = self.cfg.max_stream_buffer;
        let held_total = self.held_bytes;
        let Some(stream) = self.pending.get_mut(&id).and_then(|p| p.stream.as_mut()) else {
            return;
        };
        if seq < stream.next_seq || stream.held.contains(seq) {
            let m = format!("duplicate stream chunk Seq {seq}; dropped");
            self.report(RktError::local(ErrorKind::Protocol, m).for_request(&id));
            return;
        }
        if seq > stream.next_seq {
            let size = body.as_ref().map_or(0, String::len);
            if seq - stream.next_seq > limit as u64 {
                let m = format!(
                    "stream chunk Seq {seq} is more than {limit} ahead of Seq {}",
                    stream.next_seq
                );
                self.fail(id, RktError::local(ErrorKind::Protocol, m));
            } else if stream.held.0.len() >= limit || held_total + size > self.cfg.max_stream_buffer_bytes {
                let m = format!(
                    "more than {limit} chunks or {} bytes held out of order (waiting for Seq {})",
                    self.cfg.max_stream_buffer_bytes, stream.next_seq
                );
                self.fail(id, RktError::local(ErrorKind::Limit, m));
            } else {
                stream.held.insert(seq, body);
                self.held_bytes += size;
            }
            return;
        }
        let mut ready = vec![(seq, body)];
        let mut released = 0;
        stream.next_seq = stream.next_seq.saturating_add(1);
        while let Some(body) = stream.held.remove(stream.next_seq) {
            released += body.as_ref().map_or(0, String::len);
            ready.push((stream.next_seq, body));
            stream.next_seq = stream.next_seq.saturating_add(1);
        }
        self.held_bytes -= released;
        for (seq, body) in ready {
            self.events.push_back(ClientEvent::StreamData {
                id: id.clone(),
                seq,
                body,
            });
        }
    }

    pub(super) fn on_stream_end(&mut self, id: String, body: Option<String>) {
        let Some(stream) = self.pending.get(&id).and_then(|p| p.stream.as_ref()) else {
            return;
        };
        // No count (none given): nothing to check. An unreadable one is said, then taken as none.
        let count = match body.as_deref().map(StreamEndBody::from_json) {
            Some(Ok(b)) => Some(b.count),
            Some(Err(e)) if !matches!(e, BodyError::Missing(_)) => {
                let e = RktError::local(
                    ErrorKind::Decode,
                    format!("STREAM_END body: {e}; its count is not checked"),
                );
                // Not `report`: `stream` is borrowed, and a stream comes after `Ready`.
                self.events.push_back(ClientEvent::Error(e.for_request(&id)));
                None
            }
            _ => None,
        };
        let delivered = stream.next_seq;
        if !stream.held.0.is_empty() || count.is_some_and(|n| n != delivered) {
            let end = stream
                .held
                .last()
                .map_or(delivered, |s| s.saturating_add(1))
                .max(count.unwrap_or(0));
            let missing: Vec<u64> = (delivered..end)
                .filter(|s| !stream.held.contains(*s))
                .take(16)
                .collect();
            let m = match count {
                Some(n) if n < delivered => format!("STREAM_END says {n} chunks but {delivered} were delivered"),
                _ => format!("stream ended with a gap: {delivered} chunks delivered in order, missing Seq {missing:?}"),
            };
            self.fail(id, RktError::local(ErrorKind::Protocol, m));
            return;
        }
        self.take_pending(&id);
        self.timers.cancel(&Timer::Reply(id.clone()));
        self.events.push_back(ClientEvent::StreamEnd { id, body });
    }

    pub(super) fn fail(&mut self, id: String, error: RktError) {
        self.end_early(&id);
        self.timers.cancel(&Timer::Reply(id.clone()));
        self.events.push_back(ClientEvent::Failed {
            error: error.for_request(&id),
            id,
        });
    }
}

/// A `Retry-After` value in whole seconds: digits, or digits with a fraction (`1.5`, another
/// server's), rounded up so that the wait is never shorter than asked. Anything else (an
/// HTTP-date, which this client does not read) is as none:
/// the 429 stays `rate_limited`, retryable, with no hint.
fn retry_after_s(v: &str) -> Option<u64> {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let (whole, fraction) = v.split_once('.').unwrap_or((v, "0"));
    if !digits(whole) || !digits(fraction) {
        return None;
    }
    let whole: u64 = whole.parse().ok()?;
    whole.checked_add(u64::from(fraction.bytes().any(|b| b != b'0')))
}
