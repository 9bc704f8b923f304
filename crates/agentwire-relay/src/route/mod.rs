//! What the relay does with one browser request: [`Relay::route`] takes the method, URL,
//! headers and (bounded) body and returns a [`Decision`] the Worker carries out.
//!
//! Checks, in order: the route (a fixed set of paths, every segment a plain id, no
//! percent-escapes, so `..` or an encoded slash can never reach the upstream), the `Origin`
//! (exact match against the allowlist, and the token's `origin` claim), the relay token (from
//! the `agentwire.token.<t>` subprotocol or the `token` query parameter on the WebSocket,
//! `Authorization: Bearer` on HTTP), the path's agent against the token's, the agent's key, the
//! per-agent rate limit (which a request refused by a later check has still spent), a
//! WebSocket's `connection_id`, and the token's `rooms` claim against the rooms asked for.
//!
//! The upstream URL is always the configured origin and prefix followed by a path the relay
//! writes itself from the checked segments; the only headers sent upstream are the ones the
//! relay sets (`Authorization` with the agent's key, `Content-Type`, `Accept`,
//! `X-Switch-Connection-Id`): a browser's `Authorization`, cookies, `cf-*` and everything else
//! stay behind.
//!
//! A WebSocket upgrade is refused over the socket (accept, then close with a code), because a
//! browser sees a refused upgrade only as 1006 and would retry forever: 4401 for the token,
//! 4403 for an origin, agent or room it may not use, 4400 for a bad request (each with a
//! `refused` frame first, as Switch does, except 4401), 1013 for the rate limit.

mod query;

pub use query::Query;

use crate::config::{Config, UpstreamGeneration};
use crate::limit::Limiter;
use crate::token::{self, Claims};
use crate::{SUBPROTOCOL, TOKEN_PROTOCOL_PREFIX, TOKEN_QUERY};
use agentwire_core::http::local::is_origin;
use agentwire_core::Millis;
use agentwire_switch::http::CONNECTION_ID_HEADER;
use agentwire_switch::open::no_websocket_route;
use serde::Serialize;

/// Header pairs, as the Worker passes them to `Headers`.
pub type Headers = Vec<(String, String)>;

/// One browser request.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    pub method: &'a str,
    /// The full URL the Worker received (`request.url`).
    pub url: &'a str,
    /// Every header as received; names are compared case-insensitively.
    pub headers: &'a [(String, String)],
    /// The body of a `POST` (the Worker refuses bodies over `max_body_bytes` with 413 first).
    pub body: Option<&'a str>,
}

impl Request<'_> {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// What to do with a request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "action", rename_all = "camelCase")]
pub enum Decision {
    /// Answer it with this response (a refusal, a preflight, a 404).
    Respond(Answer),
    /// A WebSocket upgrade refused over the socket: accept it (echoing `protocol`), send
    /// `frame` if any, close with `code`.
    Refuse(Refusal),
    /// Make this call upstream and pass its answer back with `cors` added.
    Proxy(Proxy),
    /// Accept the WebSocket (echoing `protocol`) and connect it upstream.
    Connect(Connect),
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Answer {
    pub status: u16,
    pub headers: Headers,
    pub body: String,
    /// For a refusal (not a preflight's 204): what the Worker logs about it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log: Option<RefusalLog>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Refusal {
    pub protocol: Option<&'static str>,
    pub frame: Option<String>,
    pub code: u16,
    pub reason: String,
    /// What the Worker logs about it.
    pub log: RefusalLog,
}

/// A refusal as the Worker logs it (one line each): what was refused and why. Never a token,
/// a key or a secret: `detail` is what the browser is told too.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RefusalLog {
    /// `not_found`, `invalid`, `method`, `origin`, `token`, `agent`, `rate`, `rooms` or `size`.
    pub kind: &'static str,
    /// The HTTP status (for a WebSocket refused over the socket: the status its code stands for).
    pub status: u16,
    /// The close code of a WebSocket refused over the socket.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<u16>,
    /// The agent the path names, when it names one (what was asked for, not who asked).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    pub detail: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Proxy {
    /// The agent whose key the call carries (for the Worker's log lines).
    pub agent_id: String,
    pub method: &'static str,
    pub url: String,
    /// Every header sent upstream (the key's `Authorization` among them).
    pub headers: Headers,
    pub body: Option<String>,
    /// Added to the upstream's answer.
    pub cors: Headers,
    /// The only headers of the upstream's answer passed back (lowercase).
    pub pass_headers: &'static [&'static str],
    pub timeout_ms: u64,
}

