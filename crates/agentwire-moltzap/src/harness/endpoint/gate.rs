//! What a validated send waits for before anything goes out: its firewall check, and the
//! connection (the spec's `ROUTER_ATTACH_TIMEOUT`). A send is *launched* (its lookup or post
//! starts) once both are in; until then it waits at most `attach_wait_ms` for attachment and
//! fails `network-unavailable` at that bound: no send fails merely because the endpoint is
//! still attaching, and a connect that fails in transport (the socket closed, the connect timed
//! out, a frame that could not be read) leaves the sends waiting for their bound.
//!
//! The endpoint expects attachment from `handle_open` (and `connect`) on, after a connection
//! lost without [`Endpoint::close`] (the host is expected to reconnect), and after a connect
//! that failed in transport. It expects none before the first `handle_open`, after `close`, or
//! after the daemon refused the connect (its version: `incompatible-daemon`; or the
//! credentials: an auth refusal, which the same credentials would only meet again) until the
//! next `handle_open` or `connect`: the waiting sends then fail `network-unavailable` at once,
//! and a new send fails at once.
//!
//! The sends waiting (not launched) while the endpoint is not connected are bounded: at most the
//! session's `max_in_flight` (no more could go out at once at `Connected`), their contents
//! taking at most [`super::EndpointConfig::max_waiting_send_bytes`]. A send past either is
//! refused `network-unavailable` at once, nothing waiting.

use super::firewall::FirewallVerdict;
use super::outgoing::Kind;
use super::{Endpoint, SendFailure, SendId, Timer};
use crate::frame::Generation;
use crate::harness::address::{MessageAddress, MessageAddressInput};
use crate::harness::collective::AskOp;
use crate::harness::content::Content;
use crate::harness::errors::{CollectiveError, CollectiveFailure, FirewallSendError, SendError, SendErrorReason};
use crate::harness::id::CollectiveId;
use crate::session::SessionState;
use agentwire_core::Millis;

/// Whether the endpoint expects to be attached soon.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Attach {
    /// Never opened, closed by the host, or the last connect refused (version or
    /// credentials): sends fail at once.
    Idle,
    /// A socket is opening or open, a connect is in flight or failed in transport, or the
    /// connection was lost.
    Expected,
}

pub(super) fn released_refusal(what: &str) -> SendError {
    SendError::new(
        SendErrorReason::VersionMismatch,
        format!("the server speaks the released MoltZap generation, which carries no {what}"),
    )
}

impl Endpoint {
    /// Sends may be accepted: connected, or attachment expected.
    pub(super) fn may_send(&self) -> bool {
        self.session.state() == SessionState::Ready || self.attach == Attach::Expected
    }

    /// Room for one more send to wait for the connection: connected, or fewer than the
    /// session's `max_in_flight` sends waiting and `content` fitting `max_waiting_send_bytes`
    /// with theirs. Otherwise the send is refused `network-unavailable`.
    pub(super) fn wait_room(&self, content: &Content) -> Result<(), SendError> {
        if self.session.state() == SessionState::Ready {
            return Ok(());
        }
        let max = self.session.config().max_in_flight;
        if self.waiting_sends >= max {
            return Err(SendError::new(
                SendErrorReason::NetworkUnavailable,
                format!("the endpoint is not connected and {max} sends are waiting for it (max_in_flight)"),
            ));
        }
        let bytes = super::content_footprint(content);
        if self.waiting_send_bytes + bytes > self.cfg.max_waiting_send_bytes {
            return Err(SendError::new(
                SendErrorReason::NetworkUnavailable,
                "the endpoint is not connected and the sends waiting for it take max_waiting_send_bytes",
            ));
        }
        Ok(())
    }

    /// Launches the send if its check is in and the endpoint is connected; otherwise it waits
    /// for attachment (bounded), or fails when none is expected.
    pub(super) fn try_launch(&mut self, now: Millis, send: SendId) {
        let Some(pending) = self.sends.get(&send) else {
            return;
        };
        if pending.launched || pending.check.is_some() {
            return;
        }
        if self.session.state() == SessionState::Ready {
            self.launch(now, send);
        } else if self.attach == Attach::Idle {
            let e = SendError::new(SendErrorReason::NetworkUnavailable, "the endpoint is not connected");
            self.abort(send, e.into());
        } else if self.timers.deadline(&Timer::Attach(send)).is_none() {
            self.timers
                .set(Timer::Attach(send), now.saturating_add(self.cfg.attach_wait_ms));
        }
    }

    /// The attachment bound of `send` passed.
    pub(super) fn attach_wait_over(&mut self, send: SendId) {
        let waiting = self.sends.get(&send).is_some_and(|p| !p.launched);
        if waiting && self.session.state() != SessionState::Ready {
            let e = SendError::new(
                SendErrorReason::NetworkUnavailable,
                format!("the endpoint did not connect within {} ms", self.cfg.attach_wait_ms),
            );
            self.abort(send, e.into());
        }
    }

