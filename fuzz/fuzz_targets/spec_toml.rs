//! The spec parser and validator over arbitrary TOML text: an error with a
//! location, never a panic.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        if let Err(errors) = gate_specs::parse_str(text, Path::new("gate.toml"), gate_specs::Format::Toml) {
            // Every error renders with its location.
            let _ = errors.to_string();
        }
    }
});
