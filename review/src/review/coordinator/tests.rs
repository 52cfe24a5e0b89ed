use super::*;
use crate::review::answer::Drop;

fn raw(sev: &str, file: &str, line: u32, title: &str, conf: f64) -> RawFinding {
    RawFinding {
        severity: sev.into(),
        file: file.into(),
        line: Some(line),
        title: title.into(),
        detail: String::new(),
        confidence: conf,
    }
}

fn raised(role: Role, f: RawFinding) -> Raised {
    Raised { role, finding: f }
}

#[test]
fn fusion_drops_dedupes_and_orders_keeping_every_lineage() {
    let changed: BTreeSet<String> = ["src/a.rs", "src/b.rs"]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
    let raised = vec![
        raised(
            Role::Quality,
            raw("warning", "src/a.rs", 10, "Error swallowed in parse", 0.9),
        ),
        // Same defect, stronger severity, from another role: it wins.
        raised(
            Role::Security,
            raw(
                "critical",
                "./src/a.rs",
                12,
                "parse swallows the error",
                0.8,
            ),
        ),
        // Same severity tie: security beats performance.
        raised(
            Role::Performance,
            raw("warning", "src/b.rs", 5, "Quadratic loop over orders", 0.9),
        ),
        raised(
            Role::Security,
            raw(
                "warning",
                "src/b.rs",
                6,
                "quadratic loop over the orders",
                0.9,
            ),
        ),
        raised(
            Role::Quality,
            raw("critical", "src/elsewhere.rs", 1, "bad", 0.99),
        ),
        raised(
            Role::Quality,
            raw("critical", "src/a.rs", 40, "Unsure thing", 0.3),
        ),
        raised(
            Role::Docs,
            raw(
                "suggestion",
                "src/a.rs",
                90,
                "Different problem entirely",
                0.7,
            ),
        ),
    ];
    let fusion = fuse(&raised, &changed, 0.5);
    let kept: Vec<(&str, &str, &str, Vec<&str>)> = fusion
        .kept
        .iter()
        .map(|f| {
            (
                f.severity.as_str(),
                f.role.as_str(),
                f.file.as_str(),
                f.lineage.raised_by.iter().map(String::as_str).collect(),
            )
        })
        .collect();
    assert_eq!(
        kept,
        [
            (
                "critical",
                "security",
                "src/a.rs",
                vec!["security", "quality"]
            ),
            (
                "warning",
                "security",
                "src/b.rs",
                vec!["security", "performance"]
            ),
            ("suggestion", "docs", "src/a.rs", vec!["docs"]),
        ]
    );
    // Every raised finding is accounted for, exactly once.
    assert_eq!(fusion.kept.len() + fusion.dropped.len(), raised.len());
    let fates: Vec<(Fate, Option<FateBy>)> = fusion
        .dropped
        .iter()
        .map(|f| (f.lineage.fate, f.lineage.by))
        .collect();
    assert!(fates.contains(&(Fate::Dropped, Some(FateBy::OutsideChange))));
    let floor = fusion
        .dropped
        .iter()
        .find(|f| f.lineage.by == Some(FateBy::ConfidenceFloor))
        .unwrap();
    assert_eq!(floor.title, "Unsure thing");
    assert!(
        floor
            .lineage
            .why
            .as_deref()
            .unwrap()
            .starts_with("confidence 0.30 below")
    );
    let merged: Vec<&Finding> = fusion
        .dropped
        .iter()
        .filter(|f| f.lineage.fate == Fate::Merged)
        .collect();
    assert_eq!(merged.len(), 2);
    assert_eq!(
        merged[0].lineage.merged_into.as_deref(),
        Some(fusion.kept[0].id.as_str())
    );
}

