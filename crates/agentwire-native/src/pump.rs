//! The loop every driver runs, once: frames from the socket, input from the driver's owner
//! (user commands, a stop signal) and the engine's timers go in; the engine's events go to the
//! driver's [`Handler`] and its frames to the socket, until the session is over.

use crate::clock::{driver_now, until};
use crate::wire::{Engine, Wire};
use agentwire_core::Millis;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{mpsc, watch};

/// Inputs taken from an [`Inbox`] in one go, so concurrent calls share a write.
const INPUT_BATCH: usize = 64;

/// An engine with events and timers.
pub(crate) trait Pumped: Engine {
    type Event;
    fn poll_event(&mut self) -> Option<Self::Event>;
    fn poll_timeout(&self) -> Option<Millis>;
    fn handle_timeout(&mut self, now: Millis);
}

/// Implements [`Pumped`] by the sessions' own methods of the same names.
macro_rules! pumped {
    ($($session:ty => $event:ty),* $(,)?) => {$(
        impl Pumped for $session {
            type Event = $event;
            fn poll_event(&mut self) -> Option<$event> {
                <$session>::poll_event(self)
            }
            fn poll_timeout(&self) -> Option<Millis> {
                <$session>::poll_timeout(self)
            }
            fn handle_timeout(&mut self, now: Millis) {
                <$session>::handle_timeout(self, now)
            }
        }
    )*};
}

pumped!(
    agentwire_rkt::ClientSession => agentwire_rkt::ClientEvent,
    agentwire_rkt::ServerSession => agentwire_rkt::ServerEvent,
    agentwire_moltzap::Session => agentwire_moltzap::Event,
);

/// What a driver does with its engine's events and its own input.
pub(crate) trait Handler<E: Pumped> {
    type Input;
    /// Routes one event; true once the session is over (its close event).
    fn on_event(&mut self, engine: &mut E, now: Millis, event: E::Event) -> bool;
    fn on_input(&mut self, engine: &mut E, input: Self::Input);
    /// The inbox ended: no more input will come (the owner is gone).
    fn on_input_end(&mut self, engine: &mut E);
}

/// Where a driver's input comes from.
pub(crate) trait Inbox {
    type Item;
    /// The next input; `None` once none will come. Cancel-safe (a `select!` branch).
    async fn recv(&mut self) -> Option<Self::Item>;
    /// An input that is already there.
    fn try_recv(&mut self) -> Option<Self::Item>;
}

impl<T> Inbox for mpsc::UnboundedReceiver<T> {
    type Item = T;
    async fn recv(&mut self) -> Option<T> {
        mpsc::UnboundedReceiver::recv(self).await
    }
    fn try_recv(&mut self) -> Option<T> {
        mpsc::UnboundedReceiver::try_recv(self).ok()
    }
}

/// A stop signal as an inbox: one `()` when it fires (or its sender is gone), then the end.
pub(crate) struct StopSignal {
    rx: watch::Receiver<()>,
    fired: bool,
}

impl StopSignal {
    pub(crate) fn new(rx: watch::Receiver<()>) -> Self {
        StopSignal { rx, fired: false }
    }
}

impl Inbox for StopSignal {
    type Item = ();
    async fn recv(&mut self) -> Option<()> {
        if self.fired {
            return None;
        }
        let _ = self.rx.changed().await;
        self.fired = true;
        Some(())
    }
    fn try_recv(&mut self) -> Option<()> {
        None
    }
}

/// Runs the session until it is over, then ends the socket (bounded close handshake). Writes go
/// on inside the `select!` (the socket branch flushes while it waits for a frame), so a slow
/// write holds up neither timers nor input.
pub(crate) async fn pump<S, E, H, I>(wire: &mut Wire<S>, engine: &mut E, handler: &mut H, inbox: &mut I)
where
    S: AsyncRead + AsyncWrite + Unpin,
    E: Pumped,
    H: Handler<E>,
    I: Inbox<Item = H::Input>,
{
    let mut inbox_open = true;
    loop {
        if drain(wire, engine, handler, driver_now()) {
            break;
        }
        let wake = engine.poll_timeout().map(until);
        tokio::select! {
            input = inbox.recv(), if inbox_open => match input {
                Some(input) => {
                    handler.on_input(engine, input);
                    for _ in 1..INPUT_BATCH {
                        match inbox.try_recv() {
                            Some(input) => handler.on_input(engine, input),
                            None => break,
                        }
                    }
                }
                None => {
                    inbox_open = false;
                    handler.on_input_end(engine);
                }
            },
            io = wire.io() => wire.handle(engine, driver_now(), io),
            _ = tokio::time::sleep(wake.unwrap_or_default()), if wake.is_some() => {
                engine.handle_timeout(driver_now());
            }
        }
    }
    wire.finish(engine).await;
}

/// Drains events, and frames while the socket takes them, until there is nothing more to do now;
/// true once the session is over. Never waits: the writes go on in [`Wire::io`].
fn drain<S, E, H>(wire: &mut Wire<S>, engine: &mut E, handler: &mut H, now: Millis) -> bool
where
    S: AsyncRead + AsyncWrite + Unpin,
    E: Pumped,
    H: Handler<E>,
{
    let mut over = false;
    loop {
        let mut progressed = false;
        while let Some(event) = engine.poll_event() {
            progressed = true;
            over |= handler.on_event(engine, now, event);
        }
        progressed |= wire.transmit(engine, now);
        if !progressed {
            return over;
        }
    }
}
