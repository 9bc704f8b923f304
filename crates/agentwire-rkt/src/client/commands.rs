//! The commands a client sends: REQUEST, DISCOVER, MEMORY_SET/GET, PAY, AUTH, PING, cancel,
//! GOODBYE.

use super::*;

impl ClientSession {
    /// Sends a REQUEST for `intent`; returns its Message-ID. Replies come as `Response`, or as
    /// `StreamBegin`/`StreamData`/`StreamEnd` when `opts.stream`. An empty `intent`, or an
    /// `opts.to` no header can carry (a control character but tab, or DEL), is `invalid`.
    ///
    /// `params` and `opts.context` are written as compact JSON from the value, not as any text
    /// it was parsed from (with [`crate::json::json_arg`], as the bindings do): a
    /// `serde_json::Value` without `preserve_order` has its keys sorted and keeps the last of
    /// two equal keys, a number with an exponent or a fraction is a float (`1e3` is sent as
    /// `1000.0`, `-0` as `-0.0`), and an integer past `u64` is a float (`docs/protocols/rkt.md`,
    /// "JSON arguments").
    pub fn request(
        &mut self,
        now: Millis,
        intent: &str,
        params: Option<Value>,
        opts: RequestOptions,
    ) -> Result<String, RktError> {
        if intent.trim().is_empty() {
            return Err(RktError::local(ErrorKind::Invalid, "intent must not be empty"));
        }
        if let Some(to) = &opts.to {
            check_header_value("to", to)?;
        }
        let body = RequestBody {
            intent: intent.to_string(),
            params,
            context: opts.context.clone().filter(|c| !c.is_null()),
        };
        let ttl = opts.ttl_s.unwrap_or(self.cfg.ttl_s);
        let text = self.body_text(&body)?;
        self.command(
            now,
            MessageType::Request,
            Op::Request,
            ttl,
            opts.priority,
            opts.stream,
            |m| {
                if let Some(to) = &opts.to {
                    m.headers.set("To", to.as_str());
                }
                if opts.stream {
                    m.headers.set("Stream", "true");
                }
                m.body = Some(text);
            },
        )
    }

    /// Sends DISCOVER; the manifest comes as the `Response` body.
    pub fn discover(&mut self, now: Millis) -> Result<String, RktError> {
        self.command(
            now,
            MessageType::Discover,
            Op::Discover,
            self.cfg.ttl_s,
            None,
            false,
            |_| {},
        )
    }

    /// Sends MEMORY_SET; the acknowledgement comes as the `Response` body. An empty `key` is
    /// `invalid`. `value` is written as compact JSON from the value, not as any text it was
    /// parsed from, as `params` in [`ClientSession::request`]: keys sorted, `1e3` as `1000.0`.
    pub fn memory_set(
        &mut self,
        now: Millis,
        key: &str,
        value: Value,
        namespace: Option<&str>,
        ttl_s: Option<u64>,
    ) -> Result<String, RktError> {
        if key.is_empty() {
            return Err(RktError::local(ErrorKind::Invalid, "memory key must not be empty"));
        }
        let body = MemorySetBody {
            key: key.into(),
            value,
            namespace: namespace.map(Into::into),
            ttl: ttl_s,
        };
        let text = self.body_text(&body)?;
        self.command(
            now,
            MessageType::MemorySet,
            Op::MemorySet,
            self.cfg.ttl_s,
            None,
            false,
            |m| {
                m.body = Some(text);
            },
        )
    }

    pub fn memory_get(&mut self, now: Millis, key: &str, namespace: Option<&str>) -> Result<String, RktError> {
        if key.is_empty() {
            return Err(RktError::local(ErrorKind::Invalid, "memory key must not be empty"));
        }
        let body = MemoryGetBody {
            key: key.into(),
            namespace: namespace.map(Into::into),
        };
        let text = self.body_text(&body)?;
        self.command(
            now,
            MessageType::MemoryGet,
            Op::MemoryGet,
            self.cfg.ttl_s,
            None,
            false,
            |m| {
                m.body = Some(text);
            },
        )
    }

    /// Sends PAY; the receipt comes as the `Response` body. An `amount` that is not positive
    /// and finite, an empty `currency`, or a `recipient` no header can carry (it goes in `To`
    /// too: a control character but tab, or DEL) is `invalid`.
    pub fn pay(
        &mut self,
        now: Millis,
        amount: f64,
        currency: &str,
        description: Option<&str>,
        recipient: Option<&str>,
    ) -> Result<String, RktError> {
        if !(amount.is_finite() && amount > 0.0) {
            return Err(RktError::local(
                ErrorKind::Invalid,
                "amount must be a positive finite number",
            ));
        }
        if currency.trim().is_empty() {
            return Err(RktError::local(ErrorKind::Invalid, "currency must not be empty"));
        }
        if let Some(r) = recipient {
            check_header_value("recipient", r)?;
        }
        let body = PayBody {
            amount,
            currency: currency.into(),
            description: description.map(Into::into),
            recipient: recipient.map(Into::into),
        };
        let text = self.body_text(&body)?;
        self.command(now, MessageType::Pay, Op::Pay, self.cfg.ttl_s, None, false, |m| {
            if let Some(r) = recipient {
                m.headers.set("To", r);
            }
            m.body = Some(text);
        })
    }

