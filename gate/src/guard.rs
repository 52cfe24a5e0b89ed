//! The gate guards itself: with a base, the spec, its policy, the routing
//! table and prompt files are read at the base too, and a change that
//! removes or loosens any of them is a critical finding — so an agent cannot
//! pass the gate by deleting the test it fails.

use std::collections::BTreeMap;
use std::path::Path;

use gate_review::findings::Finding;
use gate_review::routing::{Routing, RoutingTable};
use gate_review::rules::discover::is_rules_file;
use gate_review::rules::model::{self as rules_model, Rule};
use gate_specs::{Criterion, OnBelow, Policy, ReviewUnavailable, Spec};

use crate::git::Git;

/// The role findings of the gate's own guard carry.
pub(crate) const GUARD_ROLE: &str = "gate";

/// Reads `path` as text as it was at `commit`, `None` when it did not
/// exist there (or could not be read).
pub(crate) async fn read_at_base(git: &Git, commit: &str, path: &Path) -> Option<String> {
    String::from_utf8(git.read_at(commit, path).await.ok()??).ok()
}

/// A loosening, before it becomes a finding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Loosening {
    /// The file it is in (workspace-relative).
    pub file: String,
    /// One line.
    pub title: String,
    /// What it was and what it is.
    pub detail: String,
}

impl Loosening {
    /// As a critical finding.
    pub(crate) fn into_finding(self) -> Finding {
        Finding::raised(
            GUARD_ROLE,
            "critical",
            self.file,
            None,
            self.title,
            self.detail,
            1.0,
        )
    }
}

/// What loosened between the spec at base and the spec now.
pub(crate) fn compare_specs(file: &str, base: &Spec, now: &Spec) -> Vec<Loosening> {
    let mut out = Vec::new();
    let mut flag = |title: String, detail: String| {
        out.push(Loosening {
            file: file.to_owned(),
            title,
            detail,
        });
    };
    for b in &base.checks {
        let Some(c) = now.checks.iter().find(|c| c.id == b.id) else {
            flag(
                format!("The change removes check `{}` from the spec", b.id),
                format!("At the base it ran `{}`.", b.run),
            );
            continue;
        };
        if c.run != b.run {
            flag(
                format!("The change alters the command of check `{}`", b.id),
                format!("`{}` at the base, `{}` now.", b.run, c.run),
            );
        }
        if c.inputs != b.inputs {
            flag(
                format!("The change alters the inputs of check `{}`", b.id),
                format!("{:?} at the base, {:?} now.", b.inputs, c.inputs),
            );
        }
        if c.starts != b.starts {
            flag(
                format!("The change alters how check `{}` proves it started", b.id),
                format!("{:?} at the base, {:?} now.", b.starts, c.starts),
            );
        }
    }
    for bt in &base.tasks {
        let nt = now.tasks.iter().find(|t| t.id == bt.id);
        if bt.tests.is_some() && nt.and_then(|t| t.tests.as_ref()) != bt.tests.as_ref() {
            flag(
                format!(
                    "The change removes or alters the unit-test precondition of task `{}`",
                    bt.id
                ),
                format!(
                    "{:?} at the base, {:?} now.",
                    bt.tests,
                    nt.and_then(|t| t.tests.as_ref())
                ),
            );
        }
    }
    for bp in &base.pages {
        match now.pages.iter().find(|p| p.id == bp.id) {
            None => flag(
                format!("The change removes page `{}`", bp.id),
                format!("At the base: {} for {:?}.", bp.url, bp.files),
            ),
            Some(np) if np.url != bp.url || np.files != bp.files => flag(
                format!(
                    "The change alters which page `{}` is or when it is looked at",
                    bp.id
                ),
                format!(
                    "{} for {:?} at the base, {} for {:?} now.",
                    bp.url, bp.files, np.url, np.files
                ),
            ),
            Some(_) => {}
        }
    }
    for (title, detail) in compare_criteria(base, now) {
        flag(title, detail);
    }
    for (title, detail) in compare_policy(&base.policy, &now.policy) {
        flag(title, detail);
    }
    for (title, detail) in compare_sandbox(base, now) {
        flag(title, detail);
    }
    out
}

