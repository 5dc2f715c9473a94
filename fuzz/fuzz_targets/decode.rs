//! `lwt6 decode` on any frame (what a user runs on a capture from the wild): every layer it can name is decoded
//! (Ethernet, IPv6 / IPv4, extension headers, SRH with TLVs, RPL, IOAM traces, ICMPv6 errors) without a panic, the
//! layers serialise to JSON (an array with one object per layer, each naming its layer), and the one-line summary
//! is made.
#![no_main]
use libfuzzer_sys::fuzz_target;
use lwt6_lab::decode;

fuzz_target!(|data: &[u8]| {
    let layers = decode::frame(data);
    for l in &layers {
        assert!(l["layer"].is_string(), "every layer names itself: {l}");
    }
    let json = serde_json::Value::Array(layers.clone()).to_string();
    let back: serde_json::Value = serde_json::from_str(&json).expect("the JSON parses back");
    assert_eq!(back.as_array().map(Vec::len), Some(layers.len()));
    let _ = decode::summary(&layers);
});
