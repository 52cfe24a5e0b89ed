//! A run record with one of everything, for the renderers' tests: failed,
//! passed, skipped and carried checks; a built-in pointing at hostile file
//! names; failed, passed and unverified criteria; a review in which one
//! specialist did not run and one was skipped; findings of every severity,
//! two of them duplicate-looking (same id, different lines); findings
//! dropped by the coordinator and below the confidence floor.

use gate_harness::{Location, Output};
use gate_review::findings::{FateBy, Finding, Lineage};
use gate_review::record::{
    Attempt, AttemptOutcome, Coverage, ReviewRecord, ReviewStatus, SpecialistRecord,
};
use gate_review::tier::Tier;

use super::site::Site;
use crate::record::{
    CheckKind, CheckRecord, CriterionRecord, DecidedBy, FORMAT_VERSION, ItemStatus, Reason,
    ReasonKind, RunRecord, SelfGuard, Verdict,
};

fn check(id: &str, kind: CheckKind, status: ItemStatus) -> CheckRecord {
    CheckRecord {
        id: id.to_owned(),
        kind,
        task: (kind == CheckKind::TaskTests).then(|| "orders".to_owned()),
        command: format!("./{id}.sh"),
        status,
        exit_code: (status == ItemStatus::Passed).then_some(0),
        duration_ms: 1234,
        started_ms: Some(100),
        inputs_digest: "d".repeat(64),
        carried_from: None,
        carried_bundle: None,
        reason: None,
        output: Output::default(),
        locations: Vec::new(),
        observed: None,
    }
}

fn criterion(id: &str, by: DecidedBy, status: ItemStatus) -> CriterionRecord {
    CriterionRecord {
        id: id.to_owned(),
        task: "orders".to_owned(),
        text: format!("{id} holds"),
        decided_by: by,
        command: (by == DecidedBy::Code).then(|| format!("./{id}.sh")),
        status,
        met: None,
        threshold: None,
        exit_code: None,
        duration_ms: 250,
        started_ms: Some(200),
        inputs_digest: "e".repeat(64),
        carried_from: None,
        carried_bundle: None,
        reason: None,
        output: Output::default(),
        expect: gate_specs::Expect::Any,
        base_status: None,
        observed: None,
    }
}

pub(crate) fn specialist(role: &str, status: &str, reason: Option<&str>) -> SpecialistRecord {
    SpecialistRecord {
        role: role.to_owned(),
        model: "claude-sonnet-4-5".to_owned(),
        status: status.to_owned(),
        reason: reason.map(str::to_owned),
        input_tokens: Some(1200),
        cached_input_tokens: Some(800),
        cache_write_tokens: None,
        output_tokens: Some(90),
        cost_usd: Some(0.0042),
        latency_ms: 3100,
        attempts: vec![Attempt {
            model: "claude-sonnet-4-5".to_owned(),
            outcome: if status == "ok" {
                AttemptOutcome::Ok
            } else {
                AttemptOutcome::Retryable
            },
            latency_ms: 3100,
            error: reason.map(str::to_owned),
        }],
        coverage: Coverage::default(),
        remit_digest: String::new(),
        carried_from: None,
    }
}

fn finding(
    id: &str,
    severity: &str,
    role: &str,
    file: &str,
    line: Option<u32>,
    title: &str,
) -> Finding {
    Finding {
        id: id.to_owned(),
        severity: severity.to_owned(),
        role: role.to_owned(),
        file: file.to_owned(),
        line,
        title: title.to_owned(),
        detail: format!("{title}: details"),
        confidence: 0.9,
        lineage: Lineage::raised(role, severity),
    }
}

