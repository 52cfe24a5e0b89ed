//! The doom-loop detector: stops a series that keeps failing the same way.
//!
//! Each failed item yields a fingerprint: its id plus its failure text with
//! the noise that differs between identical failures (ANSI codes, times,
//! durations, addresses, temp paths, PIDs, ports, long numbers) replaced by
//! placeholders. An attempt's failure set is the set of its fingerprints;
//! the detector reads the failure sets of a series' failing attempts.

use std::collections::BTreeSet;
use std::sync::LazyLock;

use regex::Regex;
use serde::{Deserialize, Serialize};

/// A failure fingerprint with the item it came from (for the hand-off message).
#[derive(
    Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct Failure {
    /// The failed item's id.
    pub item: String,
    /// Its fingerprint.
    pub fingerprint: String,
}

/// Why a series was escalated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Pattern {
    /// The same failure set several attempts in a row.
    Repeat,
    /// Two failure sets taking turns.
    Oscillation,
    /// The number of failures is not going down.
    NoProgress,
    /// The attempt budget is spent.
    Budget,
}

impl Pattern {
    /// The word used in output.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Repeat => "repeat",
            Self::Oscillation => "oscillation",
            Self::NoProgress => "no_progress",
            Self::Budget => "budget",
        }
    }
}

/// The detector's conclusion, recorded in the bundle.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DoomLoop {
    /// Which pattern.
    pub pattern: Pattern,
    /// The attempts that show it.
    pub attempts: Vec<u32>,
    /// The items failing in the latest of them.
    pub failing: Vec<String>,
    /// The hand-off message.
    pub message: String,
}

/// The normalisation rules, applied in order: (pattern, placeholder).
static RULES: LazyLock<Vec<(Regex, &'static str)>> = LazyLock::new(|| {
    [
        // ANSI escape sequences (colours, cursor movement).
        (r"\x1b\[[0-9;?]*[ -/]*[@-~]", ""),
        (r"\x1b\][^\x07]*\x07", ""),
        // ISO 8601 / RFC 3339 timestamps, and common log forms.
        (
            r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?",
            "<time>",
        ),
        (r"\b\d{1,2}:\d{2}:\d{2}(\.\d+)?\b", "<time>"),
        // Durations: 1.23s, 450ms, 2m3s, 12 µs. Never across a line break:
        // the line clean-up below would make a second pass find new ones.
        (
            r"\b\d+(\.\d+)?[ \t]?(ns|µs|us|ms|s|sec|secs|seconds|m|min|minutes|h)\b",
            "<duration>",
        ),
        // Hex addresses and long hex ids.
        (r"\b0x[0-9a-fA-F]+\b", "<addr>"),
        (r"\b[0-9a-f]{12,}\b", "<hex>"),
        // Temporary paths.
        (
            r"(/tmp|/var/tmp|/var/folders|/private/var/folders|/dev/shm)/[^\s:'\x22)]*",
            "<tmp>",
        ),
        // Process ids.
        (r"(?i)\b(pid|process)[ :=#]*\d+", "<pid>"),
        // Ports on addresses.
        (
            r"\b(localhost|127\.0\.0\.1|0\.0\.0\.0|\[::1?\]|::1):\d+",
            "$1:<port>",
        ),
        (r"(?i)\bport[ :=]*\d+", "port <port>"),
        // Any run of six or more digits.
        (r"\d{6,}", "<n>"),
    ]
    .into_iter()
    .filter_map(|(p, r)| Regex::new(p).ok().map(|re| (re, r)))
    .collect()
});

/// Failure text with its noise replaced by placeholders.
pub fn normalise(text: &str) -> String {
    // A replacement can make a new match (a placeholder after `1m` gives it
    // the word boundary a duration needs), so the rules run until nothing
    // changes: normalised text then normalises to itself. Every changing
    // pass removes digits or characters, so this ends within a few passes;
    // the cap only bounds hostile input.
    let mut out = pass(text);
    for _ in 0..16 {
        let next = pass(&out);
        if next == out {
            break;
        }
        out = next;
    }
    out
}

fn pass(text: &str) -> String {
    let mut out = text.to_owned();
    for (re, placeholder) in RULES.iter() {
        out = re.replace_all(&out, *placeholder).into_owned();
    }
    // Trailing spaces and blank-line runs differ between runs too.
    out.lines()
        .map(str::trim_end)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The fingerprint of one failed item: 16 hex digits of blake3 over its id
/// and its normalised failure text.
pub fn fingerprint(id: &str, failure_text: &str) -> String {
    let mut h = blake3::Hasher::new();
    h.update(id.as_bytes());
    h.update(&[0]);
    h.update(normalise(failure_text).as_bytes());
    h.finalize().to_hex()[..16].to_owned()
}

/// One failing attempt of a series, as the detector sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailingAttempt {
    /// Attempt number.
    pub attempt: u32,
    /// Its failures.
    pub failures: BTreeSet<Failure>,
}

