//! `moltzap-peer --port N --generation current|released`: runs the MoltZap test peer on
//! 127.0.0.1 until interrupted.

use agentwire_peer_moltzap::{bind, Generation, PeerConfig};
use clap::{Parser, ValueEnum};
use std::time::Duration;

#[derive(Clone, Copy, ValueEnum)]
enum Gen {
    Current,
    Released,
}

/// A MoltZap test server on 127.0.0.1 (HTTP registration and the WebSocket at /ws).
#[derive(Parser)]
#[command(name = "moltzap-peer")]
struct Args {
    /// Port to listen on (0 picks a free one).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Wire generation to speak.
    #[arg(long, value_enum, default_value = "current")]
    generation: Gen,
    /// WebSocket ping interval in milliseconds (current generation).
    #[arg(long, default_value_t = 30_000)]
    ping_interval_ms: u64,
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> std::io::Result<()> {
    let args = Args::parse();
    let generation = match args.generation {
        Gen::Current => Generation::Current,
        Gen::Released => Generation::Released,
    };
    let cfg = PeerConfig::new(generation).with_ping_interval(Duration::from_millis(args.ping_interval_ms.max(1)));
    let handle = bind(args.port, cfg).await?;
    println!("listening on {}", handle.ws_url());
    eprintln!(
        "moltzap-peer: {} generation; register with POST {}/api/v1/auth/register",
        generation.as_str(),
        handle.http_url()
    );
    tokio::signal::ctrl_c().await?;
    handle.shutdown().await;
    Ok(())
}
