//! Control lines against a running configuration (the fuzzing router): each line of the input is applied with
//! `Builder::line`; a line that fails leaves the configuration exactly as it was; the configuration after the
//! lines that succeeded still builds or fails with an error (never a panic).
#![no_main]
use libfuzzer_sys::fuzz_target;
use lwt6_config::Builder;
use lwt6_dataplane::router::Router;
use lwt6_fuzz::router_config;
use std::sync::OnceLock;

fn config() -> &'static lwt6_config::Config {
    static CFG: OnceLock<lwt6_config::Config> = OnceLock::new();
    CFG.get_or_init(router_config)
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut b = Builder::from_config(config().clone());
    for (i, line) in text.lines().take(16).enumerate() {
        let before = b.config().clone();
        if b.line(1000 + i, line).is_err() {
            assert_eq!(
                b.config(),
                &before,
                "a failed line changed the configuration: {line:?}"
            );
        }
    }
    let _ = Router::build(b.config());
});
