//! `agentwire`: run, connect to and probe agents.

// `RktError`, `MoltZapError` and `SwitchError`, the engines' errors, are large and returned by value as the engine does.
#![allow(clippy::result_large_err)]

mod command;
mod moltzap;
mod out;
mod peers;
mod relay;
mod repl;
mod rkt;
mod signal;
mod switch;
mod watch;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "agentwire",
    version,
    about = "Run, connect to and probe agents",
    after_help = "TLS: wss://, https:// and rkts:// addresses use TLS (rustls), trusting the Mozilla roots \
                  (webpki-roots) plus the PEM certificates of the file named by AGENTWIRE_CA_FILE, if set \
                  (a private CA, a self-signed test certificate). The system's store is not read."
)]
struct Cli {
    #[command(subcommand)]
    protocol: Protocol,
}

#[derive(Subcommand)]
enum Protocol {
    /// RKT agents (WebSocket, subprotocol rkt.1.0)
    #[command(subcommand)]
    Rkt(rkt::Command),
    /// MoltZap agents (JSON-RPC over WebSocket, both generations)
    #[command(subcommand)]
    Moltzap(moltzap::Command),
    /// Switch Rooms agents (WebSocket or SSE, both generations)
    #[command(subcommand)]
    Switch(switch::Command),
    /// Local test peers on 127.0.0.1
    #[command(subcommand)]
    Peers(peers::Command),
    /// The Switch relay: mint relay tokens for browsers
    #[command(subcommand)]
    Relay(relay::Command),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Err(e) = agentwire_native::tls::add_root_certificates_from_env() {
        out::errln!("agentwire: {}", e.message);
        return ExitCode::FAILURE;
    }
    match cli.protocol {
        Protocol::Rkt(command) => rkt::run(command),
        Protocol::Moltzap(command) => moltzap::run(command),
        Protocol::Switch(command) => switch::run(command),
        Protocol::Peers(command) => peers::run(command),
        Protocol::Relay(command) => relay::run(command),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn peer_port(args: &[&str]) -> u16 {
        match Cli::try_parse_from(args).unwrap().protocol {
            Protocol::Peers(peers::Command::Moltzap(a)) => a.port(),
            Protocol::Peers(peers::Command::Switch(a)) => a.port(),
            _ => unreachable!("a peers command"),
        }
    }

    #[test]
    fn each_peer_has_its_own_default_port() {
        assert_eq!(peer_port(&["agentwire", "peers", "switch"]), switch::DEFAULT_PORT);
        assert_eq!(peer_port(&["agentwire", "peers", "moltzap"]), moltzap::DEFAULT_PORT);
        assert_eq!((switch::DEFAULT_PORT, moltzap::DEFAULT_PORT), (7751, 7750));
        assert_eq!(peer_port(&["agentwire", "peers", "switch", "--port", "0"]), 0);
    }
}
