//! The reference agent that `agentwire rkt serve` runs: demo intents (`echo`,
//! `weather.current`, `weather.forecast`), memory shared across sessions with namespaces and
//! TTL, AUTH with configured API keys and DIDs, a PAY ledger with priced intents, and a
//! per-connection rate limit answered with 429. Sans-IO like the sessions: the driver keeps one
//! [`Shared`] for the process and one [`Connection`] per socket.

mod intents;
mod ledger;
mod memory;

pub use ledger::Ledger;
pub use memory::{MemoryError, MemoryStore};

use crate::body::{AuthBody, AuthOkBody, DEFAULT_NAMESPACE};
use crate::errors::{codes, error_body, RktError};
use crate::server::{Inbound, InboundKind, ServerConfig, ServerSession};
use agentwire_core::http::local::is_origin;
use agentwire_core::{Entropy, ErrorKind, Millis};
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap, VecDeque};

/// The intents the reference agent knows, and the capability each needs.
pub const INTENTS: &[(&str, Option<&str>)] = &[
    ("echo", None),
    ("weather.current", Some("weather")),
    ("weather.forecast", Some("forecast")),
];

/// The currency of prices and of credit.
pub const CURRENCY: &str = "RKTT";
/// The longest intent, key, namespace, currency, description, recipient, DID, token or scope
/// the reference agent accepts, in bytes; and the most scopes one AUTH may ask for.
pub const MAX_FIELD_LEN: usize = 256;
pub const MAX_SCOPES: usize = 32;

/// `Debug` shows how many `api_keys` there are, not the keys.
#[derive(Clone)]
pub struct ReferenceConfig {
    pub agent: String,
    /// Advertised in HELLO_ACK and DISCOVER; `weather` and `forecast` enable their intents.
    pub capabilities: Vec<String>,
    /// With keys, everything but HELLO, DISCOVER, AUTH, PING and GOODBYE needs AUTH first (or an
    /// `Authorization: Bearer` header with a key or session token, HELLO's included; one not
    /// accepted is ERROR 401, and a HELLO so refused is not acknowledged).
    pub api_keys: Vec<String>,
    /// DIDs accepted by DID AUTH when API keys are configured (without keys any DID is).
    pub allowed_dids: Vec<String>,
    /// Price per call in RKTT, by intent; a call without the credit gets 605.
    pub prices: BTreeMap<String, f64>,
    /// Messages per second per connection, and the burst allowed (enforced by the session).
    pub rate_per_s: f64,
    pub burst: u32,
    pub max_memory_entries: usize,
    /// Bytes of memory: namespace + key + the value's compact JSON text, summed over the entries
    /// (values are kept as that text, so this bounds their heap; each entry adds a fixed
    /// overhead of about 100 bytes on top).
    pub max_memory_bytes: usize,
    /// Session tokens alive at once, over all connections (each connection holds one). A full
    /// store makes room with the oldest token of an ended connection ([`Connection::close`]).
    pub max_tokens: usize,
    /// Ledger accounts open at once: one per authenticated principal that paid, and one per open
    /// unauthenticated connection that paid (closed with the connection: [`Connection::close`]).
    pub max_accounts: usize,
    /// The most days a `weather.forecast` may ask for: 1 to [`MAX_FORECAST_DAYS`] (default 16).
    pub max_forecast_days: u32,
    pub token_lifetime_s: u64,
    /// Connections a server serves at once (the native one: `agentwire_native::rkt::serve`);
    /// past it, a new TCP connection is closed as soon as it is accepted.
    pub max_connections: usize,
    /// Origins (`http(s)://host[:port]`, as browsers send them) whose pages may connect, besides
    /// pages on this machine. A server (`agentwire_native::rkt::serve`) refuses with HTTP 403 a
    /// WebSocket upgrade whose `Origin` is present and neither a page on 127.0.0.1, localhost or
    /// `[::1]` (any port) nor one of these: otherwise any website the developer visits could open
    /// a WebSocket to the agent and use its memory and ledger. Native clients send no `Origin`
    /// and are not affected. Bound to a loopback address, the server also refuses a `Host` that
    /// is not 127.0.0.1, localhost or `[::1]` (DNS rebinding). The rule is
    /// `agentwire_core::http::local`'s. Default: none.
    pub allowed_origins: Vec<String>,
}

