//! The bundle verifier over arbitrary envelope bytes: accept or reject, never
//! a panic; whatever verifies also opens as a statement or is rejected.
#![no_main]

use std::sync::LazyLock;

use gate_evidence::{PublicKey, SigningKey, bundle};
use libfuzzer_sys::fuzz_target;

static KEY: LazyLock<PublicKey> = LazyLock::new(|| SigningKey::from_seed(&[9; 32]).public_key().clone());

fuzz_target!(|data: &[u8]| {
    let _ = gate_evidence::dsse::Envelope::parse(data);
    let _ = bundle::open(data, std::slice::from_ref(&KEY));
});
