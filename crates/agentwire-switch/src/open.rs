//! The open request of a connection: `/agents/{agent_id}/connection/ws?…` (current) or
//! `/agents/{agent_id}/events?…` (released SSE), with every query parameter of the spec,
//! validated before anything is sent. The `Authorization: Bearer` header is the driver's (or the
//! relay's); the key never passes through here.

use agentwire_core::{Error, ErrorKind};
use std::fmt::Write;

/// `scope`: one room at a time, or every room the agent belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Scope {
    #[default]
    Single,
    All,
}

/// `filter`: everything in the covered rooms, or only what is notifiable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Filter {
    #[default]
    All,
    Addressed,
}

/// `start_from`: the head, or the sequence to resume after.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StartFrom {
    #[default]
    Head,
    After(u64),
}

/// The protocol revisions a client handles: `protocol` (what it speaks) and `protocol_accepts`
/// (the oldest it handles).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProtocolRange {
    pub speaks: u32,
    pub accepts: u32,
}

/// Longest id (agent, room, generation) accepted in a path or query, in bytes.
pub const MAX_ID_LEN: usize = 256;
/// Most rooms declared on one open URL.
pub const MAX_ROOMS: usize = 256;

/// What a connection is opened with. `connection_id` is a UUID the client chooses once and
/// reuses on every reconnect (the session keeps it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenParams {
    pub agent_id: String,
    pub connection_id: String,
    pub scope: Scope,
    pub filter: Filter,
    pub start_from: StartFrom,
    /// Rooms to claim at open (with takeover), so catch-up covers them.
    pub rooms: Vec<String>,
    /// The generation of the last `connection_state`, to fence a reconnect.
    pub expected_generation: Option<String>,
    pub spawn_capable: bool,
    pub protocol: Option<ProtocolRange>,
    /// Reported in `connection_state`, never judged.
    pub client: Option<String>,
    pub client_version: Option<String>,
}

impl OpenParams {
    /// The defaults of the spec (`single`, `all`, `head`, no rooms) for `agent_id`.
    pub fn new(agent_id: impl Into<String>, connection_id: impl Into<String>) -> Self {
        OpenParams {
            agent_id: agent_id.into(),
            connection_id: connection_id.into(),
            scope: Scope::Single,
            filter: Filter::All,
            start_from: StartFrom::Head,
            rooms: Vec::new(),
            expected_generation: None,
            spawn_capable: false,
            protocol: None,
            client: None,
            client_version: None,
        }
    }

    /// Every rule a server would refuse the open for (4400 / HTTP 400), checked here first.
    pub fn validate(&self) -> Result<(), Error> {
        check_id("agent_id", &self.agent_id)?;
        if !is_uuid(&self.connection_id) {
            return Err(invalid(format!(
                "connection_id must be a UUID (got {:?}); generate one and reuse it on every reconnect",
                self.connection_id
            )));
        }
        check_rooms(&self.rooms)?;
        if let Some(g) = &self.expected_generation {
            check_query_value("expected_generation", g)?;
        }
        if let Some(p) = self.protocol {
            if p.accepts > p.speaks {
                return Err(invalid(format!(
                    "protocol_accepts {} is newer than protocol {}",
                    p.accepts, p.speaks
                )));
            }
        }
        for (name, v) in [("client", &self.client), ("client_version", &self.client_version)] {
            if let Some(v) = v {
                check_query_value(name, v)?;
            }
        }
        Ok(())
    }

    /// Path and query of the WebSocket open (current generation).
    pub fn ws_path(&self) -> Result<String, Error> {
        self.path("connection/ws")
    }

    /// Path and query of the SSE stream (released generation). `Last-Event-ID` is a header the
    /// driver adds from the cursor; it wins over `start_from` on the server.
    pub fn sse_path(&self) -> Result<String, Error> {
        self.path("events")
    }

