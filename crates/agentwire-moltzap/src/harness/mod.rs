//! The values of MoltZap's `HarnessEndpoint` contract (`../shared/specs/moltzap-harness-endpoint.md`),
//! as pure, sans-IO code: canonical JSON, addresses, content, the collective part on the wire,
//! the collective id, inbound classification of a certified record, the requested-schema and
//! answer validation, `parseMessageText`, and the closed failures. The endpoint itself (the
//! operations over a session) is not here yet. The decisions are in
//! `docs/protocols/moltzap-harness.md`.

pub mod canonical;
pub mod json;

pub use canonical::{format_number, to_canonical};
pub use json::{JsonError, JsonNumber, JsonObject, JsonPath, JsonValue};