/// A full-tier fusion: a critical raised by one role (confidence 0.8), one
/// raised by two roles, one raised once with confidence 0.95, a warning
/// and a suggestion.
fn fused() -> (Vec<Finding>, Vec<Finding>) {
    let changed: BTreeSet<String> = ["src/a.rs".to_owned()].into();
    let f = fuse(
        &[
            raised(
                Role::Quality,
                raw("critical", "src/a.rs", 10, "Total ignores quantity", 0.8),
            ),
            raised(
                Role::Security,
                raw("critical", "src/a.rs", 30, "Token logged in clear", 0.8),
            ),
            raised(
                Role::Quality,
                raw("warning", "src/a.rs", 31, "token logged in the clear", 0.6),
            ),
            raised(
                Role::Performance,
                raw("critical", "src/a.rs", 50, "Unbounded retry loop", 0.95),
            ),
            raised(
                Role::Quality,
                raw("warning", "src/a.rs", 70, "Error message unclear", 0.7),
            ),
            raised(
                Role::Docs,
                raw("suggestion", "src/a.rs", 90, "Readme wording", 0.9),
            ),
        ],
        &changed,
        0.5,
    );
    (f.kept, f.dropped)
}

fn id_of(findings: &[Finding], title: &str) -> String {
    findings
        .iter()
        .find(|f| f.title == title)
        .map(|f| f.id.clone())
        .unwrap()
}

fn keep(id: &str, severity: &str, why: &str) -> Keep {
    Keep {
        id: id.to_owned(),
        merges: Vec::new(),
        severity: severity.to_owned(),
        title: String::new(),
        detail: String::new(),
        why: why.to_owned(),
    }
}

fn drop(id: &str, why: &str) -> Drop {
    Drop {
        id: id.to_owned(),
        why: why.to_owned(),
    }
}

#[test]
fn the_coordinator_cannot_veto_in_silence() {
    let (fused, merged) = fused();
    let total = id_of(&fused, "Total ignores quantity");
    let token = id_of(&fused, "Token logged in clear");
    let retry = id_of(&fused, "Unbounded retry loop");
    let unclear = id_of(&fused, "Error message unclear");
    let readme = id_of(&fused, "Readme wording");
    let (total, token, retry, unclear, readme) = (
        total.as_str(),
        token.as_str(),
        retry.as_str(),
        unclear.as_str(),
        readme.as_str(),
    );
    // (what it answers, may it drop corroborated criticals,
    //  severity each finding stands at — None: gone — and whether it was overruled)
    type Want<'a> = Vec<(&'a str, Option<&'a str>, bool)>;
    let cases: Vec<(&str, Coordination, bool, Want<'_>)> = vec![
        (
            "an empty answer drops nothing",
            Coordination::default(),
            false,
            vec![
                (total, Some("critical"), true),
                (token, Some("critical"), true),
                (retry, Some("critical"), true),
                (unclear, Some("warning"), true),
                (readme, Some("suggestion"), true),
            ],
        ),
        (
            "drops with reasons hold, except for corroborated criticals",
            Coordination {
                keep: vec![],
                drop: vec![
                    drop(total, "quantity is always 1 in this shop"),
                    drop(token, "it is a test token"),
                    drop(retry, "bounded by the deadline"),
                    drop(unclear, "wording"),
                    drop(readme, ""),
                ],
            },
            false,
            vec![
                (total, None, false),
                (token, Some("critical"), true),
                (retry, Some("critical"), true),
                (unclear, None, false),
                (readme, Some("suggestion"), true),
            ],
        ),
        (
            "with coordinator_may_drop_critical, a reasoned drop of any critical holds",
            Coordination {
                keep: vec![],
                drop: vec![drop(token, "it is a test token"), drop(retry, "bounded")],
            },
            true,
            vec![(token, None, false), (retry, None, false)],
        ),
        (
            "a critical downgraded without a reason stands as raised",
            Coordination {
                keep: vec![
                    keep(total, "suggestion", ""),
                    keep(unclear, "suggestion", ""),
                    keep(readme, "warning", "misleads new users"),
                ],
                drop: vec![],
            },
            false,
            vec![
                (total, Some("critical"), true),
                (unclear, Some("suggestion"), false),
                (readme, Some("warning"), false),
            ],
        ),
        (
            "a critical downgraded with a reason is downgraded",
            Coordination {
                keep: vec![keep(total, "warning", "only reachable from the admin page")],
                drop: vec![],
            },
            false,
            vec![(total, Some("warning"), false)],
        ),
        (
            "a merge that would lower a critical without a reason does not hold",
            Coordination {
                keep: vec![Keep {
                    merges: vec![total.to_owned()],
                    ..keep(unclear, "warning", "")
                }],
                drop: vec![],
            },
            false,
            vec![
                (total, Some("critical"), true),
                (unclear, Some("warning"), false),
            ],
        ),
    ];
    for (name, decisions, may, want) in cases {
        let (stands, gone) = coordinate(fused.clone(), &merged, &decisions, may);
        assert_eq!(
            stands.len() + gone.len(),
            fused.len(),
            "{name}: nothing lost"
        );
        for (id, severity, overruled) in want {
            let standing = stands.iter().find(|f| f.id == *id);
            assert_eq!(
                standing.map(|f| f.severity.as_str()),
                severity,
                "{name}: {id}"
            );
            if let Some(f) = standing {
                assert_eq!(f.lineage.overruled.is_some(), overruled, "{name}: {f:?}");
            } else {
                let g = gone.iter().find(|f| f.id == *id).unwrap();
                assert_eq!(g.lineage.by, Some(FateBy::Coordinator), "{name}");
                assert!(g.lineage.why.as_deref().is_some_and(|w| !w.is_empty()));
            }
        }
    }
}

