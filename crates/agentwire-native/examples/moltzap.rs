//! MoltZap with the tokio driver: bob listens, alice sends him a message, bob lists his recent
//! messages.
//!
//! Run against the playground's MoltZap peer (`scripts/play.sh` prints the keys;
//! `agentwire moltzap register NAME` makes new ones):
//! `cargo run -p agentwire-native --example moltzap -- ws://127.0.0.1:7750/ws ALICE_KEY BOB_KEY`

// The engines' errors are returned by value, as the engines do.
#![allow(clippy::result_large_err)]

use agentwire_moltzap::session::{Event, SendMessage};
use agentwire_moltzap::{Credentials, GenerationChoice};
use agentwire_native::moltzap::{MoltZapClient, MoltZapConfig};
use std::time::Duration;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [url, alice_key, bob_key] = args.as_slice() else {
        return Err("usage: moltzap URL ALICE_KEY BOB_KEY".into());
    };
    let mut cfg = MoltZapConfig::default();
    cfg.session.generation = GenerationChoice::Auto; // the current generation, else the released one
    let connect = |key: &str| MoltZapClient::connect(url, Credentials::AgentKey(key.into()), cfg.clone());
    let mut bob = connect(bob_key).await?;
    let alice = connect(alice_key).await?;
    println!("alice speaks the {:?} generation", alice.info().generation);

    let mut inbox = bob.events().expect("the first call takes the events");
    let msg = SendMessage::text_to_agent("bob", "hello bob");
    alice.request(move |s, now| s.messages_send(now, &msg)).await?;
    // Every wait is bounded: a message that never comes is an error, not a hang.
    let received = tokio::time::timeout(Duration::from_secs(5), async {
        while let Some(event) = inbox.recv().await {
            if let Event::MessageReceived {
                conversation_id,
                sender_id,
                ..
            } = event
            {
                return Some((conversation_id, sender_id));
            }
        }
        None
    })
    .await?;
    let (conversation, sender) = received.ok_or("bob's connection ended before the message came")?;
    let unknown = || "?".to_string();
    let (conversation, sender) = (conversation.unwrap_or_else(unknown), sender.unwrap_or_else(unknown));
    println!("bob got a message in conversation {conversation} from {sender}");

    let recent = bob.request(|s, now| s.recent_messages(now, None, 5)).await?;
    println!("bob's recent messages: {} bytes of JSON", recent.len());
    alice.close().await;
    bob.close().await;
    Ok(())
}