    /// Connected: the sends waiting only for attachment go out, in order.
    pub(super) fn attached(&mut self, now: Millis) {
        self.attach = Attach::Expected;
        for send in self.unlaunched() {
            self.try_launch(now, send);
        }
    }

    /// The daemon refused the connect (version, credentials), or the host closed the endpoint:
    /// no attachment is expected, and every send not yet launched fails `network-unavailable`.
    pub(super) fn detached(&mut self, why: &str) {
        self.attach = Attach::Idle;
        for send in self.unlaunched() {
            let e = SendError::new(SendErrorReason::NetworkUnavailable, why.to_owned());
            self.abort(send, e.into());
        }
    }

    fn unlaunched(&self) -> Vec<SendId> {
        let mut sends: Vec<SendId> = self
            .sends
            .iter()
            .filter(|(_, p)| !p.launched)
            .map(|(s, _)| *s)
            .collect();
        sends.sort_unstable();
        sends
    }

    /// A send's check was answered.
    pub(super) fn send_checked(&mut self, now: Millis, send: SendId, verdict: FirewallVerdict) {
        let Some(pending) = self.sends.get_mut(&send) else {
            return;
        };
        pending.check = None;
        match verdict {
            FirewallVerdict::Admit(guidance) => {
                pending.guidance = guidance;
                self.try_launch(now, send);
            }
            FirewallVerdict::Refuse { refusal, feedback } => {
                let e = FirewallSendError::new(refusal, feedback);
                let e = match pending.kind {
                    Kind::Answer { .. } => e.as_reply(),
                    _ => e,
                };
                self.abort(send, SendFailure::Firewall(e));
            }
        }
    }

    /// Ends a send that has not finished with `failure`, dropping its operation state.
    pub(super) fn abort(&mut self, send: SendId, failure: SendFailure) {
        let operation = self.operation_of(send);
        if let Some(Kind::Ask(id)) = self.sends.get(&send).map(|p| &p.kind) {
            let id = id.clone();
            self.drop_ask(&id);
        }
        self.fail(send, operation, failure);
    }

    /// The send's lookup or post starts: the checks that need the connection (the generation,
    /// the deadline, the answer's request) are made again first.
    fn launch(&mut self, now: Millis, send: SendId) {
        let Some(pending) = self.sends.get_mut(&send) else {
            return;
        };
        pending.launched = true;
        let (kind, bytes) = (pending.kind.clone(), pending.bytes);
        self.waiting_sends -= 1;
        self.waiting_send_bytes -= bytes;
        self.timers.cancel(&Timer::Attach(send));
        let released = self.session.generation() == Generation::Released;
        match kind {
            Kind::Multicast { to, content, post_id } => {
                if released && post_id.is_some() {
                    // A released server keeps no postId: sending again could post twice.
                    let e = SendError::new(
                        SendErrorReason::VersionMismatch,
                        "the server speaks the released MoltZap generation, which keeps no post identity to resume",
                    );
                    return self.abort(send, e.into());
                }
                match &to {
                    MessageAddress::Group(_) if released => self.abort(send, released_refusal("group sends").into()),
                    MessageAddress::Group(g) => {
                        let others: Vec<_> = g.others(&self.cfg.agent).cloned().collect();
                        self.lookup(now, send, &others);
                    }
                    MessageAddress::Agent(_) => self.post(now, send, None, &to, &content),
                }
            }
            Kind::Ask(id) => {
                let Some(ask) = self.asks.get(&id) else {
                    return;
                };
                if released {
                    return self.abort(send, released_refusal("collective operations").into());
                }
                if now >= ask.deadline_at {
                    let failure = CollectiveError {
                        id,
                        failure: CollectiveFailure::DeadlinePassed,
                    };
                    return self.abort(send, failure.into());
                }
                let members = ask.members.clone();
                self.ask_launched(&id);
                self.lookup(now, send, &members);
            }
            Kind::Answer { request, to, content } => {
                if released {
                    return self.abort(send, released_refusal("collective answers").into());
                }
                match self.claim(now, &request, &to) {
                    Ok(()) => self.post(now, send, None, &to, &content),
                    Err(failure) => {
                        // Like the refusals when it was first matched, the refusal names an id
                        // minted for it, never the peer's request id.
                        let id = CollectiveId::mint(self.entropy.as_mut());
                        let operation = Some((id.clone(), MessageAddressInput::from(to)));
                        self.fail(send, operation, CollectiveError { id, failure }.into());
                    }
                }
            }
        }
    }
}

/// An ask's op as the firewall names it.
pub(super) fn ask_check_op(op: AskOp) -> super::firewall::OutgoingOp {
    match op {
        AskOp::Gather => super::firewall::OutgoingOp::Gather,
        AskOp::AllGather => super::firewall::OutgoingOp::AllGather,
    }
}
