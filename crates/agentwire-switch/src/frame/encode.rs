//! The encoders: a [`Frame`] as a server puts it on the wire, a WebSocket text message
//! ([`encode`]) or an SSE frame's `event`/`data`/`id` ([`sse_parts`]). The test peer and the
//! relay's SSE bridge use them, so every frame shape lives here once. Absent optional fields
//! are left out, which is how the released generation's frames are produced (no `generation`,
//! no `code`, no `rooms`/`all_rooms`/`resumed_position`).

use super::{DomainEvent, Frame};
use serde::Serialize;
use serde_json::value::RawValue;

#[derive(Serialize)]
struct EventData<'a> {
    #[serde(rename = "type")]
    kind: &'a str,
    room_id: &'a str,
    bridge_id: &'a Option<String>,
    channel_type: &'a Option<String>,
    payload: &'a RawValue,
    sequence: u64,
}

impl<'a> From<&'a DomainEvent> for EventData<'a> {
    fn from(e: &'a DomainEvent) -> Self {
        EventData {
            kind: e.kind.as_str(),
            room_id: &e.room_id,
            bridge_id: &e.bridge_id,
            channel_type: &e.channel_type,
            payload: &e.payload,
            sequence: e.sequence,
        }
    }
}

#[derive(Serialize)]
struct WsEnvelope<'a, D: Serialize> {
    event: &'a str,
    data: D,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<u64>,
}

#[derive(Serialize)]
#[serde(untagged)]
enum ControlData<'a> {
    ConnectionState {
        connection_id: &'a str,
        agent_id: &'a str,
        #[serde(skip_serializing_if = "absent")]
        generation: &'a Option<super::ConnGeneration>,
        scope: &'a str,
        filter: &'a str,
        spawn_capable: bool,
        rooms: &'a [String],
        cursor: u64,
        #[serde(skip_serializing_if = "absent")]
        protocol: &'a Option<u64>,
        #[serde(skip_serializing_if = "absent")]
        heartbeat_interval_seconds: &'a Option<f64>,
        #[serde(skip_serializing_if = "absent")]
        server: &'a Option<Box<RawValue>>,
        #[serde(skip_serializing_if = "absent")]
        client: &'a Option<Box<RawValue>>,
    },
    Gap {
        from_sequence: u64,
        resumed_at: u64,
        #[serde(skip_serializing_if = "absent")]
        resumed_position: &'a Option<Box<RawValue>>,
        #[serde(skip_serializing_if = "absent")]
        rooms: &'a Option<Vec<String>>,
        #[serde(skip_serializing_if = "absent")]
        all_rooms: &'a Option<bool>,
        reason: &'a str,
    },
    Evicted {
        #[serde(skip_serializing_if = "Option::is_none")]
        code: Option<&'a str>,
        reason: &'a str,
        #[serde(skip_serializing_if = "absent")]
        room_id: &'a Option<String>,
    },
    SubscriptionChanged {
        rooms: &'a [String],
        reason: &'a str,
    },
    RoomReleased {
        room_id: &'a str,
        session_id: &'a Option<String>,
    },
    Refused {
        status: u16,
        detail: &'a RawValue,
    },
    Raw(&'a RawValue),
    Empty {},
}

fn absent<T>(v: &&Option<T>) -> bool {
    v.is_none()
}

/// `s` with every non-ASCII character as a `\uXXXX` escape (surrogate pairs above the BMP), as
/// switch-core's Python `json.dumps` writes it. Only JSON string contents can hold them, so a
/// pass over the whole text is exact.
fn ascii(s: String) -> String {
    if s.is_ascii() {
        return s;
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        if c.is_ascii() {
            out.push(c);
        } else {
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{u:04x}"));
            }
        }
    }
    out
}

/// The length of `s` as a JSON string in a frame [`encode`] wrote, without writing it:
/// serde_json's escapes (`\"`, `\\`, `\b`, `\f`, `\n`, `\r`, `\t`, other control characters as
/// `\u00xx`), then a `\uXXXX` for each UTF-16 unit of a non-ASCII character. The relay
/// bridge keeps a room list's encoded length with it.
pub fn string_len(s: &str) -> usize {
    let escaped = |c: char| match c {
        '"' | '\\' | '\u{8}' | '\u{c}' | '\n' | '\r' | '\t' => 2,
        '\0'..='\u{1f}' => 6,
        _ if c.is_ascii() => 1,
        _ => 6 * c.len_utf16(),
    };
    2 + s.chars().map(escaped).sum::<usize>()
}