/// How to reach the upstream's event stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Transport {
    /// Open the upstream WebSocket and pipe frames.
    Ws,
    /// Bridge the released SSE stream.
    Sse,
    /// Try the WebSocket; on a refused upgrade ([`upgrade_refused`]) bridge instead.
    Auto,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Connect {
    pub protocol: Option<&'static str>,
    pub transport: Transport,
    pub agent_id: String,
    pub connection_id: String,
    /// The upstream WebSocket route as an http(s) URL (a Worker `fetch` with `Upgrade`).
    pub ws_url: String,
    /// The released SSE stream.
    pub sse_url: String,
    /// The upstream origin and prefix, for the bridge's beats (`{base}{path}`).
    pub upstream_base: String,
    /// Sent upstream with either (`Authorization` with the key).
    pub headers: Headers,
    pub timeout_ms: u64,
    pub max_message_bytes: usize,
    pub ping_interval_ms: u64,
    /// Close both sides when the upstream socket is silent this long.
    pub idle_timeout_ms: u64,
    /// Frames a browser may send before the upstream answers (at most `max_message_bytes` in
    /// all); more closes with [`close::POLICY`](crate::close::POLICY).
    pub early_frames: usize,
    /// When the relay token expires (its `exp`, in ms since the epoch): the socket may not
    /// outlive it. Then the browser is closed with
    /// [`close::TOKEN_EXPIRED`](crate::close::TOKEN_EXPIRED) (1008: it reopens, with a new
    /// token if it has one) and the upstream is let go (its socket closed 1000, or the stream and beats
    /// aborted).
    pub expires_at_ms: Millis,
    /// The bridge's bound on bytes sent to the browser and not acknowledged
    /// ([`BridgeConfig::max_unacked_bytes`](crate::bridge::BridgeConfig::max_unacked_bytes)).
    pub max_unacked_bytes: usize,
}

/// What a refused upstream upgrade means: the released server has no WebSocket route
/// ([`no_websocket_route`], the statuses on which a Switch connection on `auto` moves to SSE:
/// 403 with a valid key; a 404, 405 or 426 from anything in between), so bridge; 401 means the
/// relay's own key was refused (`key_refused`: close
/// [`close::KEY_REFUSED`](crate::close::KEY_REFUSED), a retryable 1011, with its reason; never
/// 4401, which would stop the browser for good as if its relay token were bad); anything else is
/// a failure to deliver (1011).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "then", rename_all = "camelCase")]
pub enum UpgradeRefused {
    Bridge,
    #[serde(rename_all = "camelCase")]
    Close {
        code: u16,
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        key_refused: bool,
    },
}

pub fn upgrade_refused(status: u16) -> UpgradeRefused {
    match status {
        s if no_websocket_route(s) => UpgradeRefused::Bridge,
        401 => UpgradeRefused::Close {
            code: crate::close::KEY_REFUSED,
            key_refused: true,
        },
        _ => UpgradeRefused::Close {
            code: crate::close::FALLBACK,
            key_refused: false,
        },
    }
}

/// The `code` of the relay's answer to an HTTP call whose upstream refused the relay's own key
/// (its 401: the browser's token was verified before, so it is the key in `AGENT_KEYS`).
pub const KEY_REFUSED_CODE: &str = "relay_key_refused";

