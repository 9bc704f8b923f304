//! `agentwire peers moltzap|switch`: the local test peers, for the playground and for trying a
//! client.

use agentwire_peer_moltzap::{bind, Generation, PeerConfig};
use clap::{Subcommand, ValueEnum};
use std::future::Future;
use std::process::ExitCode;
use std::time::Duration;

#[derive(Clone, Copy, ValueEnum)]
pub enum Gen {
    Current,
    Released,
}

#[derive(Subcommand)]
pub enum Command {
    /// A MoltZap server on 127.0.0.1 (HTTP registration, the WebSocket at /ws), until Ctrl-C
    Moltzap {
        /// 0 picks a free port (the URL is printed)
        #[arg(long, default_value_t = crate::moltzap::DEFAULT_PORT)]
        port: u16,
        #[arg(long, value_enum, default_value = "current")]
        generation: Gen,
        /// WebSocket ping interval (current generation)
        #[arg(long, default_value_t = 30_000)]
        ping_interval_ms: u64,
    },
    /// A Switch Rooms server on 127.0.0.1 (HTTP, the SSE stream and, in the current generation,
    /// the WebSocket, all on one port), until Ctrl-C. Prints `listening on URL`, then one line
    /// per agent (`agent NAME id=ID key=KEY`) and per room (`room NAME id=ID members=A,B`)
    Switch(crate::switch_peer::Args),
}

pub fn run(command: Command) -> ExitCode {
    match command {
        Command::Moltzap {
            port,
            generation,
            ping_interval_ms,
        } => block_on(moltzap(port, generation, ping_interval_ms)),
        Command::Switch(args) => block_on(crate::switch_peer::run(args)),
    }
}

fn block_on(f: impl Future<Output = ExitCode>) -> ExitCode {
    match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt.block_on(f),
        Err(e) => {
            eprintln!("error: cannot start the runtime: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn moltzap(port: u16, generation: Gen, ping_interval_ms: u64) -> ExitCode {
    let generation = match generation {
        Gen::Current => Generation::Current,
        Gen::Released => Generation::Released,
    };
    let cfg = PeerConfig::new(generation).with_ping_interval(Duration::from_millis(ping_interval_ms.max(1)));
    let handle = match bind(port, cfg).await {
        Ok(h) => h,
        Err(e) => {
            eprintln!("error: cannot listen on 127.0.0.1:{port}: {e}");
            return ExitCode::FAILURE;
        }
    };
    println!("listening on {}", handle.ws_url());
    eprintln!(
        "moltzap peer, {} generation; register with `agentwire moltzap register NAME --server {}`",
        generation.as_str(),
        handle.http_url()
    );
    let _ = tokio::signal::ctrl_c().await;
    handle.shutdown().await;
    ExitCode::SUCCESS
}
