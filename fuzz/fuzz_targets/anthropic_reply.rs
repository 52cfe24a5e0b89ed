//! An Anthropic Messages reply body as the client parses it: an answer or a
//! classified error, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let body = String::from_utf8_lossy(data);
    if let Err(e) = gate_review::provider::anthropic::parse_body(&body) {
        let _ = e.classify();
        let _ = e.to_string();
    }
});
