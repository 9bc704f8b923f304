//! A script interpreter for the harness `Endpoint`, shared by the proptest
//! (`tests/endpoint_props.rs`) and the fuzz target (`fuzz/fuzz_targets/endpoint.rs`): each byte
//! pair is one step — the server answers a pending request (the connect too: well, badly, or
//! with an error), pushes a message built from a small vocabulary of collective parts, time
//! passes, the user sends, listens, acknowledges, the socket closes and reconnects at once or
//! later (sends meanwhile wait for the connection), the host closes the endpoint, or the host
//! answers a firewall check (admit, admit with guidance, refuse, or leave it to time out). The
//! first byte's low bit installs the firewall; its second bit makes the session speak the
//! released generation (`auth/connect`, `messages/received` events, and after each reconnect
//! the released recovery: `conversations/list` pages with a fuzzed `cursor`, `messages/list`
//! windows with fuzzed rows; see `endpoint_released.rs`), and at its end the server answers
//! everything well, a new cursor on every page, until the recovery ends. Checked: nothing
//! panics; every send id the endpoint returned ends with exactly one `SendDone`; every record
//! is delivered at most once; the inbox stays within its bound; a connection's recovery asks
//! a bounded number of pages and windows, follows no cursor over the engine's bound, and ends.

#[path = "endpoint_released.rs"]
mod released;

use agentwire_core::SeededEntropy;
use agentwire_moltzap::harness::{
    AgentAddress, AnswerContent, AskOp, CheckId, CheckedGuidance, CollectiveId, CollectiveOperation,
    CollectiveResponse, DeliveryId, Endpoint, EndpointConfig, EndpointEvent, FirewallConfig, FirewallRefusal,
    FirewallVerdict, JsonPath, JsonValue, MessageAddressInput, Nonce, RequestedSchema, SendId, SendInput, SendOptions,
};
use agentwire_moltzap::harness::{InboundItem, InboundMessage};
use agentwire_moltzap::{Credentials, GenerationChoice, SessionConfig};
use std::collections::{HashMap, HashSet};

const NAMES: [&str; 4] = ["bob", "carol", "dave", "zed"];

pub struct Script {
    ep: Endpoint,
    now: u64,
    /// Requests the endpoint sent and the server has not answered: id → method.
    pending: Vec<(String, String)>,
    returned: HashSet<SendId>,
    done: HashMap<SendId, u32>,
    deliveries: Vec<DeliveryId>,
    /// Firewall checks asked and not answered by the script.
    checks: Vec<CheckId>,
    /// Firewall checks asked in all.
    asked: usize,
    msg: u64,
    /// The session speaks the released generation.
    released: bool,
    /// Mixed from every step's bytes: the fuzzed shapes of the released answers.
    mix: u32,
    pager: released::Pager,
    /// `messages/list` requests pending: id → conversation.
    window_of: HashMap<String, String>,
    /// Recovery requests (`conversations/list`, `messages/list`) since the last connect answered.
    lists: usize,
    windows: usize,
    /// Recovery requests in all.
    recovery_asks: usize,
    /// Record (post id) → the one delivery it was delivered as.
    delivered: HashMap<String, DeliveryId>,
}

/// What a script reached (the fuzz target reads none of it).
#[allow(dead_code)]
#[derive(Debug, Default)]
pub struct Reached {
    pub sends: usize,
    pub deliveries: usize,
    pub checks: usize,
    /// `conversations/list` and `messages/list` requests in all.
    pub recovery_asks: usize,
}

