//! One line that says what became of the findings that do not stand as
//! raised: dropped by the coordinator (with each reason), dismissed, below
//! the confidence floor, merged, invalid, outside the change, and those the
//! coordinator tried to drop or lower and could not. The human output and
//! the Markdown comment print it; the JSON and the bundle hold every one of
//! them in full (`dropped_findings`, each finding's `lineage`).

use gate_review::findings::{Fate, FateBy, Finding};

use crate::record::RunRecord;

/// Findings named in the line per group, at most.
const NAMED: usize = 3;
/// Characters of a title or a reason shown, at most.
const CHARS: usize = 80;

fn cut(s: &str) -> String {
    if s.chars().count() <= CHARS {
        return s.to_owned();
    }
    let mut out: String = s.chars().take(CHARS).collect();
    out.push('…');
    out
}

fn count(n: usize) -> String {
    if n == 1 {
        "1 finding".to_owned()
    } else {
        format!("{n} findings")
    }
}

/// The line, with user text passed through `escape` (identity for a
/// terminal, Markdown escaping for a comment); `None` when every finding
/// raised stands as raised.
pub(crate) fn line(record: &RunRecord, escape: &dyn Fn(&str) -> String) -> Option<String> {
    let of = |fate: Fate, by: FateBy| -> Vec<&Finding> {
        record
            .dropped_findings
            .iter()
            .filter(|f| f.lineage.fate == fate && f.lineage.by == Some(by))
            .collect()
    };
    let mut groups = Vec::new();
    let dropped = of(Fate::Dropped, FateBy::Coordinator);
    if !dropped.is_empty() {
        let named: Vec<String> = dropped
            .iter()
            .take(NAMED)
            .map(|f| {
                format!(
                    "{} ({})",
                    escape(&cut(&f.title)),
                    escape(&cut(f.lineage.why.as_deref().unwrap_or("no reason given")))
                )
            })
            .collect();
        let more = dropped.len().saturating_sub(NAMED);
        let more = if more > 0 {
            format!("; and {more} more")
        } else {
            String::new()
        };
        groups.push(format!(
            "{} dropped by the coordinator: {}{more}",
            count(dropped.len()),
            named.join("; ")
        ));
    }
    for (fate, by, what) in [
        (
            Fate::Merged,
            FateBy::Coordinator,
            "merged by the coordinator",
        ),
        (
            Fate::Dropped,
            FateBy::Dismissal,
            "kept quiet by a dismissal",
        ),
        (
            Fate::Dropped,
            FateBy::ConfidenceFloor,
            "below the confidence floor",
        ),
        (Fate::Merged, FateBy::Dedupe, "merged as duplicates"),
        (Fate::Dropped, FateBy::OutsideChange, "outside the change"),
        (Fate::Dropped, FateBy::Validation, "invalid"),
    ] {
        let n = of(fate, by).len();
        if n > 0 {
            groups.push(format!("{} {what}", count(n)));
        }
    }
    let overruled = record
        .findings
        .iter()
        .filter(|f| f.lineage.overruled.is_some())
        .count();
    if overruled > 0 {
        groups.push(format!("{} kept against the coordinator", count(overruled)));
    }
    (!groups.is_empty()).then(|| groups.join(" · "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_for_every_finding_that_does_not_stand() {
        let record = crate::output::fixture::record();
        let line = line(&record, &str::to_owned).unwrap();
        assert_eq!(
            line,
            "2 findings dropped by the coordinator: Variable named `x` (a naming preference); \
             Loop *might* be slow | <b> (no realistic input makes it slow) · \
             1 finding below the confidence floor"
        );
        let mut all_kept = record;
        all_kept.dropped_findings.clear();
        assert_eq!(super::line(&all_kept, &str::to_owned), None);
    }
}