/// The name and data of a frame.
fn parts(frame: &Frame) -> (&str, Result<String, serde_json::Error>) {
    let json = |d: ControlData<'_>| serde_json::to_string(&d);
    match frame {
        Frame::Event(e) => (e.kind.as_str(), serde_json::to_string(&EventData::from(e))),
        Frame::ConnectionState(s) => (
            "connection_state",
            json(ControlData::ConnectionState {
                connection_id: &s.connection_id,
                agent_id: &s.agent_id,
                generation: &s.generation,
                scope: &s.scope,
                filter: &s.filter,
                spawn_capable: s.spawn_capable,
                rooms: &s.rooms,
                cursor: s.cursor,
                protocol: &s.protocol,
                heartbeat_interval_seconds: &s.heartbeat_interval_seconds,
                server: &s.server,
                client: &s.client,
            }),
        ),
        Frame::Gap(g) => (
            "gap",
            json(ControlData::Gap {
                from_sequence: g.from_sequence,
                resumed_at: g.resumed_at,
                resumed_position: &g.resumed_position,
                rooms: &g.rooms,
                all_rooms: &g.all_rooms,
                reason: &g.reason,
            }),
        ),
        Frame::Evicted(e) => (
            "evicted",
            json(ControlData::Evicted {
                code: e.code.as_ref().map(|c| c.as_str()),
                reason: &e.reason,
                room_id: &e.room_id,
            }),
        ),
        Frame::SubscriptionChanged(s) => (
            "subscription_changed",
            json(ControlData::SubscriptionChanged {
                rooms: &s.rooms,
                reason: &s.reason,
            }),
        ),
        Frame::RoomReleased(r) => (
            "room_released",
            json(ControlData::RoomReleased {
                room_id: &r.room_id,
                session_id: &r.session_id,
            }),
        ),
        Frame::Refused(r) => (
            "refused",
            json(ControlData::Refused {
                status: r.status,
                detail: &r.detail,
            }),
        ),
        Frame::Ping => ("ping", json(ControlData::Empty {})),
        Frame::Unknown { name, raw } => (name, json(ControlData::Raw(raw))),
    }
}

/// One WebSocket text message of the current generation: `{"event","data","id"}` for a domain
/// event (`id` = `sequence`), `{"event","data"}` for a control frame (the decision is in
/// `frame/mod.rs` and `docs/protocols/switch.md`).
pub fn encode(frame: &Frame) -> String {
    let (name, data) = parts(frame);
    let id = match frame {
        Frame::Event(e) => Some(e.sequence),
        _ => None,
    };
    let data = data.unwrap_or_else(|_| "{}".to_owned());
    let data = RawValue::from_string(data).unwrap_or_else(|_| RawValue::from_string("{}".to_owned()).expect("JSON"));
    ascii(serde_json::to_string(&WsEnvelope { event: name, data, id }).unwrap_or_default())
}

/// An SSE frame's parts as switch-core 0.19 writes them: the `event:` name, the `data:` JSON
/// (compact, one line) and the `id:` text (domain events only).
pub fn sse_parts(frame: &Frame) -> (String, String, Option<String>) {
    let (name, data) = parts(frame);
    let id = match frame {
        Frame::Event(e) => Some(e.sequence.to_string()),
        _ => None,
    };
    (name.to_owned(), ascii(data.unwrap_or_else(|_| "{}".to_owned())), id)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `string_len` is the length of the string as [`encode`] writes it: serde_json's escapes,
    /// then every non-ASCII character as `\uXXXX` per UTF-16 unit.
    #[test]
    fn string_len_is_the_encoded_length() {
        for s in [
            "",
            "plain",
            "q\"b\\s",
            "\u{8}\u{c}\n\r\t",
            "\u{0}\u{1}\u{1f}\u{7f}",
            "é",
            "\u{2028}✓",
            "😀",
            "a😀é\"\u{1}",
        ] {
            let written = ascii(serde_json::to_string(s).unwrap());
            assert_eq!(string_len(s), written.len(), "{s:?} is written {written}");
        }
    }
}
