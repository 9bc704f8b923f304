//! The frames the peer sends, built as `agentwire_switch::frame::Frame`s (every shape comes from
//! the engine's encoders) with the fields of the peer's generation, and encoded once for both
//! transports.

use crate::Generation;
use agentwire_switch::frame::{
    encode, sse_parts, ConnGeneration, ConnectionState, DomainEvent, EventKind, Evicted, EvictionCode, Frame, Gap,
    Refused, RoomReleased, SubscriptionChanged,
};
use serde::Serialize;
use serde_json::value::RawValue;
use std::sync::Arc;

/// `server.version` of the released generation (the capture's).
pub(crate) const RELEASED_VERSION: &str = "0.19.0";
/// `server.version` of the current generation.
pub(crate) const CURRENT_VERSION: &str = "0.20.0";
/// The agent-protocol range each generation speaks and accepts.
pub(crate) fn protocol_range(gen: Generation) -> (u64, u64) {
    match gen {
        Generation::Current => (6, 1),
        Generation::Released => (1, 1),
    }
}

pub(crate) fn server_version(gen: Generation) -> &'static str {
    match gen {
        Generation::Current => CURRENT_VERSION,
        Generation::Released => RELEASED_VERSION,
    }
}

/// The garbage text [`crate::Faults::garbage_every`] sends.
pub(crate) const GARBAGE: &str = "}{ not json";

pub(crate) const REASON_TAKEN_OVER: &str = "another stream attached to this connection";
/// The current generation's lapse text.
pub(crate) const REASON_LAPSED: &str = "heartbeat lapsed; reopen the stream and resume from your cursor";
/// switch-core 0.19's lapse text (the capture evicted_heartbeat.sse).
pub(crate) const REASON_LAPSED_RELEASED: &str = "heartbeat lapsed";
pub(crate) const REASON_RETENTION: &str = "events older than the retention window were dropped; re-read room context";
pub(crate) const REASON_RESTART: &str = "the server restarted since your last connection; sequence numbers have been \
     reset and events from before the restart are gone \u{2014} re-read room context";

/// A frame as both transports write it.
#[derive(Debug)]
pub(crate) struct Encoded {
    /// The WebSocket text message.
    pub(crate) ws: String,
    /// The SSE frame, blank line included.
    pub(crate) sse: String,
}

impl Encoded {
    pub(crate) fn new(frame: &Frame) -> Arc<Self> {
        let (event, data, id) = sse_parts(frame);
        Arc::new(Encoded {
            ws: encode(frame),
            sse: agentwire_switch::sse::encode_event(&event, &data, id.as_deref()),
        })
    }
}

/// What a socket task is asked to do, in order.
#[derive(Debug, Clone)]
pub(crate) enum Out {
    Frame {
        domain: bool,
        enc: Arc<Encoded>,
    },
    /// Close normally after what came before (WS close 1000, the SSE stream ends).
    Close,
}

impl Out {
    pub(crate) fn control(frame: &Frame) -> Out {
        Out::Frame {
            domain: false,
            enc: Encoded::new(frame),
        }
    }
}

fn raw<T: Serialize>(value: &T) -> Option<Box<RawValue>> {
    serde_json::value::to_raw_value(value).ok()
}

#[derive(Serialize)]
struct Contract {
    speaks: u64,
    accepts: u64,
}

#[derive(Serialize)]
struct Contracts {
    #[serde(rename = "agent-protocol")]
    agent_protocol: Contract,
}

/// `{version, contracts}` (also the body of `GET /version`).
#[derive(Serialize)]
pub(crate) struct ServerInfo {
    version: &'static str,
    contracts: Contracts,
}

pub(crate) fn server_info(gen: Generation) -> ServerInfo {
    let (speaks, accepts) = protocol_range(gen);
    ServerInfo {
        version: server_version(gen),
        contracts: Contracts {
            agent_protocol: Contract { speaks, accepts },
        },
    }
}

/// The `client` echo of `connection_state`: what the client declared, nulls otherwise.
#[derive(Debug, Clone, Serialize, Default)]
pub(crate) struct ClientEcho {
    pub(crate) speaks: Option<u64>,
    pub(crate) accepts: Option<u64>,
    pub(crate) artifact: Option<String>,
    pub(crate) version: Option<String>,
}

/// Everything `connection_state` reports.
pub(crate) struct StateInfo<'a> {
    pub(crate) connection_id: &'a str,
    pub(crate) agent_id: &'a str,
    pub(crate) generation: u64,
    pub(crate) scope: &'static str,
    pub(crate) filter: &'static str,
    pub(crate) spawn_capable: bool,
    pub(crate) rooms: Vec<String>,
    pub(crate) cursor: u64,
    pub(crate) protocol: u64,
    pub(crate) heartbeat_interval_seconds: f64,
    pub(crate) client: &'a ClientEcho,
}

