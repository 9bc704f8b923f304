//! Fuzzes the frame decoders: `decode_with` (a WebSocket text message) and `decode_sse_with` (an
//! SSE frame's event, data and id) must never panic, and every frame they accept must survive
//! its own encoding: `encode(decode(encode(f))) == encode(f)`. The first byte picks the decoder
//! and (sometimes) small limits, so every path is reached.
#![no_main]

use agentwire_switch::frame::{decode_sse_with, decode_with, encode, sse_parts, DecodeOptions, Frame};
use libfuzzer_sys::fuzz_target;

fn stable(frame: &Frame) {
    let text = encode(frame);
    let again = decode_with(&text, &DecodeOptions::default())
        .unwrap_or_else(|e| panic!("an encoded frame does not decode: {e}: {text}"));
    assert_eq!(encode(&again), text);
    let (event, data, id) = sse_parts(frame);
    let via_sse = decode_sse_with(&event, &data, id.as_deref(), &DecodeOptions::default())
        .unwrap_or_else(|e| panic!("SSE parts do not decode: {e}: {event} {data}"));
    assert_eq!(encode(&via_sse), text);
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, input)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(input) else {
        return;
    };
    let opts = if mode & 2 != 0 {
        DecodeOptions {
            max_message_bytes: 128,
            max_depth: 3,
        }
    } else {
        DecodeOptions::default()
    };
    let decoded = if mode & 1 == 0 {
        decode_with(text, &opts)
    } else {
        // event NUL data NUL id (the id optional).
        let mut parts = text.splitn(3, '\0');
        let event = parts.next().unwrap_or("");
        let data = parts.next().unwrap_or("");
        let id = parts.next();
        decode_sse_with(event, data, id, &opts)
    };
    if let Ok(frame) = decoded {
        stable(&frame);
    }
});
