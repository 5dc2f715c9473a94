//! The configuration parser: any text either parses or fails with an error naming a line; a parsed
//! configuration either builds a router or fails with an error, never a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;
use lwt6_dataplane::router::Router;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match lwt6_config::parse(text) {
        Ok(cfg) => {
            let _ = Router::build(&cfg);
        }
        Err(e) => assert!(!e.to_string().is_empty()),
    }
});
