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

/// `connect-attempts`: absent, the first failed open stops the session (retryable); 0 reopens
/// until attached; 2 stops at the second.
#[test]
fn switch_connect_attempts_decide_when_a_first_open_gives_up() {
    for (attempts, reopens) in [(None, 0), (Some(0), 3), (Some(2), 1)] {
        let mut i = runtime().instantiate().unwrap();
        let api = i.engine.agentwire_engine_switch().session();
        let cfg = switch::Config {
            connect_attempts: attempts,
            ..switch_config(switch::Transport::Websocket)
        };
        let s = api.call_constructor(&mut i.store, &cfg).unwrap();
        api.call_start(&mut i.store, s, NOW).unwrap().unwrap();
        api.call_drain(&mut i.store, s).unwrap();
        let mut now = NOW;
        for _ in 0..reopens {
            api.call_handle_open_failed(&mut i.store, s, now, None, "refused")
                .unwrap();
            let d = api.call_drain(&mut i.store, s).unwrap();
            assert!(
                matches!(d.events[..], [switch::Event::Disconnected(_)]),
                "{attempts:?}: {:?}",
                d.events
            );
            now = d.timeout.expect("a reopen is scheduled");
            api.call_handle_timeout(&mut i.store, s, now).unwrap();
            let d = api.call_drain(&mut i.store, s).unwrap();
            assert!(
                matches!(d.transmits[..], [switch::Transmit::Open(_)]),
                "{:?}",
                d.transmits
            );
        }
        if attempts == Some(0) {
            continue;
        }
        api.call_handle_open_failed(&mut i.store, s, now, None, "refused")
            .unwrap();
        let d = api.call_drain(&mut i.store, s).unwrap();
        match &d.events[..] {
            [switch::Event::Stopped(Some(e))] => {
                assert_eq!((e.kind, e.retryable), (ErrorKind::Closed, true), "{attempts:?}: {e:?}");
                assert!(e.message.starts_with("could not connect"), "{}", e.message);
            }
            other => panic!("{attempts:?}: {other:?}"),
        }
        assert_eq!(api.call_state(&mut i.store, s).unwrap(), switch::State::Stopped);
    }
}

/// `reconnect-now`: a session waiting out its backoff reopens at once (the attempt count kept);
/// live or opening, it does nothing.
#[test]
fn switch_reconnect_now_cuts_a_backoff_short() {
    let mut i = runtime().instantiate().unwrap();
    let s = switch_live(&mut i, &switch_config(switch::Transport::Websocket));
    let api = i.engine.agentwire_engine_switch().session();
    assert!(!api.call_reconnect_now(&mut i.store, s, NOW).unwrap(), "live");
    api.call_handle_close(&mut i.store, s, NOW, 1006, "").unwrap();
    let d = api.call_drain(&mut i.store, s).unwrap();
    assert!(d.timeout.is_some_and(|t| t > NOW), "a reopen is scheduled later");
    assert_eq!(api.call_state(&mut i.store, s).unwrap(), switch::State::Backoff);
    assert!(api.call_reconnect_now(&mut i.store, s, NOW).unwrap());
    let d = api.call_drain(&mut i.store, s).unwrap();
    assert!(
        matches!(d.transmits[..], [switch::Transmit::Open(_)]),
        "{:?}",
        d.transmits
    );
    assert_eq!(api.call_state(&mut i.store, s).unwrap(), switch::State::Opening);
    assert!(!api.call_reconnect_now(&mut i.store, s, NOW).unwrap(), "opening");
}