/// What the relay answers to the browser for the upstream's answer with `status` to an HTTP call
/// ([`upstream_answer`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "then", rename_all = "camelCase")]
pub enum UpstreamAnswer {
    /// Pass it on: its status, its body (a success streamed, an error redacted and bounded) and
    /// the [`PASSED_HEADERS`], with the call's CORS headers.
    Pass,
    /// Answer this instead, a JSON `body` (`{code?, detail, error: "upstream"}`) with the call's
    /// CORS headers, the upstream's body unread. `key_refused`: the relay's own key was refused
    /// (logged as such).
    #[serde(rename_all = "camelCase")]
    Replace {
        status: u16,
        body: String,
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        key_refused: bool,
    },
}

/// The relay's answer for an upstream answer with `status` to an HTTP call. Passed on, except:
/// - a 401, the relay's own key refused (never passed on: a client engine takes a 401 for its
///   relay token and stops): 502 with [`KEY_REFUSED_CODE`] and
///   [`close::KEY_REFUSED_REASON`](crate::close::KEY_REFUSED_REASON);
/// - a redirect (3xx), not followed: 502 without a code;
/// - a status no answer can carry (under 200, over 599): 502 without a code.
///
/// The `code` says the upstream did answer, and carried nothing out: the Switch engine takes a
/// gateway's 502 with a code for an answer (retryable), and one without for no answer, which a
/// call that is not idempotent may have run ([`agentwire_switch::unanswered::gateway`]). A
/// redirect may say the upstream did carry the call out (a 303 after a post), and a status out
/// of range says nothing of what it did, so both are no answer, as the relay's own 502 and 504
/// for an unreachable or late upstream are.
pub fn upstream_answer(status: u16) -> UpstreamAnswer {
    let (code, detail) = match status {
        200..=299 | 400 | 402..=599 => return UpstreamAnswer::Pass,
        401 => (Some(KEY_REFUSED_CODE), crate::close::KEY_REFUSED_REASON.to_owned()),
        300..=399 => (None, "the upstream answered with a redirect".to_owned()),
        _ => (None, format!("the upstream answered with status {status}")),
    };
    let mut body = serde_json::json!({ "detail": detail, "error": "upstream" });
    if let Some(code) = code {
        body["code"] = code.into();
    }
    UpstreamAnswer::Replace {
        status: 502,
        body: body.to_string(),
        key_refused: status == 401,
    }
}

/// Headers of an upstream answer the relay passes back to the browser.
pub const PASSED_HEADERS: &[&str] = &["content-type", "retry-after"];
/// Frames a browser may send before the upstream answers (a pong every 2 s).
pub const EARLY_FRAMES: usize = 16;

/// Frames counted per call of [`Relay::take_frames`]; the frame burst is at least this.
pub const FRAME_BATCH: u32 = 8;

/// How long a learned "the upstream has no WebSocket route" is kept.
pub const RELEASED_MEMORY_MS: Millis = 5 * 60 * 1000;
/// Longest `X-Switch-Connection-Id` forwarded.
const MAX_ID: usize = 256;

/// The relay: its configuration and its rate-limit state.
#[derive(Debug)]
pub struct Relay {
    cfg: Config,
    limiter: Limiter,
    /// Per socket (a number the driver picks): the frames a browser sends up it.
    frames: Limiter<u32>,
    /// Until when the upstream is known to have no WebSocket route (`auto`).
    released_until: Option<Millis>,
}

/// The routes a client needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Route<'a> {
    Ws,
    ListOps,
    Op(&'a str),
    Connection(&'a str),
}

impl Route<'_> {
    fn method(self) -> &'static str {
        match self {
            Route::Ws | Route::ListOps => "GET",
            Route::Op(_) | Route::Connection(_) => "POST",
        }
    }
}

/// What [`is_segment`] accepts, as a refusal says it.
const PLAIN_ID: &str = "a plain id (1 to 256 of A-Z a-z 0-9 - . _ ~ :)";

/// A plain path segment: 1..=256 of `A-Z a-z 0-9 - . _ ~ :`, and not `.` or `..`.
pub fn is_segment(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= MAX_ID
        && s != "."
        && s != ".."
        && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"-._~:".contains(&b))
}

