//! Fuzzes the frame decoder: `decode_bytes_with` must never panic, and every frame it accepts
//! must survive its own re-encoding: `decode(encode(f)) == f`. The first byte picks the
//! generation, the strictness and (sometimes) small limits, so every path is reached.
#![no_main]

use agentwire_moltzap::{
    decode_bytes_with, decode_message_with, encode_frame, DecodeOptions, Frame, Generation, MoltZapError,
};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, input)) = data.split_first() else {
        return;
    };
    let generation = if mode & 1 == 0 {
        Generation::Current
    } else {
        Generation::Released
    };
    let mut opts = DecodeOptions {
        reject_unknown_keys: mode & 2 != 0,
        ..DecodeOptions::default()
    };
    if mode & 4 != 0 {
        opts = DecodeOptions {
            max_message_bytes: 256,
            max_depth: 4,
            max_id_len: 8,
            max_frames: 3,
            ..opts
        };
    }
    let unbounded = DecodeOptions {
        max_message_bytes: usize::MAX,
        max_frames: usize::MAX,
        max_id_len: usize::MAX,
        ..opts.clone()
    };
    for result in decode_bytes_with(generation, input, &opts) {
        let frame = match result {
            Ok(f) => f,
            Err(e) => {
                let _ = MoltZapError::frame(&e).to_string();
                continue;
            }
        };
        if let Frame::Response(r) = &frame {
            if let Some(e) = r.error() {
                let _ = MoltZapError::remote(e, r.id.as_ref());
            }
        }
        let wire = encode_frame(generation, &frame).unwrap_or_else(|e| panic!("{e}: {frame:?}"));
        let again = decode_message_with(generation, &wire, &unbounded);
        assert_eq!(again.len(), 1, "{wire}");
        match &again[0] {
            Ok(f) => assert_eq!(f, &frame, "re-decoded frame differs\nencoded: {wire}"),
            Err(e) => panic!("re-encoding does not decode: {e}\nframe: {frame:?}\nencoded: {wire}"),
        }
    }
});
