//! The command line of `switch-peer` and of `agentwire peers switch`: the flags and what is
//! printed, written once for both.

use crate::{bind, Agent, Generation, PeerConfig};
use agentwire_peer_kit::cli::{say, warn, Listen, Wire};
use agentwire_peer_kit::ids;
use std::process::ExitCode;
use std::time::Duration;

/// The flags; `DEFAULT_PORT` is the default of `--port` (0 picks a free port).
#[derive(Debug, Clone, clap::Args)]
pub struct Args<const DEFAULT_PORT: u16 = 0> {
    #[command(flatten)]
    listen: Listen<DEFAULT_PORT>,
    /// `current`: the WebSocket and the SSE stream; `released` (switch-core 0.19): SSE only
    #[arg(long, value_enum, default_value = "current")]
    generation: Wire,
    /// An agent to register (repeatable); with no --agent and no --room: alice and bob
    #[arg(long = "agent", value_name = "NAME")]
    agents: Vec<String>,
    /// A room and its members (repeatable; unknown agents are registered); with no --agent and
    /// no --room: lobby:alice,bob
    #[arg(long = "room", value_name = "NAME:AGENT,AGENT")]
    rooms: Vec<String>,
    /// Ping interval (WebSocket) and announced beat interval, in milliseconds
    #[arg(long, default_value_t = 2000)]
    heartbeat_interval_ms: u64,
    /// No pong or beat for this long lapses a connection, in milliseconds
    #[arg(long, default_value_t = 6000)]
    heartbeat_ttl_ms: u64,
    /// Bearer token for `POST /agents` [default: a random one for this run, printed on stderr]
    #[arg(long)]
    registration_token: Option<String>,
}

impl<const DEFAULT_PORT: u16> Args<DEFAULT_PORT> {
    /// The port the peer listens on: `--port`, or `DEFAULT_PORT`.
    pub fn port(&self) -> u16 {
        self.listen.port()
    }
}

/// Runs the peer until Ctrl-C. Prints (stdout) `listening on http://127.0.0.1:PORT` once it is
/// bound, then `agent NAME id=UUID key=KEY` per agent and `room NAME id=UUID members=NAME,NAME`
/// per room (an agent first named as a member is registered, and printed, just before its
/// room); then how to try it (stderr).
pub async fn run<const DEFAULT_PORT: u16>(args: Args<DEFAULT_PORT>) -> ExitCode {
    let generation = match args.generation {
        Wire::Current => Generation::Current,
        Wire::Released => Generation::Released,
    };
    let mut cfg = PeerConfig::new(generation);
    cfg.heartbeat_interval = Duration::from_millis(args.heartbeat_interval_ms.max(1));
    cfg.heartbeat_ttl = Duration::from_millis(args.heartbeat_ttl_ms.max(1));
    // Random unless given: a fixed default would let anything that reaches the port register.
    cfg.registration_token = args
        .registration_token
        .unwrap_or_else(|| format!("swreg_{}", ids::hex(&ids::random_bytes::<16>())));
    let token = cfg.registration_token.clone();
    let (agents, rooms) = if args.agents.is_empty() && args.rooms.is_empty() {
        (
            vec!["alice".to_owned(), "bob".to_owned()],
            vec!["lobby:alice,bob".to_owned()],
        )
    } else {
        (args.agents, args.rooms)
    };
    let (handle, interrupt) = match args.listen.start(|port| bind(port, cfg)).await {
        Ok(started) => started,
        Err(code) => return code,
    };
    say(format_args!("listening on {}", handle.http_url()));
    let mut registered: Vec<Agent> = Vec::new();
    let mut register = |name: &str| -> String {
        if let Some(a) = registered.iter().find(|a| a.name == name) {
            return a.id.clone();
        }
        let a = handle.add_agent(name);
        say(format_args!("agent {} id={} key={}", a.name, a.id, a.key));
        let id = a.id.clone();
        registered.push(a);
        id
    };
    for name in &agents {
        register(name);
    }
    for spec in &rooms {
        let (name, members) = spec.split_once(':').unwrap_or((spec.as_str(), ""));
        let names: Vec<&str> = members.split(',').map(str::trim).filter(|m| !m.is_empty()).collect();
        let ids: Vec<String> = names.iter().map(|m| register(m)).collect();
        let id_refs: Vec<&str> = ids.iter().map(String::as_str).collect();
        let id = handle.add_room(name, &id_refs);
        say(format_args!("room {name} id={id} members={}", names.join(",")));
    }
    warn(format_args!(
        "switch peer, {} generation; try `SWITCH_AGENT_KEY=KEY agentwire switch watch --url {url} --agent ID --room ROOM_ID`; \
         register more agents with POST {url}/agents (Authorization: Bearer {token})",
        generation.as_str(),
        url = handle.http_url(),
    ));
    interrupt.wait().await;
    handle.shutdown().await;
    ExitCode::SUCCESS
}
