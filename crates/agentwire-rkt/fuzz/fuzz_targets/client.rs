//! Fuzzes the client session: the input is a script of operations (server text and bytes, a
//! HELLO_ACK to the HELLO, replies of every kind to pending ids with fuzzed bodies and `Seq`,
//! time, every command (any `To` and PAY recipient), cancels of pending, ended and unknown ids,
//! GOODBYE and closes) on a session that opened. Nothing may panic; every frame it writes
//! decodes; the commands open stay within `max_in_flight`, and `in_flight` counts exactly them
//! (not the session's own keepalive PINGs); each command handed out gets at most one terminal
//! event, none comes for an id never handed out, `cancel` is true exactly for an open command,
//! and when the session closes every command has had its terminal event, before `Closed`. A
//! request's `params` and `context` are read from the script's text by `json::json_arg`, as
//! every binding reads them: it takes exactly what serde_json takes, as the same value, and
//! refuses the rest `invalid`, naming the argument in a message that does not quote it; the
//! REQUEST sent carries the value as serde_json writes it. A well-formed reply of a type the
//! client does not know ends no command and leaves the state as it was.
#![no_main]

use agentwire_core::{ErrorKind, SeededEntropy};
use agentwire_rkt::json::json_arg;
use agentwire_rkt::{
    codec, decode, AuthBody, ClientConfig, ClientEvent, ClientSession, ClientState, MessageType, RequestOptions,
};
use libfuzzer_sys::fuzz_target;
use serde_json::value::RawValue;
use serde_json::Value;
use std::collections::{HashMap, HashSet};

const MAX_IN_FLIGHT: usize = 8;
const MAX_MESSAGE_SIZE: usize = 4096;
/// 10000-01-01T00:00:00Z in milliseconds since the epoch.
const YEAR_10000: u64 = 253_402_300_800_000;
/// The types replies are sent as; `PROGRESS` is one the client does not know (a newer server's).
const REPLIES: [&str; 10] = [
    "RESPONSE",
    "STREAM_BEGIN",
    "STREAM_DATA",
    "STREAM_END",
    "ERROR",
    "PONG",
    "AUTH_OK",
    "HELLO_ACK",
    "GOODBYE",
    "PROGRESS",
];

struct Run {
    s: ClientSession,
    now: u64,
    /// Ids handed out and not yet ended.
    open: HashSet<String>,
    /// Every id handed out by this session.
    issued: HashSet<String>,
    /// The Message-ID of the HELLO sent.
    hello: Option<String>,
    /// The Message-ID of the automatic AUTH (`authorization` configured), while it may end.
    auto_auth: Option<String>,
    /// Requests not sent yet: their `params` and `context` as serde_json writes them.
    args: HashMap<String, [Option<String>; 2]>,
}

/// `json_arg(what, text)`, checked against serde_json.
fn read_arg(what: &str, text: &str) -> Option<Value> {
    assert_eq!(json_arg(what, None).ok(), Some(None));
    match (json_arg(what, Some(text)), serde_json::from_str::<Value>(text)) {
        (Ok(Some(ours)), Ok(theirs)) => {
            assert_eq!(ours, theirs, "{what}: {text:?}");
            Some(ours)
        }
        (Err(e), Err(_)) => {
            assert_eq!(e.error.kind, ErrorKind::Invalid, "{e}");
            let m = &e.error.message;
            assert!(m.starts_with(&format!("{what} is not JSON: ")) && m.len() <= 160, "{m}");
            None
        }
        (ours, theirs) => panic!("{what}: {text:?}: json_arg {ours:?}, serde_json {theirs:?}"),
    }
}

impl Run {
    fn new(mode: u8) -> Run {
        let cfg = ClientConfig {
            ttl_s: 1,
            max_in_flight: MAX_IN_FLIGHT,
            max_stream_buffer: 4,
            max_stream_buffer_bytes: 512,
            handshake_timeout_ms: 200,
            keepalive: mode & 1 != 0,
            max_message_size: MAX_MESSAGE_SIZE,
            authorization: (mode & 2 != 0).then(|| "Bearer k".to_owned()),
            ..ClientConfig::default()
        };
        let mut run = Run {
            s: ClientSession::new(cfg, Box::new(SeededEntropy::new(u64::from(mode)))),
            now: 0,
            open: HashSet::new(),
            issued: HashSet::new(),
            hello: None,
            auto_auth: None,
            args: HashMap::new(),
        };
        run.s.handle_open(0);
        run.drain();
        run
    }

