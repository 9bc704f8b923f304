//! The reference agent that `agentwire rkt serve` runs: demo intents (`echo`,
//! `weather.current`, `weather.forecast`), memory shared across sessions with namespaces and
//! TTL, AUTH with configured API keys and DIDs, a PAY ledger with priced intents, and a
//! per-connection rate limit answered with 429. Sans-IO like the sessions: the driver keeps one
//! [`Shared`] for the process and one [`Connection`] per socket.

mod intents;
mod ledger;
mod memory;

pub use ledger::{Ledger, Receipt};
pub use memory::{MemoryError, MemoryStore};

use crate::body::{AuthBody, AuthOkBody, DEFAULT_NAMESPACE};
use crate::errors::{codes, error_body};
use crate::server::{Inbound, InboundKind, ServerConfig, ServerSession};
use agentwire_core::{Entropy, Millis, TokenBucket};
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};

/// The intents the reference agent knows, and the capability each needs.
pub const INTENTS: &[(&str, Option<&str>)] =
    &[("echo", None), ("weather.current", Some("weather")), ("weather.forecast", Some("forecast"))];

/// The currency of prices and of credit.
pub const CURRENCY: &str = "RKTT";

#[derive(Debug, Clone)]
pub struct ReferenceConfig {
    pub agent: String,
    /// Advertised in HELLO_ACK and DISCOVER; `weather` and `forecast` enable their intents.
    pub capabilities: Vec<String>,
    /// With keys, everything but HELLO, DISCOVER, AUTH, PING and GOODBYE needs AUTH first (or an
    /// `Authorization: Bearer` header with a key or session token).
    pub api_keys: Vec<String>,
    /// DIDs accepted by DID AUTH when API keys are configured (without keys any DID is).
    pub allowed_dids: Vec<String>,
    /// Price per call in RKTT, by intent; a call without the credit gets 605.
    pub prices: BTreeMap<String, f64>,
    /// Messages per second per connection, and the burst allowed.
    pub rate_per_s: f64,
    pub burst: u32,
    pub max_memory_entries: usize,
    pub max_forecast_days: u32,
    pub token_lifetime_s: u64,
}

impl Default for ReferenceConfig {
    fn default() -> Self {
        ReferenceConfig {
            agent: "rkt://localhost".into(),
            capabilities: vec!["weather".into(), "forecast".into()],
            api_keys: Vec::new(),
            allowed_dids: Vec::new(),
            prices: BTreeMap::new(),
            rate_per_s: 100.0,
            burst: 200,
            max_memory_entries: 100_000,
            max_forecast_days: 16,
            token_lifetime_s: 3600,
        }
    }
}

impl ReferenceConfig {
    pub fn server_config(&self) -> ServerConfig {
        ServerConfig { agent: self.agent.clone(), capabilities: self.capabilities.clone(), ..ServerConfig::default() }
    }

    fn intent_enabled(&self, intent: &str) -> bool {
        INTENTS.iter().any(|(name, cap)| *name == intent && cap.is_none_or(|c| self.capabilities.iter().any(|x| x == c)))
    }

    fn available(&self) -> Vec<&'static str> {
        INTENTS.iter().map(|(n, _)| *n).filter(|n| self.intent_enabled(n)).collect()
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

/// State every connection shares: memory, the ledger, issued session tokens.
#[derive(Debug)]
pub struct Shared {
    pub memory: MemoryStore,
    pub ledger: Ledger,
    tokens: HashMap<String, (String, Millis)>,
}

impl Shared {
    pub fn new(cfg: &ReferenceConfig) -> Self {
        Shared { memory: MemoryStore::new(cfg.max_memory_entries), ledger: Ledger::new(10_000), tokens: HashMap::new() }
    }
}

/// Per-connection state.
#[derive(Debug)]
pub struct Connection {
    principal: Option<String>,
    bucket: TokenBucket,
}

impl Connection {
    pub fn new(cfg: &ReferenceConfig) -> Self {
        Connection { principal: None, bucket: TokenBucket::new(cfg.rate_per_s, f64::from(cfg.burst)) }
    }

