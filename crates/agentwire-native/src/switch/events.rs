//! The channel from the driver to [`super::SwitchClient::next_event`], bounded in events and in
//! bytes ([`Event::queued_bytes`], the engine's own measure). An event holds its bytes of the
//! budget until the reader takes it; one larger than the whole budget passes alone.

use agentwire_switch::Event;
use std::sync::Arc;
use tokio::sync::{mpsc, OwnedSemaphorePermit, Semaphore};

type Queued = (Event, OwnedSemaphorePermit);

/// A channel of at most `events` events (at least 1) and `bytes` bytes of them.
pub(crate) fn channel(events: usize, bytes: usize) -> (EventTx, EventRx) {
    let (tx, rx) = mpsc::channel(events.max(1));
    let budget = bytes.clamp(1, Semaphore::MAX_PERMITS.min(u32::MAX as usize)) as u32;
    let bytes = Arc::new(Semaphore::new(budget as usize));
    (EventTx { tx, bytes, budget }, EventRx(rx))
}

pub(crate) struct EventTx {
    tx: mpsc::Sender<Queued>,
    bytes: Arc<Semaphore>,
    budget: u32,
}

impl EventTx {
    /// The event's share of the budget: all of it for an event larger than the budget.
    fn cost(&self, event: &Event) -> u32 {
        u32::try_from(event.queued_bytes()).map_or(self.budget, |n| n.min(self.budget))
    }

    /// Sends at once, or gives the event back when the channel has no room for it. An event
    /// nobody will read any more is dropped.
    pub(crate) fn try_send(&self, event: Event) -> Result<(), Event> {
        let Ok(bytes) = self.bytes.clone().try_acquire_many_owned(self.cost(&event)) else {
            return Err(event);
        };
        match self.tx.try_send((event, bytes)) {
            Ok(()) | Err(mpsc::error::TrySendError::Closed(_)) => Ok(()),
            Err(mpsc::error::TrySendError::Full((event, _))) => Err(event),
        }
    }

    /// Sends `parked` once the channel has room for it (drops it when nobody reads any more).
    /// Cancel-safe: the event leaves `parked` only with its bytes and a slot reserved.
    pub(crate) async fn send_parked(&self, parked: &mut Option<Event>) {
        let Some(cost) = parked.as_ref().map(|e| self.cost(e)) else {
            return;
        };
        let Ok(bytes) = self.bytes.clone().acquire_many_owned(cost).await else {
            return; // never closed
        };
        match self.tx.reserve().await {
            Ok(slot) => {
                if let Some(event) = parked.take() {
                    slot.send((event, bytes));
                }
            }
            Err(_) => *parked = None,
        }
    }
}

pub(crate) struct EventRx(mpsc::Receiver<Queued>);

impl EventRx {
    pub(crate) async fn recv(&mut self) -> Option<Event> {
        self.0.recv().await.map(|(event, _bytes)| event)
    }

    pub(crate) fn try_recv(&mut self) -> Option<Event> {
        self.0.try_recv().ok().map(|(event, _bytes)| event)
    }

    pub(crate) fn close(&mut self) {
        self.0.close();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentwire_switch::frame::{DomainEvent, EventKind};
    use serde_json::value::RawValue;

    /// A domain event of `bytes` bytes by [`Event::queued_bytes`].
    fn event(bytes: usize) -> Event {
        let payload = RawValue::from_string(format!("\"{}\"", "x".repeat(bytes - 2))).unwrap();
        let event = DomainEvent {
            kind: EventKind::Message,
            room_id: String::new(),
            bridge_id: None,
            channel_type: None,
            sequence: 1,
            payload,
        };
        Event::Event { event, gap: None }
    }

    #[tokio::test]
    async fn the_budget_in_bytes_holds_events_back_until_the_reader_takes_some() {
        let (tx, mut rx) = channel(100, 1_000);
        for _ in 0..2 {
            assert!(tx.try_send(event(400)).is_ok());
        }
        let third = tx.try_send(event(400)).expect_err("1,200 bytes do not fit in 1,000");
        assert!(rx.recv().await.is_some());
        let mut parked = Some(third);
        tx.send_parked(&mut parked).await;
        assert!(parked.is_none(), "the reader made room");
        // An event larger than the whole budget passes alone.
        assert!(tx.try_send(event(5_000)).is_err());
        rx.recv().await;
        rx.recv().await;
        assert!(tx.try_send(event(5_000)).is_ok());
        assert!(
            tx.try_send(Event::Stopped { error: None }).is_ok(),
            "one of no bytes needs none"
        );
    }

    #[tokio::test]
    async fn the_count_still_bounds_and_a_gone_reader_drops_what_is_sent() {
        let (tx, mut rx) = channel(1, 1 << 20);
        assert!(tx.try_send(event(10)).is_ok());
        assert!(tx.try_send(event(10)).is_err());
        rx.close();
        drop(rx);
        assert!(tx.try_send(event(10)).is_ok());
        let mut parked = Some(event(10));
        tx.send_parked(&mut parked).await;
        assert!(parked.is_none());
    }
}