/// What of the acceptance criteria the change loosened: one removed, its
/// decider, inputs or expectation changed, its threshold lowered.
fn compare_criteria(base: &Spec, now: &Spec) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let now_criteria: BTreeMap<&str, &Criterion> =
        now.criteria().map(|(_, c)| (c.id.as_str(), c)).collect();
    for (_, b) in base.criteria() {
        let Some(c) = now_criteria.get(b.id.as_str()) else {
            out.push((
                format!("The change removes acceptance criterion `{}`", b.id),
                format!("At the base: \"{}\".", b.text),
            ));
            continue;
        };
        if c.run != b.run {
            let detail = match (&b.run, &c.run) {
                (Some(_), None) => "It was decided by code; now a model judges it.".to_owned(),
                _ => format!("{:?} at the base, {:?} now.", b.run, c.run),
            };
            out.push((
                format!("The change alters how criterion `{}` is decided", b.id),
                detail,
            ));
        }
        if c.inputs != b.inputs {
            out.push((
                format!("The change alters the inputs of criterion `{}`", b.id),
                format!("{:?} at the base, {:?} now.", b.inputs, c.inputs),
            ));
        }
        let (bt, ct) = (
            b.threshold.unwrap_or(base.policy.judge_threshold),
            c.threshold.unwrap_or(now.policy.judge_threshold),
        );
        // An expectation of the base is part of the exam: a pass that had
        // to be earned must not become one that need not be.
        let (be, ce) = (b.expectation(&base.policy), c.expectation(&now.policy));
        if be != gate_specs::Expect::Any && ce != be {
            out.push((
                format!("The change drops the expectation of criterion `{}`", b.id),
                format!(
                    "`expect = \"{}\"` at the base, \"{}\" now.",
                    be.as_str(),
                    ce.as_str()
                ),
            ));
        }
        if b.judge.is_some() && ct < bt {
            out.push((
                format!("The change lowers the threshold of criterion `{}`", b.id),
                format!("{bt} at the base, {ct} now."),
            ));
        }
    }
    out
}

/// What of `[sandbox]` and `[spec] protected` the change widened: a weaker
/// mode or a wider network, more writable or readable paths or passed variables, fewer
/// hidden paths or protected globs.
fn compare_sandbox(base: &Spec, now: &Spec) -> Vec<(String, String)> {
    let (b, n) = (&base.sandbox, &now.sandbox);
    let mut out = Vec::new();
    let (bm, nm) = (b.mode.unwrap_or_default(), n.mode.unwrap_or_default());
    if nm < bm {
        out.push((
            "The change weakens [sandbox] mode".to_owned(),
            format!("\"{}\" at the base, \"{}\" now.", bm.as_str(), nm.as_str()),
        ));
    }
    let (bn, nn) = (b.network.unwrap_or_default(), n.network.unwrap_or_default());
    if nn < bn {
        out.push((
            "The change widens [sandbox] network".to_owned(),
            format!("\"{}\" at the base, \"{}\" now.", bn.as_str(), nn.as_str()),
        ));
    }
    for path in n.writable.iter().filter(|p| !b.writable.contains(p)) {
        out.push((
            format!("The change makes `{path}` writable to what the gate runs"),
            "[sandbox] writable did not name it at the base.".to_owned(),
        ));
    }
    for path in n.readable.iter().filter(|p| !b.readable.contains(p)) {
        out.push((
            format!("The change makes `{path}` readable to what the gate runs"),
            "[sandbox] readable did not name it at the base.".to_owned(),
        ));
    }
    for name in n.pass_env.iter().filter(|p| !b.pass_env.contains(p)) {
        out.push((
            format!("The change passes `{name}` to what the gate runs"),
            "[sandbox] pass_env did not name it at the base.".to_owned(),
        ));
    }
    for path in b.hidden.iter().filter(|p| !n.hidden.contains(p)) {
        out.push((
            format!("The change stops hiding `{path}` from what the gate runs"),
            "[sandbox] hidden named it at the base.".to_owned(),
        ));
    }
    for glob in base
        .spec
        .protected
        .iter()
        .filter(|g| !now.spec.protected.contains(g))
    {
        out.push((
            format!("The change drops the protected verifiers `{glob}`"),
            "[spec] protected named them at the base.".to_owned(),
        ));
    }
    out
}

