//! The decoders: one WebSocket text message, or one SSE frame, into a [`Frame`].

use super::error::{FrameError, FrameErrorKind};
use super::{
    ConnectionState, DomainEvent, EventKind, Evicted, EvictionCode, Frame, Gap, Refused, RoomReleased,
    SubscriptionChanged,
};
use serde::Deserialize;
use serde_json::value::RawValue;
use std::borrow::Cow;

/// Bounds checked before parsing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecodeOptions {
    /// Largest message (or SSE `data`), in bytes (default 1 MiB).
    pub max_message_bytes: usize,
    /// Deepest nesting of arrays and objects, the frame included (default 64).
    pub max_depth: usize,
}

impl Default for DecodeOptions {
    fn default() -> Self {
        DecodeOptions {
            max_message_bytes: 1 << 20,
            max_depth: 64,
        }
    }
}

/// Decodes one WebSocket text message with the default limits.
pub fn decode(text: &str) -> Result<Frame, FrameError> {
    decode_with(text, &DecodeOptions::default())
}

/// Decodes one SSE frame of the released generation with the default limits.
pub fn decode_sse(event_name: &str, data: &str, id: Option<&str>) -> Result<Frame, FrameError> {
    decode_sse_with(event_name, data, id, &DecodeOptions::default())
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
        let id: u64 = id
            .parse()
            .map_err(|_| FrameError::wrong("id", format_args!("is `{id}`, not a sequence number")))?;
        return domain(event_name, body, id, "data.");
    }
    if EventKind::known(event_name).is_some() {
        return Err(FrameError::missing("id"));
    }
    control(event_name, body, "data.", || body.to_owned())
}

/// The sequence of a WebSocket domain event that could not be decoded, read from the end of the
/// text without parsing it (`..., "id": N}`, where switch-core puts it): a hint for reporting the
/// loss, `None` when the tail does not look like that.
pub fn event_id_hint(text: &str) -> Option<u64> {
    let b = text.trim_ascii_end().as_bytes();
    let b = b.strip_suffix(b"}")?.trim_ascii_end();
    let end = b.len();
    let mut start = end;
    while start > 0 && b[start - 1].is_ascii_digit() {
        start -= 1;
    }
    if start == end || end - start > 20 {
        return None;
    }
    let digits = &b[start..end];
    let mut rest = b[..start].trim_ascii_end();
    rest = rest.strip_suffix(b":")?.trim_ascii_end();
    rest.strip_suffix(b"\"id\"")?;
    std::str::from_utf8(digits).ok()?.parse().ok()
}

