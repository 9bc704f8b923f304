//! The command line of `moltzap-peer` and of `agentwire peers moltzap`: the flags and what is
//! printed, written once for both.

use crate::{bind, Generation, PeerConfig};
use agentwire_peer_kit::cli::{say, warn, Listen, Wire};
use std::process::ExitCode;
use std::time::Duration;

/// The flags; `DEFAULT_PORT` is the default of `--port` (0 picks a free port).
#[derive(Debug, Clone, clap::Args)]
pub struct Args<const DEFAULT_PORT: u16 = 0> {
    #[command(flatten)]
    listen: Listen<DEFAULT_PORT>,
    /// Wire generation to speak
    #[arg(long, value_enum, default_value = "current")]
    generation: Wire,
    /// WebSocket ping interval in milliseconds (current generation)
    #[arg(long, default_value_t = 30_000)]
    ping_interval_ms: u64,
}

impl<const DEFAULT_PORT: u16> Args<DEFAULT_PORT> {
    /// The port the peer listens on: `--port`, or `DEFAULT_PORT`.
    pub fn port(&self) -> u16 {
        self.listen.port()
    }
}

/// Runs the peer until Ctrl-C. Prints `listening on ws://127.0.0.1:PORT/ws` once it is bound
/// (stdout), and how to register (stderr).
pub async fn run<const DEFAULT_PORT: u16>(args: Args<DEFAULT_PORT>) -> ExitCode {
    let generation = match args.generation {
        Wire::Current => Generation::Current,
        Wire::Released => Generation::Released,
    };
    let cfg = PeerConfig::new(generation).with_ping_interval(Duration::from_millis(args.ping_interval_ms.max(1)));
    let (handle, interrupt) = match args.listen.start(|port| bind(port, cfg)).await {
        Ok(started) => started,
        Err(code) => return code,
    };
    say(format_args!("listening on {}", handle.ws_url()));
    warn(format_args!(
        "moltzap peer, {} generation; register with `agentwire moltzap register NAME --server {url}` \
         or POST {url}{}",
        generation.as_str(),
        agentwire_moltzap::register::PATH,
        url = handle.http_url(),
    ));
    interrupt.wait().await;
    handle.shutdown().await;
    ExitCode::SUCCESS
}
