//! The extension-header walker: headers come in order, inside the packet, each at least 8 bytes; at most one
//! error, after which the walk stops; `chain` agrees with the walk.
#![no_main]
use libfuzzer_sys::fuzz_target;
use lwt6_wire::exthdr::{Walker, chain};
use lwt6_wire::proto;

fuzz_target!(|data: &[u8]| {
    let limit = if data.len() >= 40 {
        (40 + usize::from(u16::from_be_bytes([data[4], data[5]]))).min(data.len())
    } else {
        data.len()
    };
    let mut w = Walker::new(data);
    let mut end = 40;
    let mut failed = false;
    let mut routing = None;
    for h in w.by_ref() {
        assert!(!failed, "the walker yields nothing after an error");
        match h {
            Ok(h) => {
                assert_eq!(h.offset, end, "headers follow each other");
                assert!(
                    h.len >= 8 && h.offset + h.len <= limit,
                    "a header inside the packet"
                );
                if h.kind == proto::HOPOPTS {
                    assert_eq!(h.offset, 40);
                }
                if h.kind == proto::ROUTING && routing.is_none() {
                    routing = Some(h);
                }
                end = h.offset + h.len;
            }
            Err(_) => failed = true,
        }
    }
    match chain(data) {
        Ok(c) => {
            assert!(!failed);
            assert_eq!(c.routing, routing);
            if let Some(r) = c.routing {
                assert_eq!(c.routing_type, Some(data[r.offset + 2]));
            }
            assert!(c.upper_offset <= limit.max(40));
        }
        Err(_) => assert!(failed || data.len() < 40),
    }
});
