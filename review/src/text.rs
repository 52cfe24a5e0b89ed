//! Model text made plain: what a model wrote, as one line of printable text.

/// `s` without ANSI escape sequences (colour codes in captured output).
pub fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\x1b' {
            out.push(c);
            continue;
        }
        match chars.peek() {
            // CSI: ESC [ parameters… final byte in @–~.
            Some('[') => {
                chars.next();
                for c in chars.by_ref() {
                    if ('@'..='~').contains(&c) {
                        break;
                    }
                }
            }
            // OSC: ESC ] … BEL or ESC \.
            Some(']') => {
                chars.next();
                while let Some(c) = chars.next() {
                    if c == '\x07' || (c == '\x1b' && chars.peek() == Some(&'\\')) {
                        if c == '\x1b' {
                            chars.next();
                        }
                        break;
                    }
                }
            }
            // Any other escape: drop ESC and the next character.
            Some(_) => {
                chars.next();
            }
            None => {}
        }
    }
    out
}

/// Text from a model made plain, before anything prints or keeps it: no
/// terminal escape sequences, no control characters (line breaks and tabs
/// become spaces, so it is one line that cannot start a line of its own in
/// a log), no bidirectional or zero-width formatting characters (which can
/// make a terminal show something other than what is there).
pub fn plain(s: &str) -> String {
    strip_ansi(s)
        .chars()
        .filter_map(|c| match c {
            '\n' | '\r' | '\t' => Some(' '),
            c if c.is_control() || is_invisible_format(c) => None,
            c => Some(c),
        })
        .collect()
}

/// Bidirectional controls and zero-width characters.
pub fn is_invisible_format(c: char) -> bool {
    matches!(
        c,
        '\u{061C}'
            | '\u{200B}'..='\u{200F}'
            | '\u{202A}'..='\u{202E}'
            | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{2069}'
            | '\u{FEFF}'
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_and_controls_are_taken_out() {
        assert_eq!(
            strip_ansi("\x1b[31merror\x1b[0m: x\x1b]0;title\x07!"),
            "error: x!"
        );
        assert_eq!(
            plain("\x1b[31mred\x1b[0m\x07 bell\rCR\n::error::x\u{9b}2J\u{202e}rev\u{200b}\ttab"),
            "red bell CR ::error::x2Jrev tab"
        );
    }
}
