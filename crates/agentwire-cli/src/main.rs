//! `agentwire`: run, connect to and probe agents.

// `RktError`, the engine's error, is large and returned by value as the engine does.
#![allow(clippy::result_large_err)]

mod repl;
mod rkt;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "agentwire", version, about = "Run, connect to and probe agents")]
struct Cli {
    #[command(subcommand)]
    protocol: Protocol,
}

#[derive(Subcommand)]
enum Protocol {
    /// RKT agents (WebSocket, subprotocol rkt.1.0)
    #[command(subcommand)]
    Rkt(rkt::Command),
}

fn main() -> ExitCode {
    match Cli::parse().protocol {
        Protocol::Rkt(command) => rkt::run(command),
    }
}
