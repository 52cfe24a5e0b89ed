//! The server-sent-events parser providers stream through, over arbitrary
//! bytes split at arbitrary points: the same events however the bytes arrive.
#![no_main]

use gate_review::provider::sse::SseParser;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&split, body)) = data.split_first() else { return };
    let whole: Vec<_> = {
        let mut p = SseParser::new();
        p.push(body)
    };
    let cut = usize::from(split) % (body.len() + 1);
    let mut p = SseParser::new();
    let mut pieces = p.push(&body[..cut]);
    pieces.extend(p.push(&body[cut..]));
    assert_eq!(whole, pieces, "events do not depend on where a chunk ends");
});