    fn drain(&mut self) {
        let mut sent = 0;
        while let Some(t) = self.s.poll_transmit() {
            sent += 1;
            // Every frame the session writes is one its own decoder reads, while its clock is
            // before the year 10000 (a `Timestamp` has four digits of year; the script's clock
            // leaps far past it).
            let sent = t.as_text().and_then(|text| match decode(text, usize::MAX) {
                Ok(m) => Some(m),
                Err(e) if self.now < YEAR_10000 => panic!("{e}: {text:?}"),
                Err(_) => None,
            });
            match sent {
                Some(m) if m.kind == MessageType::Hello => self.hello = Some(m.message_id().to_owned()),
                // Only the session sends AUTH on its own: the script's `auth` ids are handed out.
                Some(m) if m.kind == MessageType::Auth && !self.issued.contains(m.message_id()) => {
                    assert!(self.auto_auth.is_none(), "a second automatic AUTH");
                    self.auto_auth = Some(m.message_id().to_owned());
                }
                Some(m) if m.kind == MessageType::Request => {
                    let Some(args) = self.args.remove(m.message_id()) else {
                        continue;
                    };
                    let body = m.body.as_deref().unwrap_or_default();
                    let fields: HashMap<String, Box<RawValue>> = serde_json::from_str(body).expect("a REQUEST body");
                    let sent = ["params", "context"].map(|k| fields.get(k).map(|v| v.get().to_owned()));
                    assert_eq!(sent, args, "{body}");
                }
                _ => {}
            }
        }
        // A step sends its own frame, the queue it releases and a keepalive or close at most.
        assert!(sent <= MAX_IN_FLIGHT + 4, "{sent} frames in one step");
        while let Some(e) = self.s.poll_event() {
            // What bindings hand out for every event.
            let _ = e.to_json().to_string();
            match e {
                // The automatic AUTH ends as AuthOk, or as an Error: never as Failed.
                ClientEvent::AuthOk { id, .. } if self.auto_auth.as_ref() == Some(&id) => self.auto_auth = None,
                ClientEvent::Error(e) if e.error.message.starts_with("the AUTH sent for the configured") => {
                    assert!(e.request_id.is_some() && e.request_id == self.auto_auth, "{e:?}");
                    self.auto_auth = None
                }
                ClientEvent::Response { id, .. }
                | ClientEvent::StreamEnd { id, .. }
                | ClientEvent::AuthOk { id, .. }
                | ClientEvent::Pong { id, .. }
                | ClientEvent::Failed { id, .. } => {
                    assert!(self.issued.contains(&id), "a terminal event for {id}, never handed out");
                    assert!(self.open.remove(&id), "a second terminal event for {id}");
                }
                ClientEvent::StreamBegin { id, .. } | ClientEvent::StreamData { id, .. } => {
                    assert!(self.open.contains(&id), "a stream event for {id}, not pending");
                }
                ClientEvent::Closed { .. } => {
                    assert!(self.open.is_empty(), "left open: {:?}", self.open);
                    // A close before the automatic AUTH ended says it all: nothing else comes.
                    self.auto_auth = None;
                }
                _ => {}
            }
        }
        assert!(self.open.len() <= MAX_IN_FLIGHT);
        assert_eq!(
            self.s.in_flight(),
            self.open.len(),
            "in_flight counts exactly the open commands"
        );
    }

    fn issued(&mut self, r: Result<String, agentwire_rkt::RktError>) {
        if let Ok(id) = r {
            assert!(self.issued.insert(id.clone()), "an id handed out twice: {id}");
            self.open.insert(id);
        }
    }
}