/// Why a request is refused: the HTTP status, the WebSocket close code, and a message naming
/// what was wrong (never a key or a token).
struct No {
    status: u16,
    code: u16,
    kind: &'static str,
    detail: String,
    retry_after_s: Option<u64>,
    /// The route's method, for a 405's `Allow` (with `OPTIONS`).
    allow: Option<&'static str>,
}

fn no(status: u16, kind: &'static str, detail: impl Into<String>) -> No {
    let code = match status {
        401 => 4401,
        429 => crate::close::TRY_AGAIN_LATER,
        s @ 400..=499 => 4000 + s,
        _ => crate::close::FALLBACK,
    };
    No {
        status,
        code,
        kind,
        detail: detail.into(),
        retry_after_s: None,
        allow: None,
    }
}

impl No {
    fn log(&self, code: Option<u16>, agent: Option<String>) -> RefusalLog {
        RefusalLog {
            kind: self.kind,
            status: self.status,
            code,
            agent,
            detail: self.detail.clone(),
        }
    }
}

impl Relay {
    pub fn new(cfg: Config) -> Relay {
        let limiter = Limiter::new(cfg.rate_per_minute, cfg.rate_burst);
        let frames = Limiter::new(cfg.frame_per_minute, cfg.frame_burst);
        Relay {
            cfg,
            limiter,
            frames,
            released_until: None,
        }
    }

    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// The upstream refused a WebSocket upgrade in a way that means it has none (`auto`):
    /// bridge straight away for the next [`RELEASED_MEMORY_MS`].
    pub fn learn_released(&mut self, now: Millis) {
        self.released_until = Some(now.saturating_add(RELEASED_MEMORY_MS));
    }

    /// Takes [`FRAME_BATCH`] frames' worth of the limit of `socket` (a number the driver picks
    /// per socket), or says in how many ms they are available. The driver asks once per
    /// `FRAME_BATCH` frames the browser sends (one call per frame cost the pipe about 8 % of its
    /// throughput), and closes with [`close::POLICY`](crate::close::POLICY) when refused.
    pub fn take_frames(&mut self, socket: u32, now: Millis) -> Result<(), Millis> {
        self.frames.take_n(&socket, FRAME_BATCH, now)
    }

    /// `socket` ended: its frame bucket goes.
    pub fn forget_socket(&mut self, socket: u32) {
        self.frames.forget(&socket);
    }

    /// Decides what to do with `req` at `now`.
    pub fn route(&mut self, req: &Request<'_>, now: Millis) -> Decision {
        let origin = req.header("origin").map(str::to_owned);
        let upgrade = req
            .header("upgrade")
            .is_some_and(|u| u.eq_ignore_ascii_case("websocket"));
        let cors = self.cors(origin.as_deref());
        match self.decide(req, origin.as_deref(), upgrade, now) {
            Ok(d) => d,
            Err(no) if upgrade && req.method.eq_ignore_ascii_case("GET") => {
                let agent = self.path_agent(req.url);
                let offered = offered_protocols(req);
                if !offered.is_empty() && !offered.contains(&SUBPROTOCOL) {
                    // A handshake the browser would fail anyway: say so over HTTP.
                    return answer(&no, &cors, agent);
                }
                let protocol = offered.contains(&SUBPROTOCOL).then_some(SUBPROTOCOL);
                let frame = (no.code >= 4000 && no.code != 4401).then(|| refused_frame(no.status, &no.detail));
                Decision::Refuse(Refusal {
                    protocol,
                    frame,
                    code: no.code,
                    reason: crate::close::reason(&no.detail).to_owned(),
                    log: no.log(Some(no.code), agent),
                })
            }
            Err(no) => answer(&no, &cors, self.path_agent(req.url)),
        }
    }