/// Loosenings of `[policy] mutants` (a lowered `min_score` is among the
/// lowered shares): turned off, a failure made a warning, fewer mutants.
fn compare_mutants(b: &Policy, n: &Policy) -> Vec<(String, String)> {
    let mut out = Vec::new();
    if let Some(was) = &b.mutants {
        match &n.mutants {
            None => out.push((
                "The change turns off mutation scoring ([policy] mutants)".to_owned(),
                format!("min_score {} at the base, nothing now.", was.min_score),
            )),
            Some(now) => {
                if was.on_below == OnBelow::Fail && now.on_below == OnBelow::Warn {
                    out.push((
                        "The change only warns below [policy] mutants.min_score".to_owned(),
                        "on_below = \"fail\" at the base, \"warn\" now.".to_owned(),
                    ));
                }
                if now.max.unwrap_or(u32::MAX) < was.max.unwrap_or(u32::MAX) {
                    out.push((
                        "The change runs fewer mutants ([policy] mutants.max)".to_owned(),
                        format!("{:?} at the base, {:?} now.", was.max, now.max),
                    ));
                }
            }
        }
    }
    out
}

fn compare_policy(b: &Policy, n: &Policy) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut lowered = |key: &str, was: f64, now: f64| {
        if now < was {
            out.push((
                format!("The change lowers [policy] {key}"),
                format!("{was} at the base, {now} now."),
            ));
        }
    };
    lowered("judge_threshold", b.judge_threshold, n.judge_threshold);
    lowered("rule_threshold", b.rule_threshold, n.rule_threshold);
    lowered("min_coverage", b.min_coverage, n.min_coverage);
    if let (Some(was), Some(now)) = (&b.mutants, &n.mutants) {
        lowered("mutants.min_score", was.min_score, now.min_score);
    }
    // Raising these loosens: fewer findings kept, smaller panels, longer loops.
    lowered(
        "confidence_floor (raised)",
        -b.confidence_floor,
        -n.confidence_floor,
    );
    for (key, was, now) in [
        (
            "trivial_max_tasks",
            b.trivial_max_tasks,
            n.trivial_max_tasks,
        ),
        (
            "trivial_max_criteria",
            b.trivial_max_criteria,
            n.trivial_max_criteria,
        ),
        ("light_max_tasks", b.light_max_tasks, n.light_max_tasks),
        (
            "light_max_criteria",
            b.light_max_criteria,
            n.light_max_criteria,
        ),
        ("max_attempts", b.max_attempts, n.max_attempts),
        ("repeat_attempts", b.repeat_attempts, n.repeat_attempts),
        (
            "no_progress_attempts",
            b.no_progress_attempts,
            n.no_progress_attempts,
        ),
    ] {
        if now > was {
            out.push((
                format!("The change raises [policy] {key}"),
                format!("{was} at the base, {now} now."),
            ));
        }
    }
    for (key, was, now) in [
        ("builtin_secrets", b.builtin_secrets, n.builtin_secrets),
        (
            "builtin_conflicts",
            b.builtin_conflicts,
            n.builtin_conflicts,
        ),
        ("builtin_parse", b.builtin_parse, n.builtin_parse),
        ("builtin_overflow", b.builtin_overflow, n.builtin_overflow),
        ("builtin_contrast", b.builtin_contrast, n.builtin_contrast),
    ] {
        if was && !now {
            out.push((
                format!("The change turns off the built-in check {key}"),
                "It was on at the base.".to_owned(),
            ));
        }
    }
    if n.base_runs < b.base_runs {
        out.push((
            "The change runs less on the base ([policy] base_runs)".to_owned(),
            format!(
                "\"{}\" at the base, \"{}\" now.",
                b.base_runs.as_str(),
                n.base_runs.as_str()
            ),
        ));
    }
    out.extend(compare_mutants(b, n));
    if !b.coordinator_may_drop_critical && n.coordinator_may_drop_critical {
        out.push((
            "The change lets the coordinator drop corroborated critical findings".to_owned(),
            "[policy] coordinator_may_drop_critical was false at the base, true now.".to_owned(),
        ));
    }
    for check in ["conflicts", "secrets", "parse"] {
        let was = b.builtin_exclude.for_check(check);
        for glob in n.builtin_exclude.for_check(check) {
            if !was.contains(&glob) {
                out.push((
                    format!("The change exempts `{glob}` from the built-in check builtin_{check}"),
                    "[policy] builtin_exclude did not exempt it at the base.".to_owned(),
                ));
            }
        }
    }
    for path in &b.sensitive_paths {
        if !n.sensitive_paths.contains(path) {
            out.push((
                format!("The change drops the sensitive path `{path}`"),
                "Changes to it were lifted to the full tier at the base.".to_owned(),
            ));
        }
    }
    // A tier whose runs could not pass without their review now can.
    out.extend(tiers_let_pass(
        "on_review_unavailable",
        b.on_review_unavailable,
        n.on_review_unavailable,
        "when a reviewer did not run",
    ));
    out.extend(tiers_let_pass(
        "on_review_cut",
        b.on_review_cut,
        n.on_review_cut,
        "on code no reviewer was shown",
    ));
    out
}

