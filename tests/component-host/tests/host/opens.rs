//! `handle-open-unusable`: an open no retry mends, by the host's judgement (a certificate it does
//! not trust). Before the first attach the session stops with the host's error; once it has been
//! live, the session reopens with its backoff.

use super::drain::switch_live;
use super::garbage::switch_config;
use super::runtime;
use agentwire_component_host::bindings::exports::agentwire::engine::switch;
use agentwire_component_host::bindings::exports::agentwire::engine::types::ErrorKind;

const NOW: u64 = 1_000;
const UNTRUSTED: &str = "TLS: the certificate is not trusted";

#[test]
fn switch_an_unusable_first_open_stops_the_session_with_the_hosts_error() {
    let mut i = runtime().instantiate().unwrap();
    let api = i.engine.agentwire_engine_switch().session();
    let s = api
        .call_constructor(&mut i.store, &switch_config(switch::Transport::Websocket))
        .unwrap();
    api.call_start(&mut i.store, s, NOW).unwrap().unwrap();
    api.call_drain(&mut i.store, s).unwrap();
    api.call_handle_open_unusable(&mut i.store, s, NOW, ErrorKind::Auth, UNTRUSTED)
        .unwrap();
    let d = api.call_drain(&mut i.store, s).unwrap();
    match &d.events[..] {
        [switch::Event::Stopped(Some(e))] => {
            assert_eq!(
                (e.kind, e.retryable, e.message.as_str()),
                (ErrorKind::Auth, false, UNTRUSTED)
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(d.timeout, None, "no reopen");
    assert_eq!(api.call_state(&mut i.store, s).unwrap(), switch::State::Stopped);
}

#[test]
fn switch_a_live_session_reopens_through_an_unusable_open() {
    let mut i = runtime().instantiate().unwrap();
    let s = switch_live(&mut i, &switch_config(switch::Transport::Websocket));
    let api = i.engine.agentwire_engine_switch().session();
    api.call_handle_close(&mut i.store, s, NOW, 1006, "").unwrap();
    let d = api.call_drain(&mut i.store, s).unwrap();
    let reopen = d.timeout.expect("a reopen is scheduled");
    api.call_handle_timeout(&mut i.store, s, reopen).unwrap();
    let d = api.call_drain(&mut i.store, s).unwrap();
    assert!(
        matches!(d.transmits[..], [switch::Transmit::Open(_)]),
        "{:?}",
        d.transmits
    );
    api.call_handle_open_unusable(&mut i.store, s, reopen, ErrorKind::Auth, UNTRUSTED)
        .unwrap();
    let d = api.call_drain(&mut i.store, s).unwrap();
    assert!(
        matches!(d.events[..], [switch::Event::Disconnected(_)]),
        "{:?}",
        d.events
    );
    assert_eq!(api.call_state(&mut i.store, s).unwrap(), switch::State::Backoff);
    let again = d.timeout.expect("another reopen is scheduled");
    api.call_handle_timeout(&mut i.store, s, again).unwrap();
    let d = api.call_drain(&mut i.store, s).unwrap();
    assert!(
        matches!(d.transmits[..], [switch::Transmit::Open(_)]),
        "{:?}",
        d.transmits
    );
}