    /// The agent id the path of `url` names (`/agents/{id}/...` after the relay's prefix), if it
    /// names one that is a plain segment.
    fn path_agent(&self, url: &str) -> Option<String> {
        let (path, _) = split_url(url)?;
        let path = path.strip_prefix(self.cfg.path_prefix.as_str())?;
        let mut segs = path.strip_prefix('/')?.split('/');
        match (segs.next(), segs.next()) {
            (Some("agents"), Some(agent)) if is_segment(agent) => Some(agent.to_owned()),
            _ => None,
        }
    }

    fn decide(&mut self, req: &Request<'_>, origin: Option<&str>, upgrade: bool, now: Millis) -> Result<Decision, No> {
        let (path, raw_query) = split_url(req.url).ok_or_else(|| no(400, "invalid", "the URL has no path"))?;
        let path = path
            .strip_prefix(self.cfg.path_prefix.as_str())
            .filter(|p| p.starts_with('/'))
            .ok_or_else(|| no(404, "not_found", "no such route"))?;
        let (agent, route) = parse_route(path)?;
        let method = req.method.to_ascii_uppercase();
        if method == "OPTIONS" {
            return Ok(self.preflight(req, origin, route));
        }
        if method != route.method() {
            let mut no = no(405, "method", format!("{method} is not allowed here"));
            no.detail = format!("{}; use {}", no.detail, route.method());
            no.allow = Some(route.method());
            return Err(no);
        }
        if matches!(route, Route::Ws) != upgrade {
            return Err(if upgrade {
                no(
                    400,
                    "invalid",
                    "this route is not a WebSocket route: call it over plain HTTP",
                )
            } else {
                no(426, "invalid", "this route is only a WebSocket upgrade")
            });
        }
        if upgrade {
            let offered = offered_protocols(req);
            if !offered.is_empty() && !offered.contains(&SUBPROTOCOL) {
                return Err(no(400, "invalid", "offer the subprotocol agentwire.v1"));
            }
        }
        self.check_origin(origin)?;
        let query = Query::parse(raw_query.unwrap_or_default()).map_err(|e| no(400, "invalid", e))?;
        let token = self.token(req, &query, upgrade)?;
        let claims = token::verify(&token, &self.cfg.secrets(), now, self.cfg.max_token_lifetime_s).map_err(|e| {
            no(
                401,
                "token",
                format!("relay token refused ({}): {}", e.kind.name(), e.message),
            )
        })?;
        if claims.agent_id != agent {
            return Err(no(403, "agent", "the relay token is for another agent"));
        }
        if let Some(bound) = &claims.origin {
            if origin != Some(bound.as_str()) {
                return Err(no(403, "origin", "the relay token is bound to another origin"));
            }
        }
        let key = self
            .cfg
            .key(agent)
            .ok_or_else(|| no(403, "agent", "the relay holds no key for this agent"))?
            .to_owned();
        if let Err(wait) = self.limiter.take(agent, now) {
            let mut no = no(429, "rate", "rate limit: too many requests for this agent");
            no.retry_after_s = Some(wait.div_ceil(1000).max(1));
            return Err(no);
        }
        let auth = ("Authorization".to_owned(), format!("Bearer {key}"));
        match route {
            Route::Ws => self.connect(req, agent, &query, &claims, auth, now),
            _ => self.proxy(req, agent, route, &claims, auth, origin),
        }
    }

    fn check_origin(&self, origin: Option<&str>) -> Result<(), No> {
        match origin {
            None if self.cfg.allow_no_origin => Ok(()),
            None => Err(no(403, "origin", "a request without Origin is not served")),
            Some(o) if self.cfg.allowed_origins.iter().any(|a| a == o) => Ok(()),
            Some(_) => Err(no(403, "origin", "this Origin is not allowed")),
        }
    }

