//! Fuzzes the requests built from what a user configures or passes (`open::OpenParams`'s paths,
//! `ops::op`, `list_ops`, `subscribe`, `unsubscribe`, `beat`): any agent id, operation name,
//! arguments, rooms, generation and client text. Nothing may panic; every path built starts
//! with `/agents/`, has no dot segment (`.`, `..`: a URL parser folds them, so the request
//! would reach another resource than the agent's), and no byte outside RFC 3986's unreserved
//! characters, `%XX` and the path and query delimiters (and `:` in the path, a pchar); its
//! agent segment decodes to the agent id, and has no `%` when the id is one a relay token allows
//! (`A-Z a-z 0-9 - _ . :`: the relay refuses any `%` in a path); a body is a JSON object.
//!
//! Input: a mode byte (scope, filter, start, spawn, protocol, takeover), then NUL-separated
//! fields: agent id, operation name, arguments, rooms (comma-separated), generation, client.
#![no_main]

use agentwire_core::http::HttpRequest;
use agentwire_switch::open::{Filter, OpenParams, ProtocolRange, Scope, StartFrom};
use agentwire_switch::ops;
use libfuzzer_sys::fuzz_target;

const CID: &str = "19209fad-88d2-4353-b857-10454fb40fa5";

fn unhex(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            out.push(u8::from_str_radix(&s[i + 1..i + 3], 16).expect("a %XX escape"));
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    out
}

fn check_path(agent: &str, path: &str) {
    let (p, q) = path.split_once('?').unwrap_or((path, ""));
    assert!(p.starts_with("/agents/"), "{path:?}");
    let ok = |c: u8| c.is_ascii_alphanumeric() || b"-._~%/".contains(&c);
    assert!(p.bytes().all(|c| ok(c) || c == b':'), "path {path:?}");
    assert!(q.bytes().all(|c| ok(c) || c == b'&' || c == b'='), "query {path:?}");
    for seg in p.split('/') {
        assert!(seg != "." && seg != "..", "a dot segment for agent {agent:?}: {path:?}");
    }
    let seg = p["/agents/".len()..].split('/').next().unwrap_or("");
    assert_eq!(unhex(seg), agent.as_bytes(), "{path:?}");
    if agent.bytes().all(|c| c.is_ascii_alphanumeric() || b"-_.:".contains(&c)) {
        assert!(!p.contains('%'), "a relay token's agent id escaped: {path:?}");
    }
}

fn check(agent: &str, r: Result<HttpRequest, impl std::fmt::Debug>) {
    if let Ok(r) = r {
        check_path(agent, &r.path);
        if let Some(body) = &r.body {
            let v: serde_json::Value = serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"));
            assert!(v.is_object(), "{body}");
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(rest);
    let mut f = text.split('\0');
    let mut next = || f.next().map(str::to_owned);
    let agent = next().unwrap_or_default();
    let name = next().unwrap_or_default();
    let args = next().unwrap_or_default();
    let rooms = next();
    let generation = next();
    let client = next();

    let mut p = OpenParams::new(agent.clone(), CID);
    p.scope = if mode & 1 != 0 { Scope::All } else { Scope::Single };
    p.filter = if mode & 2 != 0 { Filter::Addressed } else { Filter::All };
    p.start_from = if mode & 4 != 0 {
        StartFrom::After(u64::MAX >> (mode >> 6))
    } else {
        StartFrom::Head
    };
    p.spawn_capable = mode & 8 != 0;
    p.protocol = (mode & 16 != 0).then_some(ProtocolRange {
        speaks: u32::from(mode),
        accepts: u32::from(mode >> 1),
    });
    p.rooms = rooms
        .filter(|r| !r.is_empty())
        .map(|r| r.split(',').map(str::to_owned).collect())
        .unwrap_or_default();
    p.expected_generation = generation.filter(|g| !g.is_empty());
    p.client = client.clone().filter(|c| !c.is_empty());
    p.client_version = client.filter(|c| !c.is_empty());
    for path in [p.ws_path(), p.sse_path()].into_iter().flatten() {
        check_path(&agent, &path);
    }
    let room = p.rooms.first().cloned().unwrap_or_default();
    check(&agent, ops::op(&agent, (mode & 32 != 0).then_some(CID), &name, &args));
    check(&agent, ops::list_ops(&agent));
    check(&agent, ops::subscribe(&agent, CID, &room, mode & 32 != 0));
    check(&agent, ops::unsubscribe(&agent, CID, &room));
    check(&agent, ops::beat(&agent, CID, u64::from(mode)));
});
