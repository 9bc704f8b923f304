//! What every `watch` command waits with: the next event, or nothing once the `--for-ms`
//! deadline passes or Ctrl-C (or SIGTERM) comes.

use crate::signal::Stop;
use std::future::Future;
use std::time::Duration;
use tokio::time::Instant;

/// The deadline of `--for-ms`, from now.
pub fn deadline(for_ms: Option<u64>) -> Option<Instant> {
    for_ms.map(|ms| Instant::now() + Duration::from_millis(ms))
}

/// `next`'s item, or `None` at the deadline or on a signal `stop` hears.
pub async fn next_or_stop<T>(
    deadline: Option<Instant>,
    stop: &mut Stop,
    next: impl Future<Output = Option<T>>,
) -> Option<T> {
    let next = async {
        match deadline {
            Some(d) => tokio::time::timeout_at(d, next).await.ok().flatten(),
            None => next.await,
        }
    };
    tokio::select! {
        item = next => item,
        _ = stop.recv() => None,
    }
}