    fn token(&self, req: &Request<'_>, query: &Query, upgrade: bool) -> Result<String, No> {
        if !upgrade {
            return match req.header("authorization").map(|a| a.split_once(' ')) {
                Some(Some((scheme, t))) if scheme.eq_ignore_ascii_case("bearer") && !t.trim().is_empty() => {
                    Ok(t.trim().to_owned())
                }
                Some(_) => Err(no(401, "token", "Authorization must be Bearer <relay token>")),
                None => Err(no(401, "token", "no relay token (Authorization: Bearer)")),
            };
        }
        let from_protocol = offered_protocols(req)
            .into_iter()
            .find_map(|p| p.strip_prefix(TOKEN_PROTOCOL_PREFIX));
        match (from_protocol, query.get(TOKEN_QUERY)) {
            (Some(a), Some(b)) if a != b => Err(no(400, "invalid", "two different relay tokens")),
            (Some(t), _) | (None, Some(t)) if !t.is_empty() => Ok(t.to_owned()),
            _ => Err(no(
                401,
                "token",
                "no relay token (subprotocol agentwire.token.<t> or ?token=)",
            )),
        }
    }

    fn connect(
        &self,
        req: &Request<'_>,
        agent: &str,
        query: &Query,
        claims: &Claims,
        auth: (String, String),
        now: Millis,
    ) -> Result<Decision, No> {
        let connection_id = match query.get("connection_id") {
            Some(c) if is_segment(c) => c.to_owned(),
            Some(_) => return Err(no(400, "invalid", format!("the connection_id given is not {PLAIN_ID}"))),
            None => return Err(no(400, "invalid", format!("connection_id is required: {PLAIN_ID}"))),
        };
        if let Some(allowed) = &claims.rooms {
            if query.get("scope").is_some_and(|s| s != "single") {
                return Err(no(
                    403,
                    "rooms",
                    "the relay token limits rooms: only scope=single is allowed",
                ));
            }
            check_rooms(allowed, query.rooms().into_iter())?;
        }
        let base = format!(
            "{}{}/agents/{agent}",
            self.cfg.upstream_origin, self.cfg.upstream_prefix
        );
        let transport = match self.cfg.generation {
            UpstreamGeneration::Ws => Transport::Ws,
            UpstreamGeneration::Sse => Transport::Sse,
            UpstreamGeneration::Auto if self.released_until.is_some_and(|t| t > now) => Transport::Sse,
            UpstreamGeneration::Auto => Transport::Auto,
        };
        Ok(Decision::Connect(Connect {
            protocol: offered_protocols(req).contains(&SUBPROTOCOL).then_some(SUBPROTOCOL),
            transport,
            agent_id: agent.to_owned(),
            connection_id,
            ws_url: format!("{base}/connection/ws{}", query.forward(&[])),
            sse_url: format!("{base}/events{}", query.forward(&["expected_generation"])),
            upstream_base: format!("{}{}", self.cfg.upstream_origin, self.cfg.upstream_prefix),
            headers: vec![auth],
            timeout_ms: self.cfg.upstream_timeout_ms,
            max_message_bytes: self.cfg.max_message_bytes,
            ping_interval_ms: self.cfg.ping_interval_ms,
            idle_timeout_ms: self.cfg.upstream_idle_ms,
            early_frames: EARLY_FRAMES,
            expires_at_ms: claims.exp.saturating_mul(1000),
            max_unacked_bytes: self.cfg.max_unacked_bytes,
        }))
    }

    fn proxy(
        &self,
        req: &Request<'_>,
        agent: &str,
        route: Route<'_>,
        claims: &Claims,
        auth: (String, String),
        origin: Option<&str>,
    ) -> Result<Decision, No> {
        let tail = match route {
            Route::Ws => "connection/ws".to_owned(),
            Route::ListOps => "ops".to_owned(),
            Route::Op(name) => format!("ops/{name}"),
            Route::Connection(name) => format!("connection/{name}"),
        };
        let mut headers = vec![auth, ("Accept".to_owned(), "application/json".to_owned())];
        if let Some(id) = req.header(CONNECTION_ID_HEADER) {
            if !is_segment(id) {
                return Err(no(400, "invalid", format!("{CONNECTION_ID_HEADER} must be a plain id")));
            }
            headers.push((CONNECTION_ID_HEADER.to_owned(), id.to_owned()));
        }
        let body = if route.method() == "POST" {
            let body = req.body.unwrap_or_default();
            if body.len() > self.cfg.max_body_bytes {
                return Err(no(
                    413,
                    "size",
                    format!("the body is over {} bytes", self.cfg.max_body_bytes),
                ));
            }
            let body = match &claims.rooms {
                Some(allowed) => check_body_rooms(allowed, route, body)?,
                None => body.to_owned(),
            };
            headers.push(("Content-Type".to_owned(), "application/json".to_owned()));
            Some(body)
        } else {
            None
        };
        Ok(Decision::Proxy(Proxy {
            agent_id: agent.to_owned(),
            method: route.method(),
            url: format!(
                "{}{}/agents/{agent}/{tail}",
                self.cfg.upstream_origin, self.cfg.upstream_prefix
            ),
            headers,
            body,
            cors: self.cors(origin),
            pass_headers: PASSED_HEADERS,
            timeout_ms: self.cfg.upstream_timeout_ms,
        }))
    }

