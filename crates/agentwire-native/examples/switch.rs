//! Switch Rooms with the tokio driver, straight to the server with the agent key: attach, list
//! the operations, join a room, post to it, and see the message come back as an event.
//!
//! Run against the playground's Switch peer (`scripts/play.sh` prints the ids and keys):
//! `cargo run -p agentwire-native --example switch -- http://127.0.0.1:7751 AGENT_ID AGENT_KEY ROOM_ID`

// The engines' errors are returned by value, as the engines do.
#![allow(clippy::result_large_err)]

use agentwire_core::{Entropy, ErrorKind};
use agentwire_native::switch::SwitchClient;
use agentwire_native::OsEntropy;
use agentwire_switch::frame::EventKind;
use agentwire_switch::open::OpenParams;
use agentwire_switch::ops::{ConnectToRoom, PostMessage};
use agentwire_switch::{ConnectionConfig, Event, SwitchError};
use std::time::Duration;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [origin, agent_id, key, room] = args.as_slice() else {
        return Err("usage: switch ORIGIN AGENT_ID AGENT_KEY ROOM_ID".into());
    };
    // One connection id for the connection's life: every reopen resumes it.
    let mut cfg = ConnectionConfig::new(OpenParams::new(agent_id.as_str(), OsEntropy.uuid_v4()));
    cfg.open.rooms = vec![room.clone()];
    let mut client = SwitchClient::connect(origin, key, cfg).await?;
    println!("attached: rooms {}", client.status().rooms.join(", "));
    println!("operations: {}", client.list_ops().await?.operations.len());

    client.call(&ConnectToRoom::new(room)).await?;
    client.call(&PostMessage::new("hello from agentwire")).await?;
    // The connection reconnects and resumes by itself; events carry what happened meanwhile.
    let echoed = tokio::time::timeout(Duration::from_secs(5), async {
        while let Some(event) = client.next_event().await {
            if let Event::Event { event, .. } = event {
                if event.kind == EventKind::Message {
                    return event.message().map(|m| m.body).map_err(SwitchError::from);
                }
            }
        }
        Err(SwitchError::local(ErrorKind::Closed, "the connection stopped"))
    })
    .await??;
    println!("posted and received: {echoed}");
    client.close().await;
    Ok(())
}