/// The tiers whose runs `key` let pass now and did not at the base.
fn tiers_let_pass(
    key: &str,
    base: gate_specs::OnReviewUnavailable,
    now: gate_specs::OnReviewUnavailable,
    when: &str,
) -> Vec<(String, String)> {
    base.by_tier()
        .into_iter()
        .zip(now.by_tier())
        .filter(|((_, was), (_, now))| {
            *was != ReviewUnavailable::Pass && *now == ReviewUnavailable::Pass
        })
        .map(|((tier, was), _)| {
            (
                format!("The change lets {tier} runs pass {when}"),
                format!(
                    "{key} was \"{}\" for {tier} runs at the base, \"pass\" now.",
                    was.as_str()
                ),
            )
        })
        .collect()
}

/// What loosened between the routing table at base and now.
pub(crate) fn compare_routing(
    file: &str,
    base: &RoutingTable,
    now: Option<&RoutingTable>,
) -> Vec<Loosening> {
    let Some(now) = now else {
        return vec![Loosening {
            file: file.to_owned(),
            title: "The change removes the routing table".to_owned(),
            detail: "The built-in table replaces the one the base had.".to_owned(),
        }];
    };
    let mut out = Vec::new();
    for (key, class) in &base.routes {
        if !now.routes.contains_key(key) {
            out.push(Loosening {
                file: file.to_owned(),
                title: format!("The change removes the route `{key}`"),
                detail: format!("It went to `{class}` at the base."),
            });
        }
    }
    for (name, m) in &now.models {
        if m.disabled && base.models.get(name).is_some_and(|b| !b.disabled) {
            out.push(Loosening {
                file: file.to_owned(),
                title: format!("The change disables model class `{name}`"),
                detail: String::new(),
            });
        }
    }
    for (role, path) in &base.prompts {
        if now.prompts.get(role) != Some(path) {
            out.push(Loosening {
                file: file.to_owned(),
                title: format!("The change replaces the {role} prompt"),
                detail: format!("`{path}` at the base."),
            });
        }
    }
    out
}

/// Why the spec at the base cannot be compared with the spec now: the
/// self-guard is then off, and the run says so.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum NoBaseSpec {
    /// The spec did not exist at the base.
    Missing,
    /// It did, but does not parse.
    Unparsable,
    /// git could not say: the run stops rather than guard nothing.
    Unreadable(String),
}

