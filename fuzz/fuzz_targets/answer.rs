//! A reviewer's or the coordinator's reply as the gate validates it: any
//! JSON accepted or rejected with a message, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(value) = serde_json::from_slice::<serde_json::Value>(data) {
        let _ = gate_review::review::answer::validate(&value);
        let _ = gate_review::review::answer::validate_coordination(&value);
    }
});
