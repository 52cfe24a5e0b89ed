//! Text made safe for where it goes: terminal codes stripped, XML and
//! Markdown escaped, byte budgets kept on character boundaries.

/// `s` without ANSI escape sequences (colour codes in captured output).
pub(crate) fn strip_ansi(s: &str) -> String {
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
pub(crate) fn plain(s: &str) -> String {
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
fn is_invisible_format(c: char) -> bool {
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

/// Escapes text for XML 1.0 content and attribute values; characters XML
/// cannot hold (most control characters) become U+FFFD.
pub(crate) fn xml_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

/// Inline Markdown for a sentence that quotes ids in backticks ("check
/// `build` failed: …"): each quoted part a code span, the rest escaped as
/// [`md_inline`]. A sentence whose backticks do not pair is escaped whole.
pub(crate) fn md_quoting(s: &str) -> String {
    let parts: Vec<&str> = s.split('`').collect();
    if parts.len().is_multiple_of(2) {
        return md_inline(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for (i, part) in parts.iter().enumerate() {
        if i % 2 == 0 {
            out.push_str(&md_inline(part));
        } else if part.trim().is_empty() {
            out.push_str(&md_inline(&format!("`{part}`")));
        } else {
            // Code spans are literal; only a line break would end one.
            out.push('`');
            out.push_str(&part.replace(['\n', '\r'], " "));
            out.push('`');
        }
    }
    out
}

/// Escapes inline Markdown so user text (titles, ids, reasons) renders as
/// text: no emphasis, links, HTML, tables or mentions.
pub(crate) fn md_inline(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '|' | '#' | '~' | '!' | '@' => {
                out.push('\\');
                out.push(c);
            }
            '&' => out.push_str("&amp;"),
            '\n' | '\r' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// `text` in a fenced code block whose fence no line of `text` can close.
pub(crate) fn code_block(text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    let body = text.trim_end_matches('\n');
    format!("{fence}text\n{body}\n{fence}\n")
}

/// The longest prefix of `s` of at most `max` bytes that ends on a
/// character boundary.
pub(crate) fn truncate_bytes(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// The last `n` lines of `text`.
pub(crate) fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let start = lines.len().saturating_sub(n);
    lines[start..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes() {
        assert_eq!(
            strip_ansi("\x1b[31merror\x1b[0m: x\x1b]0;title\x07!"),
            "error: x!"
        );
        assert_eq!(
            xml_escape("a<b & \"c\" 'd'\x1b\x00\tok"),
            "a&lt;b &amp; &quot;c&quot; &apos;d&apos;\u{FFFD}\u{FFFD}\tok"
        );
        assert_eq!(
            md_inline("*bold* [x](y) <b>@team | #1\nnext"),
            "\\*bold\\* \\[x\\](y) \\<b\\>\\@team \\| \\#1 next"
        );
        assert_eq!(
            plain("\x1b[31mred\x1b[0m\x07 bell\rCR\n::error::x\u{9b}2J\u{202e}rev\u{200b}\ttab"),
            "red bell CR ::error::x2Jrev tab"
        );
        // (sentence, Markdown): quoted ids as code, the rest escaped.
        for (text, md) in [
            (
                "check `build` failed: *boom* <b>",
                "check `build` failed: \\*boom\\* \\<b\\>",
            ),
            ("odd ` backtick `x`", "odd \\` backtick \\`x\\`"),
            ("empty `` span", "empty \\`\\` span"),
            ("`a|b`", "`a|b`"),
        ] {
            assert_eq!(md_quoting(text), md, "{text}");
        }
        assert_eq!(code_block("a ``` b\n"), "````text\na ``` b\n````\n");
        assert_eq!(code_block("plain"), "```text\nplain\n```\n");
        assert_eq!(truncate_bytes("aé", 2), "a");
        assert_eq!(last_lines("1\n2\n3\n", 2), "2\n3");
    }
}
