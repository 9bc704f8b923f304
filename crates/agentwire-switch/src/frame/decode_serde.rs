//! The serde_json decoders that `decode` replaced, kept for the tests as the reference the new
//! ones are compared with (`decode_tests.rs`).

use super::error::{FrameError, FrameErrorKind};
use super::{
    ConnectionState, DomainEvent, EventKind, Evicted, EvictionCode, Frame, Gap, Refused, RoomReleased,
    SubscriptionChanged,
};
use serde::Deserialize;
use serde_json::value::RawValue;
use std::borrow::Cow;

use super::decode::{check_limits, not_object, DecodeOptions};
use super::payload::{opt, path, req};

/// Decodes one WebSocket text message with the default limits.
pub fn decode(text: &str) -> Result<Frame, FrameError> {
    decode_with(text, &DecodeOptions::default())
}

#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(borrow, default)]
    event: Option<&'a RawValue>,
    #[serde(borrow, default, rename = "type")]
    kind: Option<&'a RawValue>,
    #[serde(borrow, default)]
    data: Option<&'a RawValue>,
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
}

pub fn decode_with(text: &str, opts: &DecodeOptions) -> Result<Frame, FrameError> {
    check_limits(text, opts)?;
    if !text.trim_ascii_start().starts_with('{') {
        return Err(FrameError::new(
            FrameErrorKind::Syntax,
            Some("message".into()),
            "frame is not a JSON object",
        ));
    }
    // Domain events (nearly every frame) in one pass over the text; anything else, and any
    // error, is decided by the general path below, which gives the same frame or error.
    if let Ok(DomainEnvelope {
        event: Some(event),
        id: Some(id),
        data: Some(DataObject(d)),
    }) = serde_json::from_str::<DomainEnvelope<'_>>(text)
    {
        let name = string(event, "event")?;
        return domain_fields(&name, d, json_id(id)?, "data.");
    }
    decode_general(text)
}

/// Any WebSocket frame, its envelope first (`data` raw), then its body.
fn decode_general(text: &str) -> Result<Frame, FrameError> {
    let env: Envelope<'_> = serde_json::from_str(text).map_err(|e| FrameError::syntax(format!("invalid JSON: {e}")))?;
    if let Some(event) = env.event {
        let name = string(event, "event")?;
        if env.id.is_some() || EventKind::known(&name).is_some() {
            let id = env.id.ok_or_else(|| FrameError::missing("id"))?;
            let id = json_id(id)?;
            let data = env.data.ok_or_else(|| FrameError::missing("data"))?;
            return domain(&name, data, id, "data.");
        }
        let body = env.data.unwrap_or(empty_object());
        return control(&name, body, "data.", || body.to_owned());
    }
    if let Some(kind) = env.kind {
        let name = string(kind, "type")?;
        if EventKind::known(&name).is_some() {
            // Only control frames come flat; a domain event needs its envelope and id.
            return Err(FrameError::missing("id"));
        }
        let whole: &RawValue = serde_json::from_str(text).map_err(|e| FrameError::syntax(e.to_string()))?;
        return control(&name, whole, "", || whole.to_owned());
    }
    Err(FrameError::missing("event"))
}

pub fn decode_sse_with(
    event_name: &str,
    data: &str,
    id: Option<&str>,
    opts: &DecodeOptions,
) -> Result<Frame, FrameError> {
    check_limits(data, opts)?;
    // No data and `null` are no data, as a WebSocket frame's absent or null `data` is.
    let body: &RawValue = if matches!(data.trim_ascii(), "" | "null") {
        empty_object()
    } else {
        serde_json::from_str(data).map_err(|e| FrameError::syntax(format!("invalid JSON in `data`: {e}")))?
    };
    if let Some(id) = id {
        // Digits only: `str::parse` would take `+5`.
        let id = agentwire_core::decimal::parse_u64(id)
            .ok_or_else(|| FrameError::wrong("id", format_args!("is `{id}`, not a sequence number")))?;
        return domain(event_name, body, id, "data.");
    }
    if EventKind::known(event_name).is_some() {
        return Err(FrameError::missing("id"));
    }
    control(event_name, body, "data.", || body.to_owned())
}

fn empty_object() -> &'static RawValue {
    serde_json::from_str("{}").expect("`{}` is JSON")
}

/// `id` on the WebSocket: a JSON number, a u64.
fn json_id(raw: &RawValue) -> Result<u64, FrameError> {
    let s = raw.get();
    if s.starts_with('"') {
        return Err(FrameError::wrong("id", "must be a JSON number, not a string"));
    }
    s.parse::<u64>()
        .map_err(|_| FrameError::wrong("id", format_args!("is `{s}`, not a non-negative integer")))
}