fn reply(kind: &str, to: &str, seq: Option<u8>, body: &str) -> String {
    let seq = seq.map(|s| format!("Seq: {s}\n")).unwrap_or_default();
    format!(
        "RKT/1.0 {kind}\nVersion: 1\nMessage-ID: 01960000-0000-7000-ab12-00000000f022\nReply-To: {to}\n{seq}Session-ID: s\nTimestamp: 2026-06-28T12:00:00Z\n\n{body}"
    )
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, script)) = data.split_first() else {
        return;
    };
    let mut run = Run::new(mode);
    // Operations are separated by 0xff; the first byte of each picks what it is.
    for op in script.split(|&b| b == 0xff) {
        let Some((&kind, rest)) = op.split_first() else {
            continue;
        };
        let arg = rest.first().copied().unwrap_or(0);
        let arg2 = rest.get(1).copied().unwrap_or(0);
        let text = String::from_utf8_lossy(rest.get(2..).unwrap_or_default()).into_owned();
        let mut pending: Vec<String> = run.open.iter().chain(&run.auto_auth).cloned().collect();
        pending.sort_unstable();
        let pick = pending.get(usize::from(arg) % pending.len().max(1)).cloned();
        let now = run.now;
        match kind % 12 {
            0 => run.s.handle_text(now, &String::from_utf8_lossy(rest)),
            1 => run.s.handle_binary(now, rest),
            2 => {
                if let Some(hello) = run.hello.clone() {
                    let body = if arg & 1 == 0 {
                        r#"{"agreed_version":1,"session_timeout":300}"#.to_owned()
                    } else {
                        text
                    };
                    run.s.handle_text(now, &reply("HELLO_ACK", &hello, None, &body));
                }
            }
            3 => {
                if let Some(id) = pick {
                    let kind = REPLIES[usize::from(arg >> 4) % REPLIES.len()];
                    let seq = (kind == "STREAM_DATA").then_some(arg2 & 0x0f);
                    let (in_flight, state) = (run.s.in_flight(), run.s.state());
                    let message = reply(kind, &id, seq, &text);
                    run.s.handle_text(now, &message);
                    // A well-formed message of a type the client does not know (within the
                    // size limit) ends nothing. Well formed as the codec reads it: a body that
                    // looks like a header after the blank line continues the headers (the
                    // guide's client writes an empty line among them), and a bad one there
                    // fails the call it names.
                    let unknown = matches!(
                        codec::decode_for_client(&message, MAX_MESSAGE_SIZE),
                        Err(e) if matches!(e.kind, codec::DecodeErrorKind::UnknownType(_))
                    );
                    if kind == "PROGRESS" && unknown {
                        assert_eq!((run.s.in_flight(), run.s.state()), (in_flight, state));
                    }
                }
            }
            4 => {
                // From 0xf8 on, a leap of 2^arg2 ms: clocks jump, and timers must still saturate.
                let step = if arg >= 0xf8 {
                    1u64 << (arg2 % 64)
                } else {
                    u64::from(arg) * 8
                };
                run.now = run.now.saturating_add(step);
                run.s.handle_timeout(run.now);
            }
            5 => {
                // What a binding is given: the text as `params`, and (arg2 bit 0) as `context`.
                let params = read_arg("params", &text);
                let context = if arg2 & 1 != 0 {
                    read_arg("context", &text)
                } else {
                    None
                };
                let written = |v: &Option<Value>| v.as_ref().map(|v| v.to_string());
                let args = [written(&params), written(&context.clone().filter(|c| !c.is_null()))];
                let opts = RequestOptions {
                    stream: arg & 1 != 0,
                    ttl_s: (arg & 2 != 0).then_some(u32::from(arg >> 2)),
                    context,
                    to: (arg & 0x80 != 0).then(|| text.clone()),
                    ..RequestOptions::default()
                };
                let r = run.s.request(now, "weather.forecast", params, opts);
                if let Ok(id) = &r {
                    run.args.insert(id.clone(), args);
                }
                run.issued(r);
            }
            6 => {
                let r = match arg % 5 {
                    0 => run.s.discover(now),
                    1 => run.s.memory_get(now, &text, None),
                    2 => run
                        .s
                        .memory_set(now, &text, serde_json::json!(arg), Some("ns"), Some(60)),
                    3 => {
                        let recipient = (arg2 & 1 != 0).then_some(text.as_str());
                        run.s.pay(now, f64::from(arg) / 4.0, &text, None, recipient)
                    }
                    _ => run.s.auth(
                        now,
                        AuthBody::Bearer {
                            token: text,
                            scopes: Vec::new(),
                        },
                    ),
                };
                run.issued(r);
            }
            7 => {
                let r = run.s.ping(now);
                run.issued(r);
            }
            8 => {
                // An open command, one that ended, or an id never handed out.
                let mut issued: Vec<&String> = run.issued.iter().collect();
                issued.sort_unstable();
                let id = issued
                    .get(usize::from(arg2) % (issued.len() + 1))
                    .map_or_else(|| "never-handed-out".to_owned(), |id| (*id).clone());
                let open = run.open.contains(&id);
                assert_eq!(run.s.cancel(&id), open, "cancel({id}) with the id open: {open}");
            }
            9 => run.s.goodbye(now),
            10 => run.s.handle_close(now, 1006, &text),
            _ => {
                if run.s.state() == ClientState::Closed {
                    run.drain();
                    assert!(run.open.is_empty());
                    run = Run::new(mode.wrapping_add(arg));
                }
            }
        }
        run.drain();
    }
    run.s.handle_close(run.now, 1000, "end");
    run.drain();
    assert!(run.open.is_empty(), "left open after close: {:?}", run.open);
});