impl std::fmt::Debug for ReferenceConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Every field named: a new one fails to compile here until it is printed.
        let ReferenceConfig {
            agent,
            capabilities,
            api_keys,
            allowed_dids,
            prices,
            rate_per_s,
            burst,
            max_memory_entries,
            max_memory_bytes,
            max_tokens,
            max_accounts,
            max_forecast_days,
            token_lifetime_s,
            max_connections,
            allowed_origins,
        } = self;
        f.debug_struct("ReferenceConfig")
            .field("agent", agent)
            .field("capabilities", capabilities)
            .field("api_keys", &format_args!("[<redacted>; {}]", api_keys.len()))
            .field("allowed_dids", allowed_dids)
            .field("prices", prices)
            .field("rate_per_s", rate_per_s)
            .field("burst", burst)
            .field("max_memory_entries", max_memory_entries)
            .field("max_memory_bytes", max_memory_bytes)
            .field("max_tokens", max_tokens)
            .field("max_accounts", max_accounts)
            .field("max_forecast_days", max_forecast_days)
            .field("token_lifetime_s", token_lifetime_s)
            .field("max_connections", max_connections)
            .field("allowed_origins", allowed_origins)
            .finish()
    }
}

impl Default for ReferenceConfig {
    fn default() -> Self {
        ReferenceConfig {
            agent: "rkt://localhost".into(),
            capabilities: vec!["weather".into(), "forecast".into()],
            api_keys: Vec::new(),
            allowed_dids: Vec::new(),
            prices: BTreeMap::new(),
            rate_per_s: 1000.0,
            burst: 2000,
            max_memory_entries: 100_000,
            max_memory_bytes: 64 << 20,
            max_tokens: 10_000,
            max_accounts: 100_000,
            max_forecast_days: 16,
            token_lifetime_s: 3600,
            max_connections: 1024,
            allowed_origins: Vec::new(),
        }
    }
}

/// The ceiling of [`ReferenceConfig::max_forecast_days`]: a year of days, so one forecast's
/// reply stays a few tens of kilobytes (the reply is built whole in memory).
pub const MAX_FORECAST_DAYS: u32 = 366;

/// A rate limit of `rate_per_s` messages per second is a finite number above 0: NaN, an
/// infinity, 0 or a negative rate would give nonsense retry hints or no limit at all. An
/// `invalid` error otherwise.
pub fn check_rate(rate_per_s: f64) -> Result<f64, RktError> {
    if rate_per_s.is_finite() && rate_per_s > 0.0 {
        Ok(rate_per_s)
    } else {
        Err(RktError::local(
            ErrorKind::Invalid,
            format!("the rate must be a finite number of messages per second above 0, not {rate_per_s}"),
        ))
    }
}

impl ReferenceConfig {
    /// Whether the agent can be served with this configuration: its session's configuration
    /// passes [`ServerConfig::check`] (no `agent` or capability a header cannot carry), the rate
    /// passes [`check_rate`], the burst and `max_connections` are at least 1,
    /// `max_forecast_days` is 1 to [`MAX_FORECAST_DAYS`], and every allowed origin is
    /// `http(s)://host[:port]` ([`agentwire_core::http::local::is_origin`]). Servers
    /// (`agentwire_native::rkt::serve`) refuse it otherwise.
    pub fn check(&self) -> Result<(), RktError> {
        self.server_config().check()?;
        check_rate(self.rate_per_s)?;
        if !(1..=MAX_FORECAST_DAYS).contains(&self.max_forecast_days) {
            let m = format!(
                "max_forecast_days must be 1 to {MAX_FORECAST_DAYS}, not {}",
                self.max_forecast_days
            );
            return Err(RktError::local(ErrorKind::Invalid, m));
        }
        if let Some(o) = self.allowed_origins.iter().find(|o| !is_origin(o)) {
            let m = format!("allowed origin {o:?} is not http(s)://host[:port] (no path, not even /)");
            return Err(RktError::local(ErrorKind::Invalid, m));
        }
        for (name, value) in [
            ("burst", u64::from(self.burst)),
            ("max_connections", self.max_connections as u64),
        ] {
            if value == 0 {
                return Err(RktError::local(
                    ErrorKind::Invalid,
                    format!("{name} must be at least 1"),
                ));
            }
        }
        Ok(())
    }

