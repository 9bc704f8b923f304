//! `agentwire peers moltzap|switch`: the local test peers, for the playground and for trying a
//! client. The flags and the output are the peers' own (`agentwire_peer_moltzap::Args` and
//! `run`, likewise for Switch), as their binaries have them; only the default ports differ.

use crate::command::{block_on, Threads};
use clap::Subcommand;
use std::process::ExitCode;

#[derive(Subcommand)]
pub enum Command {
    /// A MoltZap server on 127.0.0.1 (HTTP registration, the WebSocket at /ws), until Ctrl-C
    Moltzap(agentwire_peer_moltzap::Args<{ crate::moltzap::DEFAULT_PORT }>),
    /// A Switch Rooms server on 127.0.0.1 (HTTP, the SSE stream and, in the current generation,
    /// the WebSocket, all on one port), until Ctrl-C. Prints `listening on URL`, then one line
    /// per agent (`agent NAME id=ID key=KEY`) and per room (`room NAME id=ID members=A,B`)
    Switch(agentwire_peer_switch::Args<{ crate::switch::DEFAULT_PORT }>),
}

pub fn run(command: Command) -> ExitCode {
    match command {
        Command::Moltzap(args) => block_on(Threads::Many, agentwire_peer_moltzap::run(args)),
        Command::Switch(args) => block_on(Threads::Many, agentwire_peer_switch::run(args)),
    }
}
