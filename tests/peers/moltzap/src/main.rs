//! `moltzap-peer --port N --generation current|released`: runs the MoltZap test peer on
//! 127.0.0.1 until interrupted (the flags and the output are `agentwire_peer_moltzap::Args` and
//! `run`, shared with `agentwire peers moltzap`).

use clap::Parser;
use std::process::ExitCode;

/// A MoltZap test server on 127.0.0.1 (HTTP registration and the WebSocket at /ws).
#[derive(Parser)]
#[command(name = "moltzap-peer")]
struct Cli {
    #[command(flatten)]
    args: agentwire_peer_moltzap::Args,
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> ExitCode {
    agentwire_peer_moltzap::run(Cli::parse().args).await
}