    pub fn server_config(&self) -> ServerConfig {
        ServerConfig {
            agent: self.agent.clone(),
            capabilities: self.capabilities.clone(),
            rate_per_s: self.rate_per_s,
            burst: self.burst,
            ..ServerConfig::default()
        }
    }

    fn intent_enabled(&self, intent: &str) -> bool {
        INTENTS
            .iter()
            .any(|(name, cap)| *name == intent && cap.is_none_or(|c| self.capabilities.iter().any(|x| x == c)))
    }

    fn available(&self) -> Vec<&'static str> {
        INTENTS
            .iter()
            .map(|(n, _)| *n)
            .filter(|n| self.intent_enabled(n))
            .collect()
    }

    /// The DISCOVER manifest.
    pub fn manifest(&self) -> Value {
        json!({
            "agent": self.agent,
            "version": env!("CARGO_PKG_VERSION"),
            "protocol": "RKT/1.0",
            "capabilities": self.capabilities,
            "intents": self.available(),
            "streaming": true,
            "memory": true,
            "payment": { "currency": CURRENCY, "prices": self.prices },
            "auth": { "required": !self.api_keys.is_empty(), "schemes": ["bearer", "did"] },
            "events": false,
        })
    }
}

/// State every connection shares: memory, the ledger, issued session tokens. `Debug` counts the
/// tokens and shows none.
pub struct Shared {
    pub memory: MemoryStore,
    pub ledger: Ledger,
    tokens: HashMap<String, (String, Millis)>,
    /// Tokens whose connection has ended, oldest first (some may be gone since): when
    /// `max_tokens` are alive, the oldest of these makes room for a new one.
    released: VecDeque<String>,
    next_anonymous: u64,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let Shared {
            memory,
            ledger,
            tokens,
            released,
            next_anonymous,
        } = self;
        f.debug_struct("Shared")
            .field("memory", memory)
            .field("ledger", ledger)
            .field("tokens", &tokens.len())
            .field("released", &released.len())
            .field("next_anonymous", next_anonymous)
            .finish()
    }
}

impl Shared {
    pub fn new(cfg: &ReferenceConfig) -> Self {
        Shared {
            memory: MemoryStore::new(cfg.max_memory_entries, cfg.max_memory_bytes),
            ledger: Ledger::new(cfg.max_accounts),
            tokens: HashMap::new(),
            released: VecDeque::new(),
            next_anonymous: 0,
        }
    }
}

/// Per-connection state. Authentication (AUTH, or an accepted `Authorization` header) lasts for
/// the connection; credit without it belongs to the connection alone, and the driver ends it
/// with [`Connection::close`] when the connection ends. `Debug` hides the session token.
pub struct Connection {
    principal: Option<String>,
    /// The payer id of an unauthenticated connection, assigned by the server (never taken from
    /// the client, whose Session-ID anyone can copy).
    anonymous: Option<String>,
    /// The session token this connection holds; a new AUTH replaces it.
    token: Option<String>,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let Connection {
            principal,
            anonymous,
            token,
        } = self;
        f.debug_struct("Connection")
            .field("principal", principal)
            .field("anonymous", anonymous)
            .field("token", &agentwire_core::redact::redacted(token))
            .finish()
    }
}