fn check_limits(text: &str, opts: &DecodeOptions) -> Result<(), FrameError> {
    if text.len() > opts.max_message_bytes {
        return Err(FrameError::new(
            FrameErrorKind::TooLarge,
            Some("message".into()),
            format!(
                "message of {} bytes exceeds the limit of {} bytes",
                text.len(),
                opts.max_message_bytes
            ),
        ));
    }
    if agentwire_core::json::nests_deeper_than(text.as_bytes(), opts.max_depth) {
        return Err(FrameError::new(
            FrameErrorKind::TooDeep,
            Some("message".into()),
            format!("JSON nests deeper than {} levels", opts.max_depth),
        ));
    }
    Ok(())
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

fn path(prefix: &str, name: &str) -> String {
    format!("{prefix}{name}")
}

/// A required field.
pub(crate) fn req<'a, T: Deserialize<'a>>(v: Option<&'a RawValue>, prefix: &str, name: &str) -> Result<T, FrameError> {
    match v {
        None => Err(FrameError::missing(&path(prefix, name))),
        Some(raw) => parse(raw, prefix, name),
    }
}

/// An optional field (absent or null → `None`).
pub(crate) fn opt<'a, T: Deserialize<'a>>(
    v: Option<&'a RawValue>,
    prefix: &str,
    name: &str,
) -> Result<Option<T>, FrameError> {
    v.map(|raw| parse(raw, prefix, name)).transpose()
}

fn parse<'a, T: Deserialize<'a>>(raw: &'a RawValue, prefix: &str, name: &str) -> Result<T, FrameError> {
    serde_json::from_str(raw.get()).map_err(|e| {
        let e = e.to_string();
        let e = e.split(" at line ").next().unwrap_or(&e).to_owned();
        FrameError::wrong(&path(prefix, name), format_args!("has the wrong type: {e}"))
    })
}

/// The error of a body that is not a JSON object (`prefix` names it: `data.`, or the frame).
fn not_object(prefix: &str) -> FrameError {
    let field = prefix.trim_end_matches('.');
    FrameError::wrong(if field.is_empty() { "frame" } else { field }, "must be a JSON object")
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
                .map(|g| super::ConnGeneration::from_raw(g, &path(p, "generation")))
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The one-pass path for domain events gives exactly what the general path gives.
    #[test]
    fn the_domain_fast_path_agrees_with_the_general_path() {
        let room = "47e911ea-014b-427b-a600-1c72595f0c98";
        let data = format!(
            r#"{{"type":"message","room_id":"{room}","bridge_id":null,"channel_type":"channel_public","payload":{{"body":"hi \"x\"","n":[1,{{"a":null}}]}},"sequence":7}}"#
        );
        let mut texts = vec![
            format!(r#"{{"event":"message","data":{data},"id":7}}"#),
            format!(r#"{{"id":7,"data":{data},"event":"message"}}"#),
            format!(r#"{{"event":"message","data":{data},"id":8}}"#),
            format!(r#"{{"event":"message","data":{data},"id":"7"}}"#),
            format!(r#"{{"event":"message","data":{data},"id":-1}}"#),
            format!(r#"{{"event":7,"data":{data},"id":7}}"#),
            format!(r#"{{"event":"joined","data":{data},"id":7}}"#),
            format!(r#"{{"event":"message","data":{data}}}"#),
            format!(r#"{{"event":"message","data":{data},"id":7,"id":7}}"#),
            format!(r#"{{"event":"message","data":{data},"id":7,"extra":[1,2]}}"#),
            format!(r#"{{"event":"message","type":"x","data":{data},"id":7}}"#),
            r#"{"event":"message","data":["message","r",null,null,{},7],"id":7}"#.into(),
            r#"{"event":"message","data":"text","id":7}"#.into(),
            r#"{"event":"message","data":null,"id":7}"#.into(),
            r#"{"event":"message","data":{},"id":7}"#.into(),
            r#"{"event":"message","data":{"room_id":"r","sequence":7,"sequence":7,"payload":1},"id":7}"#.into(),
            r#"{"event":"message","data":{"room_id":"r","sequence":7},"id":7}"#.into(),
            r#"{"event":"message","data":{"room_id":5,"sequence":7,"payload":1},"id":7}"#.into(),
            r#"{"event":"message","data":{"type":"joined","room_id":"r","sequence":7,"payload":1},"id":7}"#.into(),
            r#"{"event":"m\u0065ssage","data":{"room_id":"r\u00e9","sequence":7,"payload":{}},"id":7}"#.into(),
            r#"{"event":"ping","data":{}}"#.into(),
            r#"{"event":"gap","data":{"from_sequence":1,"resumed_at":2,"reason":"r"},"id":3}"#.into(),
            r#"{"type":"ping"}"#.into(),
            r#"{"event":"message","data":{"room_id":"r","sequence":7,"payload":1},"id":7"#.into(),
        ];
        // Every prefix of a valid frame: truncated text must fail the same way.
        let full = texts[0].clone();
        texts.extend((1..full.len()).map(|n| full[..n].to_string()));
        for text in &texts {
            let fast = format!("{:?}", decode(text));
            let general = format!("{:?}", decode_general(text));
            assert_eq!(fast, general, "{text}");
        }
        assert!(matches!(decode(&texts[0]), Ok(Frame::Event(_))));
    }
}
