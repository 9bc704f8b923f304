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
//! The relay is the judge of expiry. A token `refreshToken` returns is refused only when it does
//! not expire after the current one (taking the same token again would renew it again at once,
//! without end). One already past its `exp` by this clock, just minted, says this clock runs
//! ahead of the relay's: it is used all the same (so is the current one, when the answer is the
//! same token), with a `diagnostic` saying by how much at least, and while the clock is known to
//! be ahead the wall clock no longer makes a token due or expired: the relay's expiry close
//! (1008) starts the renewal, and a reopen renews first, as each reopen can cross `exp`.
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
    pub(super) stale: bool,
    /// When the timer looks at the wall clock next, on the driver's clock.
    check_at: Option<Millis>,
    /// This clock is known to run ahead of the relay's: a token just minted looked expired.
    pub(super) ahead: bool,
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
            ahead: false,
        };
        r.schedule(token_exp(token), wall);
        r
    }

    /// A new token, expiring at `exp`; while the clock is ahead, due only when the relay says.
    pub(super) fn schedule(&mut self, exp: Option<Millis>, wall: Millis) {
        self.exp = exp.unwrap_or(Millis::MAX);
        self.due = exp.filter(|_| !self.ahead).map_or(Millis::MAX, |exp| {
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

    /// Whether the token is expired, because the relay said so or by the wall clock (unless it
    /// is known to be ahead).
    pub(super) fn spent(&self, wall: Millis) -> bool {
        self.stale || (!self.ahead && wall >= self.exp)
    }

    /// Whether a reopen waits: a call is in flight and the token is expired (or, the clock
    /// being ahead, may be).
    pub(super) fn holds(&self, wall: Millis) -> bool {
        self.call.is_some() && (self.ahead || self.spent(wall))
    }

    /// The answer to a call has a token expiring at `exp` (`None`: no `exp`), at `wall`: whether
    /// to take it (it expires after the current one), and `Some(by)` when it shows this clock
    /// ahead of the relay's by at least `by` ms, first (it looks expired on arrival, and the
    /// relay has not said that this `exp` passed): the clock is then known to be ahead until a token that
    /// does not look expired comes.
    pub(super) fn answer(&mut self, exp: Option<Millis>, wall: Millis) -> (bool, Option<Millis>) {
        let Some(exp) = exp else { return (false, None) };
        let take = self.exp == Millis::MAX || exp > self.exp;
        let ahead = (wall >= exp && (take || !self.stale)).then(|| wall - exp);
        let known = self.ahead;
        if take || ahead.is_some() {
            self.ahead = ahead.is_some();
        }
        if ahead.is_some() && !take {
            // The same token again: the reopen goes with it, and the relay's close renews it.
            self.due = Millis::MAX;
            self.check_at = None;
        }
        (take, ahead.filter(|_| !known))
    }

    /// Whether a reopen renews the token first: it is due, or the clock is ahead (it may have
    /// expired by the relay's).
    pub(super) fn reopen_renews(&self, wall: Millis) -> bool {
        self.wanted(wall, true) || (self.ahead && self.call.is_none())
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

    /// A renewal at `wall` of a token expiring at `exp` (ms); the callback is never called here.
    fn renewal(exp: Millis, wall: Millis) -> Refresh {
        use wasm_bindgen::JsCast;
        let f = Function::unchecked_from_js(wasm_bindgen::JsValue::UNDEFINED);
        let t = token(&format!(r#"{{"agent_id":"a","exp":{}}}"#, exp / 1000));
        Refresh::new(f, &t, wall, 10_000)
    }

    /// This clock 10 minutes ahead, 5-minute tokens: every token looks expired. The one just
    /// minted is taken all the same (the relay judges expiry), says the clock is ahead by at
    /// least how much, once, and makes nothing due: no renewal loop, no timer.
    #[test]
    fn a_token_that_looks_expired_on_arrival_is_taken_and_says_the_clock_is_ahead() {
        let (exp, wall) = (1_000_000_000, 1_000_300_000);
        let mut r = renewal(exp, wall);
        assert!(
            r.spent(wall) && r.wanted(wall, true),
            "the first token looks expired: renew first"
        );
        assert_eq!(r.answer(Some(exp + 1_000), wall), (true, Some(299_000)));
        r.schedule(Some(exp + 1_000), wall);
        assert!(!r.spent(wall), "the relay judges expiry");
        assert!(
            !r.wanted(wall, false) && !r.wanted(wall + 3_600_000, false),
            "never due by this clock"
        );
        assert_eq!(r.check_at(0, wall), None, "no timer");
        assert!(
            r.reopen_renews(wall),
            "a reopen renews first (the token may have expired by now)"
        );
        // The next one, minted later, also looks expired: taken, said once.
        assert_eq!(r.answer(Some(exp + 60_000), wall + 60_000), (true, None));
        // The relay's expiry close makes it due.
        r.schedule(Some(exp + 60_000), wall + 60_000);
        r.expired();
        assert!(r.spent(wall) && r.wanted(wall, false));
    }

    /// The same token again (minted within the same second), looking expired by this clock and
    /// never refused by the relay: not taken, but the clock is ahead: the reopen goes with the
    /// current token, and nothing is due.
    #[test]
    fn the_same_token_looking_expired_shows_the_clock_ahead_and_the_current_one_goes() {
        let (exp, wall) = (1_000_000_000, 1_000_300_000);
        let mut r = renewal(exp, wall);
        assert_eq!(r.answer(Some(exp), wall), (false, Some(300_000)));
        assert!(r.ahead && !r.spent(wall) && !r.wanted(wall, false));
        assert_eq!(r.check_at(0, wall), None);
    }

    /// A clock that is right: the same token again is refused (it would be renewed again at
    /// once), before `exp` and after the relay said it expired; an older one too.
    #[test]
    fn a_token_expiring_no_later_is_refused_when_the_clock_is_right() {
        let (exp, wall) = (1_000_000_000, 999_950_000);
        let mut r = renewal(exp, wall);
        assert_eq!(r.answer(Some(exp), wall), (false, None));
        assert_eq!(r.answer(Some(exp - 1_000), wall), (false, None));
        assert_eq!(r.answer(None, wall), (false, None));
        r.expired();
        assert_eq!(
            r.answer(Some(exp), exp + 5_000),
            (false, None),
            "the relay said this exp passed"
        );
        assert!(!r.ahead && r.spent(exp + 5_000));
        assert_eq!(r.answer(Some(exp + 300_000), exp + 5_000), (true, None));
    }

    /// A token that does not look expired on arrival ends the clock's known lead: due again by
    /// the wall clock.
    #[test]
    fn a_token_that_does_not_look_expired_makes_the_clock_trusted_again() {
        let (exp, wall) = (1_000_000_000, 1_000_300_000);
        let mut r = renewal(exp, wall);
        assert!(r.answer(Some(exp + 1_000), wall).1.is_some());
        r.schedule(Some(exp + 1_000), wall);
        assert_eq!(r.answer(Some(wall + 300_000), wall), (true, None));
        r.schedule(Some(wall + 300_000), wall);
        assert!(!r.ahead && !r.reopen_renews(wall));
        assert!(r.wanted(wall + 240_000, false), "due a minute before exp");
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