impl FailingAttempt {
    fn set(&self) -> BTreeSet<&str> {
        self.failures
            .iter()
            .map(|f| f.fingerprint.as_str())
            .collect()
    }
}

/// The doom-loop thresholds (`[policy]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Thresholds {
    /// Identical failure sets in a row that escalate.
    pub repeat_attempts: u32,
    /// Attempts without fewer failures that escalate.
    pub no_progress_attempts: u32,
    /// The attempt budget.
    pub max_attempts: u32,
}

impl From<&gate_specs::Policy> for Thresholds {
    fn from(p: &gate_specs::Policy) -> Self {
        Self {
            repeat_attempts: p.repeat_attempts,
            no_progress_attempts: p.no_progress_attempts,
            max_attempts: p.max_attempts,
        }
    }
}

/// Checks the series' failing attempts, the latest last, after attempt
/// `latest.attempt` ran. `None` when the series may go on.
pub fn detect(failing: &[FailingAttempt], t: Thresholds) -> Option<DoomLoop> {
    let n = failing.len();
    let latest = failing.last()?;
    let sets: Vec<BTreeSet<&str>> = failing.iter().map(FailingAttempt::set).collect();
    let at = |back: usize| &sets[n - 1 - back];
    let attempts_back =
        |k: usize| -> Vec<u32> { failing[n - k..].iter().map(|a| a.attempt).collect() };

    let k = t.repeat_attempts.max(2) as usize;
    if n >= k && (1..k).all(|back| at(back) == at(0)) {
        return Some(conclude(Pattern::Repeat, attempts_back(k), latest));
    }
    if n >= 4 && at(0) == at(2) && at(1) == at(3) && at(0) != at(1) {
        return Some(conclude(Pattern::Oscillation, attempts_back(4), latest));
    }
    let p = t.no_progress_attempts.max(2) as usize;
    if n >= p && at(0).len() >= at(p - 1).len() {
        return Some(conclude(Pattern::NoProgress, attempts_back(p), latest));
    }
    None
}

/// The budget check, before an attempt runs: attempt `next` would exceed
/// `max_attempts`.
pub fn over_budget(next: u32, failing: &[FailingAttempt], t: Thresholds) -> Option<DoomLoop> {
    if next <= t.max_attempts {
        return None;
    }
    let attempts: Vec<u32> = failing.iter().map(|a| a.attempt).collect();
    let failing_items = failing.last().map(items).unwrap_or_default();
    let message = format!(
        "The attempt budget is spent: attempt {next} would exceed max_attempts = {}. \
         Still failing: {}. Hand this to a human; start again with `gate verify --new-series` \
         or `gate override`.",
        t.max_attempts,
        list(&failing_items)
    );
    Some(DoomLoop {
        pattern: Pattern::Budget,
        attempts,
        failing: failing_items,
        message,
    })
}

fn items(a: &FailingAttempt) -> Vec<String> {
    let set: BTreeSet<&str> = a.failures.iter().map(|f| f.item.as_str()).collect();
    set.into_iter().map(str::to_owned).collect()
}

