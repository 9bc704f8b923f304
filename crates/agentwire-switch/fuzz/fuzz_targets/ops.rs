//! Fuzzes the decoders of the HTTP answers (`agentwire_switch::ops`): the operations catalogue,
//! every typed operation's result, the raw result, subscribe, unsubscribe, placements and beat,
//! and the server's error bodies. The first byte picks the decoder, the second the status; the
//! rest is the body. Nothing may panic; an answer is taken only with a 2xx status; every other
//! status gives the server's error with that status; a typed result is taken only when its raw
//! `result` is; every error's text (`to_json_string`) is its `to_json` object.
#![no_main]

use agentwire_switch::ops::{self, Operation};
use libfuzzer_sys::fuzz_target;

/// Reads `text` as serde_json does, without its depth limit.
fn read(text: &str) -> serde_json::Value {
    let mut de = serde_json::Deserializer::from_str(text);
    de.disable_recursion_limit();
    serde::Deserialize::deserialize(&mut de).unwrap_or_else(|e| panic!("{text}: {e}"))
}

const STATUSES: [u16; 12] = [200, 201, 204, 299, 300, 400, 401, 404, 409, 429, 500, 503];

fn typed<O: Operation>(status: u16, body: &str) {
    if ops::decode::<O>(status, body).is_ok() {
        assert!(
            ops::decode_result(status, body).is_ok(),
            "{} taken without a raw result",
            O::NAME
        );
    }
}

fuzz_target!(|data: &[u8]| {
    let [which, status, body @ ..] = data else {
        return;
    };
    let status = STATUSES[usize::from(*status) % STATUSES.len()];
    let body = String::from_utf8_lossy(body);
    let ok = match which % 13 {
        0 => ops::decode_ops(status, &body).map(drop),
        1 => ops::decode_result(status, &body).map(drop),
        2 => ops::decode_subscribe(status, &body).map(drop),
        3 => ops::decode_unsubscribe(status, &body).map(drop),
        4 => ops::decode_placements(status, &body).map(drop),
        5 => ops::decode_beat(status, &body).map(drop),
        6 => ops::decode::<ops::ConnectToRoom>(status, &body).map(drop),
        7 => ops::decode::<ops::PostMessage>(status, &body).map(drop),
        8 => ops::decode::<ops::SendTargetedMessage>(status, &body).map(drop),
        9 => ops::decode::<ops::ReadContext>(status, &body).map(drop),
        10 => ops::decode::<ops::ListRooms>(status, &body).map(drop),
        11 => ops::decode::<ops::ListParticipants>(status, &body).map(drop),
        _ => {
            typed::<ops::ConnectToRoom>(status, &body);
            typed::<ops::PostMessage>(status, &body);
            typed::<ops::SendTargetedMessage>(status, &body);
            typed::<ops::ReadContext>(status, &body);
            typed::<ops::ListRooms>(status, &body);
            typed::<ops::ListParticipants>(status, &body);
            return;
        }
    };
    if let Err(e) = &ok {
        assert_eq!(read(&e.to_json_string()), e.to_json(), "{e:?}");
    }
    match ok {
        Ok(()) => assert!((200..300).contains(&status), "an answer taken with status {status}"),
        Err(e) if !(200..300).contains(&status) => assert_eq!(e.status, Some(status), "{e:?}"),
        Err(_) => {}
    }
});
