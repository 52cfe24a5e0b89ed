//! Colour for terminals: ANSI SGR codes when enabled, plain text otherwise.

use crate::record::{ItemStatus, Verdict};

/// A colour or an emphasis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Paint {
    /// Passed.
    Green,
    /// Failed.
    Red,
    /// Undecided, waiting.
    Yellow,
    /// Escalated.
    Magenta,
    /// Carried forward.
    Cyan,
    /// Less important.
    Dim,
}

impl Paint {
    fn code(self) -> &'static str {
        match self {
            Self::Green => "32",
            Self::Red => "31",
            Self::Yellow => "33",
            Self::Magenta => "35",
            Self::Cyan => "36",
            Self::Dim => "2",
        }
    }
}

/// Whether output gets colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Style {
    /// Emit escape codes.
    pub color: bool,
}

impl Style {
    /// No colour: files, pipes, `NO_COLOR`.
    pub(crate) const PLAIN: Self = Self { color: false };

    /// `text` in `paint`, or as is without colour.
    pub(crate) fn paint(self, text: &str, paint: Paint) -> String {
        if self.color && !text.is_empty() {
            format!("\x1b[{}m{text}\x1b[0m", paint.code())
        } else {
            text.to_owned()
        }
    }

    /// `text` bold and in `paint`.
    pub(crate) fn strong(self, text: &str, paint: Paint) -> String {
        if self.color && !text.is_empty() {
            format!("\x1b[1;{}m{text}\x1b[0m", paint.code())
        } else {
            text.to_owned()
        }
    }

    /// An item's mark (✓ ✗ ↷ – ?), coloured by its status.
    pub(crate) fn mark(self, status: ItemStatus) -> String {
        let (mark, paint) = match status {
            ItemStatus::Passed => ("✓", Paint::Green),
            ItemStatus::Failed => ("✗", Paint::Red),
            ItemStatus::Carried => ("↷", Paint::Cyan),
            ItemStatus::Skipped => ("–", Paint::Dim),
            ItemStatus::Unverified => ("?", Paint::Yellow),
        };
        self.paint(mark, paint)
    }

    /// The colour a verdict is shown in.
    pub(crate) fn verdict_paint(verdict: Verdict) -> Paint {
        match verdict {
            Verdict::Pass => Paint::Green,
            Verdict::Fail => Paint::Red,
            Verdict::Incomplete => Paint::Yellow,
            Verdict::Escalate => Paint::Magenta,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_style_emits_no_escape_codes() {
        for status in [
            ItemStatus::Passed,
            ItemStatus::Failed,
            ItemStatus::Carried,
            ItemStatus::Skipped,
            ItemStatus::Unverified,
        ] {
            assert!(!Style::PLAIN.mark(status).contains('\x1b'));
            assert!(Style { color: true }.mark(status).contains('\x1b'));
        }
        assert_eq!(Style::PLAIN.strong("FAIL", Paint::Red), "FAIL");
        assert_eq!(
            Style { color: true }.strong("FAIL", Paint::Red),
            "\x1b[1;31mFAIL\x1b[0m"
        );
    }
}
