//! MoltZap through the component: [`Ws`] over the `moltzap` interface (no subprotocol; the
//! socket's pings reach `handle-ping`).

use crate::ws::Ws;

crate::ws_protocol!(
    MoltZap,
    moltzap,
    agentwire_engine_moltzap,
    None,
    |api, store, s, now| api.call_handle_ping(store, s, now)
);

/// A MoltZap session of the component on its socket.
pub type MoltZapSession = Ws<MoltZap>;
