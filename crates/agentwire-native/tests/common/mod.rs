//! Shared by the integration tests: a reference server on 127.0.0.1 and a bound on every test.

use agentwire_native::rkt::{self, ServerHandle};
use agentwire_rkt::reference::ReferenceConfig;
use std::future::Future;
use std::time::Duration;

/// Runs a test body with a hard time limit.
pub async fn bounded<T>(body: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(20), body)
        .await
        .expect("test timed out")
}

pub async fn server(cfg: ReferenceConfig) -> ServerHandle {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    rkt::spawn(listener, cfg).unwrap()
}