/// A JSON string, borrowed when it has no escapes.
pub(crate) fn string<'a>(raw: &'a RawValue, field: &str) -> Result<Cow<'a, str>, FrameError> {
    let s = raw.get();
    if s.len() >= 2 && s.starts_with('"') && !s.contains('\\') {
        return Ok(Cow::Borrowed(&s[1..s.len() - 1]));
    }
    serde_json::from_str::<String>(s)
        .map(Cow::Owned)
        .map_err(|_| FrameError::wrong(field, "must be a string"))
}

fn object<'a, T: Deserialize<'a>>(body: &'a RawValue, prefix: &str) -> Result<T, FrameError> {
    if !body.get().starts_with('{') {
        return Err(not_object(prefix));
    }
    serde_json::from_str(body.get()).map_err(|e| FrameError::syntax(e.to_string()))
}

type Field<'a> = Option<&'a RawValue>;

#[derive(Deserialize)]
struct DataFields<'a> {
    #[serde(borrow, default, rename = "type")]
    kind: Field<'a>,
    #[serde(borrow, default)]
    room_id: Field<'a>,
    #[serde(borrow, default)]
    bridge_id: Field<'a>,
    #[serde(borrow, default)]
    channel_type: Field<'a>,
    #[serde(borrow, default)]
    payload: Field<'a>,
    #[serde(borrow, default)]
    sequence: Field<'a>,
}

/// A WebSocket frame read for a domain event: the envelope, with `data` read as an object.
#[derive(Deserialize)]
struct DomainEnvelope<'a> {
    #[serde(borrow, default)]
    event: Option<&'a RawValue>,
    #[serde(borrow, default)]
    data: Option<DataObject<'a>>,
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
}

/// [`DataFields`] from a JSON object only (a derived struct would also read an array).
struct DataObject<'a>(DataFields<'a>);

impl<'de: 'a, 'a> Deserialize<'de> for DataObject<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Object<'a>(std::marker::PhantomData<DataFields<'a>>);
        impl<'de: 'a, 'a> serde::de::Visitor<'de> for Object<'a> {
            type Value = DataObject<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                DataFields::deserialize(serde::de::value::MapAccessDeserializer::new(map)).map(DataObject)
            }
        }
        d.deserialize_map(Object(std::marker::PhantomData))
    }
}

fn domain(name: &str, data: &RawValue, id: u64, p: &str) -> Result<Frame, FrameError> {
    // `object`'s check, then the same reader as the one-pass path (one copy of it in the build).
    if !data.get().starts_with('{') {
        return Err(not_object(p));
    }
    let DataObject(d) = serde_json::from_str(data.get()).map_err(|e| FrameError::syntax(e.to_string()))?;
    domain_fields(name, d, id, p)
}

fn domain_fields(name: &str, d: DataFields<'_>, id: u64, p: &str) -> Result<Frame, FrameError> {
    let kind = EventKind::parse(name);
    if let Some(t) = d.kind {
        let t = string(t, "data.type")?;
        if t != name {
            return Err(FrameError::mismatch(
                "data.type",
                format_args!("is `{t}` but the event is `{name}`"),
            ));
        }
    }
    let sequence: u64 = req(d.sequence, p, "sequence")?;
    if sequence != id {
        return Err(FrameError::mismatch(
            "id",
            format_args!("is {id} but `data.sequence` is {sequence}"),
        ));
    }
    let room_id = match d.room_id {
        None => return Err(FrameError::missing(&path(p, "room_id"))),
        Some(r) => string(r, "data.room_id")?.into_owned(),
    };
    Ok(Frame::Event(DomainEvent {
        kind,
        room_id,
        bridge_id: opt(d.bridge_id, p, "bridge_id")?,
        channel_type: opt(d.channel_type, p, "channel_type")?,
        sequence,
        payload: d
            .payload
            .ok_or_else(|| FrameError::missing(&path(p, "payload")))?
            .to_owned(),
    }))
}

