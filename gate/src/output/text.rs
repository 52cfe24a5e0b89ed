//! Text made safe for where it goes: record text shown with its control
//! characters escaped, terminal codes stripped, XML and Markdown escaped,
//! byte budgets kept on character boundaries.

use std::borrow::Cow;
use std::fmt::Write as _;

use gate_review::text::is_invisible_format;

/// Record text (a file name, an id, a finding's title, detail or path, a
/// reason) as a person may be shown it, on one line: line feed, carriage
/// return, ESC, every other C0 control, DEL and every C1 control
/// (U+0080–U+009F) written as a visible escape (`\n`, `\r`, `\x1b`,
/// `\u{9b}`), and so are the line and paragraph separators and the
/// bidirectional and zero-width formatting characters (which make a
/// terminal show other than what is there). Tab stays. Nothing else
/// changes, so ordinary text is borrowed as it is; a backslash is not
/// doubled, so a name may look escaped, but it cannot move the cursor,
/// start a line, or hide what follows it.
pub(crate) fn shown(s: &str) -> Cow<'_, str> {
    escaped(s, false)
}

/// A block of captured output (a check's tail) as [`shown`], except that
/// its line feeds stay line breaks (a CR LF pair is one line break). Each
/// line can then begin with anything the output printed, so a caller puts
/// the block where such a line cannot pass for one of the gate's own: every
/// line behind a margin (`│` in the terminal), inside a code fence no line
/// can close (Markdown), or inside one message (XML text, a SARIF or
/// annotation message).
pub(crate) fn shown_block(s: &str) -> Cow<'_, str> {
    escaped(s, true)
}

fn escaped(s: &str, block: bool) -> Cow<'_, str> {
    let kept = |c: char| c == '\t' || (block && c == '\n');
    if !s.chars().any(|c| hidden(c) && !kept(c)) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' if block && chars.peek() == Some(&'\n') => {}
            c if kept(c) || !hidden(c) => out.push(c),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c if u32::from(c) < 0x80 => {
                let _ = write!(out, "\\x{:02x}", u32::from(c));
            }
            c => {
                let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
            }
        }
    }
    Cow::Owned(out)
}

/// Characters [`shown`] escapes (tab among them; the callers keep it).
fn hidden(c: char) -> bool {
    c.is_control() || is_invisible_format(c) || matches!(c, '\u{2028}' | '\u{2029}')
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
            out.push_str(&shown(part));
            out.push('`');
        }
    }
    out
}

/// Escapes inline Markdown so user text (titles, ids, reasons) renders as
/// text: no emphasis, links, HTML, tables or mentions, and its control
/// characters [`shown`].
pub(crate) fn md_inline(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in shown(s).chars() {
        match c {
            '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '|' | '#' | '~' | '!' | '@' => {
                out.push('\\');
                out.push(c);
            }
            '&' => out.push_str("&amp;"),
            c => out.push(c),
        }
    }
    out
}

/// `text` in a fenced code block whose fence no line of `text` can close,
/// its control characters but line feeds [`shown_block`].
pub(crate) fn code_block(text: &str) -> String {
    let text = shown_block(text);
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
            xml_escape("a<b & \"c\" 'd'\x1b\x00\tok"),
            "a&lt;b &amp; &quot;c&quot; &apos;d&apos;\u{FFFD}\u{FFFD}\tok"
        );
        assert_eq!(
            md_inline("*bold* [x](y) <b>@team | #1\nnext"),
            "\\*bold\\* \\[x\\](y) \\<b\\>\\@team \\| \\#1\\\\nnext"
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

    #[test]
    fn shown_escapes_every_control_visibly() {
        // (class, input, one line, as a block)
        for (class, text, line, block) in [
            ("plain", "src/a b.rs", "src/a b.rs", "src/a b.rs"),
            ("tab", "a\tb", "a\tb", "a\tb"),
            (
                "line feed",
                "a\nverdict: PASS",
                "a\\nverdict: PASS",
                "a\nverdict: PASS",
            ),
            (
                "carriage return",
                "FAIL\rPASS",
                "FAIL\\rPASS",
                "FAIL\\rPASS",
            ),
            ("CR LF", "one\r\ntwo", "one\\r\\ntwo", "one\ntwo"),
            ("ESC", "\x1b[8mhid", "\\x1b[8mhid", "\\x1b[8mhid"),
            (
                "other C0",
                "\0\x07\x08\x0b\x0c\x1f",
                "\\x00\\x07\\x08\\x0b\\x0c\\x1f",
                "\\x00\\x07\\x08\\x0b\\x0c\\x1f",
            ),
            ("DEL", "a\x7fb", "a\\x7fb", "a\\x7fb"),
            (
                "C1",
                "\u{80}\u{85}\u{9b}2J\u{9f}",
                "\\u{80}\\u{85}\\u{9b}2J\\u{9f}",
                "\\u{80}\\u{85}\\u{9b}2J\\u{9f}",
            ),
            (
                "separators",
                "a\u{2028}b\u{2029}",
                "a\\u{2028}b\\u{2029}",
                "a\\u{2028}b\\u{2029}",
            ),
            (
                "bidi and zero-width",
                "\u{202e}rev\u{200b}",
                "\\u{202e}rev\\u{200b}",
                "\\u{202e}rev\\u{200b}",
            ),
            (
                "not controls",
                "café → ✓ \\n",
                "café → ✓ \\n",
                "café → ✓ \\n",
            ),
        ] {
            assert_eq!(shown(text), line, "{class}");
            assert_eq!(shown_block(text), block, "{class} as a block");
        }
        assert!(matches!(shown("plain"), Cow::Borrowed(_)));
    }
}
