//! Switch Rooms, sans-IO: the agent connection of the current generation (one WebSocket,
//! `../shared/specs/switch-agent-connection.md`) and of released servers (switch-core 0.19: an
//! SSE stream plus HTTP beats, `../shared/specs/switch-released-0.19.md`). The decisions are in
//! `docs/protocols/switch.md`.

pub mod frame;
pub mod open;
pub mod sse;