    /// Sends AUTH; success comes as `AuthOk` with the session token.
    pub fn auth(&mut self, now: Millis, auth: AuthBody) -> Result<String, RktError> {
        self.command(
            now,
            MessageType::Auth,
            Op::Auth,
            self.cfg.ttl_s,
            Some(Priority::Urgent),
            false,
            |m| {
                m.body = Some(serde_json::to_string(&auth).unwrap_or_default());
            },
        )
    }

    /// Sends PING; the round trip comes as `Pong { rtt_ms }`.
    pub fn ping(&mut self, now: Millis) -> Result<String, RktError> {
        self.command(now, MessageType::Ping, Op::Ping, self.cfg.ttl_s, None, false, |_| {})
    }

    /// Whether command `id` is pending and its frame has not been polled yet (queued for
    /// HELLO_ACK, or held by a driver whose socket is backed up): ended now, it never leaves,
    /// and making it again is safe. What a binding that gives up on a call by its own timer
    /// asks before [`ClientSession::cancel`].
    pub fn unsent(&self, id: &str) -> bool {
        self.pending.contains_key(id) && self.frame_waits(id)
    }

    /// Ends a command early: it gets `Failed` with `cancelled`, a late reply is dropped. Returns
    /// false when the id is not pending.
    pub fn cancel(&mut self, id: &str) -> bool {
        if self.end_early(id).is_none() {
            return false;
        }
        self.timers.cancel(&Timer::Reply(id.to_string()));
        let error = RktError::local(ErrorKind::Cancelled, "cancelled").for_request(id);
        self.events.push_back(ClientEvent::Failed {
            id: id.to_string(),
            error,
        });
        true
    }

    /// Says GOODBYE and closes with 1000.
    pub fn goodbye(&mut self, now: Millis) {
        if matches!(self.state, ClientState::Handshaking | ClientState::Ready) {
            let id = self.entropy.uuid_v4();
            let msg = self.new_message(MessageType::Goodbye, id, now, Some(self.cfg.ttl_s));
            self.send(now, &msg);
        }
        self.close(1000, "goodbye");
    }

    // ---- internals ----------------------------------------------------------------------

    /// A command's body as JSON text, written no further than `max_message_size`: a larger
    /// payload is refused with `limit` without being serialized in full first.
    fn body_text(&self, body: &impl serde::Serialize) -> Result<String, RktError> {
        let max = self.cfg.max_message_size;
        agentwire_core::json::write::to_string_within(body, max)
            .map_err(|e| RktError::local(ErrorKind::Invalid, format!("body: {e}")))?
            .ok_or_else(|| {
                let m = format!("body over {max} bytes: the message exceeds max_message_size {max}");
                RktError::local(ErrorKind::Limit, m)
            })
    }

    pub(super) fn new_message(&self, kind: MessageType, id: String, now: Millis, ttl: Option<u32>) -> Message {
        envelope(kind, id, None, &self.session_id, now, ttl)
    }

    pub(super) fn describe_self(&self, msg: &mut Message) {
        if let Some(from) = &self.cfg.from {
            msg.headers.set("From", from.as_str());
        }
        msg.headers.set("User-Agent", self.cfg.user_agent.as_str());
        if !self.cfg.capabilities.is_empty() {
            msg.headers.set("Capabilities", self.cfg.capabilities.join(","));
        }
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn command(
        &mut self,
        now: Millis,
        kind: MessageType,
        op: Op,
        ttl: u32,
        priority: Option<Priority>,
        stream: bool,
        fill: impl FnOnce(&mut Message),
    ) -> Result<String, RktError> {
        if self.state == ClientState::Closed {
            return Err(RktError::local(ErrorKind::Closed, "the session is closed"));
        }
        if self.in_flight() >= self.cfg.max_in_flight {
            let msg = format!("{} commands already in flight (max_in_flight)", self.in_flight());
            return Err(RktError::local(ErrorKind::Limit, msg));
        }
        if ttl == 0 {
            return Err(RktError::local(ErrorKind::Invalid, "ttl_s must be at least 1 second"));
        }
        let id = self.entropy.uuid_v4();
        let mut msg = self.new_message(kind, id.clone(), now, Some(ttl));
        if let Some(p) = priority {
            msg.headers.set("Priority", p.as_str());
        }
        fill(&mut msg);
        let size = encode(&msg).len();
        if size > self.cfg.max_message_size {
            let m = format!(
                "message of {size} bytes exceeds max_message_size {}",
                self.cfg.max_message_size
            );
            return Err(RktError::local(ErrorKind::Limit, m));
        }
        self.track(now, id.clone(), op, ttl, stream, Origin::User);
        if self.state == ClientState::Ready {
            self.send_command(now, &msg, id.clone());
        } else {
            // Sent on HELLO_ACK, highest priority first, in call order within a priority.
            self.queue.push(Queued {
                priority: priority.unwrap_or_default(),
                id: id.clone(),
                msg,
            });
        }
        Ok(id)
    }
}
