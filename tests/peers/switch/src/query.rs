//! The open request's query (`/connection/ws` and `/events`), parsed and checked the way
//! switch-core does: 400 for a missing or bad `connection_id`, `scope`, `filter`, `start_from`;
//! 422 for a parameter that is not an integer or a boolean; 409 for protocol ranges that do not
//! overlap.

use crate::frames::{protocol_range, server_version, ClientEcho};
use crate::util::query_pairs;
use crate::Generation;
use agentwire_peer_kit::ids::is_uuid;
use agentwire_switch::open::{Filter, Scope};
use serde::Serialize;
use serde_json::value::{to_raw_value, RawValue};
use serde_json::Value;

/// Most rooms accepted on one open URL.
pub(crate) const MAX_OPEN_ROOMS: usize = 256;
/// Longest id or free-text value accepted in the query.
const MAX_VALUE: usize = 256;

/// A refusal: the HTTP status (or 4000 + status on the WebSocket), the `detail` (a string, an
/// object for a protocol mismatch, or FastAPI's list for a 422) and, for some 409s, a `code`.
#[derive(Debug, Clone)]
pub(crate) struct Refusal {
    pub(crate) status: u16,
    /// JSON, in the key order it is written.
    pub(crate) detail: Box<RawValue>,
    pub(crate) code: Option<&'static str>,
}

fn raw<T: Serialize>(v: &T) -> Box<RawValue> {
    to_raw_value(v).unwrap_or_default()
}

impl Refusal {
    pub(crate) fn new(status: u16, detail: impl Into<String>) -> Self {
        Refusal {
            status,
            detail: raw(&detail.into()),
            code: None,
        }
    }

    /// The detail as text (a string's contents, else the JSON).
    #[cfg(test)]
    pub(crate) fn detail_text(&self) -> String {
        serde_json::from_str::<String>(self.detail.get()).unwrap_or_else(|_| self.detail.get().to_owned())
    }

    pub(crate) fn with_code(mut self, code: &'static str) -> Self {
        self.code = Some(code);
        self
    }

    /// The `detail` of the WebSocket's `refused` frame, which has no field for the code: the
    /// detail itself, or with a code `{"code": ..., "message": <detail>}` (the shape the engine
    /// reads a `refused` frame's code from, as an HTTP answer's `{"detail": {"code": ..}}`).
    pub(crate) fn frame_detail(&self) -> Box<RawValue> {
        #[derive(serde::Serialize)]
        struct Coded<'a> {
            code: &'a str,
            message: &'a RawValue,
        }
        match self.code {
            Some(code) => raw(&Coded {
                code,
                message: &self.detail,
            }),
            None => self.detail.clone(),
        }
    }

    /// `{"detail": ...}` or `{"detail": ..., "code": ...}`.
    pub(crate) fn body(&self) -> String {
        #[derive(serde::Serialize)]
        struct Body<'a> {
            detail: &'a RawValue,
            #[serde(skip_serializing_if = "Option::is_none")]
            code: Option<&'a str>,
        }
        serde_json::to_string(&Body {
            detail: &self.detail,
            code: self.code,
        })
        .unwrap_or_default()
    }
}

/// FastAPI's 422 for one field.
pub(crate) fn unprocessable(kind: &str, loc: &[&str], msg: &str, input: Value) -> Refusal {
    #[derive(Serialize)]
    struct Item<'a> {
        #[serde(rename = "type")]
        kind: &'a str,
        loc: &'a [&'a str],
        msg: &'a str,
        input: Value,
    }
    Refusal {
        status: 422,
        detail: raw(&[Item { kind, loc, msg, input }]),
        code: None,
    }
}

/// A parsed open request.
#[derive(Debug, Clone)]
pub(crate) struct OpenReq {
    pub(crate) connection_id: String,
    pub(crate) scope: Scope,
    pub(crate) filter: Filter,
    /// `None`: the head.
    pub(crate) start_from: Option<u64>,
    pub(crate) rooms: Vec<String>,
    pub(crate) expected_generation: Option<String>,
    pub(crate) spawn_capable: bool,
    /// The negotiated protocol revision.
    pub(crate) protocol: u64,
    pub(crate) client: ClientEcho,
}