    fn path(&self, tail: &str) -> Result<String, Error> {
        self.validate()?;
        let mut out = format!(
            "/agents/{}/{tail}?connection_id={}",
            encode_segment(&self.agent_id),
            self.connection_id
        );
        let mut param = |name: &str, value: &str| {
            let _ = write!(out, "&{name}={}", encode_query(value));
        };
        if self.scope == Scope::All {
            param("scope", "all");
        }
        if self.filter == Filter::Addressed {
            param("filter", "addressed");
        }
        if let StartFrom::After(n) = self.start_from {
            param("start_from", &n.to_string());
        }
        if !self.rooms.is_empty() {
            param("rooms", &self.rooms.join(","));
        }
        if let Some(g) = &self.expected_generation {
            param("expected_generation", g);
        }
        if self.spawn_capable {
            param("spawn_capable", "true");
        }
        if let Some(p) = self.protocol {
            param("protocol", &p.speaks.to_string());
            param("protocol_accepts", &p.accepts.to_string());
        }
        if let Some(c) = &self.client {
            param("client", c);
        }
        if let Some(v) = &self.client_version {
            param("client_version", v);
        }
        Ok(out)
    }
}

fn invalid(m: String) -> Error {
    Error::new(ErrorKind::Invalid, m)
}

/// Rooms that can be declared on the open URL: at most [`MAX_ROOMS`], each [`check_room`].
pub(crate) fn check_rooms(rooms: &[String]) -> Result<(), Error> {
    if rooms.len() > MAX_ROOMS {
        return Err(invalid(format!("{} rooms declared; at most {MAX_ROOMS}", rooms.len())));
    }
    rooms.iter().try_for_each(|room| check_room(room))
}

/// A room id that can be declared on the open URL: no comma, and no leading or trailing
/// whitespace (the relay trims each room of `rooms=`, so `" r1"` would be claimed as `"r1"`
/// while the engine tracked `" r1"`).
pub(crate) fn check_room(room: &str) -> Result<(), Error> {
    check_id("rooms", room)?;
    if room.contains(',') {
        return Err(invalid(format!(
            "room id {room:?} contains a comma (rooms are comma-separated)"
        )));
    }
    if room.trim() != room {
        return Err(invalid(format!(
            "room id {room:?} has leading or trailing whitespace (the relay trims each declared room)"
        )));
    }
    Ok(())
}

/// A value that only goes in the query (`expected_generation`, `client`, `client_version`):
/// percent-encoded there, a `/` or a dot cannot change the path, so only what a server or the
/// relay refuses in any query value is: empty, over [`MAX_ID_LEN`] bytes, a control character.
pub(crate) fn check_query_value(name: &str, v: &str) -> Result<(), Error> {
    if v.is_empty() || v.len() > MAX_ID_LEN || v.chars().any(char::is_control) {
        return Err(invalid(format!(
            "{name} must be 1..={MAX_ID_LEN} bytes of printable characters"
        )));
    }
    Ok(())
}

pub(crate) fn check_id(name: &str, v: &str) -> Result<(), Error> {
    // `.` and `..` are path segments a URL parser folds (`/agents/../ops/x` is `/ops/x`): the
    // request would go elsewhere with the agent's key (the relay refuses them too).
    if v.is_empty() || v.len() > MAX_ID_LEN || v == "." || v == ".." || v.chars().any(|c| c.is_control() || c == '/') {
        return Err(invalid(format!(
            "{name} must be 1..={MAX_ID_LEN} bytes without '/' or control characters, and not '.' or '..' (got {v:?})"
        )));
    }
    Ok(())
}

/// Whether a WebSocket upgrade to [`OpenParams::ws_path`] refused with this HTTP status says the
/// server has no WebSocket route: 403 (switch-core 0.19's answer to a valid key), or 404, 405 or
/// 426 (from anything in between). A connection on `auto` moves to SSE on it, and the relay
/// bridges the WebSocket to SSE.
pub fn no_websocket_route(status: u16) -> bool {
    matches!(status, 403 | 404 | 405 | 426)
}

/// True for the 8-4-4-4-12 hex form.
pub fn is_uuid(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 36
        && b.iter().enumerate().all(|(i, &c)| match i {
            8 | 13 | 18 | 23 => c == b'-',
            _ => c.is_ascii_hexdigit(),
        })
}

/// A path segment: percent-encodes everything but RFC 3986 unreserved characters and `:` (a
/// `pchar`, and allowed in relay tokens' `agent_id`: the relay refuses any `%` in a path, so an
/// id like `org:bot` must go as it is). Other sub-delims stay encoded: neither the relay nor its
/// tokens allow them.
pub(crate) fn encode_segment(s: &str) -> String {
    encode(s, b":")
}

/// A query value: percent-encodes everything but RFC 3986 unreserved characters (commas in
/// `rooms` too: the server decodes the query before splitting it).
pub(crate) fn encode_query(s: &str) -> String {
    encode(s, b"")
}