impl Connection {
    pub fn new(_cfg: &ReferenceConfig) -> Self {
        Connection {
            principal: None,
            anonymous: None,
            token: None,
        }
    }

    pub fn principal(&self) -> Option<&str> {
        self.principal.as_deref()
    }

    /// The connection ended: the credit it held without authentication goes with it (no later
    /// connection can be its payer), so that connections coming and going cannot fill the
    /// ledger's `max_accounts`. Credit of an authenticated principal stays.
    /// Its session token stays valid (it may be presented on another connection) but is the
    /// first to go when `max_tokens` are alive and another AUTH needs room.
    pub fn close(&mut self, shared: &mut Shared) {
        if let Some(payer) = self.anonymous.take() {
            shared.ledger.close(&payer, CURRENCY);
        }
        if let Some(token) = self.token.take() {
            if shared.released.len() >= shared.tokens.len() {
                // Drop the names of tokens already gone, so the list stays within the live ones.
                let tokens = &shared.tokens;
                shared.released.retain(|t| tokens.contains_key(t));
            }
            shared.released.push_back(token);
        }
    }
}

/// Answers one inbound message on `session`.
pub fn handle(
    cfg: &ReferenceConfig,
    shared: &mut Shared,
    conn: &mut Connection,
    session: &mut ServerSession,
    entropy: &mut dyn Entropy,
    now: Millis,
    msg: Inbound,
) {
    let id = msg.id.as_str();
    // `retry_after_s` (429): the `Retry-After` header and `details.retry_after`.
    let refuse_after = |session: &mut ServerSession,
                        code: i64,
                        message: String,
                        details: Option<Value>,
                        retry_after_s: Option<u64>| {
        session.error(
            now,
            Some(id),
            &error_body(code, message, details, Some(id.into())),
            retry_after_s,
        )
    };
    let refuse = |session: &mut ServerSession, code: i64, message: String, details: Option<Value>| {
        refuse_after(session, code, message, details, None)
    };
    if let Some(field) = oversized_field(&msg) {
        let m = format!("{field} is longer than {MAX_FIELD_LEN} bytes (or more than {MAX_SCOPES} scopes)");
        return refuse(session, codes::BAD_MESSAGE, m, Some(json!({"field": field})));
    }
    if let Some(header) = &msg.authorization {
        match bearer_principal(cfg, shared, now, header) {
            Some(p) => conn.principal = Some(p),
            None => {
                return refuse(
                    session,
                    codes::UNAUTHORIZED,
                    "Authorization header not accepted".into(),
                    None,
                )
            }
        }
    }
    if matches!(msg.kind, InboundKind::Hello) {
        // Its Authorization header, accepted above, authenticates the connection. The session
        // has just handed this HELLO over: accepting it cannot fail.
        let _ = session.accept_hello(now, id);
        return;
    }
    let needs_auth = !cfg.api_keys.is_empty() && !matches!(msg.kind, InboundKind::Discover | InboundKind::Auth(_));
    if needs_auth && conn.principal.is_none() {
        return refuse(
            session,
            codes::UNAUTHORIZED,
            "authentication required: send AUTH first".into(),
            None,
        );
    }
    let payer = match &conn.principal {
        Some(p) => p.clone(),
        None => conn
            .anonymous
            .get_or_insert_with(|| {
                shared.next_anonymous += 1;
                format!("anonymous:{}", shared.next_anonymous)
            })
            .clone(),
    };
    match msg.kind {
        // Answered above.
        InboundKind::Hello => {}
        InboundKind::Discover => session.respond(now, id, &cfg.manifest()),
        InboundKind::Auth(auth) => {
            let (principal, scopes) = match auth {
                AuthBody::Bearer { token, scopes } => (bearer_principal(cfg, shared, now, &token), scopes),
                AuthBody::Did { did, scopes } => {
                    // An allowlist, when set, is the only way in; without one, any DID is taken
                    // on a server without API keys (the guide defines no proof of possession).
                    let allowed = if cfg.allowed_dids.is_empty() {
                        cfg.api_keys.is_empty()
                    } else {
                        cfg.allowed_dids.contains(&did)
                    };
                    ((did.starts_with("did:") && allowed).then_some(did), scopes)
                }
            };
            let Some(principal) = principal else {
                return refuse(session, codes::UNAUTHORIZED, "credentials not accepted".into(), None);
            };
            if let Some(old) = conn.token.take() {
                shared.tokens.remove(&old);
            }
            if shared.tokens.len() >= cfg.max_tokens {
                shared.tokens.retain(|_, (_, exp)| *exp > now);
                // Then the oldest token of an ended connection: connections coming and going
                // cannot lock every AUTH out until their tokens expire.
                while shared.tokens.len() >= cfg.max_tokens {
                    let Some(oldest) = shared.released.pop_front() else {
                        break;
                    };
                    shared.tokens.remove(&oldest);
                }
                if shared.tokens.len() >= cfg.max_tokens {
                    // Until the soonest of the live tokens expires (all are later than now).
                    let soonest = shared.tokens.values().map(|(_, exp)| *exp).min().unwrap_or(now);
                    let secs = soonest.saturating_sub(now).div_ceil(1000).max(1);
                    return refuse_after(
                        session,
                        codes::RATE_LIMITED,
                        "too many sessions are authenticated".into(),
                        Some(json!({"retry_after": secs})),
                        Some(secs),
                    );
                }
            }
            let token = format!("rkt_{}", entropy.uuid_v4().replace('-', ""));
            shared.tokens.insert(
                token.clone(),
                (
                    principal.clone(),
                    now.saturating_add(cfg.token_lifetime_s.saturating_mul(1000)),
                ),
            );
            conn.token = Some(token.clone());
            conn.principal = Some(principal);
            session.auth_ok(
                now,
                id,
                &AuthOkBody {
                    session_token: token,
                    scopes,
                    expires_in: Some(cfg.token_lifetime_s),
                },
            );
        }
        InboundKind::MemorySet(m) => {
            let ns = m.namespace.as_deref().unwrap_or(DEFAULT_NAMESPACE);
            match shared.memory.set(now, ns, &m.key, m.value, m.ttl) {
                Ok(expires) => {
                    let expires_at = expires.map(agentwire_core::format_iso8601);
                    session.respond(
                        now,
                        id,
                        &json!({"ok": true, "key": m.key, "namespace": ns, "expires_at": expires_at}),
                    )
                }
                Err(MemoryError::Full { max_entries, max_bytes }) => {
                    let m = format!("memory is full (at most {max_entries} entries and {max_bytes} bytes)");
                    refuse(session, codes::TOO_LARGE, m, None)
                }
                Err(MemoryError::TooDeep) => {
                    let m = "value is nested too deep".to_string();
                    refuse(session, codes::BAD_MESSAGE, m, Some(json!({"field": "value"})))
                }
            }
        }
        InboundKind::MemoryGet(m) => {
            let ns = m.namespace.as_deref().unwrap_or(DEFAULT_NAMESPACE);
            let value = shared.memory.get(now, ns, &m.key);
            session.respond(
                now,
                id,
                &json!({"key": m.key, "namespace": ns, "found": value.is_some(), "value": value}),
            )
        }
        InboundKind::Pay(p) => {
            // Credit is spent in RKTT only, the currency the manifest announces: an account in
            // any other would only take room in the ledger.
            if p.currency != CURRENCY {
                let m = format!("this agent takes payment in {CURRENCY} only");
                let details = json!({"field": "currency", "currency": CURRENCY});
                return refuse(session, codes::BAD_MESSAGE, m, Some(details));
            }
            let Some(balance) = shared.ledger.pay(&payer, &p.currency, p.amount) else {
                return refuse(
                    session,
                    codes::TOO_LARGE,
                    "the ledger has no room for another account".into(),
                    None,
                );
            };
            let receipt_id = format!("rcpt_{}", entropy.uuid_v4().replace('-', ""));
            session.respond(now, id, &json!({"receipt_id": receipt_id, "amount": p.amount, "currency": p.currency, "recipient": p.recipient, "balance": balance}))
        }
        InboundKind::Request {
            intent, params, stream, ..
        } => {
            if !cfg.intent_enabled(&intent) {
                let details = json!({"available_intents": cfg.available()});
                return refuse(
                    session,
                    codes::CAPABILITY_MISSING,
                    format!("Intent '{intent}' not found"),
                    Some(details),
                );
            }
            // Parameters are checked before anything is charged.
            let items = match run_intent(cfg, now, &intent, params.unwrap_or(Value::Null)) {
                Ok(items) => items,
                Err((message, field)) => {
                    return refuse(session, codes::BAD_MESSAGE, message, Some(json!({"field": field})))
                }
            };
            if let Some(&price) = cfg.prices.get(&intent) {
                if let Err(balance) = shared.ledger.spend(&payer, CURRENCY, price) {
                    let details = json!({"price": price, "currency": CURRENCY, "balance": balance});
                    return refuse(
                        session,
                        codes::PAYMENT_REQUIRED,
                        format!("'{intent}' costs {price} {CURRENCY}: send PAY first"),
                        Some(details),
                    );
                }
            }
            answer(session, now, id, &intent, items, stream);
        }
    }
}