fn list(items: &[String]) -> String {
    if items.is_empty() {
        "nothing named".to_owned()
    } else {
        items
            .iter()
            .map(|i| format!("`{i}`"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

fn conclude(pattern: Pattern, attempts: Vec<u32>, latest: &FailingAttempt) -> DoomLoop {
    let failing = items(latest);
    let what = match pattern {
        Pattern::Repeat => "the same failures repeat",
        Pattern::Oscillation => "the failures go back and forth between two sets",
        Pattern::NoProgress => "the number of failures is not going down",
        Pattern::Budget => "the attempt budget is spent",
    };
    let span = match (attempts.first(), attempts.last()) {
        (Some(a), Some(b)) => format!("attempts {a}–{b}"),
        _ => "these attempts".to_owned(),
    };
    let message = format!(
        "Doom loop: {what} over {span}. Still failing: {}. Hand this to a human; start \
         again with `gate verify --new-series` or `gate override`.",
        list(&failing)
    );
    DoomLoop {
        pattern,
        attempts,
        failing,
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: Thresholds = Thresholds {
        repeat_attempts: 3,
        no_progress_attempts: 4,
        max_attempts: 6,
    };

    /// Runs a series: each attempt is a set of failure names ("" is a pass),
    /// returns the attempt at which it escalates (by pattern or budget), or None.
    fn escalates_at(series: &[&str], calls: usize) -> Option<(u32, Pattern)> {
        let mut failing: Vec<FailingAttempt> = Vec::new();
        let mut attempt = 0u32;
        for i in 0..calls {
            attempt += 1;
            if let Some(d) = over_budget(attempt, &failing, T) {
                return Some((attempt, d.pattern));
            }
            let Some(spec) = series.get(i) else { break };
            if spec.is_empty() {
                // A pass closes the series.
                failing.clear();
                attempt = 0;
                continue;
            }
            failing.push(FailingAttempt {
                attempt,
                failures: spec
                    .split(',')
                    .map(|f| Failure {
                        item: f.to_owned(),
                        fingerprint: fingerprint(f, "failed"),
                    })
                    .collect(),
            });
            if let Some(d) = detect(&failing, T) {
                return Some((attempt, d.pattern));
            }
        }
        None
    }

    #[test]
    fn worked_sequences() {
        use Pattern::{Budget, NoProgress, Oscillation, Repeat};
        type Case<'a> = (&'a [&'a str], Option<(u32, Pattern)>);
        let cases: &[Case<'_>] = &[
            // One worked sequence per pattern, and a run that is none.
            (&["A", "A", "A"], Some((3, Repeat))),
            (&["A", "B", "A", "B"], Some((4, Oscillation))),
            (&["A,B,C", "B,C", "C", ""], None),
            (&["A", "B", "C", "D"], Some((4, NoProgress))),
            (&["A", "A", ""], None),
            // Six failing attempts of shrinking sets, then a seventh call.
            (
                &[
                    "1,2,3,4,5,6,7",
                    "1,2,3,4,5,6",
                    "1,2,3,4,5",
                    "1,2,3,4",
                    "1,2,3",
                    "1,2",
                ],
                Some((7, Budget)),
            ),
            // More: progress that must not escalate.
            (&["A,B,C,D", "A,B,C", "A,B", "A"], None),
            (&["A,B", "A", "B"], None),
            // Repeats broken by a pass start over.
            (&["A", "A", "", "A", "A"], None),
            // A new failure replacing a fixed one, twice: same count → no progress at 4.
            (&["A,B", "A,C", "A,D", "A,E"], Some((4, NoProgress))),
            // Growing failures escalate as no progress.
            (&["A", "A,B", "A,B,C", "A,B,C,D"], Some((4, NoProgress))),
        ];
        for (series, want) in cases {
            let calls = series.len() + 1;
            assert_eq!(escalates_at(series, calls), *want, "{series:?}");
        }
    }

    #[test]
    fn noise_does_not_change_a_fingerprint() {
        let pairs = [
            (
                "error at 2026-11-30T01:02:03Z: connection refused (pid 4242) after 1.5s",
                "error at 2026-12-01T09:09:09.123+01:00: connection refused (pid 99) after 230ms",
            ),
            (
                "\x1b[31mFAILED\x1b[0m test_orders in /tmp/tmp.Xy12ab/run.log",
                "FAILED test_orders in /tmp/tmp.Zz99qq/run.log",
            ),
            (
                "segfault at 0x7ffd3a2b1c00, order 1234567 on 127.0.0.1:8765",
                "segfault at 0x55aa00ff0010, order 7654321 on 127.0.0.1:40123",
            ),
            ("listening on port 8080", "listening on port 33111"),
            ("trace id 3f2a9c0d1e4b5a6c", "trace id 9d8c7b6a5f4e3d2c"),
        ];
        for (a, b) in pairs {
            assert_eq!(normalise(a), normalise(b), "{a:?} vs {b:?}");
            assert_eq!(fingerprint("x", a), fingerprint("x", b));
        }
        // A different failure is a different fingerprint.
        assert_ne!(
            fingerprint("x", "expected 201, got 500"),
            fingerprint("x", "expected 201, got 404")
        );
        assert_ne!(fingerprint("x", "boom"), fingerprint("y", "boom"));
    }

    /// Normalising twice changes nothing more: the fingerprint of a failure
    /// must not depend on whether its text was normalised before. Cases the
    /// fuzzer found included.
    #[test]
    fn normalising_is_idempotent() {
        let cases: &[&[u8]] = &[
            b"o\xebt 6\x0b\nus\n\r62\x04\xcf\xda",
            b"took 5\n ms",
            b"\x1b[31m\x1b[0m\nafter a blank line",
            b"pid 12 at 127.0.0.1:99 in /tmp/x y",
            b"\n$2\xf3\xf3\xf3\xf3\xf3\xf3\xf3\xf3:l\x011m111818por",
        ];
        for case in cases {
            let text = String::from_utf8_lossy(case);
            let once = normalise(&text);
            assert_eq!(normalise(&once), once, "{text:?}");
        }
    }

    #[test]
    fn hand_off_names_pattern_attempts_and_items() {
        let failing: Vec<FailingAttempt> = (1..=3)
            .map(|attempt| FailingAttempt {
                attempt,
                failures: [Failure {
                    item: "orders-201".into(),
                    fingerprint: "f".into(),
                }]
                .into(),
            })
            .collect();
        let d = detect(&failing, T).unwrap();
        assert_eq!(d.attempts, [1, 2, 3]);
        assert!(
            d.message
                .contains("the same failures repeat over attempts 1–3"),
            "{}",
            d.message
        );
        assert!(d.message.contains("`orders-201`"));
        assert!(d.message.contains("--new-series"));
    }
}
