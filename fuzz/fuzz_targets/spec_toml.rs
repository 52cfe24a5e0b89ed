//! The spec reader, parser and validator over arbitrary bytes of a TOML
//! spec: an error with a location (a byte that is not UTF-8 included),
//! never a panic.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let file = Path::new("gate.toml");
    let read = gate_specs::text_of(data, file)
        .map_err(gate_specs::SpecErrors::from)
        .and_then(|text| gate_specs::parse_str(text, file, gate_specs::Format::Toml));
    if let Err(errors) = read {
        // Every error renders with its location.
        let _ = errors.to_string();
    }
});