    fn preflight(&self, req: &Request<'_>, origin: Option<&str>, route: Route<'_>) -> Decision {
        let allowed = origin.is_some_and(|o| self.cfg.allowed_origins.iter().any(|a| a == o));
        let asked = req.header("access-control-request-method").unwrap_or_default();
        if !allowed || !asked.eq_ignore_ascii_case(route.method()) {
            let no = no(403, "origin", "preflight refused: origin or method not allowed");
            return answer(&no, &Vec::new(), self.path_agent(req.url));
        }
        let mut headers = self.cors(origin);
        headers.extend([
            ("Access-Control-Allow-Methods".to_owned(), "GET, POST".to_owned()),
            (
                "Access-Control-Allow-Headers".to_owned(),
                format!(
                    "authorization, content-type, {}",
                    CONNECTION_ID_HEADER.to_ascii_lowercase()
                ),
            ),
            ("Access-Control-Max-Age".to_owned(), "600".to_owned()),
        ]);
        Decision::Respond(Answer {
            status: 204,
            headers,
            body: String::new(),
            log: None,
        })
    }

    /// The CORS headers of an answer to `origin` (the request's `Origin`), if it is allowed
    /// (`Vary: Origin` alone otherwise): every answer of the route has them, and so do the
    /// driver's own answers to a request (a body over `max_body_bytes`, a failure).
    pub fn cors(&self, origin: Option<&str>) -> Headers {
        match origin {
            Some(o) if is_origin(o) && self.cfg.allowed_origins.iter().any(|a| a == o) => vec![
                ("Access-Control-Allow-Origin".to_owned(), o.to_owned()),
                ("Access-Control-Expose-Headers".to_owned(), "Retry-After".to_owned()),
                ("Vary".to_owned(), "Origin".to_owned()),
            ],
            _ => vec![("Vary".to_owned(), "Origin".to_owned())],
        }
    }
}

fn offered_protocols<'a>(req: &Request<'a>) -> Vec<&'a str> {
    req.headers
        .iter()
        .filter(|(n, _)| n.eq_ignore_ascii_case("sec-websocket-protocol"))
        .flat_map(|(_, v)| v.split(','))
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .collect()
}

/// `(path, query)` of an absolute URL, the fragment dropped.
fn split_url(url: &str) -> Option<(&str, Option<&str>)> {
    let after_scheme = url.find("://").map_or(0, |i| i + 3);
    let path_start = after_scheme + url[after_scheme..].find('/')?;
    let rest = &url[path_start..];
    let rest = rest.split('#').next().unwrap_or_default();
    Some(match rest.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (rest, None),
    })
}