fn int(name: &str, v: &str) -> Result<u64, Refusal> {
    v.parse::<u64>().map_err(|_| {
        let msg = "Input should be a valid integer, unable to parse string as an integer";
        unprocessable("int_parsing", &["query", name], msg, Value::String(v.to_owned()))
    })
}

fn boolean(name: &str, v: &str) -> Result<bool, Refusal> {
    match v.to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "on" | "t" | "y" => Ok(true),
        "false" | "0" | "no" | "off" | "f" | "n" => Ok(false),
        _ => {
            let msg = "Input should be a valid boolean, unable to interpret input";
            Err(unprocessable(
                "bool_parsing",
                &["query", name],
                msg,
                Value::String(v.to_owned()),
            ))
        }
    }
}

fn text(v: &str) -> Option<String> {
    let v: String = v.chars().filter(|c| !c.is_control()).take(MAX_VALUE).collect();
    (!v.is_empty()).then_some(v)
}

/// Parses the query of an open request for a peer of generation `gen`.
pub(crate) fn parse_open(gen: Generation, query: &str) -> Result<OpenReq, Refusal> {
    let pairs = query_pairs(query);
    let get = |name: &str| pairs.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str());
    let connection_id =
        match get("connection_id") {
            None | Some("") => return Err(Refusal::new(
                400,
                "connection_id is required to open an event stream; generate a UUID and reuse it when reconnecting \
                 so the connection survives the drop",
            )),
            Some(c) if !is_uuid(c) => {
                let shown: String = c.chars().take(64).collect();
                return Err(Refusal::new(
                    400,
                    format!("connection_id must be a UUID, got '{shown}'"),
                ));
            }
            Some(c) => c.to_ascii_lowercase(),
        };
    let scope = match get("scope").unwrap_or("single") {
        "single" => Scope::Single,
        "all" => Scope::All,
        other => {
            return Err(Refusal::new(
                400,
                format!("scope must be 'single' or 'all', got '{}'", clip(other)),
            ))
        }
    };
    let filter = match get("filter").unwrap_or("all") {
        "all" => Filter::All,
        "addressed" => Filter::Addressed,
        other => {
            return Err(Refusal::new(
                400,
                format!("filter must be 'all' or 'addressed', got '{}'", clip(other)),
            ))
        }
    };
    let start_from = match get("start_from").unwrap_or("head") {
        "head" => None,
        n => Some(n.parse::<u64>().map_err(|_| {
            Refusal::new(
                400,
                format!("start_from must be 'head' or a sequence number, got '{}'", clip(n)),
            )
        })?),
    };
    let speaks = get("protocol").map(|v| int("protocol", v)).transpose()?;
    let accepts = get("protocol_accepts")
        .map(|v| int("protocol_accepts", v))
        .transpose()?;
    let spawn_capable = get("spawn_capable").map(|v| boolean("spawn_capable", v)).transpose()?;
    let protocol = negotiate(gen, speaks, accepts)?;
    let mut rooms = Vec::new();
    for room in get("rooms")
        .unwrap_or("")
        .split(',')
        .map(str::trim)
        .filter(|r| !r.is_empty())
    {
        if rooms.len() >= MAX_OPEN_ROOMS {
            return Err(Refusal::new(
                400,
                format!("at most {MAX_OPEN_ROOMS} rooms may be declared"),
            ));
        }
        if !rooms.iter().any(|r| r == room) {
            rooms.push(room.chars().take(MAX_VALUE).collect());
        }
    }
    Ok(OpenReq {
        connection_id,
        scope,
        filter,
        start_from,
        rooms,
        // switch-core 0.19 has no generations: the parameter is ignored, as any unknown one.
        expected_generation: match gen {
            Generation::Current => get("expected_generation").and_then(text),
            Generation::Released => None,
        },
        spawn_capable: spawn_capable.unwrap_or(false),
        protocol,
        client: ClientEcho {
            speaks,
            accepts: accepts.or(speaks),
            artifact: get("client").and_then(text),
            version: get("client_version").and_then(text),
        },
    })
}

fn clip(s: &str) -> String {
    s.chars().take(64).collect()
}