/// The spec as it was at `base` (a commit id), or why there is none to
/// compare with.
pub(crate) async fn spec_at_base(
    git: &Git,
    base: &str,
    spec_path: &Path,
) -> Result<Spec, NoBaseSpec> {
    let bytes = git
        .read_at(base, spec_path)
        .await
        .map_err(NoBaseSpec::Unreadable)?
        .ok_or(NoBaseSpec::Missing)?;
    let text = String::from_utf8(bytes).map_err(|_| NoBaseSpec::Unparsable)?;
    gate_specs::parse_str(&text, spec_path, gate_specs::Format::from_path(spec_path)).map_err(|e| {
        tracing::warn!(error = %e, "the spec at the base does not parse; not compared");
        NoBaseSpec::Unparsable
    })
}

/// What loosened in one house rules file between the base (`base`, its
/// rules) and now (`None`: the file is gone): a judged rule removed or no
/// longer judged, its claim reworded, its severity lowered, or where it
/// applies changed. The rules are the exam the rules reviewer sets.
pub(crate) fn compare_rules(file: &str, base: &[Rule], now: Option<&[Rule]>) -> Vec<Loosening> {
    let loosening = |title: String, detail: String| Loosening {
        file: file.to_owned(),
        title,
        detail,
    };
    let judged: Vec<&Rule> = base.iter().filter(|r| r.judge).collect();
    let Some(now) = now else {
        if judged.is_empty() {
            return Vec::new();
        }
        return vec![loosening(
            format!("The change removes the house rules file `{file}`"),
            format!(
                "It held {} judged rule{} at the base.",
                judged.len(),
                if judged.len() == 1 { "" } else { "s" }
            ),
        )];
    };
    let mut found = Vec::new();
    for was in judged {
        let Some(is) = now.iter().find(|r| r.id == was.id) else {
            found.push(loosening(
                format!("The change removes house rule `{}`", was.id),
                format!("It said: {}", was.claim.text()),
            ));
            continue;
        };
        let change = if !is.judge {
            Some("no longer judges it".to_owned())
        } else if is.claim != was.claim {
            Some(format!(
                "rewords it (was: {}; now: {})",
                was.claim.text(),
                is.claim.text()
            ))
        } else if is.severity > was.severity {
            Some(format!(
                "lowers its severity from {} to {}",
                was.severity.as_str(),
                is.severity.as_str()
            ))
        } else if is.applies != was.applies {
            Some(format!(
                "changes where it applies (was: {:?}; now: {:?})",
                was.applies, is.applies
            ))
        } else {
            None
        };
        if let Some(change) = change {
            found.push(loosening(
                format!("The change alters house rule `{}`", was.id),
                format!("It {change}."),
            ));
        }
    }
    found
}

/// The house rules files at `base` under the workspace, each compared with
/// the file now.
async fn compare_rules_files(git: &Git, workspace: &Path, base: &str) -> Vec<Loosening> {
    // Paths relative to the directory git runs in: the workspace.
    let Ok(listing) = git
        .run(workspace, &["ls-tree", "-r", "-z", "--name-only", base])
        .await
    else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for file in listing
        .split(|b| *b == 0)
        .filter_map(|p| std::str::from_utf8(p).ok())
        .filter(|p| is_rules_file(p))
    {
        let spec = format!("{base}:./{file}");
        let Some(then) = git
            .run(workspace, &["cat-file", "blob", &spec])
            .await
            .ok()
            .and_then(|b| String::from_utf8(b).ok())
        else {
            continue;
        };
        let Ok(base_rules) = rules_model::parse(&then, file) else {
            continue;
        };
        let now_path = workspace.join(file);
        let now = if now_path.exists() {
            match gate_specs::read_text_bounded(&now_path, gate_specs::TEXT_MAX_BYTES)
                .ok()
                .map(|t| rules_model::parse(&t, file))
            {
                Some(Ok(rules)) => Some(rules),
                // One that no longer parses fails the run when the rules load.
                _ => continue,
            }
        } else {
            None
        };
        found.extend(compare_rules(file, &base_rules, now.as_deref()));
    }
    found
}

