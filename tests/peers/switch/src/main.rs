//! `switch-peer`: the Switch test peer on 127.0.0.1 until interrupted (the flags and the output
//! are `agentwire_peer_switch::Args` and `run`, shared with `agentwire peers switch`).
//!
//! Prints `listening on http://127.0.0.1:PORT` first, then `agent NAME id=UUID key=KEY` per
//! agent and `room NAME id=UUID members=NAME,NAME` per room. With no `--agent` and no `--room`
//! it creates agents `alice` and `bob` and room `lobby` with both.

use clap::Parser;
use std::process::ExitCode;

/// A Switch Rooms test server on 127.0.0.1 (HTTP, SSE and, in the current generation, the
/// WebSocket, on one port).
#[derive(Parser)]
#[command(name = "switch-peer")]
struct Cli {
    #[command(flatten)]
    args: agentwire_peer_switch::Args,
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> ExitCode {
    agentwire_peer_switch::run(Cli::parse().args).await
}
