//! When the app's `refreshToken` is called: the driver's credential refresh, beside the engine
//! (which knows nothing of tokens). The relay closes a socket at its token's `exp` (1008) and
//! refuses a reopen with an expired token (4401: the connection stops with kind `auth`), so the
//! driver renews the token before `exp`, and a reopen with an expired token waits for the renewal
//! in flight (one with a token still valid goes: a renewal that hangs must not keep it closed).
//! Each call has `openTimeoutMs` to answer, on the driver's clock: past it, it has failed (the
//! next reopen calls again; an answer that still comes is taken only if its token outlives the
//! current one). A renewal that fails while a reopen with an expired token waits fails that open,
//! which the engine retries with its backoff (within `max_reconnect_attempts`), calling again: the
//! relay would refuse the expired token (4401) and the connection would stop.
//!
//! Times here are the wall clock's (`Date.now()`), which a token's `exp` and the relay's check are
//! in. A timer counts monotonic time, which stops while the machine sleeps (and a frozen tab or
//! process runs none), so no single long timer is trusted: the driver's timer looks at the wall
//! clock every [`STEP_MS`] at most, and so does every input (a socket event, a timer, an answer);
//! a reopen with a token due for renewal starts the renewal; and the relay's close for an expired
//! token starts one at once (a client clock behind the relay's never sees the token due).

use agentwire_core::Millis;
use agentwire_relay::token::{is_token_byte, MAX_TOKEN_LEN};
use js_sys::Function;

/// How long after a failed `refreshToken` it is called again (from a timer; a reopen calls it
/// sooner).
const RETRY_MS: Millis = 5_000;
/// The longest the driver's timer waits before it looks at the wall clock again.
const STEP_MS: Millis = 30_000;

/// The renewal of the current token.
pub(super) struct Refresh {
    pub(super) f: Function,
    /// The current token's `exp` (`Millis::MAX`: unknown).
    exp: Millis,
    /// When it is due for renewal: a fifth of its remaining life before `exp`, at most a minute
    /// (`Millis::MAX`: never, a token without `exp`).
    due: Millis,
    /// After a failed call, not from the timer before this (`Millis::MAX`: not again before a
    /// reopen, past `exp`).
    retry: Millis,
    /// When the call in flight is given up on, on the driver's clock (`None`: no call).
    call: Option<Millis>,
    /// Calls made so far: which one an answer is to.
    calls: u64,
    /// How long a call has to answer (`openTimeoutMs`).
    pub(super) timeout: Millis,
    /// The relay closed a socket for this token's expiry.
    stale: bool,
    /// When the timer looks at the wall clock next, on the driver's clock.
    check_at: Option<Millis>,
}

impl Refresh {
    pub(super) fn new(f: Function, token: &str, wall: Millis, timeout: Millis) -> Refresh {
        let mut r = Refresh {
            f,
            exp: Millis::MAX,
            due: Millis::MAX,
            retry: 0,
            call: None,
            calls: 0,
            timeout,
            stale: false,
            check_at: None,
        };
        r.schedule(token_exp(token), wall);
        r
    }

    /// A new token, expiring at `exp`.
    pub(super) fn schedule(&mut self, exp: Option<Millis>, wall: Millis) {
        self.exp = exp.unwrap_or(Millis::MAX);
        self.due = exp.map_or(Millis::MAX, |exp| {
            let life = exp.saturating_sub(wall);
            exp - (life / 5).min(60_000)
        });
        self.retry = 0;
        self.stale = false;
        self.check_at = None;
    }

    /// The relay closed the socket for its expired token: due now.
    pub(super) fn expired(&mut self) {
        self.due = 0;
        self.retry = 0;
        self.stale = true;
        self.check_at = None;
    }

    /// Whether the token is expired, by the wall clock or because the relay said so.
    pub(super) fn spent(&self, wall: Millis) -> bool {
        self.stale || wall >= self.exp
    }

    /// Whether a reopen waits: a call is in flight and the token is expired.
    pub(super) fn holds(&self, wall: Millis) -> bool {
        self.call.is_some() && self.spent(wall)
    }

    /// A call starts at `now` (the driver's clock): its number.
    pub(super) fn start(&mut self, now: Millis) -> u64 {
        self.calls += 1;
        self.call = Some(now.saturating_add(self.timeout));
        self.calls
    }