    pub fn principal(&self) -> Option<&str> {
        self.principal.as_deref()
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
    if let Err(wait_ms) = conn.bucket.take(now) {
        let secs = wait_ms.div_ceil(1000).max(1);
        let body = error_body(codes::RATE_LIMITED, "rate limit exceeded", Some(json!({"retry_after": secs})), Some(id.into()));
        return session.error(now, Some(id), &body, Some(secs));
    }
    let refuse = |session: &mut ServerSession, code: i64, message: String, details: Option<Value>| {
        session.error(now, Some(id), &error_body(code, message, details, Some(id.into())), None)
    };
    if let Some(header) = &msg.authorization {
        match bearer_principal(cfg, shared, now, header) {
            Some(p) => conn.principal = Some(p),
            None => return refuse(session, codes::UNAUTHORIZED, "Authorization header not accepted".into(), None),
        }
    }
    let needs_auth = !cfg.api_keys.is_empty() && !matches!(msg.kind, InboundKind::Discover | InboundKind::Auth(_));
    if needs_auth && conn.principal.is_none() {
        return refuse(session, codes::UNAUTHORIZED, "authentication required: send AUTH first".into(), None);
    }
    let payer = conn.principal.clone().unwrap_or_else(|| format!("session:{}", session.session_id()));
    match msg.kind {
        InboundKind::Discover => session.respond(now, id, &cfg.manifest()),
        InboundKind::Auth(auth) => {
            let (principal, scopes) = match auth {
                AuthBody::Bearer { token, scopes } => (bearer_principal(cfg, shared, now, &token), scopes),
                AuthBody::Did { did, scopes } => {
                    let ok = did.starts_with("did:") && (cfg.api_keys.is_empty() || cfg.allowed_dids.contains(&did));
                    (ok.then_some(did), scopes)
                }
            };
            let Some(principal) = principal else {
                return refuse(session, codes::UNAUTHORIZED, "credentials not accepted".into(), None);
            };
            let token = format!("rkt_{}", entropy.uuid_v4().replace('-', ""));
            shared.tokens.retain(|_, (_, exp)| *exp > now);
            shared.tokens.insert(token.clone(), (principal.clone(), now.saturating_add(cfg.token_lifetime_s.saturating_mul(1000))));
            conn.principal = Some(principal);
            session.auth_ok(now, id, &AuthOkBody { session_token: token, scopes, expires_in: cfg.token_lifetime_s });
        }
        InboundKind::MemorySet(m) => {
            let ns = m.namespace.as_deref().unwrap_or(DEFAULT_NAMESPACE);
            match shared.memory.set(now, ns, &m.key, m.value, m.ttl) {
                Ok(expires) => {
                    let expires_at = expires.map(agentwire_core::format_iso8601);
                    session.respond(now, id, &json!({"ok": true, "key": m.key, "namespace": ns, "expires_at": expires_at}))
                }
                Err(MemoryError::Full { max_entries }) => {
                    refuse(session, codes::TOO_LARGE, format!("memory is full ({max_entries} entries)"), None)
                }
            }
        }
        InboundKind::MemoryGet(m) => {
            let ns = m.namespace.as_deref().unwrap_or(DEFAULT_NAMESPACE);
            let value = shared.memory.get(now, ns, &m.key).cloned();
            session.respond(now, id, &json!({"key": m.key, "namespace": ns, "found": value.is_some(), "value": value}))
        }
        InboundKind::Pay(p) => {
            let receipt_id = format!("rcpt_{}", entropy.uuid_v4().replace('-', ""));
            let balance = shared.ledger.pay(Receipt {
                receipt_id: receipt_id.clone(),
                payer,
                amount: p.amount,
                currency: p.currency.clone(),
                description: p.description,
                recipient: p.recipient.clone(),
                at: now,
            });
            session.respond(now, id, &json!({"receipt_id": receipt_id, "amount": p.amount, "currency": p.currency, "recipient": p.recipient, "balance": balance}))
        }
        InboundKind::Request { intent, params, stream, .. } => {
            if !cfg.intent_enabled(&intent) {
                let details = json!({"available_intents": cfg.available()});
                return refuse(session, codes::CAPABILITY_MISSING, format!("Intent '{intent}' not found"), Some(details));
            }
            if let Some(&price) = cfg.prices.get(&intent) {
                if let Err(balance) = shared.ledger.spend(&payer, CURRENCY, price) {
                    let details = json!({"price": price, "currency": CURRENCY, "balance": balance});
                    return refuse(session, codes::PAYMENT_REQUIRED, format!("'{intent}' costs {price} {CURRENCY}: send PAY first"), Some(details));
                }
            }
            run_intent(cfg, session, now, id, &intent, params.unwrap_or(Value::Null), stream, refuse);
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn run_intent(
    cfg: &ReferenceConfig,
    session: &mut ServerSession,
    now: Millis,
    id: &str,
    intent: &str,
    params: Value,
    stream: bool,
    refuse: impl Fn(&mut ServerSession, i64, String, Option<Value>),
) {
    let city = params.get("city").and_then(Value::as_str).unwrap_or("Seoul").to_string();
    let items = match intent {
        "echo" => vec![params.clone()],
        "weather.current" => vec![intents::current(&city)],
        _ => {
            let days = params.get("days").map_or(Some(7), Value::as_u64);
            match days {
                Some(d) if (1..=u64::from(cfg.max_forecast_days)).contains(&d) => intents::forecast(&city, d as u32, now),
                _ => {
                    let m = format!("days must be an integer from 1 to {}", cfg.max_forecast_days);
                    return refuse(session, codes::BAD_MESSAGE, m, Some(json!({"field": "params.days"})));
                }
            }
        }
    };
    if stream {
        session.stream_begin(now, id, &json!({"intent": intent}));
        for item in &items {
            session.stream_data(now, id, item);
        }
        session.stream_end(now, id);
    } else {
        let data = if intent == "weather.forecast" { Value::Array(items) } else { items.into_iter().next().unwrap_or(Value::Null) };
        session.respond(now, id, &json!({"intent": intent, "data": data}));
    }
}

fn bearer_principal(cfg: &ReferenceConfig, shared: &Shared, now: Millis, header: &str) -> Option<String> {
    let token = header.strip_prefix("Bearer ").unwrap_or(header).trim();
    if let Some(i) = cfg.api_keys.iter().position(|k| k == token) {
        return Some(format!("key:{i}"));
    }
    shared.tokens.get(token).filter(|(_, exp)| *exp > now).map(|(p, _)| p.clone())
}