#[derive(Deserialize)]
struct ControlFields<'a> {
    #[serde(borrow, default)]
    connection_id: Field<'a>,
    #[serde(borrow, default)]
    agent_id: Field<'a>,
    #[serde(borrow, default)]
    generation: Field<'a>,
    #[serde(borrow, default)]
    scope: Field<'a>,
    #[serde(borrow, default)]
    filter: Field<'a>,
    #[serde(borrow, default)]
    spawn_capable: Field<'a>,
    #[serde(borrow, default)]
    rooms: Field<'a>,
    #[serde(borrow, default)]
    cursor: Field<'a>,
    #[serde(borrow, default)]
    protocol: Field<'a>,
    #[serde(borrow, default)]
    heartbeat_interval_seconds: Field<'a>,
    #[serde(borrow, default)]
    server: Field<'a>,
    #[serde(borrow, default)]
    client: Field<'a>,
    #[serde(borrow, default)]
    from_sequence: Field<'a>,
    #[serde(borrow, default)]
    resumed_at: Field<'a>,
    #[serde(borrow, default)]
    resumed_position: Field<'a>,
    #[serde(borrow, default)]
    all_rooms: Field<'a>,
    #[serde(borrow, default)]
    reason: Field<'a>,
    #[serde(borrow, default)]
    code: Field<'a>,
    #[serde(borrow, default)]
    room_id: Field<'a>,
    #[serde(borrow, default)]
    session_id: Field<'a>,
    #[serde(borrow, default)]
    status: Field<'a>,
    #[serde(borrow, default)]
    detail: Field<'a>,
}

fn control(
    name: &str,
    body: &RawValue,
    p: &str,
    unknown_raw: impl FnOnce() -> Box<RawValue>,
) -> Result<Frame, FrameError> {
    let known = matches!(
        name,
        "connection_state" | "gap" | "evicted" | "subscription_changed" | "room_released" | "ping" | "refused"
    );
    if !known {
        return Ok(Frame::Unknown {
            name: name.to_owned(),
            raw: unknown_raw(),
        });
    }
    let f: ControlFields<'_> = object(body, p)?;
    let reason =
        |f: &ControlFields<'_>| -> Result<String, FrameError> { Ok(opt(f.reason, p, "reason")?.unwrap_or_default()) };
    let raw = |v: Field<'_>| v.map(|r| r.to_owned());
    Ok(match name {
        "connection_state" => Frame::ConnectionState(ConnectionState {
            connection_id: req(f.connection_id, p, "connection_id")?,
            agent_id: req(f.agent_id, p, "agent_id")?,
            generation: f
                .generation
                .map(|g| conn_generation(g, &path(p, "generation")))
                .transpose()?,
            scope: req(f.scope, p, "scope")?,
            filter: req(f.filter, p, "filter")?,
            spawn_capable: opt(f.spawn_capable, p, "spawn_capable")?.unwrap_or(false),
            rooms: req(f.rooms, p, "rooms")?,
            cursor: req(f.cursor, p, "cursor")?,
            protocol: opt(f.protocol, p, "protocol")?,
            heartbeat_interval_seconds: opt(f.heartbeat_interval_seconds, p, "heartbeat_interval_seconds")?,
            server: raw(f.server),
            client: raw(f.client),
        }),
        "gap" => Frame::Gap(Gap {
            from_sequence: req(f.from_sequence, p, "from_sequence")?,
            resumed_at: req(f.resumed_at, p, "resumed_at")?,
            resumed_position: raw(f.resumed_position),
            rooms: opt(f.rooms, p, "rooms")?,
            all_rooms: opt(f.all_rooms, p, "all_rooms")?,
            reason: reason(&f)?,
        }),
        "evicted" => Frame::Evicted(Evicted {
            code: opt::<String>(f.code, p, "code")?.map(|c| EvictionCode::parse(&c)),
            reason: reason(&f)?,
            room_id: opt(f.room_id, p, "room_id")?,
        }),
        "subscription_changed" => Frame::SubscriptionChanged(SubscriptionChanged {
            rooms: req(f.rooms, p, "rooms")?,
            reason: reason(&f)?,
        }),
        "room_released" => Frame::RoomReleased(RoomReleased {
            room_id: req(f.room_id, p, "room_id")?,
            session_id: opt(f.session_id, p, "session_id")?,
        }),
        "refused" => Frame::Refused(Refused {
            status: req(f.status, p, "status")?,
            detail: f.detail.map_or_else(|| empty_string().to_owned(), |d| d.to_owned()),
        }),
        _ => Frame::Ping,
    })
}

fn empty_string() -> &'static RawValue {
    serde_json::from_str("\"\"").expect("`\"\"` is JSON")
}

/// The old `ConnGeneration::from_raw`.
fn conn_generation(raw: &RawValue, field: &str) -> Result<super::ConnGeneration, FrameError> {
    let s = raw.get();
    if s.starts_with('"') {
        return Ok(super::ConnGeneration::Text(string(raw, field)?.into_owned()));
    }
    s.parse()
        .map(super::ConnGeneration::Number)
        .map_err(|_| FrameError::wrong(field, "has the wrong type: expected a whole number ≥ 0 or a string"))
}