/// The record.
pub(crate) fn record() -> RunRecord {
    let mut build = check("build", CheckKind::Check, ItemStatus::Failed);
    build.exit_code = Some(3);
    build.reason = Some("exited with status 3".to_owned());
    build.output.tail =
        "compiling…\nwarning: 100% <sure> & \"done\"\n\x1b[31merror: boom\x1b[0m\n".to_owned();
    let mut secrets = check("builtin.secrets", CheckKind::Builtin, ItemStatus::Failed);
    secrets.reason = Some("2 secrets found".to_owned());
    secrets.locations = vec![
        Location {
            file: "src/config, prod.rs".to_owned(),
            line: Some(3),
            message: "an AWS access key: 100% real, line 3".to_owned(),
        },
        Location {
            file: "keys/id_rsa".to_owned(),
            line: None,
            message: "a private key".to_owned(),
        },
    ];
    let mut after = check("deploy-check", CheckKind::Check, ItemStatus::Skipped);
    after.reason = Some("dependency `build` failed".to_owned());
    let mut carried = check("lint", CheckKind::Check, ItemStatus::Carried);
    carried.carried_from = Some(".gate/bundles/0190-old.dsse.json".to_owned());

    let mut orders = criterion("orders-201", DecidedBy::Code, ItemStatus::Failed);
    orders.exit_code = Some(1);
    orders.reason = Some("exited with status 1".to_owned());
    orders.output.tail = "expected 201, got 500\n".to_owned();
    let mut pii = criterion("orders-no-pii", DecidedBy::Model, ItemStatus::Passed);
    pii.met = Some(0.93);
    pii.threshold = Some(0.8);
    let mut unknown = criterion("orders-audit", DecidedBy::Model, ItemStatus::Unverified);
    unknown.reason = Some("the judge did not run: timed out".to_owned());

    RunRecord {
        format_version: FORMAT_VERSION,
        run_id: "0190aaaa-bbbb-7ccc-8ddd-eeeeffff0000".to_owned(),
        spec_id: "shop-checkout".to_owned(),
        summary: "Add the checkout flow".to_owned(),
        agent: Some("claude-code".to_owned()),
        attempt: 2,
        series: Some(crate::record::Series {
            key: "pr:42".to_owned(),
            from: "GITHUB_REF".to_owned(),
        }),
        started_at: "2025-01-02T03:04:05.678Z".to_owned(),
        duration_ms: 65_432,
        tool_version: "0.1.0".to_owned(),
        spec_digest: "f".repeat(64),
        base: Some("main".to_owned()),
        base_commit: Some("0123456789abcdef0123456789abcdef01234567".to_owned()),
        verified: Some(crate::record::Verified {
            commit: Some("89abcdef0123456789abcdef0123456789abcdef".to_owned()),
            branch: Some("feature/orders".to_owned()),
            uncommitted: 0,
            root_commits: Vec::new(),
        }),
        isolation: crate::record::RunIsolation {
            kind: "bwrap".to_owned(),
            network: "host".to_owned(),
            reason: None,
            identity: None,
            tools: Vec::new(),
            tracer: Some("strace".to_owned()),
            toolchain: None,
        },
        base_runs: None,
        mutants: None,
        verdict: Verdict::Fail,
        verdict_reasons: vec![
            Reason::new(
                ReasonKind::Check,
                "build",
                Verdict::Fail,
                "check `build` failed: exited with status 3",
            ),
            Reason::new(
                ReasonKind::Criterion,
                "orders-201",
                Verdict::Fail,
                "criterion `orders-201` failed: exited with status 1",
            ),
        ],
        qualifier: None,
        self_guard: SelfGuard::on(),
        overridden: false,
        advisory: false,
        recorded: true,
        tier: Tier::Light,
        tier_reason: "3 tasks × 7 criteria".to_owned(),
        changed_files: vec!["src/orders/handler.rs".to_owned(), "README.md".to_owned()],
        files_fingerprinted: 42,
        checks: vec![
            build,
            check("unit", CheckKind::TaskTests, ItemStatus::Passed),
            secrets,
            after,
            carried,
        ],
        criteria: vec![orders, pii, unknown],
        review: ReviewRecord {
            status: ReviewStatus::Ran,
            reason: None,
            specialists: vec![
                specialist("quality", "ok", None),
                specialist("security", "ok", None),
                specialist(
                    "docs",
                    "did_not_run",
                    Some("rate limited (429) on every model"),
                ),
                SpecialistRecord {
                    model: String::new(),
                    attempts: Vec::new(),
                    input_tokens: Some(0),
                    output_tokens: Some(0),
                    cost_usd: Some(0.0),
                    latency_ms: 0,
                    ..specialist("performance", "skipped", Some("no code in the change"))
                },
            ],
            budget: None,
            breakers_refused: Vec::new(),
            request: None,
        },
        findings: vec![
            finding(
                "aaaaaaaaaaa1",
                "warning",
                "quality",
                "src/orders/handler.rs",
                Some(7),
                "Error swallowed: 50% of calls, a::b, c",
            ),
            finding(
                "bbbbbbbbbbb2",
                "critical",
                "security",
                "src/orders/handler.rs",
                Some(42),
                "SQL built from input\nwith %0A in it",
            ),
            finding(
                "aaaaaaaaaaa1",
                "warning",
                "quality",
                "src/orders/handler.rs",
                Some(90),
                "Error swallowed: 50% of calls, a::b, c",
            ),
            finding(
                "ccccccccccc3",
                "suggestion",
                "docs",
                "README.md",
                None,
                "README names the old flag",
            ),
        ],
        dropped_findings: vec![
            finding(
                "ddddddddddd4",
                "warning",
                "quality",
                "src/orders/handler.rs",
                Some(12),
                "Variable named `x`",
            )
            .dropped(FateBy::Coordinator, "a naming preference"),
            finding(
                "eeeeeeeeeee5",
                "critical",
                "performance",
                "src/orders/handler.rs",
                Some(60),
                "Loop *might* be slow | <b>",
            )
            .dropped(FateBy::Coordinator, "no realistic input makes it slow"),
            finding(
                "fffffffffff6",
                "suggestion",
                "docs",
                "README.md",
                Some(3),
                "Unsure wording",
            )
            .dropped(
                FateBy::ConfidenceFloor,
                "confidence 0.30 below the floor 0.50",
            ),
        ],
        doom_loop: None,
        content_digest: "c".repeat(64),
        previous_bundle: None,
        finding_fates: Vec::new(),
        duplicates: 0,
        failures: Vec::new(),
        override_note: None,
        pages: Vec::new(),
        bundle: Some(".gate/bundles/0190aaaa-bbbb-7ccc-8ddd-eeeeffff0000.dsse.json".to_owned()),
        routing_override: None,
        accepted_reports: Vec::new(),
        protected_reference: std::collections::BTreeMap::new(),
    }
}

/// The site the record's problems point into (spec at the repository root).
pub(crate) fn site() -> Site {
    Site {
        prefix: String::new(),
        spec_file: "gate.toml".to_owned(),
        lines: [("build", 5), ("orders-201", 20), ("orders-audit", 26)]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect(),
    }
}