/// The items an intent answers with, or what is wrong with its params (message, field).
fn run_intent(
    cfg: &ReferenceConfig,
    now: Millis,
    intent: &str,
    params: Value,
) -> Result<Vec<Value>, (String, &'static str)> {
    let city = match params.get("city") {
        None => "Seoul".to_string(),
        Some(Value::String(c)) if !c.is_empty() && c.len() <= MAX_FIELD_LEN => c.clone(),
        Some(_) => {
            return Err((
                format!("city must be a string of 1 to {MAX_FIELD_LEN} bytes"),
                "params.city",
            ))
        }
    };
    Ok(match intent {
        "echo" => vec![params],
        "weather.current" => vec![intents::current(&city)],
        _ => match params.get("days").map_or(Some(7), Value::as_u64) {
            Some(d) if (1..=u64::from(cfg.max_forecast_days)).contains(&d) => intents::forecast(&city, d as u32, now),
            _ => {
                return Err((
                    format!("days must be an integer from 1 to {}", cfg.max_forecast_days),
                    "params.days",
                ))
            }
        },
    })
}

fn answer(session: &mut ServerSession, now: Millis, id: &str, intent: &str, items: Vec<Value>, stream: bool) {
    if stream {
        session.stream_begin(now, id, &json!({"intent": intent}));
        for item in &items {
            // The stream was just begun: `stream_data` cannot fail.
            let _ = session.stream_data(now, id, item);
        }
        session.stream_end(now, id);
    } else {
        let data = if intent == "weather.forecast" {
            Value::Array(items)
        } else {
            items.into_iter().next().unwrap_or(Value::Null)
        };
        session.respond(now, id, &json!({"intent": intent, "data": data}));
    }
}