fn parse_route(path: &str) -> Result<(&str, Route<'_>), No> {
    if path.contains('%') {
        return Err(no(400, "invalid", "percent-escapes are not allowed in the path"));
    }
    let segs: Vec<&str> = path[1..].split('/').collect();
    if !segs.iter().all(|s| is_segment(s)) {
        return Err(no(404, "not_found", "no such route"));
    }
    let route = match segs.as_slice() {
        ["agents", agent, "connection", "ws"] => (*agent, Route::Ws),
        ["agents", agent, "ops"] => (*agent, Route::ListOps),
        ["agents", agent, "ops", name]
            if name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_') =>
        {
            (*agent, Route::Op(name))
        }
        ["agents", agent, "connection", name @ ("subscribe" | "unsubscribe" | "placements")] => {
            (*agent, Route::Connection(name))
        }
        _ => return Err(no(404, "not_found", "no such route")),
    };
    Ok(route)
}

fn check_rooms<'a>(allowed: &[String], asked: impl Iterator<Item = &'a str>) -> Result<(), No> {
    for room in asked {
        if !allowed.iter().any(|a| a == room) {
            return Err(no(
                403,
                "rooms",
                format!("the relay token does not allow room {room:?}"),
            ));
        }
    }
    Ok(())
}

/// With a `rooms` claim, the rooms a call names must be among them: `room_id` of subscribe,
/// unsubscribe and any operation (`connect_to_room`), every room of `placements`.
/// Returns the body to forward: the checked value written again, so the upstream reads exactly
/// what was checked (a duplicated `room_id` cannot mean one room here and another there).
fn check_body_rooms(allowed: &[String], route: Route<'_>, body: &str) -> Result<String, No> {
    if agentwire_core::json::nests_deeper_than(body.as_bytes(), 64) {
        return Err(no(400, "invalid", "the body nests too deeply"));
    }
    let value: serde_json::Value =
        serde_json::from_str(body).map_err(|_| no(400, "invalid", "the body must be a JSON object"))?;
    let obj = value
        .as_object()
        .ok_or_else(|| no(400, "invalid", "the body must be a JSON object"))?;
    if let Some(room) = obj.get("room_id") {
        let room = room
            .as_str()
            .ok_or_else(|| no(400, "invalid", "room_id must be a string"))?;
        check_rooms(allowed, std::iter::once(room))?;
    }
    if route == Route::Connection("placements") {
        let rooms = obj.get("placements").and_then(|p| p.as_object());
        let rooms = rooms.ok_or_else(|| no(400, "invalid", "placements must be an object"))?;
        let rooms: Option<Vec<&str>> = rooms.values().map(|r| r.as_str()).collect();
        let rooms = rooms.ok_or_else(|| no(400, "invalid", "every room of placements must be a string"))?;
        check_rooms(allowed, rooms.into_iter())?;
    }
    Ok(value.to_string())
}

/// The `refused` frame Switch sends before a 4000 + status close, written by the engine's
/// encoder (the one shape every refusal has, from the relay, the bridge or a server).
fn refused_frame(status: u16, detail: &str) -> String {
    let mut raw = String::new();
    agentwire_core::json::push_string(&mut raw, detail);
    let detail = serde_json::value::RawValue::from_string(raw)
        .unwrap_or_else(|_| serde_json::value::to_raw_value("").unwrap_or_default());
    agentwire_switch::frame::encode(&agentwire_switch::frame::Frame::Refused(
        agentwire_switch::frame::Refused { status, detail },
    ))
}

fn answer(no: &No, cors: &Headers, agent: Option<String>) -> Decision {
    let mut body = r#"{"detail":"#.to_owned();
    agentwire_core::json::push_string(&mut body, &no.detail);
    body.push_str(r#","error":"#);
    agentwire_core::json::push_string(&mut body, no.kind);
    body.push('}');
    let mut headers = cors.clone();
    headers.push(("Content-Type".to_owned(), "application/json".to_owned()));
    headers.push(("Cache-Control".to_owned(), "no-store".to_owned()));
    if let Some(s) = no.retry_after_s {
        headers.push(("Retry-After".to_owned(), s.to_string()));
    }
    if let Some(method) = no.allow {
        headers.push(("Allow".to_owned(), format!("{method}, OPTIONS")));
    }
    Decision::Respond(Answer {
        status: no.status,
        headers,
        body,
        log: Some(no.log(None, agent)),
    })
}

#[cfg(test)]
mod tests;
