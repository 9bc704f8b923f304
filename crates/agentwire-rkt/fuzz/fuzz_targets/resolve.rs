//! Fuzzes the address resolver (`agentwire_rkt::resolve`), which every RKT connect runs on the
//! address it is given: any text, UTF-8 or not (lossy). Nothing may panic; a resolved address is a
//! `ws://` or `wss://` URL with no space, control character or fragment (it goes into the
//! request line), its port, when it names one (a default port is left out), digits in
//! 1..=65535, and resolving it again gives it back unchanged.
#![no_main]

use agentwire_rkt::resolve::resolve;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let address = String::from_utf8_lossy(data);
    let Ok(url) = resolve(&address) else {
        return;
    };
    let rest = url
        .strip_prefix("ws://")
        .or_else(|| url.strip_prefix("wss://"))
        .unwrap_or_else(|| panic!("{address:?} resolved to {url:?}"));
    assert!(
        !url.contains(|c: char| c.is_whitespace() || c.is_control() || c == '#'),
        "{url:?}"
    );
    let authority = rest.split(['/', '?']).next().unwrap_or("");
    let after_host = authority.rsplit_once(']').map_or(authority, |(_, p)| p);
    if let Some((_, port)) = after_host.rsplit_once(':') {
        let ok = port.bytes().all(|b| b.is_ascii_digit()) && matches!(port.parse::<u16>(), Ok(1..));
        assert!(ok, "{url:?}");
    }
    assert_eq!(resolve(&url).as_deref(), Ok(url.as_str()), "resolving {url:?} again");
});
