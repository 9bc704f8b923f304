//! `switch-peer`: the Switch test peer on 127.0.0.1 until interrupted.
//!
//! Prints `listening on http://127.0.0.1:PORT` first, then `agent NAME id=UUID key=KEY` per
//! agent and `room NAME id=UUID members=NAME,NAME` per room. With no `--agent` and no `--room`
//! it creates agents `alice` and `bob` and room `lobby` with both.

use agentwire_peer_switch::{bind, Generation, PeerConfig};
use clap::{Parser, ValueEnum};
use std::io::Write;
use std::time::Duration;

#[derive(Clone, Copy, ValueEnum)]
enum Gen {
    Current,
    Released,
}

/// A Switch Rooms test server on 127.0.0.1 (HTTP, SSE and, in the current generation, the
/// WebSocket, on one port).
#[derive(Parser)]
#[command(name = "switch-peer")]
struct Args {
    /// Port to listen on (0 picks a free one).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Wire generation to speak.
    #[arg(long, value_enum, default_value = "current")]
    generation: Gen,
    /// An agent to register (repeatable).
    #[arg(long = "agent", value_name = "NAME")]
    agents: Vec<String>,
    /// A room and its members, `NAME:AGENT,AGENT` (repeatable; unknown agents are registered).
    #[arg(long = "room", value_name = "NAME:AGENT,AGENT")]
    rooms: Vec<String>,
    /// Ping interval (WebSocket) and announced beat interval, in milliseconds.
    #[arg(long, default_value_t = 2000)]
    heartbeat_interval_ms: u64,
    /// No pong or beat for this long lapses a connection, in milliseconds.
    #[arg(long, default_value_t = 6000)]
    heartbeat_ttl_ms: u64,
    /// Bearer token for `POST /agents`.
    #[arg(long, default_value = "switch-peer-registration")]
    registration_token: String,
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> std::io::Result<()> {
    let args = Args::parse();
    let generation = match args.generation {
        Gen::Current => Generation::Current,
        Gen::Released => Generation::Released,
    };
    let mut cfg = PeerConfig::new(generation);
    cfg.heartbeat_interval = Duration::from_millis(args.heartbeat_interval_ms.max(1));
    cfg.heartbeat_ttl = Duration::from_millis(args.heartbeat_ttl_ms.max(1));
    cfg.registration_token = args.registration_token;
    let (agents, rooms) = if args.agents.is_empty() && args.rooms.is_empty() {
        (
            vec!["alice".to_owned(), "bob".to_owned()],
            vec!["lobby:alice,bob".to_owned()],
        )
    } else {
        (args.agents, args.rooms)
    };
    // Listen for Ctrl-C before announcing the port, so an interrupt right after is not lost.
    #[cfg(unix)]
    let mut interrupt = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())?;
    let handle = bind(args.port, cfg).await?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "listening on {}", handle.http_url())?;
    let mut registered: Vec<agentwire_peer_switch::Agent> = Vec::new();
    let mut register = |name: &str, out: &mut std::io::StdoutLock<'_>| -> std::io::Result<String> {
        if let Some(a) = registered.iter().find(|a| a.name == name) {
            return Ok(a.id.clone());
        }
        let a = handle.add_agent(name);
        writeln!(out, "agent {} id={} key={}", a.name, a.id, a.key)?;
        registered.push(a.clone());
        Ok(a.id)
    };
    for name in &agents {
        register(name, &mut out)?;
    }
    for spec in &rooms {
        let (name, members) = spec.split_once(':').unwrap_or((spec.as_str(), ""));
        let names: Vec<&str> = members.split(',').map(str::trim).filter(|m| !m.is_empty()).collect();
        let mut ids = Vec::new();
        for m in &names {
            ids.push(register(m, &mut out)?);
        }
        let id_refs: Vec<&str> = ids.iter().map(String::as_str).collect();
        let id = handle.add_room(name, &id_refs);
        writeln!(out, "room {name} id={id} members={}", names.join(","))?;
    }
    out.flush()?;
    drop(out);
    eprintln!(
        "switch-peer: {} generation on {}; register more agents with POST /agents (Bearer registration token)",
        generation.as_str(),
        handle.http_url()
    );
    #[cfg(unix)]
    interrupt.recv().await;
    #[cfg(not(unix))]
    tokio::signal::ctrl_c().await?;
    handle.shutdown().await;
    Ok(())
}
