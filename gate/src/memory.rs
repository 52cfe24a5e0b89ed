//! Finding memory across the attempts of a series: ids that stay stable when
//! a finding is raised again in other words, findings that a fix resolved,
//! and dismissals that keep noise quiet until the code under it changes.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use gate_review::findings::{FateBy, Finding, lines_overlap, titles_match};

use serde::{Deserialize, Serialize};

/// What became of an earlier finding in this attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Disposition {
    /// Raised again: still open.
    Open,
    /// Not raised again, and its file changed: the fix resolved it.
    Resolved,
    /// Its file was deleted: nothing can be inferred.
    Superseded,
    /// Not raised again, though its file did not change.
    NotRaised,
}

/// What became of an earlier attempt's finding, for the record (a
/// finding's own fate in this run is `Fate`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct EarlierFate {
    /// The finding's id.
    pub id: String,
    /// What became of it.
    pub disposition: Disposition,
}

/// `by` of a dismissal made from inside an agent's session: `gate dismiss`
/// writes it, the memory weighs such a dismissal less than a person's.
pub(crate) const AGENT: &str = "agent";

/// A dismissal as the memory needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Dismissed {
    /// The finding's id.
    pub id: String,
    /// Its file's digest when it was dismissed (`None`: unknown, always suppress).
    pub code_digest: Option<String>,
    /// The run it was dismissed in.
    pub run_id: String,
    /// Why it was dismissed.
    pub reason: String,
    /// Made from inside an agent's session: it never quiets a critical or
    /// warning finding.
    pub by_agent: bool,
}

/// Whether a finding is one an agent's dismissal cannot quiet.
pub(crate) fn serious(severity: &str) -> bool {
    matches!(severity, "critical" | "warning")
}

/// Whether `new` is the same finding as `earlier`: same role and file,
/// overlapping lines, titles sharing at least half their normalised words.
pub(crate) fn same_finding(new: &Finding, earlier: &Finding) -> bool {
    new.role == earlier.role
        && new.file == earlier.file
        && lines_overlap(new.line, earlier.line)
        && titles_match(&new.title, &earlier.title)
}

/// A finding weighed against the dismissals.
enum Weighed {
    /// It stands (an agent's dismissal of a serious one in its detail).
    Kept(Finding),
    /// A dismissal quiets it: dropped with the dismissal's run and reason.
    Quiet(Finding),
}

/// A finding against the dismissals: quiet while its file's digest is the
/// one dismissed, unless the agent dismissed a serious one.
fn weigh(
    mut f: Finding,
    dismissed: &[Dismissed],
    file_digest: &dyn Fn(&str) -> Option<String>,
) -> Weighed {
    let now = file_digest(&f.file);
    let dismissal = dismissed.iter().find(|d| {
        d.id == f.id
            && d.code_digest
                .as_ref()
                .is_none_or(|dig| Some(dig) == now.as_ref())
    });
    match dismissal {
        // The agent's word against a serious finding: shown, not obeyed.
        Some(d) if d.by_agent && serious(&f.severity) => {
            let _ = write!(
                f.detail,
                " (The agent dismissed this on run {}: \"{}\"; an agent's dismissal \
                 does not quiet a {} finding.)",
                d.run_id, d.reason, f.severity
            );
            Weighed::Kept(f)
        }
        Some(d) => {
            let by = if d.by_agent { " by the agent" } else { "" };
            let why = format!("dismissed{by} on run {}: {}", d.run_id, d.reason);
            Weighed::Quiet(f.dropped(FateBy::Dismissal, why))
        }
        None => Weighed::Kept(f),
    }
}

/// Whether a dismissal may quiet a finding the gate itself raised: its
/// warnings and suggestions may be (a person's word, until the file under
/// it changes); a critical one never is (`gate override` is the way past
/// one).
pub(crate) fn dismissable_by_gate(f: &Finding) -> bool {
    f.severity != "critical"
}

/// The gate's own findings against the dismissals: those that may be
/// quieted ([`dismissable_by_gate`]) weighed as a reviewer's are. Returns
/// what stands and what was quieted.
pub(crate) fn quiet_gate_findings(
    findings: Vec<Finding>,
    dismissed: &[Dismissed],
    file_digest: &dyn Fn(&str) -> Option<String>,
) -> (Vec<Finding>, Vec<Finding>) {
    let (mut kept, mut quiet) = (Vec::new(), Vec::new());
    for f in findings {
        if !dismissable_by_gate(&f) {
            kept.push(f);
            continue;
        }
        match weigh(f, dismissed, file_digest) {
            Weighed::Kept(f) => kept.push(f),
            Weighed::Quiet(f) => quiet.push(f),
        }
    }
    (kept, quiet)
}

/// The outcome of remembering.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Remembered {
    /// This attempt's findings, with earlier ids taken over and dismissed ones removed.
    pub findings: Vec<Finding>,
    /// Findings suppressed by a dismissal, with the dismissed id, each
    /// dropped with the dismissal's run and reason.
    pub suppressed: Vec<Finding>,
    /// What became of each earlier open finding.
    pub fates: Vec<EarlierFate>,
}

