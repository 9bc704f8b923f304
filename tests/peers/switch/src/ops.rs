//! `GET /agents/{id}/ops` and `POST /agents/{id}/ops/{name}`: the catalog (descriptions and
//! input schemas copied from switch-core 0.19's, `tests/vectors/switch-0.19/ops.json`), the
//! arguments checked as switch-core does, and the dispatch to the state.

use crate::query::Refusal;
use crate::state::State;
use crate::util::parse_iso;
use serde_json::{Map, Value};

/// `{"operations": {...}}` for the operations the peer implements.
pub(crate) const CATALOG: &str = include_str!("catalog.json");

/// The operations, sorted, with the arguments each accepts.
const OPS: [(&str, &[&str]); 6] = [
    ("connect_to_room", &["room_id", "include_general_instructions"]),
    ("list_participants", &[]),
    ("list_rooms", &["include_archived"]),
    ("post_message", &["body", "thread_id"]),
    ("read_context", &["limit", "since", "before"]),
    (
        "send_targeted_message",
        &["body", "target_names", "target_roles", "thread_id"],
    ),
];

fn bad(detail: impl Into<String>) -> Refusal {
    Refusal::new(400, detail)
}

/// The arguments of one call.
struct Args<'a> {
    op: &'a str,
    map: Map<String, Value>,
}

impl Args<'_> {
    fn string(&self, name: &str) -> Result<Option<&str>, Refusal> {
        match self.map.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(bad(format!("{}: {name} must be a string", self.op))),
        }
    }

    fn required(&self, name: &str) -> Result<&str, Refusal> {
        self.string(name)?
            .ok_or_else(|| bad(format!("{} requires: {name}", self.op)))
    }

    fn strings(&self, name: &str) -> Result<Vec<String>, Refusal> {
        match self.map.get(name) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| v.as_str().map(str::to_owned))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| bad(format!("{}: {name} must be a list of strings", self.op))),
            Some(_) => Err(bad(format!("{}: {name} must be a list of strings", self.op))),
        }
    }

    fn boolean(&self, name: &str) -> Result<Option<bool>, Refusal> {
        match self.map.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(_) => Err(bad(format!("{}: {name} must be a boolean", self.op))),
        }
    }

    fn integer(&self, name: &str) -> Result<Option<i64>, Refusal> {
        match self.map.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => v
                .as_i64()
                .map(Some)
                .ok_or_else(|| bad(format!("{}: {name} must be an integer", self.op))),
        }
    }

    fn time(&self, name: &str) -> Result<Option<i64>, Refusal> {
        self.string(name)?
            .map(|s| {
                parse_iso(s).ok_or_else(|| bad(format!("{}: {name} must be an ISO-8601 timestamp, got '{s}'", self.op)))
            })
            .transpose()
    }
}

/// One operation call. `conn_id` is the `X-Switch-Connection-Id` header. Returns the answer's
/// body, `{"result": ...}`.
pub(crate) fn call(
    state: &mut State,
    agent_id: &str,
    conn_id: Option<&str>,
    name: &str,
    body: &[u8],
) -> Result<String, Refusal> {
    let Some((op, accepted)) = OPS.iter().find(|(n, _)| *n == name) else {
        let names: Vec<&str> = OPS.iter().map(|(n, _)| *n).collect();
        let shown: String = name.chars().take(64).collect();
        return Err(Refusal::new(
            404,
            format!("unknown operation '{shown}'; expected one of: {}", names.join(", ")),
        ));
    };
    if let Some(c) = conn_id {
        if !state.conn_open(agent_id, c) {
            return Err(Refusal::new(409, crate::state::not_open(c)));
        }
    }
    let text = std::str::from_utf8(body).map_err(|_| bad("arguments must be UTF-8 JSON"))?;
    let map = if text.trim().is_empty() {
        Map::new()
    } else {
        match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(m)) => m,
            Ok(_) => return Err(bad(format!("{op}: arguments must be a JSON object"))),
            Err(_) => return Err(bad(format!("{op}: arguments are not valid JSON"))),
        }
    };
    let mut unexpected: Vec<&str> = map
        .keys()
        .map(String::as_str)
        .filter(|k| !accepted.contains(k))
        .collect();
    if !unexpected.is_empty() {
        unexpected.sort_unstable();
        return Err(bad(format!("{op} does not accept: {}", unexpected.join(", "))));
    }
    let a = Args { op, map };
    let result = match *op {
        "connect_to_room" => {
            a.boolean("include_general_instructions")?;
            state.connect_to_room(agent_id, conn_id, a.required("room_id")?)
        }
        "post_message" => state.post_message(agent_id, conn_id, a.required("body")?, a.string("thread_id")?),
        "send_targeted_message" => state.send_targeted(
            agent_id,
            conn_id,
            a.required("body")?,
            &a.strings("target_names")?,
            &a.strings("target_roles")?,
            a.string("thread_id")?,
        ),
        "read_context" => {
            let limit = a.integer("limit")?.unwrap_or(50).clamp(1, 1000) as usize;
            state.read_context(agent_id, conn_id, limit, a.time("since")?, a.time("before")?)
        }
        "list_rooms" => {
            a.boolean("include_archived")?;
            state.list_rooms(agent_id, conn_id)
        }
        _ => state.list_participants(agent_id, conn_id),
    }?;
    Ok(format!(r#"{{"result":{result}}}"#))
}

#[cfg(test)]
mod tests {
    use crate::state::State;
    use crate::{Generation, PeerConfig};

    #[test]
    fn hostile_arguments_are_refused_not_panicked_on() {
        let mut state = State::new(&PeerConfig::new(Generation::Current));
        let a = state.add_agent("a");
        let bodies: [&[u8]; 9] = [
            b"",
            b"\xff\xfe",
            b"null",
            b"{\"limit\":-5}",
            b"{\"limit\":1e300}",
            b"{\"since\":\"99999999999999999999-01-01\"}",
            b"{\"room_id\":{}}",
            b"{\"target_names\":[1]}",
            b"{\"body\":\"x\",\"thread_id\":\"$nope\"}",
        ];
        for (name, _) in super::OPS {
            for body in bodies {
                for conn in [None, Some(""), Some("0f8fad5b-d9cb-469f-a165-70867728950e")] {
                    if let Ok(answer) = super::call(&mut state, &a.id, conn, name, body) {
                        assert!(answer.starts_with(r#"{"result":"#), "{answer}");
                    }
                }
            }
        }
    }

    #[test]
    fn catalog_lists_every_operation() {
        let v: serde_json::Value = serde_json::from_str(super::CATALOG).unwrap();
        let ops = v["operations"].as_object().unwrap();
        let names: Vec<&str> = ops.keys().map(String::as_str).collect();
        let expected: Vec<&str> = super::OPS.iter().map(|(n, _)| *n).collect();
        assert_eq!(names, expected);
        for (name, args) in super::OPS {
            let props = ops[name]["input_schema"]["properties"].as_object().unwrap();
            let mut keys: Vec<&str> = props.keys().map(String::as_str).collect();
            let mut want = args.to_vec();
            keys.sort_unstable();
            want.sort_unstable();
            assert_eq!(keys, want, "{name}");
        }
    }
}
