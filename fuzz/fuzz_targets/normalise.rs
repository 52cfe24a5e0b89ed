//! The doom-loop detector's failure-text normaliser: never a panic, and
//! normalising twice changes nothing more (the fingerprint is stable).
#![no_main]

use gate::doom::{fingerprint, normalise};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let once = normalise(&text);
    let _ = fingerprint("item", &text);
    assert_eq!(normalise(&once), once, "normalising is idempotent");
});
