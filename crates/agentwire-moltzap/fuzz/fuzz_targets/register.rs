//! Fuzzes the decoding of a registration answer: `register::parse_response` must never panic,
//! must accept only a 2xx answer with a non-empty `agentId` and `apiKey`, and must name the HTTP
//! status of every refusal as its code, with a message of bounded length, retryable for 429 and
//! 503 only, and saying it may have been made for a gateway's no-answer. The first two bytes are
//! the status (sometimes folded into 100..600, where the mapping is), the rest the body.
#![no_main]

use agentwire_core::{ErrorKind, MAY_HAVE_RUN};
use agentwire_moltzap::register::parse_response;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((head, body)) = data.split_first_chunk::<2>() else {
        return;
    };
    let raw = u16::from_be_bytes(*head);
    let status = if raw & 0x8000 == 0 { 100 + raw % 500 } else { raw };
    let body = String::from_utf8_lossy(body);
    match parse_response(status, &body) {
        Ok(ok) => {
            assert!((200..300).contains(&status), "{status} accepted");
            assert!(!ok.agent_id.is_empty() && !ok.api_key.is_empty(), "{ok:?}");
        }
        Err(e) if (200..300).contains(&status) => assert_eq!(e.kind(), ErrorKind::Decode, "{e}"),
        Err(e) => {
            // A gateway's no-answer may have made the registration: final, and its message says so.
            let gateway = matches!(status, 502 | 504 | 520..=524);
            let said = if gateway { MAY_HAVE_RUN.chars().count() } else { 0 };
            assert_eq!(e.code(), Some(i64::from(status)), "{e}");
            assert!(e.error.message.chars().count() <= 260 + said, "{}", e.error.message);
            assert_eq!(e.error.message.ends_with(MAY_HAVE_RUN), gateway, "{e}");
            assert_eq!(e.error.retryable, status == 429 || status == 503, "{e}");
        }
    }
});