/// Applies the memory: `current` findings take the id of a matching
/// `earlier` one; a finding whose id was dismissed is suppressed while its
/// file's digest is the one dismissed; earlier findings not raised again
/// are resolved (file changed) or superseded (file gone). `file_digest`
/// gives a file's digest now (`None` when it no longer exists).
pub(crate) fn remember(
    current: Vec<Finding>,
    earlier: &[Finding],
    dismissed: &[Dismissed],
    earlier_digests: &BTreeMap<String, String>,
    file_digest: &dyn Fn(&str) -> Option<String>,
) -> Remembered {
    let mut out = Remembered::default();
    let mut raised_again = vec![false; earlier.len()];
    for mut f in current {
        if let Some(i) = earlier
            .iter()
            .enumerate()
            .position(|(i, e)| !raised_again[i] && (e.id == f.id || same_finding(&f, e)))
        {
            raised_again[i] = true;
            f.id.clone_from(&earlier[i].id);
        }
        match weigh(f, dismissed, file_digest) {
            Weighed::Kept(kept) => out.findings.push(kept),
            Weighed::Quiet(quiet) => out.suppressed.push(quiet),
        }
    }
    for (e, again) in earlier.iter().zip(raised_again) {
        let disposition = if again {
            Disposition::Open
        } else {
            match file_digest(&e.file) {
                None => Disposition::Superseded,
                Some(now) if earlier_digests.get(&e.file) != Some(&now) => Disposition::Resolved,
                Some(_) => Disposition::NotRaised,
            }
        };
        out.fates.push(EarlierFate {
            id: e.id.clone(),
            disposition,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use gate_review::findings::finding_id;

    use super::*;

    fn finding(role: &str, file: &str, line: u32, title: &str) -> Finding {
        Finding::raised(
            role,
            "warning",
            file.into(),
            Some(line),
            title.into(),
            String::new(),
            0.9,
        )
    }

    #[test]
    fn memory_across_attempts() {
        let earlier = vec![
            finding("quality", "src/a.rs", 10, "Order total ignores quantity"),
            finding("quality", "src/b.rs", 5, "Error swallowed in parse"),
            finding("security", "src/gone.rs", 1, "SQL injection in search"),
            finding("docs", "README.md", 3, "Readme names the wrong command"),
        ];
        let digests: BTreeMap<String, String> = [
            ("src/a.rs", "a1"),
            ("src/b.rs", "b1"),
            ("src/gone.rs", "g1"),
            ("README.md", "r1"),
        ]
        .iter()
        .map(|(p, d)| ((*p).to_owned(), (*d).to_owned()))
        .collect();
        let now = |f: &str| match f {
            "src/a.rs" => Some("a1".to_owned()),
            "src/b.rs" => Some("b2".to_owned()),
            "README.md" => Some("r1".to_owned()),
            "src/new.rs" => Some("n1".to_owned()),
            _ => None,
        };
        let current = vec![
            // Raised again in other words, two lines lower: keeps its id.
            finding(
                "quality",
                "src/a.rs",
                12,
                "total ignores the quantity of each line",
            ),
            // New, and dismissed earlier on unchanged code: suppressed.
            finding("quality", "src/new.rs", 7, "Noisy thing"),
        ];
        let dismissed = vec![Dismissed {
            id: finding_id("quality", "src/new.rs", "Noisy thing"),
            code_digest: Some("n1".into()),
            run_id: "r1".into(),
            reason: "noise".into(),
            by_agent: false,
        }];
        let r = remember(current, &earlier, &dismissed, &digests, &now);
        assert_eq!(r.findings.len(), 1);
        assert_eq!(r.findings[0].id, earlier[0].id);
        assert_eq!(r.suppressed.len(), 1);
        assert_eq!(
            r.suppressed[0].lineage.why.as_deref(),
            Some("dismissed on run r1: noise")
        );
        let fates: Vec<Disposition> = r.fates.iter().map(|f| f.disposition).collect();
        assert_eq!(
            fates,
            [
                Disposition::Open,
                Disposition::Resolved,
                Disposition::Superseded,
                Disposition::NotRaised
            ]
        );
    }

    #[test]
    fn a_dismissal_lapses_when_the_code_changes() {
        let f = finding("quality", "src/x.rs", 1, "Thing");
        let dismissed = vec![Dismissed {
            id: f.id.clone(),
            code_digest: Some("old".into()),
            run_id: "r1".into(),
            reason: "noise".into(),
            by_agent: false,
        }];
        let r = remember(vec![f], &[], &dismissed, &BTreeMap::new(), &|_| {
            Some("new".into())
        });
        assert_eq!(r.findings.len(), 1, "changed code raises it again");
        assert!(r.suppressed.is_empty());
    }

    #[test]
    fn an_agents_dismissal_quiets_only_what_is_below_warning() {
        // (severity, suppressed)
        for (severity, quiet) in [
            ("critical", false),
            ("warning", false),
            ("suggestion", true),
        ] {
            let mut f = finding("quality", "src/x.rs", 1, "Thing");
            f.severity = severity.to_owned();
            let dismissed = vec![Dismissed {
                id: f.id.clone(),
                code_digest: None,
                run_id: "r1".into(),
                reason: "the model is wrong".into(),
                by_agent: true,
            }];
            let r = remember(vec![f], &[], &dismissed, &BTreeMap::new(), &|_| None);
            assert_eq!(r.suppressed.len(), usize::from(quiet), "{severity}");
            if quiet {
                assert_eq!(
                    r.suppressed[0].lineage.why.as_deref(),
                    Some("dismissed by the agent on run r1: the model is wrong")
                );
            } else {
                assert!(
                    r.findings[0]
                        .detail
                        .contains("The agent dismissed this on run r1: \"the model is wrong\""),
                    "{severity}: {}",
                    r.findings[0].detail
                );
            }
        }
    }
}