/// Compares the gate's own inputs with what they were at `base` (a commit
/// id): the spec (`base_spec`, as [`spec_at_base`] read it), the routing
/// table, prompt override files and the house rules files.
pub(crate) async fn check(
    git: &Git,
    workspace: &Path,
    base: &str,
    spec_path: &Path,
    (spec, base_spec): (&Spec, Option<&Spec>),
    routing: &Routing,
) -> Vec<Finding> {
    let rel = |p: &Path| {
        p.strip_prefix(workspace)
            .unwrap_or(p)
            .to_string_lossy()
            .replace('\\', "/")
    };
    let mut found = Vec::new();
    if let Some(base_spec) = base_spec {
        found.extend(compare_specs(&rel(spec_path), base_spec, spec));
    }
    let routing_path = match &routing.origin {
        gate_review::routing::Origin::File(p) => Some(p.clone()),
        gate_review::routing::Origin::Builtin => spec_path.parent().map(|d| d.join("routing.toml")),
    };
    if let Some(path) = routing_path
        && let Some(text) = read_at_base(git, base, &path).await
        && let Ok(base_table) = gate_specs::from_toml_str::<RoutingTable>(&text, &path)
    {
        let now = match routing.origin {
            gate_review::routing::Origin::File(_) => Some(&routing.table),
            gate_review::routing::Origin::Builtin => None,
        };
        found.extend(compare_routing(&rel(&path), &base_table, now));
        // A prompt file the table names, changed since the base.
        if let (Some(dir), Some(now)) = (path.parent(), now) {
            for (role, p) in &now.prompts {
                if base_table.prompts.get(role) != Some(p) {
                    continue;
                }
                let file = dir.join(p);
                let (was, is) = (
                    read_at_base(git, base, &file).await,
                    gate_specs::read_text_bounded(&file, gate_specs::TEXT_MAX_BYTES).ok(),
                );
                if was.is_some() && was != is {
                    found.push(Loosening {
                        file: rel(&file),
                        title: format!("The change edits the {role} prompt"),
                        detail: "Prompts are part of the gate's own configuration.".to_owned(),
                    });
                }
            }
        }
    }
    found.extend(compare_rules_files(git, workspace, base).await);
    found.into_iter().map(Loosening::into_finding).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(text: &str) -> Spec {
        gate_specs::parse_str(text, Path::new("gate.toml"), gate_specs::Format::Toml).unwrap()
    }

    const BASE: &str = r#"
[spec]
id = "s"
protected = ["tests/acceptance/**"]
[sandbox]
mode = "required"
network = "loopback"
writable = ["~/.cache/a"]
readable = ["~/.cache/a"]
hidden = ["/srv/secrets"]
pass_env = ["A"]
[[check]]
id = "build"
run = "make"
[[check]]
id = "lint"
run = "make lint"
[[task]]
id = "t"
tests = { run = "make test" }
[[task.criterion]]
id = "c1"
text = "holds"
run = "./check.sh"
[[task.criterion]]
id = "c2"
text = "judged"
judge = "model"
[[page]]
id = "home"
url = "http://127.0.0.1:8080/"
files = ["web/**"]
after = ["build"]
[policy]
builtin_secrets = true
on_review_unavailable = { full = "incomplete", light = "fail" }
expect_default = "fail-to-pass"
mutants = { min_score = 0.8, on_below = "fail" }
"#;

    #[test]
    fn loosenings_are_named() {
        // (text replaced in the base spec, replacement, the finding's title)
        let cases: &[(&str, &str, &str)] = &[
            (
                "[[check]]\nid = \"lint\"\nrun = \"make lint\"\n",
                "",
                "The change removes check `lint` from the spec",
            ),
            (
                "run = \"make lint\"",
                "run = \"true\"",
                "The change alters the command of check `lint`",
            ),
            (
                "[[task.criterion]]\nid = \"c1\"\ntext = \"holds\"\nrun = \"./check.sh\"\n",
                "",
                "The change removes acceptance criterion `c1`",
            ),
            (
                "run = \"./check.sh\"",
                "judge = \"model\"",
                "The change alters how criterion `c1` is decided",
            ),
            (
                "builtin_secrets = true",
                "builtin_secrets = false",
                "The change turns off the built-in check builtin_secrets",
            ),
            (
                "tests = { run = \"make test\" }\n",
                "",
                "The change removes or alters the unit-test precondition of task `t`",
            ),
            (
                "builtin_secrets = true",
                "sensitive_paths = [\"**/auth/**\"]",
                "The change drops the sensitive path `**/crypto/**`",
            ),
            (
                "[[page]]\nid = \"home\"\nurl = \"http://127.0.0.1:8080/\"\nfiles = [\"web/**\"]\nafter = [\"build\"]\n",
                "",
                "The change removes page `home`",
            ),
            (
                "files = [\"web/**\"]",
                "files = [\"web/none/**\"]",
                "The change alters which page `home` is or when it is looked at",
            ),
            (
                "builtin_secrets = true",
                "builtin_contrast = false",
                "The change turns off the built-in check builtin_contrast",
            ),
            (
                "run = \"./check.sh\"",
                "run = \"./check.sh\"\nexpect = \"pass-to-pass\"",
                "The change drops the expectation of criterion `c1`",
            ),
            (
                "builtin_secrets = true",
                "base_runs = \"never\"",
                "The change runs less on the base ([policy] base_runs)",
            ),
            (
                "mutants = { min_score = 0.8, on_below = \"fail\" }",
                "",
                "The change turns off mutation scoring ([policy] mutants)",
            ),
            (
                "mutants = { min_score = 0.8, on_below = \"fail\" }",
                "mutants = { min_score = 0.5, on_below = \"fail\" }",
                "The change lowers [policy] mutants.min_score",
            ),
            (
                "mutants = { min_score = 0.8, on_below = \"fail\" }",
                "mutants = { min_score = 0.8 }",
                "The change only warns below [policy] mutants.min_score",
            ),
            (
                "builtin_secrets = true",
                "coordinator_may_drop_critical = true",
                "The change lets the coordinator drop corroborated critical findings",
            ),
            (
                "[sandbox]\nmode = \"required\"",
                "[sandbox]\nmode = \"auto\"",
                "The change weakens [sandbox] mode",
            ),
            (
                "[sandbox]\nmode = \"required\"",
                "[sandbox]",
                "The change weakens [sandbox] mode",
            ),
            (
                "network = \"loopback\"",
                "network = \"host\"",
                "The change widens [sandbox] network",
            ),
            (
                "writable = [\"~/.cache/a\"]",
                "writable = [\"~/.cache/a\", \"/opt\"]",
                "The change makes `/opt` writable to what the gate runs",
            ),
            (
                "readable = [\"~/.cache/a\"]",
                "readable = [\"~/.cache/a\", \"/srv/data\"]",
                "The change makes `/srv/data` readable to what the gate runs",
            ),
            (
                "pass_env = [\"A\"]",
                "pass_env = [\"A\", \"B_TOKEN\"]",
                "The change passes `B_TOKEN` to what the gate runs",
            ),
            (
                "hidden = [\"/srv/secrets\"]",
                "hidden = []",
                "The change stops hiding `/srv/secrets` from what the gate runs",
            ),
            (
                "protected = [\"tests/acceptance/**\"]",
                "protected = []",
                "The change drops the protected verifiers `tests/acceptance/**`",
            ),
            (
                "builtin_secrets = true",
                "builtin_exclude = [\"src/**\"]",
                "The change exempts `src/**` from the built-in check builtin_secrets",
            ),
            (
                "builtin_secrets = true",
                "builtin_exclude = { parse = [\"fixtures/**\"] }",
                "The change exempts `fixtures/**` from the built-in check builtin_parse",
            ),
            (
                "on_review_unavailable = { full = \"incomplete\", light = \"fail\" }",
                "on_review_unavailable = { light = \"fail\" }",
                "The change lets full runs pass when a reviewer did not run",
            ),
            (
                "expect_default = \"fail-to-pass\"",
                "expect_default = \"fail-to-pass\"\non_review_cut = \"pass\"",
                "The change lets full runs pass on code no reviewer was shown",
            ),
        ];
        for (from, to, want) in cases {
            assert!(BASE.contains(from), "{from:?}");
            let now = BASE.replace(from, to);
            let found = compare_specs("gate.toml", &spec(BASE), &spec(&now));
            assert!(
                found.iter().any(|l| l.title == *want),
                "{want:?} not in {:#?}",
                found.iter().map(|l| &l.title).collect::<Vec<_>>()
            );
        }
        assert!(compare_specs("gate.toml", &spec(BASE), &spec(BASE)).is_empty());
    }

    #[test]
    fn tightening_is_not_flagged() {
        let tighter = BASE.replace(
            "builtin_secrets = true",
            "judge_threshold = 0.9\nmax_attempts = 3",
        );
        assert!(compare_specs("gate.toml", &spec(BASE), &spec(&tighter)).is_empty());
        let tighter = BASE
            .replace(
                "hidden = [\"/srv/secrets\"]",
                "hidden = [\"/srv/secrets\", \"/x\"]",
            )
            .replace("pass_env = [\"A\"]", "pass_env = []")
            .replace(
                "protected = [\"tests/acceptance/**\"]",
                "protected = [\"tests/acceptance/**\", \"t/**\"]",
            );
        assert!(compare_specs("gate.toml", &spec(BASE), &spec(&tighter)).is_empty());
        let looser = BASE.replace("builtin_secrets = true", "judge_threshold = 0.5");
        let found = compare_specs("gate.toml", &spec(BASE), &spec(&looser));
        let titles: Vec<&str> = found.iter().map(|l| l.title.as_str()).collect();
        assert!(
            titles.contains(&"The change lowers [policy] judge_threshold"),
            "{titles:?}"
        );
        assert!(
            titles.contains(&"The change lowers the threshold of criterion `c2`"),
            "{titles:?}"
        );
    }

    #[test]
    fn house_rules_loosened_are_named() {
        const RULES: &str = r#"
[[rule]]
id = "errors"
mistake = "An error is swallowed."
fix = "Return it."
severity = "critical"
applies = ["src/**"]
[[rule.cases.violating]]
file = "src/a.rs"
diff = "+    Err(_) => return None,"
[[rule.cases.compliant]]
file = "src/a.rs"
diff = "+    Err(e) => return Err(e),"

[[rule]]
id = "guide"
statement = "Names are short."
fix = "Shorten them."
judge = false
"#;
        let base = rules_model::parse(RULES, "docs/review/rules.toml").unwrap();
        // (text replaced in the base file, replacement, the finding's title)
        let cases: &[(&str, &str, Option<&str>)] = &[
            ("", "", None),
            (
                "id = \"errors\"",
                "id = \"errs\"",
                Some("The change removes house rule `errors`"),
            ),
            (
                "severity = \"critical\"",
                "severity = \"warning\"",
                Some("The change alters house rule `errors`"),
            ),
            (
                "An error is swallowed.",
                "Nothing.",
                Some("The change alters house rule `errors`"),
            ),
            (
                "applies = [\"src/**\"]",
                "applies = [\"src/none/**\"]",
                Some("The change alters house rule `errors`"),
            ),
            (
                "fix = \"Return it.\"\nseverity",
                "fix = \"Return it.\"\njudge = false\nseverity",
                Some("The change alters house rule `errors`"),
            ),
            // A severity left out is the default, warning: lowered.
            (
                "severity = \"critical\"\n",
                "",
                Some("The change alters house rule `errors`"),
            ),
            // A guide entry is never asked: editing it loosens nothing.
            ("Names are short.", "Names are long.", None),
        ];
        for (from, to, want) in cases {
            let text = RULES.replacen(from, to, 1);
            let now = rules_model::parse(&text, "docs/review/rules.toml").unwrap();
            let found = compare_rules("docs/review/rules.toml", &base, Some(&now));
            let titles: Vec<&str> = found.iter().map(|l| l.title.as_str()).collect();
            assert_eq!(
                titles,
                want.iter().copied().collect::<Vec<_>>(),
                "{from} -> {to}"
            );
        }
        let gone = compare_rules("docs/review/rules.toml", &base, None);
        assert_eq!(
            gone[0].title,
            "The change removes the house rules file `docs/review/rules.toml`"
        );
    }
}
