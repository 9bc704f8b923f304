//! A script interpreter for the harness `Endpoint`, shared by the proptest
//! (`tests/endpoint_props.rs`) and the fuzz target (`fuzz/fuzz_targets/endpoint.rs`): each byte
//! pair is one step — the server answers a pending request (the connect too: well, badly, or
//! with an error), pushes a message built from a small vocabulary of collective parts, time
//! passes, the user sends, listens, acknowledges, the socket closes and reconnects at once or
//! later (sends meanwhile wait for the connection), the host closes the endpoint, or the host
//! answers a firewall check (admit, admit with guidance, refuse, or leave it to time out). The
//! first byte's low bit installs the firewall. Checked: nothing panics, and every send id the
//! endpoint returned ends with exactly one `SendDone`.

use agentwire_core::SeededEntropy;
use agentwire_moltzap::harness::{
    AgentAddress, AnswerContent, AskOp, CheckId, CheckedGuidance, CollectiveId, CollectiveOperation,
    CollectiveResponse, DeliveryId, Endpoint, EndpointConfig, EndpointEvent, FirewallConfig, FirewallRefusal,
    FirewallVerdict, JsonPath, JsonValue, MessageAddressInput, Nonce, RequestedSchema, SendId, SendInput, SendOptions,
};
use agentwire_moltzap::{Credentials, SessionConfig};
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
}

fn schema() -> RequestedSchema {
    let v = JsonValue::parse(r#"{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}"#).unwrap();
    RequestedSchema::parse(&v, &JsonPath::root("s")).unwrap()
}

impl Script {
    /// `firewall`: every send and inbound item waits for the script's verdicts.
    pub fn new(firewall: bool) -> Script {
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
        if let Some(i) = self.pending.iter().position(|(_, m)| m == "agent/network/connect") {
            let (id, _) = self.pending.remove(i);
            self.ep
                .handle_text(self.now, &format!(r#"{{"jsonrpc":"2.0","id":"{id}","result":{{}}}}"#));
            self.pump();
        }
    }

    fn pump(&mut self) {
        while let Some(out) = self.ep.poll_transmit() {
            if let Some(t) = out.as_text() {
                if let Ok(v) = serde_json::from_str::<serde_json::Value>(t) {
                    if let (Some(id), Some(m)) = (v["id"].as_str(), v["method"].as_str()) {
                        self.pending.push((id.to_owned(), m.to_owned()));
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
                EndpointEvent::Delivery(d) => self.deliveries.push(d.id),
                EndpointEvent::FirewallCheck { check, .. } => {
                    self.asked += 1;
                    self.checks.push(check);
                }
                _ => {}
            }
        }
    }

    fn part(&mut self, b: u8) -> String {
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
        let text = if b & 8 == 0 {
            r#"{"type":"text","text":"q"},"#
        } else {
            ""
        };
        format!(r#"[{text}{{"type":"data","value":{{"org.social-harness/collective":{inner}}}}}]"#)
    }

    fn answer(&mut self, which: u8, how: u8) {
        if self.pending.is_empty() {
            return;
        }
        let (id, method) = self.pending.remove(usize::from(which) % self.pending.len());
        let conv = format!("c{}", how % 3);
        let result = match (method.as_str(), how % 4) {
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
        self.ep
            .handle_text(self.now, &format!(r#"{{"jsonrpc":"2.0","id":"{id}",{result}}}"#));
    }

    fn push(&mut self, b: u8, c: u8) {
        self.msg += 1;
        let parts = self.part(b);
        let sender = NAMES[usize::from(c) % 3];
        let conv = format!("c{}", c % 3);
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

    /// The end: the socket closes and time passes every deadline; every returned send ended once.
    /// Returns (sends accepted, deliveries seen, firewall checks asked).
    pub fn finish(mut self) -> (usize, usize, usize) {
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
        (self.returned.len(), self.deliveries.len(), self.asked)
    }
}

/// Runs a whole script: (sends accepted, deliveries seen, firewall checks asked). The first
/// byte's low bit installs the firewall.
pub fn run(data: &[u8]) -> (usize, usize, usize) {
    let mut s = Script::new(data.first().is_some_and(|b| b & 1 == 1));
    for pair in data.chunks(2).take(400) {
        s.step(pair[0], pair.get(1).copied().unwrap_or(0));
    }
    s.finish()
}