/// The first field over [`MAX_FIELD_LEN`] (or the scopes, past [`MAX_SCOPES`]).
fn oversized_field(msg: &Inbound) -> Option<&'static str> {
    let long = |s: &str| s.len() > MAX_FIELD_LEN;
    let long_opt = |s: &Option<String>| s.as_deref().is_some_and(long);
    let scopes = |s: &Vec<String>| s.len() > MAX_SCOPES || s.iter().any(|x| long(x));
    match &msg.kind {
        InboundKind::Request { intent, .. } if long(intent) => Some("intent"),
        InboundKind::MemorySet(m) if long(&m.key) => Some("key"),
        InboundKind::MemorySet(m) if long_opt(&m.namespace) => Some("namespace"),
        InboundKind::MemoryGet(m) if long(&m.key) => Some("key"),
        InboundKind::MemoryGet(m) if long_opt(&m.namespace) => Some("namespace"),
        InboundKind::Pay(p) if long(&p.currency) => Some("currency"),
        InboundKind::Pay(p) if long_opt(&p.description) => Some("description"),
        InboundKind::Pay(p) if long_opt(&p.recipient) => Some("recipient"),
        InboundKind::Auth(AuthBody::Bearer { token, scopes: s }) if long(token) || scopes(s) => Some("token"),
        InboundKind::Auth(AuthBody::Did { did, scopes: s }) if long(did) || scopes(s) => Some("did"),
        _ if msg.authorization.as_deref().is_some_and(long) => Some("Authorization"),
        _ => None,
    }
}