    /// Whether the call in flight is past its time at `now`: it is given up on (the caller
    /// reports the failure).
    pub(super) fn overdue(&mut self, now: Millis) -> bool {
        let late = self.call.is_some_and(|at| now >= at);
        if late {
            self.call = None;
        }
        late
    }

    /// The answer to call `n` came: whether it is the call in flight (else one given up on).
    pub(super) fn answered(&mut self, n: u64) -> bool {
        let current = self.call.is_some() && n == self.calls;
        if current {
            self.call = None;
        }
        current
    }

    /// Whether to call it now: from an input (`reopen` false) once due and past a failure's
    /// wait; before a reopen whenever due.
    pub(super) fn wanted(&self, wall: Millis, reopen: bool) -> bool {
        let at = match reopen {
            true => self.due,
            false => self.due.max(self.retry),
        };
        self.call.is_none() && wall >= at
    }

    /// A call failed: the next from the timer is `RETRY_MS` later, until `exp`.
    pub(super) fn failed(&mut self, wall: Millis) {
        self.retry = match wall.saturating_add(RETRY_MS) < self.exp {
            true => wall + RETRY_MS,
            false => Millis::MAX,
        };
        self.check_at = None;
    }

    /// The next `expires no later` bound: a token returned must expire after this.
    pub(super) fn must_outlive(&self, wall: Millis) -> Millis {
        match self.exp {
            Millis::MAX => wall,
            exp => exp.max(wall),
        }
    }

    /// When the driver's timer should fire to look at the wall clock (`now` on the driver's
    /// clock, `wall` the wall clock's): at most [`STEP_MS`] away; while a call runs, when it is
    /// given up on; `None` when nothing is ever due.
    pub(super) fn check_at(&mut self, now: Millis, wall: Millis) -> Option<Millis> {
        if let Some(at) = self.call {
            return Some(at);
        }
        let next = self.due.max(self.retry);
        if next == Millis::MAX {
            return None;
        }
        match self.check_at {
            Some(at) if now < at => Some(at),
            _ => {
                let at = now.saturating_add(next.saturating_sub(wall).min(STEP_MS));
                self.check_at = Some(at);
                Some(at)
            }
        }
    }
}

/// A relay token is base64url (with `.` between parts): valid in a subprotocol name.
pub(super) fn check_token(token: &str) -> Result<(), String> {
    if token.is_empty() || token.len() > MAX_TOKEN_LEN {
        return Err(format!("the token must be 1..={MAX_TOKEN_LEN} bytes"));
    }
    if !token.bytes().all(is_token_byte) {
        return Err("the token must be base64url (A-Z a-z 0-9 - _, parts joined by .)".into());
    }
    Ok(())
}

/// A relay token's `exp` in ms, read without verifying it (the relay verifies), by the relay
/// crate's own reader. `None` for a token that is not one (directly to Switch, the agent key).
pub(super) fn token_exp(token: &str) -> Option<Millis> {
    agentwire_relay::token::unverified_exp(token)?.checked_mul(1_000)
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentwire_core::base64url;

    fn token(claims: &str) -> String {
        format!("{}.sig", base64url::encode(claims.as_bytes()))
    }

    #[test]
    fn reads_exp() {
        assert_eq!(
            token_exp(&token(r#"{"agent_id":"a","exp":1700000000}"#)),
            Some(1_700_000_000_000)
        );
        assert_eq!(token_exp(&token(r#"{"agent_id":"a","exp":1.5}"#)), None);
        assert_eq!(token_exp(&token(r#"{"agent_id":"a"}"#)), None);
        assert_eq!(token_exp("sk_switch_agent_key"), None);
        assert_eq!(token_exp(""), None);
    }

    /// The token's bound is in bytes, and the refusal says so (2,049 "é" are 4,098 bytes).
    #[test]
    fn a_long_token_is_refused_in_bytes() {
        assert!(check_token(&"a".repeat(MAX_TOKEN_LEN)).is_ok());
        for long in ["a".repeat(MAX_TOKEN_LEN + 1), "é".repeat(MAX_TOKEN_LEN / 2 + 1)] {
            assert_eq!(check_token(&long).unwrap_err(), "the token must be 1..=4096 bytes");
        }
    }
}
