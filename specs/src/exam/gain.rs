//! What the lines a change added to an exam file can do: [`gain`] for a
//! test file (or a helper the tests import), [`package_code_gain`] for a
//! file of the code under test that the runner builds into the tests.
//!
//! An addition keeps every old line, yet can still decide whether the old
//! tests run: a `TestMain` that never calls `m.Run`, an `init()` or a
//! module-level statement that exits, a build constraint over the file, a
//! decorator above an old test, a definition that takes an old one's name.
//! Only added test functions and cases leave the old tests as they were.
//! Python and Go files are read line by line, as far as telling these apart
//! needs; other files' additions count as tests, as before.
//!
//! # Layout
//! - `words`: what both read a line with.
//! - `python`: Python modules (`test_*.py`, `__init__.py`, helpers).
//! - `go`: Go files, test and non-test.

mod go;
mod python;
mod words;

use std::collections::BTreeSet;

use super::fate::gained_lines;
use super::model::Gain;
use super::path::extension;

/// What the lines `now` gained over `base` (`None`: the file is new) can
/// do, for an exam file at `path` whose old lines are all still there. A
/// file whose old lines were not all kept is [`Gain::Runs`] at the first
/// line: the exam was edited.
pub fn gain(path: &str, base: Option<&[u8]>, now: &[u8]) -> Gain {
    let gained: BTreeSet<usize> = match base {
        None => (1..=String::from_utf8_lossy(now).lines().count()).collect(),
        Some(base) => match gained_lines(base, now) {
            Some(lines) => lines.into_iter().collect(),
            None => {
                return Gain::Runs {
                    line: 1,
                    why: "modifies or deletes lines from before the change".to_owned(),
                };
            }
        },
    };
    let text = String::from_utf8_lossy(now);
    let base_text = base.map(String::from_utf8_lossy).unwrap_or_default();
    // Test data is read whole: a line added to a golden file or a fixture
    // changes what the old tests expect.
    let data = base.is_some() && (path.starts_with("testdata/") || path.contains("/testdata/"));
    let judged = match extension(path) {
        _ if data => gained.first().map(|line| {
            (
                *line,
                "adds to test data the tests read: what the old tests expect changes".to_owned(),
            )
        }),
        Some("py") => python::judge(&base_text, &text, &gained),
        Some("go") => go::judge_test(&text, &gained, base.is_none()),
        _ => None,
    };
    match judged {
        Some((line, why)) => Gain::Runs { line, why },
        None if code_lines(&text, &gained) => Gain::Tests,
        None => Gain::Nothing,
    }
}

/// What a change did to a file of the code under test that `go test`
/// builds into the tests (`None`: absent at the base): [`Gain::Runs`]
/// where it added or changed code that runs when the test binary starts
/// (`init()`, a package variable that calls a function literal or touches
/// the test flags) or that ends the process outside `main`, else
/// [`Gain::Nothing`]. The rest of the file is the change's to write.
pub fn package_code_gain(path: &str, base: Option<&[u8]>, now: &[u8]) -> Gain {
    if extension(path) != Some("go") || base == Some(now) {
        return Gain::Nothing;
    }
    let text = String::from_utf8_lossy(now);
    let base_text = base.map(String::from_utf8_lossy).unwrap_or_default();
    match go::judge_package_code(&base_text, &text) {
        Some((line, why)) => Gain::Runs { line, why },
        None => Gain::Nothing,
    }
}

/// Whether any gained line holds more than a comment or blanks.
fn code_lines(text: &str, gained: &BTreeSet<usize>) -> bool {
    text.lines().enumerate().any(|(i, l)| {
        let l = l.trim();
        gained.contains(&(i + 1)) && !l.is_empty() && !l.starts_with('#') && !l.starts_with("//")
    })
}

#[cfg(test)]
mod tests;