fn bearer_principal(cfg: &ReferenceConfig, shared: &Shared, now: Millis, header: &str) -> Option<String> {
    let token = crate::client::bearer_token(header);
    // Every key compared in full, none skipped: the time taken says nothing of how much of a
    // key, or which one, a guess matched.
    let mut found = None;
    for (i, key) in cfg.api_keys.iter().enumerate() {
        // An empty key is never one: an empty token would match it.
        if same_secret(key.as_bytes(), token.as_bytes()) && !key.is_empty() && found.is_none() {
            found = Some(i);
        }
    }
    if let Some(i) = found {
        return Some(format!("key:{i}"));
    }
    shared
        .tokens
        .get(token)
        .filter(|(_, exp)| *exp > now)
        .map(|(p, _)| p.clone())
}

/// Whether `a` and `b` are equal, in a time that depends on their lengths only.
fn same_secret(a: &[u8], b: &[u8]) -> bool {
    let mut diff = a.len() ^ b.len();
    for i in 0..a.len().max(b.len()) {
        let (x, y) = (a.get(i).copied().unwrap_or(0), b.get(i).copied().unwrap_or(0));
        diff |= usize::from(x ^ y);
    }
    std::hint::black_box(diff) == 0
}

#[cfg(test)]
mod config_tests {
    use super::*;

    /// An empty key (`RKT_API_KEYS=k1,` gave one) never lets an empty token in.
    #[test]
    fn an_empty_key_matches_nothing() {
        let cfg = ReferenceConfig {
            api_keys: vec!["k1".into(), String::new()],
            ..ReferenceConfig::default()
        };
        let shared = Shared::new(&cfg);
        for header in ["", "Bearer ", "Bearer  ", "bearer \t", "Bearer k2", "Bearerk1"] {
            assert_eq!(bearer_principal(&cfg, &shared, 0, header), None, "{header:?}");
        }
        // The scheme in any case, then a space or tab; a bare key is taken too.
        for header in ["Bearer k1", "bearer k1", "BEARER\tk1 ", " Bearer  k1", "k1"] {
            assert_eq!(
                bearer_principal(&cfg, &shared, 0, header).as_deref(),
                Some("key:0"),
                "{header:?}"
            );
        }
    }

    #[test]
    fn secrets_compare_in_full() {
        for (a, b, same) in [
            ("k1", "k1", true),
            ("k1", "k2", false),
            ("k1", "k12", false),
            ("k12", "k1", false),
            ("", "", true),
            ("", "x", false),
            ("a\0", "a", false),
        ] {
            assert_eq!(same_secret(a.as_bytes(), b.as_bytes()), same, "{a:?} {b:?}");
        }
    }