pub(crate) fn connection_state(gen: Generation, s: StateInfo<'_>) -> Frame {
    Frame::ConnectionState(ConnectionState {
        connection_id: s.connection_id.to_owned(),
        agent_id: s.agent_id.to_owned(),
        generation: (gen == Generation::Current).then_some(ConnGeneration::Number(s.generation)),
        scope: s.scope.to_owned(),
        filter: s.filter.to_owned(),
        spawn_capable: s.spawn_capable,
        rooms: s.rooms,
        cursor: s.cursor,
        protocol: Some(s.protocol),
        heartbeat_interval_seconds: Some(s.heartbeat_interval_seconds),
        server: raw(&server_info(gen)),
        client: raw(s.client),
    })
}

/// A `gap`; the released generation carries only `from_sequence`, `resumed_at` and `reason`.
pub(crate) fn gap(
    gen: Generation,
    from: u64,
    resumed_at: u64,
    rooms: Vec<String>,
    all_rooms: bool,
    reason: &str,
) -> Frame {
    let current = gen == Generation::Current;
    Frame::Gap(Gap {
        from_sequence: from,
        resumed_at,
        resumed_position: if current { raw(&resumed_at) } else { None },
        rooms: current.then_some(rooms),
        all_rooms: current.then_some(all_rooms),
        reason: reason.to_owned(),
    })
}

/// An `evicted`; the released generation carries only the free-text `reason`.
pub(crate) fn evicted(gen: Generation, code: EvictionCode) -> Frame {
    let reason = match code {
        EvictionCode::TakenOver => REASON_TAKEN_OVER,
        EvictionCode::HeartbeatLapsed if gen == Generation::Released => REASON_LAPSED_RELEASED,
        EvictionCode::HeartbeatLapsed => REASON_LAPSED,
        _ => "the server closed the connection",
    };
    Frame::Evicted(Evicted {
        code: (gen == Generation::Current).then_some(code),
        reason: reason.to_owned(),
        room_id: None,
    })
}

pub(crate) fn subscription_changed(rooms: Vec<String>, reason: &str) -> Frame {
    Frame::SubscriptionChanged(SubscriptionChanged {
        rooms,
        reason: reason.to_owned(),
    })
}

pub(crate) fn room_released(room_id: &str, session_id: Option<String>) -> Frame {
    Frame::RoomReleased(RoomReleased {
        room_id: room_id.to_owned(),
        session_id,
    })
}

pub(crate) fn refused(status: u16, detail: &RawValue) -> Frame {
    Frame::Refused(Refused {
        status,
        detail: detail.to_owned(),
    })
}

pub(crate) fn domain(kind: EventKind, room_id: &str, sequence: u64, payload: Box<RawValue>) -> Frame {
    Frame::Event(DomainEvent {
        kind,
        room_id: room_id.to_owned(),
        bridge_id: None,
        channel_type: Some("channel_public".to_owned()),
        sequence,
        payload,
    })
}

/// The `message` payload, in the capture's key order.
#[derive(Serialize)]
pub(crate) struct MessagePayload<'a> {
    pub(crate) addressed: bool,
    pub(crate) sender: &'a str,
    pub(crate) sender_name: &'a str,
    pub(crate) message_id: &'a str,
    pub(crate) body: &'a str,
    pub(crate) timestamp: u64,
    pub(crate) thread_id: Option<&'a str>,
    pub(crate) attachments: [(); 0],
}

impl MessagePayload<'_> {
    pub(crate) fn raw(&self) -> Box<RawValue> {
        raw(self).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn released_frames_match_the_captures() {
        let e = Encoded::new(&evicted(Generation::Released, EvictionCode::TakenOver));
        assert_eq!(
            e.sse,
            "event: evicted\ndata: {\"reason\":\"another stream attached to this connection\"}\n\n"
        );
        let g = Encoded::new(&gap(Generation::Released, 8, 8, vec![], true, REASON_RESTART));
        assert_eq!(
            g.sse,
            "event: gap\ndata: {\"from_sequence\":8,\"resumed_at\":8,\"reason\":\"the server restarted since your last \
             connection; sequence numbers have been reset and events from before the restart are gone \\u2014 \
             re-read room context\"}\n\n"
        );
        let l = Encoded::new(&evicted(Generation::Released, EvictionCode::HeartbeatLapsed));
        assert_eq!(l.sse, "event: evicted\ndata: {\"reason\":\"heartbeat lapsed\"}\n\n");
        let c = Encoded::new(&evicted(Generation::Current, EvictionCode::HeartbeatLapsed));
        assert_eq!(
            c.ws,
            r#"{"event":"evicted","data":{"code":"heartbeat_lapsed","reason":"heartbeat lapsed; reopen the stream and resume from your cursor"}}"#
        );
    }
}