fn schema() -> RequestedSchema {
    let v = JsonValue::parse(r#"{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}"#).unwrap();
    RequestedSchema::parse(&v, &JsonPath::root("s")).unwrap()
}

impl Script {
    /// `firewall`: every send and inbound item waits for the script's verdicts; `released`: the
    /// session speaks the released generation.
    pub fn new(firewall: bool, released: bool) -> Script {
        let mut cfg = EndpointConfig::new(AgentAddress::parse("agent:alice").unwrap());
        cfg.send_wait_ms = 40;
        cfg.max_inbox = 16;
        cfg.max_pending_records = 8;
        cfg.max_operations = 8;
        cfg.max_held_requests = 8;
        // A few small answers fill it, so the byte budget is in play.
        cfg.max_held_answer_bytes = 4_096;
        // Three conversations in play: one is forgotten and looked up again now and then.
        cfg.max_conversations = 2;
        cfg.attach_wait_ms = 300;
        cfg.firewall = firewall.then_some(FirewallConfig {
            check_timeout_ms: 500,
            max_checks: 4,
            ..FirewallConfig::default()
        });
        let session = SessionConfig {
            request_timeout_ms: 200,
            max_in_flight: 16,
            generation: if released {
                GenerationChoice::Released
            } else {
                GenerationChoice::Current
            },
            ..SessionConfig::default()
        };
        let mut s = Script {
            ep: Endpoint::new(cfg, session, Box::new(SeededEntropy::new(3))),
            now: 1_000_000,
            pending: Vec::new(),
            returned: HashSet::new(),
            done: HashMap::new(),
            deliveries: Vec::new(),
            checks: Vec::new(),
            asked: 0,
            msg: 0,
            released,
            mix: 0,
            pager: released::Pager::default(),
            window_of: HashMap::new(),
            lists: 0,
            windows: 0,
            recovery_asks: 0,
            delivered: HashMap::new(),
        };
        s.connect();
        s
    }

    fn connect(&mut self) {
        self.ep.handle_open(self.now);
        let _ = self
            .ep
            .connect(self.now, Credentials::AgentKey("moltzap_agent_k".into()));
        self.pump();
        let method = if self.released {
            "auth/connect"
        } else {
            "agent/network/connect"
        };
        if let Some(i) = self.pending.iter().position(|(_, m)| m == method) {
            let (id, _) = self.pending.remove(i);
            self.connect_answered();
            let text = if self.released {
                released::response(&id, released::hello())
            } else {
                format!(r#"{{"jsonrpc":"2.0","id":"{id}","result":{{}}}}"#)
            };
            self.ep.handle_text(self.now, &text);
            self.pump();
        }
    }

    /// A connect is answered: a new connection's recovery begins.
    fn connect_answered(&mut self) {
        self.lists = 0;
        self.windows = 0;
    }

    fn pump(&mut self) {
        while let Some(out) = self.ep.poll_transmit() {
            if let Some(t) = out.as_text() {
                if let Ok(v) = serde_json::from_str::<serde_json::Value>(t) {
                    if let (Some(id), Some(m)) = (v["id"].as_str(), v["method"].as_str()) {
                        self.pending.push((id.to_owned(), m.to_owned()));
                        self.recovery_asked(id, m, &v["params"]);
                    }
                }
            }
        }
        while let Some(e) = self.ep.poll_event() {
            match e {
                EndpointEvent::SendDone { send, .. } => {
                    assert!(
                        self.returned.contains(&send),
                        "SendDone for an id never returned: {send:?}"
                    );
                    *self.done.entry(send).or_default() += 1;
                    assert_eq!(self.done[&send], 1, "two SendDone for {send:?}");
                }
                EndpointEvent::Delivery(d) => {
                    if let Some(post) = post_of(&d.item) {
                        let first = *self.delivered.entry(post.clone()).or_insert(d.id);
                        assert_eq!(first, d.id, "record {post} delivered twice");
                    }
                    self.deliveries.push(d.id);
                }
                EndpointEvent::FirewallCheck { check, .. } => {
                    self.asked += 1;
                    self.checks.push(check);
                }
                _ => {}
            }
        }
        assert!(self.ep.pending_deliveries() <= 16, "the inbox past its bound");
    }

    /// A recovery request: counted, bounded by connection, its cursor within the engine's bound.
    fn recovery_asked(&mut self, id: &str, method: &str, params: &serde_json::Value) {
        match method {
            "conversations/list" => {
                self.lists += 1;
                assert!(
                    self.lists <= released::MAX_LISTS_PER_CONNECTION,
                    "{} conversations/list on one connection",
                    self.lists
                );
                let cursor = params["cursor"].as_str().map_or(0, str::len);
                assert!(
                    cursor <= released::MAX_CURSOR_BYTES,
                    "a cursor of {cursor} bytes followed"
                );
            }
            "messages/list" => {
                self.windows += 1;
                assert!(
                    self.windows <= released::MAX_WINDOWS_PER_CONNECTION,
                    "{} messages/list on one connection",
                    self.windows
                );
                let conv = params["conversationId"].as_str().unwrap_or("c0").to_owned();
                self.window_of.insert(id.to_owned(), conv);
            }
            _ => return,
        }
        self.recovery_asks += 1;
    }

    /// A collective data part.
    fn collective(&mut self, b: u8) -> String {
        let alice = AgentAddress::parse("agent:alice").unwrap();
        let bob = AgentAddress::parse("agent:bob").unwrap();
        let nonce = Nonce::from_bytes(&[b % 3; 32]);
        let id = CollectiveId::derive(if b & 4 == 0 { &bob } else { &alice }, &nonce);
        let deadline = self.now + u64::from(b % 5) * 100;
        let inner = match b % 6 {
            0 => r#"{"kind":"operation","op":"multicast"}"#.to_owned(),
            1 | 2 => format!(
                r#"{{"kind":"operation","op":"{}","id":"{}","nonce":"{}","deadlineAt":{deadline},"requestedSchema":{{"type":"object","properties":{{"a":{{"type":"string"}}}}}}}}"#,
                if b % 6 == 1 { "gather" } else { "all_gather" },
                id.as_str(),
                nonce.as_str()
            ),
            3 => format!(r#"{{"kind":"response","id":"{}","action":"decline"}}"#, id.as_str()),
            4 => format!(
                r#"{{"kind":"response","id":"{}","action":"accept","content":{{"a":"x"}}}}"#,
                id.as_str()
            ),
            _ => format!(r#"{{"kind":"close","id":"{}","included":["rh_x"]}}"#, id.as_str()),
        };
        format!(r#"{{"type":"data","value":{{"org.social-harness/collective":{inner}}}}}"#)
    }

    fn part(&mut self, b: u8) -> String {
        let text = if b & 8 == 0 {
            r#"{"type":"text","text":"q"},"#
        } else {
            ""
        };
        format!("[{text}{}]", self.collective(b))
    }

    fn answer(&mut self, which: u8, how: u8) {
        if self.pending.is_empty() {
            return;
        }
        let (id, method) = self.pending.remove(usize::from(which) % self.pending.len());
        let conv = format!("c{}", how % 3);
        if method == "auth/connect" || method == "agent/network/connect" {
            self.connect_answered();
        }
        let window = self.window_of.remove(&id);
        if self.released {
            let body = match (method.as_str(), how % 4) {
                (_, 3) => r#""error":{"code":-32603,"message":"Internal error"}"#.to_owned(),
                (_, 2) => r#""result":{"odd":true}"#.to_owned(),
                ("auth/connect", _) => released::hello().to_owned(),
                ("conversations/list", _) => self.pager.page(self.now, (self.mix >> 3) as u8, (self.mix >> 11) as u8),
                ("messages/list", _) => released::window(
                    self.now,
                    window.as_deref().unwrap_or("c0"),
                    (self.mix >> 5) as u8,
                    (self.mix >> 13) as u8,
                ),
                ("messages/send", _) => {
                    self.msg += 1;
                    let at = released::iso(self.now);
                    let m = released::message(&format!("s{}", self.msg), &conv, "alice", Some(&at), None);
                    format!(r#""result":{{"message":{m}}}"#)
                }
                _ => return self.answer_current(&id, &method, how, &conv, true),
            };
            return self.ep.handle_text(self.now, &released::response(&id, &body));
        }
        self.answer_current(&id, &method, how, &conv, false);
    }

    /// The answers both generations share (`released`: in its frame).
    fn answer_current(&mut self, id: &str, method: &str, how: u8, conv: &str, released: bool) {
        let result = match (method, how % 4) {
            (_, 3) => r#""error":{"code":-32603,"message":"Internal error"}"#.to_owned(),
            (_, 2) => r#""result":{"odd":true}"#.to_owned(),
            ("agents/lookupByName", _) => {
                let known: Vec<String> = NAMES[..3]
                    .iter()
                    .map(|n| format!(r#"{{"id":"{n}","name":"{n}"}}"#))
                    .collect();
                format!(r#""result":{{"agents":[{}]}}"#, known.join(","))
            }
            ("conversations/get", k) => {
                let members: &[&str] = if k == 0 {
                    &["alice", "bob"]
                } else {
                    &["alice", "bob", "carol"]
                };
                let ps: Vec<String> = members
                    .iter()
                    .map(|n| format!(r#"{{"participant":{{"type":"agent","id":"{n}"}},"agentName":"{n}"}}"#))
                    .collect();
                format!(
                    r#""result":{{"conversation":{{"id":"{conv}","type":"{}"}},"participants":[{}]}}"#,
                    if k == 0 { "dm" } else { "group" },
                    ps.join(",")
                )
            }
            ("messages/send", _) => {
                self.msg += 1;
                let parts = self.part(how);
                format!(
                    r#""result":{{"message":{{"id":"s{}","conversationId":"{conv}","senderId":"alice","parts":{parts},"createdAt":"t"}}}}"#,
                    self.msg
                )
            }
            _ => r#""result":{"messages":[]}"#.to_owned(),
        };
        let text = if released {
            released::response(id, &result)
        } else {
            format!(r#"{{"jsonrpc":"2.0","id":"{id}",{result}}}"#)
        };
        self.ep.handle_text(self.now, &text);
    }

    fn push(&mut self, b: u8, c: u8) {
        self.msg += 1;
        let parts = self.part(b);
        let sender = NAMES[usize::from(c) % 3];
        let conv = format!("c{}", c % 3);
        if self.released {
            let id = format!("m{}", if c & 0x80 == 0 { self.msg } else { 1 });
            let at = (c & 0x40 == 0).then(|| released::iso(self.now));
            let data = (b & 8 != 0).then(|| self.collective(b));
            let m = released::message(&id, &conv, sender, at.as_deref(), data.as_deref());
            return self.ep.handle_text(self.now, &released::received(&m));
        }
        let text = format!(
            r#"{{"jsonrpc":"2.0","method":"messages/received","params":{{"message":{{"id":"m{}","conversationId":"{conv}","senderId":"{sender}","parts":{parts},"createdAt":"t"}}}}}}"#,
            if c & 0x80 == 0 { self.msg } else { 1 }
        );
        self.ep.handle_text(self.now, &text);
    }

    fn send(&mut self, b: u8, c: u8) {
        let to = match (b / 5) % 5 {
            0 => "agent:bob",
            1 => "agent:zed",
            2 => "group:bob,carol",
            3 => "group:bob,zed",
            _ => "agent:alice",
        };
        let to = MessageAddressInput::parse(to).unwrap();
        let input = match b % 5 {
            0 => SendInput::Message {
                to,
                text: "hi".into(),
                collective: None,
            },
            1 | 2 => SendInput::Message {
                to,
                text: "q".into(),
                collective: Some(CollectiveOperation::Ask {
                    op: if b % 5 == 1 { AskOp::Gather } else { AskOp::AllGather },
                    deadline: u32::from(c / 10 % 3),
                    requested_schema: schema(),
                }),
            },
            3 => SendInput::Response {
                to,
                response: CollectiveResponse::Decline,
            },
            _ => SendInput::Response {
                to,
                response: CollectiveResponse::Accept(AnswerContent(Default::default())),
            },
        };
        let options = SendOptions {
            failure_delivery: if c & 0x80 == 0 {
                agentwire_moltzap::harness::FailureDelivery::Result
            } else {
                agentwire_moltzap::harness::FailureDelivery::Inbound
            },
        };
        if let Ok(id) = self.ep.send(self.now, input, options) {
            self.returned.insert(id);
        }
    }

    /// The host answers a check (or leaves it to time out).
    fn verdict(&mut self, arg: u8) {
        let check = self.checks.remove(usize::from(arg) % self.checks.len());
        let verdict = match (arg / 8) % 4 {
            0 => FirewallVerdict::Admit(None),
            1 => FirewallVerdict::Admit(Some(CheckedGuidance {
                check_id: check.to_string(),
                subjects: Vec::new(),
                instructions: Vec::new(),
            })),
            2 => FirewallVerdict::Refuse {
                refusal: FirewallRefusal::ALL[usize::from(arg / 32) % FirewallRefusal::ALL.len()],
                feedback: None,
            },
            _ => return,
        };
        let _ = self.ep.firewall_verdict(self.now, check, verdict);
    }

    /// The connection: lost and made again at once, lost, closed by the host, or a new socket
    /// whose connect the server answers later.
    fn connection(&mut self, arg: u8) {
        match arg % 16 {
            0 => {
                self.ep.handle_close(self.now, 1006, "");
                self.pending.clear();
                self.pump();
                self.connect();
            }
            1 => {
                self.ep.handle_close(self.now, 1006, "");
                self.pending.clear();
            }
            2 => {
                self.ep.close(self.now, 1000, "");
                self.pending.clear();
            }
            3 => {
                if self.ep.session().state() == agentwire_moltzap::session::SessionState::Closed {
                    self.ep.handle_open(self.now);
                }
                let _ = self
                    .ep
                    .connect(self.now, Credentials::AgentKey("moltzap_agent_k".into()));
            }
            _ => {}
        }
    }

    /// One step.
    pub fn step(&mut self, op: u8, arg: u8) {
        self.mix = self
            .mix
            .wrapping_mul(0x9E37_79B1)
            .wrapping_add(u32::from(op) << 8 | u32::from(arg));
        match op % 10 {
            0 | 1 => self.answer(arg, op / 10),
            2 | 3 => self.push(arg, op),
            4 => self.send(arg, op),
            5 => {
                self.now += u64::from(arg) * 10;
                if self.ep.poll_timeout().is_some_and(|t| t <= self.now) {
                    self.ep.handle_timeout(self.now);
                }
            }
            6 => {
                let _ = self.ep.listen();
            }
            7 => {
                if let Some(d) = self.deliveries.get(usize::from(arg)).copied() {
                    let _ = self.ep.acknowledge(d);
                }
                if arg & 1 == 1 {
                    self.ep.unlisten();
                }
            }
            8 if arg % 16 < 4 => self.connection(arg),
            9 if !self.checks.is_empty() => self.verdict(arg),
            _ => self
                .ep
                .handle_text(self.now, &String::from_utf8_lossy(&[op, arg, b'{', b'}'])),
        }
        self.pump();
    }

    /// Released, at the end: the connection is lost and made again (a recovery begins, unless
    /// the host closed the endpoint), then the server answers every request well, a cursor
    /// never given before on every page (a server that would list forever), and time passes:
    /// the recovery ends within the rounds its bounds allow (10 pages, 200 windows 4 at a time,
    /// retries after 1, 2, 4 s), and asks nothing after.
    fn drain(&mut self) {
        self.ep.handle_close(self.now, 1006, "");
        self.pending.clear();
        self.pump();
        self.connect();
        let mut asked_at = Vec::new();
        for round in 0..30u64 {
            // Answered at once, and what that asks answered too (no request times out).
            for _ in 0..400 {
                if self.pending.is_empty() {
                    break;
                }
                self.answer_all_well(round);
            }
            self.now += 1_000;
            if self.ep.poll_timeout().is_some_and(|t| t <= self.now) {
                self.ep.handle_timeout(self.now);
            }
            self.pump();
            asked_at.push(self.recovery_asks);
        }
        assert_eq!(
            asked_at[19], asked_at[29],
            "the recovery still asks after 20 s of answers: it never ends"
        );
    }

    /// Answers every pending request well (pages with a new cursor each).
    fn answer_all_well(&mut self, round: u64) {
        for (id, method) in std::mem::take(&mut self.pending) {
            let window = self.window_of.remove(&id);
            let body = match method.as_str() {
                "auth/connect" => {
                    self.connect_answered();
                    released::hello().to_owned()
                }
                "conversations/list" => self.pager.endless_page(self.now, round + self.recovery_asks as u64),
                "messages/list" => released::window(self.now, window.as_deref().unwrap_or("c0"), round as u8, 3),
                _ => {
                    self.pending.push((id, method));
                    self.answer(0, 0);
                    continue;
                }
            };
            self.ep.handle_text(self.now, &released::response(&id, &body));
        }
        self.pump();
    }

    /// The end (released: after [`Script::drain`]): the socket closes and time passes every
    /// deadline; every returned send ended once.
    pub fn finish(mut self) -> Reached {
        if self.released {
            self.drain();
        }
        self.ep.handle_close(self.now, 1000, "");
        self.pump();
        for _ in 0..4 {
            self.now += 10_000;
            self.ep.handle_timeout(self.now);
            self.pump();
        }
        for id in &self.returned {
            assert_eq!(self.done.get(id), Some(&1), "send {id:?} did not end exactly once");
        }
        Reached {
            sends: self.returned.len(),
            deliveries: self.deliveries.len(),
            checks: self.asked,
            recovery_asks: self.recovery_asks,
        }
    }
}

/// The record a delivery came from: its post id (a released message's id; the script's
/// messages carry no `postId`).
fn post_of(item: &InboundItem) -> Option<String> {
    match item {
        InboundItem::Multicast {
            message: InboundMessage::Direct(d),
        } => Some(d.post_id.as_str().to_owned()),
        InboundItem::Multicast {
            message: InboundMessage::Group(g),
        } => Some(g.post_id().as_str().to_owned()),
        InboundItem::CollectiveRequest { post_id, .. } => Some(post_id.as_str().to_owned()),
        _ => None,
    }
}

/// Runs a whole script. The first byte's low bit installs the firewall, its second bit makes
/// the session speak the released generation.
pub fn run(data: &[u8]) -> Reached {
    let first = data.first().copied().unwrap_or(0);
    let mut s = Script::new(first & 1 == 1, first & 2 == 2);
    for pair in data.chunks(2).take(400) {
        s.step(pair[0], pair.get(1).copied().unwrap_or(0));
    }
    s.finish()
}