#[test]
fn a_kept_finding_keeps_its_wording_as_raised() {
    let (fused, merged) = fused();
    let total = id_of(&fused, "Total ignores quantity");
    let unclear = id_of(&fused, "Error message unclear");
    let decisions = Coordination {
        keep: vec![
            Keep {
                merges: vec![unclear.clone()],
                title: "Order total ignores line quantity".to_owned(),
                ..keep(&total, "warning", "only the admin page sums orders")
            },
            keep(&id_of(&fused, "Token logged in clear"), "critical", ""),
            keep(&id_of(&fused, "Unbounded retry loop"), "critical", ""),
            keep(&id_of(&fused, "Readme wording"), "suggestion", ""),
        ],
        drop: vec![],
    };
    let (stands, gone) = coordinate(fused.clone(), &merged, &decisions, false);
    let f = stands.iter().find(|f| f.id == total).unwrap();
    assert_eq!(f.title, "Order total ignores line quantity");
    assert_eq!(f.severity, "warning");
    assert_eq!(f.lineage.fate, Fate::Downgraded);
    assert_eq!(f.lineage.raised_severity, "critical");
    assert_eq!(
        f.lineage.raised_title.as_deref(),
        Some("Total ignores quantity")
    );
    assert_eq!(
        f.lineage.why.as_deref(),
        Some("only the admin page sums orders")
    );
    assert_eq!(f.lineage.raised_by, ["quality"]);
    let m = gone.iter().find(|g| g.id == unclear).unwrap();
    assert_eq!(m.lineage.fate, Fate::Merged);
    assert_eq!(m.lineage.merged_into.as_deref(), Some(total.as_str()));
    // Kept as shown: no decider, no overruling.
    let readme = stands.iter().find(|f| f.title == "Readme wording").unwrap();
    assert_eq!(
        (readme.lineage.by, &readme.lineage.overruled),
        (None, &None)
    );
}

#[test]
fn the_coordinator_is_shown_the_code_each_finding_cites() {
    let fence = Fence::with_nonce("abcd");
    let text = (1..=40).fold(String::new(), |mut text, n| {
        let _ = writeln!(text, "line {n}");
        text
    });
    let files = vec![ChangedFile {
        path: "src/a.rs".to_owned(),
        class: crate::review::context::FileClass::Code,
        text: Some(text),
        size: 0,
        digest: None,
        noise: None,
        changed: Vec::new(),
    }];
    let (fused, _) = fused();
    let shown = payload(&fused[..1], &files, &fence, 64 * 1024);
    assert!(shown.contains(&fused[0].id));
    assert!(shown.contains("kind=\"code\""), "{shown}");
    assert!(shown.contains("    10 | line 10\n"), "{shown}");
    assert!(shown.contains("     2 | line 2\n") && shown.contains("    18 | line 18\n"));
    assert!(!shown.contains("| line 19\n") && !shown.contains("| line 1\n"));
    // No room in the budget: the code is named as left out, not sent.
    let shown = payload(&fused[..1], &files, &fence, 10);
    assert!(!shown.contains("| line 10"));
    assert!(
        shown.contains("is not shown: the run's token budget"),
        "{shown}"
    );
}
