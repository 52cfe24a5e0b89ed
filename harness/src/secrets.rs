//! Secret shapes: what the secrets check finds and what captured output is redacted of.
//!
//! The shapes are one compiled regex (an alternation with a named group per
//! shape), so a file or an output tail is scanned once, whatever the number of
//! shapes.

use std::sync::LazyLock;

use regex::Regex;

/// What replaces a secret in captured output.
pub const REDACTED: &str = "[REDACTED]";

/// Exact values shorter than this are not redacted: they would hit ordinary text.
pub const MIN_EXTRA_LEN: usize = 8;

/// The shapes, as (group name, what it looks like, pattern). Patterns start at
/// a word boundary so `risk-…` or `mask_…` are not read as tokens.
const SHAPES: &[(&str, &str, &str)] = &[
    (
        "pem",
        "a private key block",
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----",
    ),
    (
        "anthropic",
        "an Anthropic API key",
        r"\bsk-ant-[A-Za-z0-9_-]{20,}",
    ),
    (
        "openai",
        "an OpenAI API key",
        r"\bsk-(?:(?:proj|svcacct|admin)-[A-Za-z0-9_-]{20,}|[A-Za-z0-9]{20,})",
    ),
    (
        "github",
        "a GitHub token",
        r"\b(?:gh[opsu]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})",
    ),
    (
        "aws",
        "an AWS access key id",
        r"\b(?:AKIA|ASIA)[A-Z0-9]{16}",
    ),
    ("slack", "a Slack token", r"\bxox[baprs]-[A-Za-z0-9-]{10,}"),
    ("google", "a Google API key", r"\bAIza[A-Za-z0-9_-]{35}"),
];

/// Every shape as one regex; each alternative is a named group.
static SHAPES_RE: LazyLock<Regex> = LazyLock::new(|| {
    let alternation: Vec<String> = SHAPES
        .iter()
        .map(|(name, _, pattern)| format!("(?P<{name}>{pattern})"))
        .collect();
    #[allow(
        clippy::expect_used,
        reason = "the patterns are constants, covered by tests"
    )]
    Regex::new(&alternation.join("|")).expect("secret shapes compile")
});

/// A whole private key block: from BEGIN to END, or to the end of the text
/// when the END was cut off.
static PEM_BLOCK_RE: LazyLock<Regex> = LazyLock::new(|| {
    #[allow(clippy::expect_used, reason = "a constant pattern, covered by tests")]
    Regex::new(
        r"(?s)-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\z)",
    )
    .expect("pem block pattern compiles")
});

/// The END line of a private key block (a tail can start inside a block).
static PEM_END_RE: LazyLock<Regex> = LazyLock::new(|| {
    #[allow(clippy::expect_used, reason = "a constant pattern, covered by tests")]
    Regex::new(r"-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")
        .expect("pem end pattern compiles")
});

/// The password of a URL's `user:password@`: redacted from output (a
/// failing test often prints the database URL it could not reach), but not
/// a committed secret `find` reports, since a local `postgres:postgres@`
/// in a compose file is not one.
static URL_PASSWORD_RE: LazyLock<Regex> = LazyLock::new(|| {
    #[allow(clippy::expect_used, reason = "a constant pattern, covered by tests")]
    Regex::new(r"(?P<head>\b[A-Za-z][A-Za-z0-9+.-]*://[^\s:/@]*:)[^\s@/]+@")
        .expect("url password pattern compiles")
});

/// One secret-shaped match in a text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretMatch {
    /// Byte offset of the match in the text.
    pub start: usize,
    /// What it looks like ("an AWS access key id"), never the value.
    pub what: &'static str,
}

/// Every secret-shaped match in `text`, in order.
pub fn find(text: &str) -> Vec<SecretMatch> {
    SHAPES_RE
        .captures_iter(text)
        .filter_map(|caps| {
            SHAPES.iter().find_map(|(name, what, _)| {
                caps.name(name).map(|m| SecretMatch {
                    start: m.start(),
                    what,
                })
            })
        })
        .collect()
}

/// Redacts secret shapes and the exact `extra_values` (those of at least
/// [`MIN_EXTRA_LEN`] bytes) from `text`.
pub fn redact<S: AsRef<str>>(text: &str, extra_values: &[S]) -> String {
    Redactor::new(extra_values).redact(text)
}

