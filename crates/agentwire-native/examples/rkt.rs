//! RKT with the tokio driver: a request, a stream, memory, and a refused intent.
//!
//! Run against the playground's reference agent (or `agentwire rkt serve`):
//! `cargo run -p agentwire-native --example rkt -- ws://127.0.0.1:7749/rkt`

// The engines' errors are returned by value, as the engines do.
#![allow(clippy::result_large_err)]

use agentwire_native::rkt::RktClient;
use agentwire_rkt::{ClientConfig, RequestOptions};
use serde_json::json;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "ws://127.0.0.1:7749/rkt".into());
    let client = RktClient::connect(&url, ClientConfig::default()).await?;
    let server = &client.server_info().server;
    let from = server.from.as_deref().unwrap_or("an agent without From");
    println!("connected to {from} offering {}", server.capabilities.join(", "));

    // A request with its own time limit (its TTL, in seconds); the answer is the RESPONSE body.
    let opts = RequestOptions {
        ttl_s: Some(2),
        ..RequestOptions::default()
    };
    let now = client
        .request("weather.current", Some(json!({"city": "Seoul"})), opts)
        .await?;
    println!(
        "weather.current: {} °C, {}",
        now["data"]["temperature"], now["data"]["condition"]
    );

    // A stream: every STREAM_DATA body in order, then the end (None).
    let params = json!({"city": "Seoul", "days": 3});
    let mut days = client
        .stream("weather.forecast", Some(params), RequestOptions::default())
        .await?;
    while let Some(day) = days.recv().await {
        let day = day?;
        println!("forecast: {} {} / {}", day["date"], day["high"], day["low"]);
    }

    client
        .memory_set("city", json!("Seoul"), Some("user.prefs"), Some(3600))
        .await?;
    let city = client.memory_get("city", Some("user.prefs")).await?;
    println!("memory: {}", city.unwrap_or_default());

    // Errors are values with a kind, the server's code and whether a retry may help.
    match client.request("no.such.intent", None, RequestOptions::default()).await {
        Err(e) => println!(
            "refused ({:?}, code {:?}, retryable {}): {}",
            e.kind(),
            e.code(),
            e.error.retryable,
            e.error.message
        ),
        Ok(body) => return Err(format!("no.such.intent answered {body}").into()),
    }
    client.close().await;
    Ok(())
}