fn encode(s: &str, also: &[u8]) -> String {
    let mut out = String::with_capacity(s.len());
    for &b in s.as_bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') || also.contains(&b) {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const CID: &str = "0f8fad5b-d9cb-469f-a165-70867728950e";

    #[test]
    fn no_websocket_route_is_403_404_405_426() {
        let all: Vec<u16> = (0..=u16::MAX).filter(|&s| no_websocket_route(s)).collect();
        assert_eq!(all, [403, 404, 405, 426]);
    }

    #[test]
    fn defaults_send_only_the_connection_id() {
        let p = OpenParams::new("agent-1", CID);
        assert_eq!(
            p.ws_path().unwrap(),
            format!("/agents/agent-1/connection/ws?connection_id={CID}")
        );
        assert_eq!(
            p.sse_path().unwrap(),
            format!("/agents/agent-1/events?connection_id={CID}")
        );
    }

    #[test]
    fn every_parameter() {
        let p = OpenParams {
            scope: Scope::All,
            filter: Filter::Addressed,
            start_from: StartFrom::After(4813),
            rooms: vec!["r1".into(), "r 2".into()],
            expected_generation: Some("7".into()),
            spawn_capable: true,
            protocol: Some(ProtocolRange { speaks: 6, accepts: 1 }),
            client: Some("agentwire".into()),
            client_version: Some("0.1.0".into()),
            ..OpenParams::new("a/../b".replace('/', "_"), CID)
        };
        assert_eq!(
            p.ws_path().unwrap(),
            format!(
                "/agents/a_.._b/connection/ws?connection_id={CID}&scope=all&filter=addressed&start_from=4813\
                 &rooms=r1%2Cr%202&expected_generation=7&spawn_capable=true&protocol=6&protocol_accepts=1\
                 &client=agentwire&client_version=0.1.0"
            )
        );
    }

    #[test]
    fn a_colon_stays_in_the_path_and_is_escaped_in_the_query() {
        // The relay refuses any `%` in a path, and its tokens allow `:` in `agent_id`.
        let p = OpenParams {
            expected_generation: Some("g:1".into()),
            client: Some("a:b@c".into()),
            ..OpenParams::new("org:bot", CID)
        };
        assert_eq!(
            p.ws_path().unwrap(),
            format!("/agents/org:bot/connection/ws?connection_id={CID}&expected_generation=g%3A1&client=a%3Ab%40c")
        );
        assert!(p.sse_path().unwrap().starts_with("/agents/org:bot/events?"));
        // Other sub-delims are neither in the relay's segments nor in its tokens: still escaped.
        assert_eq!(encode_segment("a@b+c!d:e~f"), "a%40b%2Bc%21d:e~f");
        assert_eq!(encode_query("a:b"), "a%3Ab");
    }

    #[test]
    fn expected_generation_is_a_query_value_not_a_path_segment() {
        // Percent-encoded in the query, a '/', a dot or a '?' cannot change the path: the
        // generation goes as the server gave it, so the reopen stays fenced.
        let with = |g: &str| {
            OpenParams {
                expected_generation: Some(g.into()),
                ..OpenParams::new("a", CID)
            }
            .ws_path()
        };
        for (g, sent) in [
            ("a/b", "a%2Fb"),
            ("..", ".."),
            (".", "."),
            ("/", "%2F"),
            ("g?x=1#f", "g%3Fx%3D1%23f"),
        ] {
            let path = with(g).unwrap_or_else(|e| panic!("{g:?}: {e:?}"));
            assert!(path.ends_with(&format!("&expected_generation={sent}")), "{path}");
        }
        // What no query carries, as for `client`: empty, too long, a control character.
        for g in ["", "a\nb", &"g".repeat(MAX_ID_LEN + 1)] {
            let e = with(g).unwrap_err();
            assert_eq!(e.kind, ErrorKind::Invalid, "{g:?}");
            assert!(
                e.message.starts_with("expected_generation must be 1..=256 bytes"),
                "{e:?}"
            );
        }
        assert!(with(&"g".repeat(MAX_ID_LEN)).is_ok());
    }

    #[test]
    fn refusals_before_sending() {
        let bad = |p: OpenParams| p.ws_path().unwrap_err();
        assert!(bad(OpenParams::new("a", "nope")).message.contains("UUID"));
        assert!(bad(OpenParams::new("", CID)).message.contains("agent_id"));
        assert!(bad(OpenParams::new("a/b", CID)).message.contains("'/'"));
        // Dot segments: `/agents/../connection/ws` would reach `/connection/ws`.
        for dots in [".", ".."] {
            assert!(bad(OpenParams::new(dots, CID)).message.contains("'..'"), "{dots}");
            assert!(crate::ops::list_ops(dots).is_err(), "{dots}");
        }
        assert!(OpenParams::new("...", CID).ws_path().is_ok(), "not a dot segment");
        let rooms = |r: &str| OpenParams {
            rooms: vec![r.into()],
            ..OpenParams::new("a", CID)
        };
        assert!(bad(rooms("x,y")).message.contains("comma"));
        // The relay trims each room of `rooms=`: " r1" would be claimed as "r1".
        for spaced in [" r1", "r1 ", "r1\u{3000}"] {
            let e = bad(rooms(spaced));
            assert_eq!(e.kind, ErrorKind::Invalid);
            assert!(
                e.message.contains(&format!("{spaced:?}")) && e.message.contains("whitespace"),
                "{e:?}"
            );
        }
        assert!(rooms("r 1").ws_path().is_ok(), "inner whitespace is kept");
        assert!(bad(rooms("")).message.contains("rooms"));
        let range = OpenParams {
            protocol: Some(ProtocolRange { speaks: 1, accepts: 2 }),
            ..OpenParams::new("a", CID)
        };
        assert!(bad(range).message.contains("protocol_accepts"));
        let client = OpenParams {
            client: Some("a\nb".into()),
            ..OpenParams::new("a", CID)
        };
        assert_eq!(bad(client).kind, ErrorKind::Invalid);
        assert!(is_uuid(CID) && !is_uuid(&CID.replace('-', "x")));
    }

    /// A client name and version: 1 to `MAX_ID_LEN` bytes, both ends included.
    #[test]
    fn client_and_client_version_bounds_are_inclusive() {
        let with = |client: &str, version: &str| {
            OpenParams {
                client: Some(client.into()),
                client_version: Some(version.into()),
                ..OpenParams::new("a", CID)
            }
            .ws_path()
        };
        let longest = "c".repeat(MAX_ID_LEN);
        assert!(with(&longest, &longest).is_ok());
        assert!(with("c", "1").is_ok());
        for (client, version) in [
            ("", "1"),
            ("c", ""),
            (&*"c".repeat(MAX_ID_LEN + 1), "1"),
            ("c", &*"1".repeat(MAX_ID_LEN + 1)),
        ] {
            let e = with(client, version).unwrap_err();
            assert_eq!(e.kind, ErrorKind::Invalid, "{client:?} {version:?}");
            assert!(e.message.contains("printable"), "{e:?}");
        }
        // In bytes: 200 "é" are 400 of them.
        let e = with(&"é".repeat(200), "1").unwrap_err();
        assert_eq!(e.message, "client must be 1..=256 bytes of printable characters");
        assert!(with(&"é".repeat(128), "1").is_ok());
    }

    /// An agent, room or generation id: up to `MAX_ID_LEN` bytes, the bound included.
    #[test]
    fn id_bounds_are_inclusive() {
        let with = |id: &str| {
            OpenParams {
                rooms: vec![id.into()],
                expected_generation: Some(id.into()),
                ..OpenParams::new(id, CID)
            }
            .ws_path()
        };
        let longest = "i".repeat(MAX_ID_LEN);
        assert!(with(&longest).is_ok());
        let e = with(&format!("{longest}i")).unwrap_err();
        assert!(e.message.contains("agent_id must be 1..=256 bytes"), "{e:?}");
        // The bound is in bytes: 200 "é" are 200 characters but 400 bytes, and the error says bytes.
        let e = check_id("room", &"é".repeat(200)).unwrap_err();
        assert!(e.message.starts_with("room must be 1..=256 bytes without '/'"), "{e:?}");
        assert!(check_id("room", &"é".repeat(128)).is_ok());
        assert!(check_id("rooms", &longest).is_ok());
        assert!(check_id("rooms", &format!("{longest}i")).is_err());
    }

    /// A range of one revision (`protocol_accepts` = `protocol`) is a range.
    #[test]
    fn a_protocol_range_of_one_revision_is_accepted() {
        let p = OpenParams {
            protocol: Some(ProtocolRange { speaks: 1, accepts: 1 }),
            ..OpenParams::new("a", CID)
        };
        assert!(p.ws_path().unwrap().ends_with("&protocol=1&protocol_accepts=1"));
    }
}
