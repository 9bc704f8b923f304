//! [`Events`]: the channel from a client's task to its reader, bounded in events and in bytes.
//! An event holds its bytes ([`Weigh`]) of the budget until the reader takes it; one larger than
//! the whole budget passes alone. The clients hand it out ([`crate::moltzap::MoltZapClient::events`],
//! [`crate::rkt::RktClient::events`], [`crate::switch::SwitchClient::events`]; Switch also reads
//! it through `next_event`), and RKT streams their chunks through it.

use std::sync::Arc;
use tokio::sync::mpsc::error::TryRecvError;
use tokio::sync::{mpsc, OwnedSemaphorePermit, Semaphore};

/// What an event weighs against a channel's byte budget.
pub trait Weigh {
    fn weight(&self) -> usize;
}

/// The Switch engine's own measure, the one its `max_queued_bytes` counts.
impl Weigh for agentwire_switch::Event {
    fn weight(&self) -> usize {
        self.queued_bytes()
    }
}

/// A push's data and routing ids, an `Other`'s name and data, a diagnostic's message; nothing of
/// the final `Disconnected`, so a channel out of bytes still takes it.
impl Weigh for agentwire_moltzap::Event {
    fn weight(&self) -> usize {
        use agentwire_moltzap::Event as E;
        let text = |s: &Option<String>| s.as_ref().map_or(0, String::len);
        match self {
            E::MessageReceived {
                data,
                conversation_id,
                message_id,
                sender_id,
            } => data.len() + text(conversation_id) + text(message_id) + text(sender_id),
            E::ConversationCreated { data, conversation_id }
            | E::ConversationUpdated { data, conversation_id }
            | E::ConversationArchived { data, conversation_id }
            | E::ConversationUnarchived { data, conversation_id } => data.len() + text(conversation_id),
            E::PresenceChanged { data, agent_id, status } => data.len() + text(agent_id) + text(status),
            E::Other { name, data } => name.len() + text(data),
            E::Diagnostic(e) => e.error.message.len(),
            _ => 0,
        }
    }
}

/// An event and the bytes it holds of each budget until it is read.
type Queued<T> = (T, Vec<OwnedSemaphorePermit>);

/// A channel of at most `events` events (at least 1) and `bytes` bytes of them.
pub(crate) fn channel<T: Weigh>(events: usize, bytes: usize) -> (EventTx<T>, Events<T>) {
    with_budgets(events, vec![ByteBudget::new(bytes)])
}

/// A channel of at most `events` events and `own` bytes of them that also takes its bytes from
/// `shared`, which other channels share (the RKT client's streams): one channel alone cannot
/// take all of `shared` when `own` is less.
pub(crate) fn channel_sharing<T: Weigh>(events: usize, own: usize, shared: &ByteBudget) -> (EventTx<T>, Events<T>) {
    with_budgets(events, vec![ByteBudget::new(own), shared.clone()])
}

fn with_budgets<T: Weigh>(events: usize, budgets: Vec<ByteBudget>) -> (EventTx<T>, Events<T>) {
    let (tx, rx) = mpsc::channel(events.max(1));
    (EventTx { tx, budgets }, Events(rx))
}

/// Bytes that one channel, or several, may hold unread.
#[derive(Clone)]
pub(crate) struct ByteBudget(Arc<Semaphore>, u32);

impl ByteBudget {
    pub(crate) fn new(bytes: usize) -> ByteBudget {
        let budget = bytes.clamp(1, Semaphore::MAX_PERMITS.min(u32::MAX as usize)) as u32;
        ByteBudget(Arc::new(Semaphore::new(budget as usize)), budget)
    }

    /// An event's share of the budget: all of it for an event larger than the budget.
    fn cost(&self, weight: usize) -> u32 {
        u32::try_from(weight).map_or(self.1, |n| n.min(self.1))
    }

    fn try_take(&self, weight: usize) -> Option<OwnedSemaphorePermit> {
        self.0.clone().try_acquire_many_owned(self.cost(weight)).ok()
    }

    /// `None` only if the semaphore is closed, which it never is.
    async fn take(&self, weight: usize) -> Option<OwnedSemaphorePermit> {
        self.0.clone().acquire_many_owned(self.cost(weight)).await.ok()
    }
}