    #[test]
    fn the_rate_is_finite_and_above_zero_and_the_burst_at_least_one() {
        assert!(ReferenceConfig::default().check().is_ok());
        assert_eq!(check_rate(0.5).unwrap(), 0.5);
        for rate in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 0.0, -0.0, -1.0] {
            let cfg = ReferenceConfig {
                rate_per_s: rate,
                ..ReferenceConfig::default()
            };
            assert_eq!(cfg.check().unwrap_err().kind(), ErrorKind::Invalid, "{rate}");
        }
        let cfg = ReferenceConfig {
            burst: 0,
            ..ReferenceConfig::default()
        };
        assert_eq!(cfg.check().unwrap_err().kind(), ErrorKind::Invalid);
        let cfg = ReferenceConfig {
            max_connections: 0,
            ..ReferenceConfig::default()
        };
        let e = cfg.check().unwrap_err();
        assert!(e.error.message.contains("max_connections"), "{e}");
    }

    /// The issued session tokens are credentials: `Shared`'s `Debug` counts them, live and
    /// released, and shows none.
    #[test]
    fn shared_debug_counts_the_session_tokens_and_shows_none() {
        let cfg = ReferenceConfig::default();
        let mut shared = Shared::new(&cfg);
        for t in ["rkt_SECRET1", "rkt_SECRET2"] {
            shared.tokens.insert(t.into(), ("did:rkt:x".into(), 1));
        }
        shared.released.push_back("rkt_SECRET1".into());
        let text = format!("{shared:?}");
        assert!(!text.contains("SECRET"), "{text}");
        assert!(text.contains("tokens: 2, released: 1"), "{text}");
        assert!(text.starts_with("Shared { memory: MemoryStore {"), "{text}");
    }

    /// The session runs with the agent's name, capabilities (HELLO_ACK's `Capabilities`), rate
    /// and burst; the rest is the session's default.
    #[test]
    fn the_session_takes_the_agents_name_capabilities_and_rate() {
        let cfg = ReferenceConfig {
            agent: "rkt://weather.test".into(),
            capabilities: vec!["weather".into()],
            rate_per_s: 2.5,
            burst: 3,
            ..ReferenceConfig::default()
        };
        let s = cfg.server_config();
        assert_eq!(s.agent, "rkt://weather.test");
        assert_eq!(s.capabilities, ["weather"]);
        assert_eq!((s.rate_per_s, s.burst), (2.5, 3));
        assert_eq!(s.session_timeout_s, ServerConfig::default().session_timeout_s);
    }

    /// An ended connection's token joins the released ones, and the names of released tokens
    /// already gone are dropped then, so the list stays within the live tokens (it grew by one
    /// name a connection when the prune was skipped).
    #[test]
    fn an_ended_connection_drops_the_names_of_released_tokens_already_gone() {
        let cfg = ReferenceConfig::default();
        let mut shared = Shared::new(&cfg);
        for n in 0..10 {
            // The token of the connection before has expired and been swept.
            shared.tokens.clear();
            shared.tokens.insert(format!("t{n}"), ("did:rkt:x".into(), 1));
            let mut conn = Connection::new(&cfg);
            conn.token = Some(format!("t{n}"));
            conn.close(&mut shared);
        }
        assert_eq!(shared.released, ["t9"]);
    }

    #[test]
    fn allowed_origins_are_origins() {
        let with = |o: &str| ReferenceConfig {
            allowed_origins: vec!["http://127.0.0.1:7700".into(), o.into()],
            ..ReferenceConfig::default()
        };
        assert!(with("https://app.example").check().is_ok());
        for o in ["app.example", "https://app.example/", "null", "", "*"] {
            let e = with(o).check().unwrap_err();
            assert!(e.error.message.contains("allowed origin"), "{o:?}: {e}");
        }
    }

    #[test]
    fn forecast_days_are_bounded_so_a_reply_is() {
        for days in [0, MAX_FORECAST_DAYS + 1, u32::MAX] {
            let cfg = ReferenceConfig {
                max_forecast_days: days,
                ..ReferenceConfig::default()
            };
            let e = cfg.check().unwrap_err();
            assert!(e.error.message.contains("max_forecast_days"), "{e}");
        }
        let year = intents::forecast("Seoul", MAX_FORECAST_DAYS, 1_782_648_000_000);
        assert!(serde_json::to_string(&year).unwrap().len() < 64 << 10);
    }
}
