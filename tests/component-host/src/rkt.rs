//! RKT through the component: [`Ws`] over the `rkt` interface (subprotocol `rkt.1.0`).

use crate::ws::Ws;

crate::ws_protocol!(
    Rkt,
    rkt,
    agentwire_engine_rkt,
    Some("rkt.1.0"),
    |_api, _store, _s, _now| Ok(())
);

/// An RKT session of the component on its socket.
pub type RktSession = Ws<Rkt>;
