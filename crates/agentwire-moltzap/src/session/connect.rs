//! The handshake: `agent/network/connect` (current), `auth/connect` (released), the `auto`
//! fallback between them on the same socket, the HelloOk and the protocol range check.

use super::{
    state_error, Connecting, Credentials, Event, GenerationChoice, HelloOk, RequestId, Session, SessionState, Timer,
};
use crate::errors::{codes, MoltZapError};
use crate::frame::{Generation, Id, Outcome};
use crate::{CURRENT_PROTOCOL, RELEASED_PROTOCOL};
use agentwire_core::text::clip;
use agentwire_core::text::QUOTE_MAX;
use agentwire_core::{ErrorKind, Millis, Outgoing};
use serde::Serialize;

impl Session {
    /// Authenticates: the first message on the socket. The answer comes as `Connected` or
    /// `ConnectFailed` with the returned id.
    pub fn connect(&mut self, now: Millis, credentials: Credentials) -> Result<RequestId, MoltZapError> {
        match self.state {
            SessionState::Closed => return Err(state_error("the socket is not open (call handle_open first)")),
            SessionState::Connecting => return Err(state_error("a connect is already in flight")),
            SessionState::Ready => return Err(state_error("already connected")),
            SessionState::Open => {}
        }
        self.cfg.check()?;
        let (generation, may_fall_back) = match (self.cfg.generation, &credentials) {
            (GenerationChoice::Current, Credentials::SessionToken(_)) => {
                return Err(MoltZapError::local(
                    ErrorKind::Invalid,
                    "session tokens are a released-generation feature (generation current)",
                ))
            }
            (GenerationChoice::Current, _) => (Generation::Current, false),
            (GenerationChoice::Released, _) => (Generation::Released, false),
            // Only released servers take session tokens: go straight to auth/connect.
            (GenerationChoice::Auto, Credentials::SessionToken(_)) => (Generation::Released, false),
            (GenerationChoice::Auto, Credentials::AgentKey(_)) => {
                (self.generation, self.generation == Generation::Current)
            }
        };
        let (Credentials::AgentKey(k) | Credentials::SessionToken(k)) = &credentials;
        if k.is_empty() {
            return Err(MoltZapError::local(ErrorKind::Invalid, "empty credential"));
        }
        let c = Connecting {
            id: self.peek_id(),
            credentials,
            generation,
            may_fall_back,
        };
        // Refused (`limit`, a credential too large for a frame): no id taken, still `Open`.
        let wire = self.connect_frame(&c)?;
        self.next_id += 1;
        let id = c.id.clone();
        self.generation = generation;
        self.connecting = Some(c);
        self.state = SessionState::Connecting;
        self.send_connect(now, wire);
        Ok(id)
    }

    /// Arms the handshake timer of the connect in flight and queues its frame (under its id, so
    /// that a connect that ends before the frame leaves takes it back).
    fn send_connect(&mut self, now: Millis, wire: String) {
        let Some(c) = &self.connecting else { return };
        self.timers.set(
            Timer::Request(c.id.clone()),
            now.saturating_add(self.cfg.handshake_timeout_ms),
        );
        self.transmit.push_back((Outgoing::Text(wire), Some(c.id.clone())));
    }

