//! Credentials stay out of `Debug`: a config or an answer logged with `{:?}` shows none.

use agentwire_moltzap::register::Registered;
use agentwire_moltzap::Credentials;

const SECRET: &str = "moltzap_agent_SECRET0123";

#[test]
fn debug_hides_keys_and_tokens() {
    for (value, name) in [
        (Credentials::AgentKey(SECRET.into()), "AgentKey(<redacted>)"),
        (Credentials::SessionToken(SECRET.into()), "SessionToken(<redacted>)"),
    ] {
        assert_eq!(format!("{value:?}"), name);
    }
    let registered = Registered {
        agent_id: "a1".into(),
        api_key: SECRET.into(),
    };
    let text = format!("{registered:?}");
    assert!(!text.contains(SECRET) && text.contains("a1"), "{text}");
}

#[test]
fn a_session_debug_shows_its_state_and_no_credential() {
    use agentwire_moltzap::{Session, SessionConfig};
    let mut s = Session::new(SessionConfig::default());
    s.handle_open(0);
    s.connect(0, Credentials::AgentKey(SECRET.into())).unwrap();
    let text = format!("{s:?}");
    assert!(text.contains("Connecting") && text.contains("Current"), "{text}");
    assert!(!text.contains(SECRET), "{text}");
}