pub(crate) struct EventTx<T> {
    tx: mpsc::Sender<Queued<T>>,
    /// The event takes its bytes from each.
    budgets: Vec<ByteBudget>,
}

impl<T: Weigh> EventTx<T> {
    /// Sends at once, or gives the event back when the channel has no room for it. An event
    /// nobody will read any more is dropped.
    pub(crate) fn try_send(&self, event: T) -> Result<(), T> {
        let weight = event.weight();
        let Some(bytes) = self
            .budgets
            .iter()
            .map(|b| b.try_take(weight))
            .collect::<Option<Vec<_>>>()
        else {
            return Err(event);
        };
        match self.tx.try_send((event, bytes)) {
            Ok(()) | Err(mpsc::error::TrySendError::Closed(_)) => Ok(()),
            Err(mpsc::error::TrySendError::Full((event, _))) => Err(event),
        }
    }

    /// Sends `parked` once the channel has room for it (drops it when nobody reads any more:
    /// the reader closed the channel, even with its bytes still taken by unread events).
    /// Cancel-safe: the event leaves `parked` only with its bytes and a slot reserved.
    pub(crate) async fn send_parked(&self, parked: &mut Option<T>) {
        let Some(weight) = parked.as_ref().map(Weigh::weight) else {
            return;
        };
        let take_all = async {
            let mut bytes = Vec::with_capacity(self.budgets.len());
            for budget in &self.budgets {
                bytes.push(budget.take(weight).await?);
            }
            Some(bytes)
        };
        let bytes = tokio::select! {
            bytes = take_all => bytes,
            () = self.tx.closed() => None,
        };
        let Some(bytes) = bytes else {
            *parked = None;
            return;
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

    /// Free slots (not bytes).
    pub(crate) fn slots(&self) -> usize {
        self.tx.capacity()
    }

    pub(crate) fn max_slots(&self) -> usize {
        self.tx.max_capacity()
    }

    /// The reader is gone.
    pub(crate) fn is_closed(&self) -> bool {
        self.tx.is_closed()
    }
}

/// A client's events, in arrival order, bounded in count and in bytes (see the client's config).
/// The methods are those of tokio's `mpsc::Receiver` (`recv`, `poll_recv`, `try_recv`, `close`,
/// `len`).
pub struct Events<T>(mpsc::Receiver<Queued<T>>);

impl<T> Events<T> {
    /// The next event; `None` once the channel has ended.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe, as is the `Stream`'s `next`: dropped before it resolves (another branch of
    /// a `tokio::select!` won), no event is lost; the next call gets it.
    pub async fn recv(&mut self) -> Option<T> {
        self.0.recv().await.map(|(event, _bytes)| event)
    }

    /// Polls for the next event (for a `Stream` adapter); `Ready(None)` once the channel has
    /// ended.
    pub fn poll_recv(&mut self, cx: &mut std::task::Context<'_>) -> std::task::Poll<Option<T>> {
        self.0.poll_recv(cx).map(|e| e.map(|(event, _bytes)| event))
    }

    /// An event already waiting.
    pub fn try_recv(&mut self) -> Result<T, TryRecvError> {
        self.0.try_recv().map(|(event, _bytes)| event)
    }

    /// Takes no more events; those waiting can still be read.
    pub fn close(&mut self) {
        self.0.close();
    }

    /// Events waiting.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// The events as a `Stream` (`futures::StreamExt`'s `next`, `filter`, `take`, ...).
impl<T> futures_util::Stream for Events<T> {
    type Item = T;

    fn poll_next(mut self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<Option<T>> {
        self.poll_recv(cx)
    }
}

impl<T> std::fmt::Debug for Events<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Events").field("waiting", &self.0.len()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentwire_switch::frame::{DomainEvent, EventKind};
    use agentwire_switch::Event;
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

    #[test]
    fn a_moltzap_event_weighs_its_data_routing_ids_name_and_message() {
        use agentwire_moltzap::{Event as E, MoltZapError};
        let (data, text) = (|| "d".repeat(100), |n: usize| Some("t".repeat(n)));
        let weighs = [
            (
                E::MessageReceived {
                    data: data(),
                    conversation_id: text(20),
                    message_id: text(3),
                    sender_id: text(5),
                },
                128,
            ),
            (
                E::MessageReceived {
                    data: data(),
                    conversation_id: None,
                    message_id: None,
                    sender_id: None,
                },
                100,
            ),
            (
                E::ConversationCreated {
                    data: data(),
                    conversation_id: text(7),
                },
                107,
            ),
            (
                E::ConversationUpdated {
                    data: data(),
                    conversation_id: text(7),
                },
                107,
            ),
            (
                E::ConversationArchived {
                    data: data(),
                    conversation_id: text(7),
                },
                107,
            ),
            (
                E::ConversationUnarchived {
                    data: data(),
                    conversation_id: None,
                },
                100,
            ),
            (
                E::PresenceChanged {
                    data: data(),
                    agent_id: text(20),
                    status: text(3),
                },
                123,
            ),
            (
                E::Other {
                    name: "n".repeat(9),
                    data: text(30),
                },
                39,
            ),
            (
                E::Other {
                    name: "n".repeat(9),
                    data: None,
                },
                9,
            ),
            (
                E::Diagnostic(MoltZapError::local(agentwire_core::ErrorKind::Decode, "m".repeat(11))),
                11,
            ),
            (E::MissedPings { count: 3 }, 0),
            (
                E::Disconnected {
                    code: 1000,
                    reason: "r".repeat(50),
                },
                0,
            ),
        ];
        for (event, weight) in weighs {
            assert_eq!(event.weight(), weight, "{event:?}");
        }
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
        assert_eq!(rx.len(), 1);
        rx.close();
        drop(rx);
        assert!(tx.try_send(event(10)).is_ok());
        let mut parked = Some(event(10));
        tx.send_parked(&mut parked).await;
        assert!(parked.is_none());
    }

    #[test]
    fn a_channel_tells_its_free_slots_its_waiting_events_and_a_gone_reader() {
        let (tx, rx) = channel(3, 1 << 20);
        assert_eq!((tx.slots(), tx.max_slots(), rx.len(), rx.is_empty()), (3, 3, 0, true));
        assert!(!tx.is_closed());
        for _ in 0..2 {
            assert!(tx.try_send(event(10)).is_ok());
        }
        assert_eq!((tx.slots(), tx.max_slots(), rx.len(), rx.is_empty()), (1, 3, 2, false));
        assert_eq!(format!("{rx:?}"), "Events { waiting: 2 }");
        drop(rx);
        assert!(tx.is_closed());
    }

    #[tokio::test]
    async fn channels_sharing_a_budget_each_stop_at_their_own_first() {
        let shared = ByteBudget::new(1_000);
        let (a, mut a_rx) = channel_sharing(100, 600, &shared);
        let (b, _b_rx) = channel_sharing(100, 600, &shared);
        assert!(a.try_send(event(500)).is_ok());
        assert!(
            a.try_send(event(200)).is_err(),
            "a's own 600 are full, the shared 1,000 are not"
        );
        assert!(b.try_send(event(400)).is_ok(), "b still has room");
        assert!(b.try_send(event(200)).is_err(), "the shared 1,000 are full");
        a_rx.recv().await;
        assert!(b.try_send(event(200)).is_ok(), "a's read gave the shared bytes back");
    }

    #[tokio::test]
    async fn a_reader_that_closes_with_the_bytes_taken_lets_the_parked_event_go() {
        let (tx, mut rx) = channel(100, 1);
        assert!(tx.try_send(event(10)).is_ok(), "alone, it takes the whole budget");
        let mut parked = Some(tx.try_send(event(10)).expect_err("no bytes left"));
        // The reader closes without reading (SwitchClient::close keeps it while it waits).
        rx.close();
        let sent = tokio::time::timeout(std::time::Duration::from_secs(5), tx.send_parked(&mut parked)).await;
        assert!(sent.is_ok(), "send_parked waited for bytes nobody will free");
        assert!(parked.is_none());
        assert_eq!(rx.len(), 1, "the unread event stays readable");
    }
}
