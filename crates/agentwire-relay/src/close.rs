//! Close codes and reasons that may cross the relay.
//!
//! A code one side received is not always one the relay may send on the other: 1005 (no status),
//! 1006 (abnormal closure) and 1015 (TLS failure) are reported by a WebSocket stack but never
//! sent, and the reserved ranges may not be sent either. Those become 1011 (an internal error:
//! the client engine reconnects). Every other code crosses unchanged, so a Switch refusal
//! (4000 + status) or an eviction (1000) reaches the browser as the server sent it.

/// What the relay sends when it cannot forward the code it got.
pub const FALLBACK: u16 = 1011;
/// A message larger than the relay's limit.
pub const TOO_BIG: u16 = 1009;
/// The relay's rate limit (a reconnect later may succeed).
pub const TRY_AGAIN_LATER: u16 = 1013;
/// A peer that broke the relay's rules (a frame it must not send).
pub const POLICY: u16 = 1008;
/// The relay token of an open socket expired: 1008 (policy), a code a spec client reopens on,
/// so the connection resumes from its cursor when the client has a new token by then (the npm
/// `SwitchClient`'s `refreshToken`); with the old one, the reopen is refused 4401 and it stops.
pub const TOKEN_EXPIRED: u16 = 1008;
/// The reason sent with [`TOKEN_EXPIRED`] on an open socket.
pub const TOKEN_EXPIRED_REASON: &str = "the relay token expired";
/// The upstream refused the relay's own key for the agent (HTTP 401, or a 4401 close): 1011, a
/// failure the browser retries with backoff, never 4401. The relay verified the browser's token
/// before it went upstream, so the credential at fault is the relay's (its `AGENT_KEYS` entry
/// for the agent, revoked or mistyped), and an operator's fix: a 4401 would stop every browser
/// of that agent for good, as if each held a bad relay token.
pub const KEY_REFUSED: u16 = FALLBACK;
/// The reason sent with [`KEY_REFUSED`].
pub const KEY_REFUSED_REASON: &str = "the relay's key for this agent was refused";
/// The reason sent with [`FALLBACK`] (and the detail of the HTTP 504) when the upstream did not
/// answer the relay's open or call within `UPSTREAM_TIMEOUT_MS`.
pub const UPSTREAM_TIMEOUT_REASON: &str = "the upstream did not answer in time";
/// The reason sent with [`FALLBACK`] (and the detail of the HTTP 502) when the upstream could
/// not be reached at all (DNS, refused, reset).
pub const UPSTREAM_UNREACHABLE_REASON: &str = "the upstream could not be reached";
/// Longest close reason a WebSocket close frame carries, in bytes.
pub const MAX_REASON: usize = 123;

/// What the browser gets for an upstream socket's close with `code`: the code to send, and
/// whether it is the relay's key that was refused (the upstream's 4401: [`KEY_REFUSED`] with
/// [`KEY_REFUSED_REASON`] instead of the upstream's code and reason).
pub fn from_upstream(code: Option<u16>) -> (u16, bool) {
    match code {
        Some(4401) => (KEY_REFUSED, true),
        c => (forward(c), false),
    }
}

/// The code to send on the other side for a close received with `code` (`None`: no code).
pub fn forward(code: Option<u16>) -> u16 {
    match code {
        Some(c @ (1000..=1003 | 1007..=1014 | 3000..=4999)) => c,
        _ => FALLBACK,
    }
}

/// `reason` cut to at most [`MAX_REASON`] bytes, on a character boundary.
pub fn reason(reason: &str) -> &str {
    agentwire_core::text::prefix(reason, MAX_REASON)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_that_cannot_cross_become_1011() {
        for c in [
            None,
            Some(1005),
            Some(1006),
            Some(1015),
            Some(1004),
            Some(999),
            Some(2000),
            Some(5000),
            Some(0),
        ] {
            assert_eq!(forward(c), 1011, "{c:?}");
        }
        for c in [
            1000, 1001, 1002, 1003, 1007, 1008, 1009, 1011, 1012, 1013, 1014, 3000, 4000, 4401, 4409, 4999,
        ] {
            assert_eq!(forward(Some(c)), c);
        }
    }

    #[test]
    fn an_upstream_4401_is_the_relays_key_refused_and_retryable() {
        assert_eq!(from_upstream(Some(4401)), (1011, true));
        for c in [Some(1000), Some(4403), Some(4409), Some(1008), None, Some(1006)] {
            assert_eq!(from_upstream(c), (forward(c), false), "{c:?}");
        }
        assert!(KEY_REFUSED_REASON.len() <= MAX_REASON);
        assert!(UPSTREAM_TIMEOUT_REASON.len() <= MAX_REASON && UPSTREAM_UNREACHABLE_REASON.len() <= MAX_REASON);
    }

    #[test]
    fn reasons_fit_a_close_frame() {
        assert_eq!(reason("bye"), "bye");
        let long = "é".repeat(100);
        let cut = reason(&long);
        assert!(cut.len() <= MAX_REASON && long.starts_with(cut));
        assert_eq!(cut.len(), 122);
    }
}