    /// The connect frame of `c`, in its generation, size-checked like every request.
    fn connect_frame(&self, c: &Connecting) -> Result<String, MoltZapError> {
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct ConnectParams<'a> {
            #[serde(skip_serializing_if = "Option::is_none")]
            agent_key: Option<&'a str>,
            #[serde(skip_serializing_if = "Option::is_none")]
            session_token: Option<&'a str>,
            min_protocol: &'a str,
            max_protocol: &'a str,
        }
        let (agent_key, session_token) = match &c.credentials {
            Credentials::AgentKey(k) => (Some(k.as_str()), None),
            Credentials::SessionToken(t) => (None, Some(t.as_str())),
        };
        let (method, protocol) = match c.generation {
            Generation::Current => ("agent/network/connect", CURRENT_PROTOCOL),
            Generation::Released => ("auth/connect", RELEASED_PROTOCOL),
        };
        let params = ConnectParams {
            agent_key,
            session_token,
            min_protocol: protocol,
            max_protocol: protocol,
        };
        let params = serde_json::value::to_raw_value(&params)
            .map_err(|e| MoltZapError::local(ErrorKind::Invalid, e.to_string()))?;
        self.encode_for_send(c.generation, &c.id, method, Some(&params))
    }

    pub(super) fn on_connect_response(&mut self, now: Millis, outcome: Outcome) {
        let Some(c) = &mut self.connecting else { return };
        let id = c.id.clone();
        match outcome {
            Outcome::Error(e) if c.may_fall_back && e.code == codes::INVALID_REQUEST && e.tag.is_none() => {
                // A released server refusing a frame without `type`: retry as released, same id.
                // Its errors carry no `_tag`; one that does is a current server's, and its
                // refusal is the connect's error.
                c.may_fall_back = false;
                c.generation = Generation::Released;
                self.generation = Generation::Released;
                match self.connecting.as_ref().map(|c| self.connect_frame(c)) {
                    Some(Ok(wire)) => self.send_connect(now, wire),
                    Some(Err(e)) => self.connect_failed(e.for_request(Id::Str(id))),
                    None => {}
                }
            }
            Outcome::Error(e) => {
                let mut error = MoltZapError::remote(&e, Some(&Id::Str(id)));
                if c.generation == Generation::Current && e.code == codes::INVALID_REQUEST && e.tag.is_none() {
                    // What a released server answers the current connect (no `type` field).
                    error.error.message.push_str(
                        " (a released-generation server refuses the current connect so: connect with generation auto or released)",
                    );
                }
                self.connect_failed(error);
            }
            Outcome::Result(result) => {
                let generation = c.generation;
                self.timers.cancel(&Timer::Request(id.clone()));
                // The fallback's auth/connect not polled yet, when the first frame's answer
                // comes: the connect is over, so it never leaves.
                self.take_back(&id);
                self.connecting = None;
                let hello = match HelloOk::parse(result.get()) {
                    Ok(h) => h,
                    Err(e) => {
                        self.state = SessionState::Open;
                        let error = e.for_request(Id::Str(id.clone()));
                        self.events.push_back(Event::ConnectFailed { id, error });
                        return;
                    }
                };
                if let Some(v) = &hello.protocol_version {
                    let accepted = match generation {
                        Generation::Current => version_in_range(v, CURRENT_PROTOCOL, CURRENT_PROTOCOL),
                        Generation::Released => released_version_accepted(v),
                    };
                    if !accepted {
                        let v = clip(v, QUOTE_MAX);
                        let m = match generation {
                            Generation::Current => {
                                format!("server protocol {v} is outside {CURRENT_PROTOCOL}..={CURRENT_PROTOCOL}")
                            }
                            Generation::Released => {
                                format!("server protocol {v} is not {RELEASED_SERIES}.x (released generation)")
                            }
                        };
                        let error = MoltZapError::local(ErrorKind::Version, m).for_request(Id::Str(id.clone()));
                        self.events.push_back(Event::ConnectFailed { id, error });
                        self.close(1000, "protocol version unsupported");
                        return;
                    }
                }
                self.state = SessionState::Ready;
                self.events.push_back(Event::Connected { id, generation, hello });
                self.arm_idle(now);
                if generation == Generation::Current {
                    self.arm_ping(now);
                }
            }
        }
    }

    /// A frame refused by the decode bounds before its id was read (`error`, `limit`) while the
    /// connect's frame is out: the server answers nothing else before the connect, so it is
    /// taken as the answer, refused, and the connect fails with it at once rather than at its
    /// timeout. With no connect in flight (before, or once connected) it is only the
    /// diagnostic: no request is failed on a guess.
    pub(super) fn connect_answer_refused(&mut self, error: &MoltZapError) {
        let Some(c) = &self.connecting else { return };
        if self.queued(&c.id) {
            return; // not sent: nothing can answer it yet
        }
        let id = Id::Str(c.id.clone());
        let mut error = error.clone().for_request(id);
        error.error.message = format!("the connect's answer could not be read: {}", error.error.message);
        self.connect_failed(error);
    }

    /// Ends the connect in flight with `error`; the socket stays open for another connect.
    pub(super) fn connect_failed(&mut self, error: MoltZapError) {
        let Some(c) = self.connecting.take() else { return };
        self.timers.cancel(&Timer::Request(c.id.clone()));
        // Its frame is taken back if it has not left; a late answer to one that has (after a
        // timeout, a cancel or a frame error) is dropped quietly.
        let unsent = self.end_early(&c.id);
        self.state = SessionState::Open;
        let error = error.unsent(unsent);
        self.events.push_back(Event::ConnectFailed { id: c.id, error });
    }
}

/// The released generation's `major.minor`: its servers compare no protocol range (any
/// `minProtocol`/`maxProtocol` is accepted, `moltzap-released-2026.425.md`, "Handshake"), so a
/// patch release of the same series (`2026.425.x`) speaks the same frames and methods.
const RELEASED_SERIES: &str = "2026.425";

/// True when a released server's `protocolVersion` is of the `2026.425` series: any patch
/// (`2026.425`, `2026.425.0`, `2026.425.7`), never another major or minor.
pub fn released_version_accepted(v: &str) -> bool {
    let lo = format!("{RELEASED_SERIES}.0");
    let hi = format!("{RELEASED_SERIES}.{}", u64::MAX);
    version_in_range(v, &lo, &hi)
}

/// True when dotted version `v` lies in `min..=max`, comparing numeric components (missing
/// components count as 0). A version that is not dotted numbers is out of range.
pub fn version_in_range(v: &str, min: &str, max: &str) -> bool {
    fn parse(s: &str) -> Option<Vec<u64>> {
        s.split('.').map(|p| p.parse().ok()).collect()
    }
    let (Some(v), Some(lo), Some(hi)) = (parse(v), parse(min), parse(max)) else {
        return false;
    };
    let cmp = |a: &[u64], b: &[u64]| {
        let n = a.len().max(b.len());
        (0..n)
            .map(|i| a.get(i).copied().unwrap_or(0).cmp(&b.get(i).copied().unwrap_or(0)))
            .find(|o| o.is_ne())
            .unwrap_or(std::cmp::Ordering::Equal)
    };
    cmp(&v, &lo).is_ge() && cmp(&v, &hi).is_le()
}