/// Redaction prepared once for many texts (one run's outputs).
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    /// Exact values, longest first so a value containing another is replaced whole.
    extra: Vec<String>,
}

impl Redactor {
    /// Prepares redaction of the secret shapes and of `extra_values`.
    pub fn new<S: AsRef<str>>(extra_values: &[S]) -> Self {
        let mut extra: Vec<String> = extra_values
            .iter()
            .map(|v| v.as_ref().to_owned())
            .filter(|v| v.len() >= MIN_EXTRA_LEN)
            .collect();
        extra.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        extra.dedup();
        Self { extra }
    }

    /// `text` with every secret replaced by [`REDACTED`].
    pub fn redact(&self, text: &str) -> String {
        self.redact_as(text, false)
    }

    /// As [`Redactor::redact`], keeping every line where it was: a key
    /// block becomes [`REDACTED`] followed by as many line breaks as it
    /// spanned, so line numbers into the text still hold (a file shown to
    /// a reviewer, whose findings name lines).
    pub fn redact_keeping_lines(&self, text: &str) -> String {
        self.redact_as(text, true)
    }

    fn redact_as(&self, text: &str, keep_lines: bool) -> String {
        let stand_in = |replaced: &str| {
            let breaks = if keep_lines {
                replaced.matches('\n').count()
            } else {
                0
            };
            format!("{REDACTED}{}", "\n".repeat(breaks))
        };
        // Exact values first: a shape match could otherwise split one.
        let mut out = text.to_owned();
        for value in &self.extra {
            if out.contains(value.as_str()) {
                out = out.replace(value.as_str(), &stand_in(value));
            }
        }
        let mut out = PEM_BLOCK_RE
            .replace_all(&out, |caps: &regex::Captures<'_>| stand_in(&caps[0]))
            .into_owned();
        // An END with no BEGIN before it: the text starts inside a key block.
        if let Some(end) = PEM_END_RE.find(&out) {
            let replaced = stand_in(&out[..end.end()]);
            out.replace_range(..end.end(), &replaced);
        }
        let out = URL_PASSWORD_RE.replace_all(&out, format!("${{head}}{REDACTED}@"));
        SHAPES_RE.replace_all(&out, REDACTED).into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::fake;

    #[test]
    fn finds_each_shape() {
        let alnum36 = "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8";
        let cases: Vec<(String, Option<&str>)> = vec![
            (
                fake("AKIA", "IOSFODNN7EXAMPLE"),
                Some("an AWS access key id"),
            ),
            (
                fake("ASIA", "IOSFODNN7EXAMPLE"),
                Some("an AWS access key id"),
            ),
            (fake("ghp_", alnum36), Some("a GitHub token")),
            (fake("gho_", alnum36), Some("a GitHub token")),
            (fake("ghs_", alnum36), Some("a GitHub token")),
            (fake("ghu_", alnum36), Some("a GitHub token")),
            (
                fake("github_pat_", "11ABCDEFG0123456789_abcdefghijklmnop"),
                Some("a GitHub token"),
            ),
            (
                fake("sk-", "abcdefghijklmnopqrstuvwxyz012345"),
                Some("an OpenAI API key"),
            ),
            (
                fake("sk-proj-", "abc_def-ghijklmnopqrstuvwxyz"),
                Some("an OpenAI API key"),
            ),
            (
                fake("sk-ant-", "api03-abcdefghijklmnopqrstuvwxyz"),
                Some("an Anthropic API key"),
            ),
            (
                fake("xoxb-", "123456789012-abcdefghij"),
                Some("a Slack token"),
            ),
            (
                fake("AIza", "SyA-abcdefghijklmnopqrstuvwxyz01234"),
                Some("a Google API key"),
            ),
            (
                fake("-----BEGIN RSA ", "PRIVATE KEY-----"),
                Some("a private key block"),
            ),
            (
                fake("-----BEGIN ", "PRIVATE KEY-----"),
                Some("a private key block"),
            ),
            (
                fake("-----BEGIN OPENSSH ", "PRIVATE KEY-----"),
                Some("a private key block"),
            ),
            // Near misses.
            ("risk-assessment-framework-version-two".to_owned(), None),
            ("sk-short".to_owned(), None),
            (fake("AKIA", "short"), None),
            (fake("ghp_", "tooshort"), None),
            ("-----BEGIN PUBLIC KEY-----".to_owned(), None),
            ("-----BEGIN CERTIFICATE-----".to_owned(), None),
            ("xoxz-123456789012".to_owned(), None),
        ];
        for (text, want) in cases {
            let line = format!("token = \"{text}\"\n");
            let found = find(&line);
            assert_eq!(
                found.first().map(|m| m.what),
                want,
                "{text}: found {found:?}"
            );
            if want.is_some() {
                assert_eq!(found[0].start, "token = \"".len(), "{text}");
            }
        }
    }

    #[test]
    fn redacts_shapes_and_extra_values() {
        let aws = fake("AKIA", "IOSFODNN7EXAMPLE");
        let text = format!("key={aws} pass=hunter2hunter2 short=abc end\n");
        let out = redact(&text, &["hunter2hunter2", "abc"]);
        assert_eq!(
            out, "key=[REDACTED] pass=[REDACTED] short=abc end\n",
            "short extra values stay"
        );
        // A value that contains another is replaced whole.
        let out = redact(
            "x=supersecretvalue-long",
            &["supersecretvalue", "supersecretvalue-long"],
        );
        assert_eq!(out, "x=[REDACTED]");
        assert_eq!(redact("nothing here", &[] as &[&str]), "nothing here");
    }

    #[test]
    fn redacts_the_password_of_a_url_and_nothing_else_of_it() {
        let cases = [
            (
                "could not connect to postgres://app:s3cret@db:5432/app",
                "could not connect to postgres://app:[REDACTED]@db:5432/app",
            ),
            ("https://:token@host/x", "https://:[REDACTED]@host/x"),
            (
                "redis://u:p@a and amqp://v:q@b",
                "redis://u:[REDACTED]@a and amqp://v:[REDACTED]@b",
            ),
            ("http://host:8080/path", "http://host:8080/path"),
            ("ssh://git@github.com/x", "ssh://git@github.com/x"),
            ("user:pass@host", "user:pass@host"),
        ];
        for (text, want) in cases {
            assert_eq!(redact(text, &[] as &[&str]), want, "{text}");
        }
        // Not a committed secret: the built-in check does not fail on it.
        assert!(find("DATABASE_URL=postgres://postgres:postgres@localhost/db").is_empty());
    }

    #[test]
    fn redaction_can_keep_every_line_where_it_was() {
        let begin = fake("-----BEGIN ", "PRIVATE KEY-----");
        let end = fake("-----END ", "PRIVATE KEY-----");
        let text = format!(
            "line 1\n{begin}\nAAAA\nBBBB\n{end}\nline 6 postgres://a:pw@h\nmulti\nline value\nline 9\n"
        );
        let redactor = Redactor::new(&["multi\nline value"]);
        let kept = redactor.redact_keeping_lines(&text);
        assert_eq!(kept.lines().count(), text.lines().count(), "{kept}");
        assert_eq!(
            kept.lines().nth(5),
            Some("line 6 postgres://a:[REDACTED]@h")
        );
        assert_eq!(kept.lines().nth(8), Some("line 9"));
        assert!(
            !kept.contains("AAAA") && !kept.contains("line value"),
            "{kept}"
        );
        // The plain form folds each secret into one marker.
        assert_eq!(redactor.redact(&text).lines().count(), 5);
    }

    #[test]
    fn redacts_whole_key_blocks_even_when_cut() {
        let begin = fake("-----BEGIN EC ", "PRIVATE KEY-----");
        let end = fake("-----END EC ", "PRIVATE KEY-----");
        let whole = format!("before\n{begin}\nMHcCAQEEIB\nAoGBAM\n{end}\nafter\n");
        assert_eq!(
            redact(&whole, &[] as &[&str]),
            "before\n[REDACTED]\nafter\n"
        );
        let no_end = format!("before\n{begin}\nMHcCAQEEIB\n");
        assert_eq!(redact(&no_end, &[] as &[&str]), "before\n[REDACTED]");
        let no_begin = format!("MHcCAQEEIB\nAoGBAM\n{end}\nafter\n");
        assert_eq!(redact(&no_begin, &[] as &[&str]), "[REDACTED]\nafter\n");
    }
}