/// The revision in force: the newest both sides handle; 1 when the client declares nothing.
fn negotiate(gen: Generation, speaks: Option<u64>, accepts: Option<u64>) -> Result<u64, Refusal> {
    let (server_speaks, server_accepts) = protocol_range(gen);
    let Some(client_speaks) = speaks.or(accepts) else {
        return Ok(1);
    };
    let client_accepts = accepts.unwrap_or(client_speaks).min(client_speaks);
    if client_accepts.max(server_accepts) <= client_speaks.min(server_speaks) {
        return Ok(client_speaks.min(server_speaks));
    }
    let remedy = if client_accepts > server_speaks {
        "update switch-core"
    } else {
        "update the client"
    };
    let message = format!(
        "this client speaks agent-protocol {client_accepts}-{client_speaks} and the server speaks \
         {server_accepts}-{server_speaks}; the ranges do not overlap, so {remedy}"
    );
    #[derive(Serialize)]
    struct Server {
        version: &'static str,
        speaks: u64,
        accepts: u64,
    }
    #[derive(Serialize)]
    struct Client {
        speaks: u64,
        accepts: u64,
    }
    #[derive(Serialize)]
    struct Mismatch {
        message: String,
        contract: &'static str,
        server: Server,
        client: Client,
        remedy: &'static str,
    }
    let detail = Mismatch {
        message,
        contract: "agent-protocol",
        server: Server {
            version: server_version(gen),
            speaks: server_speaks,
            accepts: server_accepts,
        },
        client: Client {
            speaks: client_speaks,
            accepts: client_accepts,
        },
        remedy,
    };
    Err(Refusal {
        status: 409,
        detail: raw(&detail),
        code: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const CID: &str = "0f8fad5b-d9cb-469f-a165-70867728950e";

    #[test]
    fn hostile_queries_are_refused_not_panicked_on() {
        for q in [
            "%",
            "%%%",
            "&&&=",
            "connection_id=%E2%80",
            "connection_id=\u{e9}\u{e9}",
            "connection_id=0f8fad5b-d9cb-469f-a165-70867728950e&start_from=99999999999999999999999",
            "connection_id=0f8fad5b-d9cb-469f-a165-70867728950e&protocol=18446744073709551615&protocol_accepts=0",
            "connection_id=0f8fad5b-d9cb-469f-a165-70867728950e&rooms=,,,%2C,&client=%00%01",
        ] {
            let _ = parse_open(Generation::Current, q);
            let _ = parse_open(Generation::Released, q);
        }
        let many = format!(
            "connection_id={CID}&rooms={}",
            (0..300).map(|i| i.to_string()).collect::<Vec<_>>().join(",")
        );
        assert_eq!(parse_open(Generation::Current, &many).unwrap_err().status, 400);
    }

    #[test]
    fn parses_and_refuses() {
        let q = format!("connection_id={CID}&scope=all&filter=addressed&start_from=7&rooms=a%2Cb,a&protocol=6&protocol_accepts=2&client=x&spawn_capable=true");
        let o = parse_open(Generation::Current, &q).unwrap();
        assert_eq!(
            (o.scope, o.filter, o.start_from, o.protocol),
            (Scope::All, Filter::Addressed, Some(7), 6)
        );
        assert_eq!(o.rooms, ["a", "b"]);
        assert!(o.spawn_capable);
        let err = |q: &str| parse_open(Generation::Released, q).unwrap_err();
        assert_eq!(err("").status, 400);
        assert_eq!(
            err(&format!("connection_id={CID}&scope=everything")).body(),
            r#"{"detail":"scope must be 'single' or 'all', got 'everything'"}"#
        );
        assert_eq!(
            err(&format!("connection_id={CID}&start_from=banana")).detail_text(),
            "start_from must be 'head' or a sequence number, got 'banana'"
        );
        assert_eq!(err(&format!("connection_id={CID}&protocol=x")).status, 422);
        let m = err(&format!("connection_id={CID}&protocol=2&protocol_accepts=2"));
        assert_eq!(m.status, 409);
        assert_eq!(
            m.body(),
            r#"{"detail":{"message":"this client speaks agent-protocol 2-2 and the server speaks 1-1; the ranges do not overlap, so update switch-core","contract":"agent-protocol","server":{"version":"0.19.0","speaks":1,"accepts":1},"client":{"speaks":2,"accepts":2},"remedy":"update switch-core"}}"#
        );
    }
}
