//! What the readers of both languages share: a line's identifiers, and a
//! line shortened for a message.

/// The identifiers of a line of code, in order.
pub(super) fn identifiers(code: &str) -> impl Iterator<Item = &str> {
    code.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
}

/// A line of code shortened for a message.
pub(super) fn shown(code: &str) -> String {
    let code = code.split_whitespace().collect::<Vec<_>>().join(" ");
    match code.char_indices().nth(60) {
        Some((at, _)) => format!("{}…", &code[..at]),
        None => code,
    }
}

/// The dotted name a call at byte `open` (a `(`) of `code` is made on
/// (`pytest.mark.parametrize` of `@pytest.mark.parametrize(`), empty when
/// the parenthesis opens no call (a tuple, a grouping).
pub(super) fn callee(code: &str, open: usize) -> &str {
    let before = &code[..open];
    let start = before
        .rfind(|c: char| !(c.is_alphanumeric() || c == '_' || c == '.'))
        .map_or(0, |i| i + 1);
    &before[start..]
}

/// The byte offsets of the `(` of `code` that open a call: after a name,
/// a closing bracket or a closing parenthesis.
pub(super) fn calls(code: &str) -> Vec<usize> {
    let bytes = code.as_bytes();
    let mut out = Vec::new();
    for (i, b) in bytes.iter().enumerate() {
        if *b != b'(' {
            continue;
        }
        let prev = bytes[..i].iter().rev().find(|c| !c.is_ascii_whitespace());
        if prev.is_some_and(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b')' | b']' | b'}'))
        {
            out.push(i);
        }
    }
    out
}
