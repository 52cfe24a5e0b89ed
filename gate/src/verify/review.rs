//! The review stage of a run: reads what reviewers see, decides what a
//! retry can carry, and hands the rest to [`gate_review::review::run`].

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use gate_evidence::Snapshot;
use gate_harness::ItemResult;
use gate_harness::secrets::Redactor;
use gate_review::findings::Finding;
use gate_review::review::breaker::{BreakerPolicy, Breakers};
use gate_review::review::context::{self, Fence};
use gate_review::review::prompts::Prompts;
use gate_review::review::watch::Watch;
use gate_review::review::{
    self, CarriedReview, JudgedCriterion, ReviewInput, ReviewOutput, design_rules, house_rules,
};
use gate_review::role::Role;
use gate_review::routing::Routing;
use gate_review::rules::RuleSet;
use gate_review::tier::TierDecision;
use gate_specs::{Decider, InputGlobs, Spec};

use crate::config::{self, Context};
use crate::errors::GateError;
use crate::events::EventSink;
use crate::plan::Plan;
use crate::retry::delta::Previous;
use crate::{attest, output};

/// Why an advisory run without a table of its own does not review.
pub(crate) const ADVISORY_UNROUTED: &str = "advisory run with no routing table for advisory \
     runs (advisory-routing.toml in the user's gate configuration folder, or the hook's \
     --routing); the agent's own provider keys are not used";

/// The model review's inputs.
pub(super) struct ReviewStage<'a> {
    pub ctx: &'a Context,
    pub spec: &'a Spec,
    pub snapshot: &'a Snapshot,
    pub changed: &'a [String],
    pub tier: &'a TierDecision,
    pub routing: &'a Routing,
    pub prompts: &'a Prompts,
    pub results: &'a HashMap<String, ItemResult>,
    pub plan: &'a Plan,
    pub run_id: &'a str,
    pub previous: Option<&'a Previous>,
    pub full: bool,
    pub rule_set: &'a RuleSet,
    pub events: &'a EventSink,
    /// Pages captured in this run whose check passed, with their screenshots.
    pub pages: &'a [design_rules::PageShots],
    /// What no model is sent: the run's secret values and secret shapes.
    pub redactor: &'a Redactor,
    /// Where the bundle goes, and the review request beside it.
    pub store: &'a gate_evidence::store::BundleStore,
    /// The run's signing key: it seals the breaker states this run writes
    /// and vouches for those it reads.
    pub key: &'a gate_evidence::SigningKey,
    /// What the items ran on, for the files they changed: read instead of
    /// the disk.
    pub tested: &'a super::tested::Tested,
    /// The base commit and the gate's git, when the run has a base: what
    /// changed in a large file is shown first.
    pub base: Option<(&'a crate::git::Git, &'a str)>,
}

/// Lines of context around a changed hunk, shown with it.
const HUNK_CONTEXT: &str = "-U20";

/// The spans of `text` (a file's start as read) that `git diff` says
/// changed against `commit`, with their context: `@@ -a,b +c,d @@` hunks
/// read as lines `c..c+d` of the file now, turned into byte offsets.
async fn changed_spans(
    git: &crate::git::Git,
    workspace: &std::path::Path,
    commit: &str,
    path: &str,
    text: &str,
) -> Vec<(u64, u64)> {
    let literal = format!(":(literal){path}");
    let Ok(out) = git
        .run(
            workspace,
            &[
                "diff",
                "--no-color",
                "--no-ext-diff",
                "--no-textconv",
                HUNK_CONTEXT,
                commit,
                "--",
                &literal,
            ],
        )
        .await
    else {
        return Vec::new();
    };
    // Byte offset of each line's start; one past the end closes the last.
    let mut starts: Vec<u64> = std::iter::once(0)
        .chain(text.match_indices('\n').map(|(i, _)| i as u64 + 1))
        .collect();
    starts.push(text.len() as u64);
    let line_at = |n: u64| {
        usize::try_from(n)
            .ok()
            .and_then(|n| starts.get(n).copied())
            .unwrap_or(text.len() as u64)
    };
    String::from_utf8_lossy(&out)
        .lines()
        .filter_map(|l| l.strip_prefix("@@ -")?.split_once(" +"))
        .filter_map(|(_, new)| {
            let range = new.split(' ').next()?;
            let (first, count) = range.split_once(',').unwrap_or((range, "1"));
            let (first, count): (u64, u64) = (first.parse().ok()?, count.parse().ok()?);
            let from = first.saturating_sub(1);
            Some((line_at(from), line_at(from + count.max(1))))
        })
        .collect()
}

/// `files` as a model may see them: a secret in one (a `.env`, a URL with
/// its password, a value of the run's secret variables) is not sent to a
/// provider, and lines stay where they were, so findings name the right
/// ones.
fn redacted(
    mut files: Vec<context::ChangedFile>,
    redactor: &Redactor,
) -> Vec<context::ChangedFile> {
    for text in files.iter_mut().filter_map(|f| f.text.as_mut()) {
        *text = redactor.redact_keeping_lines(text);
    }
    files
}

impl ReviewStage<'_> {
    /// The change and the judged criteria's inputs, as the items ran on
    /// them and redacted, read off the runtime's threads.
    async fn read(
        &self,
        judge_paths: Vec<String>,
    ) -> Result<(Vec<context::ChangedFile>, Vec<context::ChangedFile>), GateError> {
        let workspace = self.ctx.workspace.clone();
        let changed = self.changed.to_vec();
        let redactor = self.redactor.clone();
        let tested = self.tested.clone();
        tokio::task::spawn_blocking(move || {
            let substitutes = tested.substitutes();
            let read = |paths: &[String]| {
                redacted(
                    context::read_change(&workspace, paths, &substitutes),
                    &redactor,
                )
            };
            (read(&changed), read(&judge_paths))
        })
        .await
        .map_err(|e| GateError::Workspace {
            path: self.ctx.workspace.clone(),
            reason: format!("reading the change stopped: {e}"),
        })
    }

    /// The model review, when a provider is configured.
    pub(super) async fn run(&self) -> Result<ReviewOutput, GateError> {
        let keys = config::provider_keys(self.routing, &self.ctx.env);
        if keys.is_empty() {
            return Ok(ReviewOutput::skipped("no provider configured"));
        }
        let spec = self.spec;
        let clients = review::call::clients(
            self.routing,
            &keys,
            Duration::from_secs(spec.policy.connect_timeout_s),
        )
        .map_err(|e| GateError::Usage(format!("cannot set up the model client: {e}")))?;
        // Only criteria this attempt runs are asked; carried ones keep their answer.
        let judged: Vec<JudgedCriterion> = spec
            .criteria()
            .filter(|(_, c)| c.decider() == Decider::Model)
            .filter(|(_, c)| {
                self.plan
                    .items
                    .iter()
                    .any(|i| i.id == c.id && i.decision.runs())
            })
            .map(|(t, c)| JudgedCriterion {
                id: c.id.clone(),
                task: t.id.clone(),
                text: c.text.clone(),
            })
            .collect();
        let (mut change, judge_files) = self.read(judge_inputs(spec, self.snapshot)).await?;
        if let Some((git, commit)) = self.base {
            // Only a file shown in pieces needs to know where it changed.
            for f in &mut change {
                let Some(text) = f.text.as_deref().filter(|t| t.len() > context::FILE_CAP) else {
                    continue;
                };
                f.changed = changed_spans(git, &self.ctx.workspace, commit, &f.path, text).await;
            }
        }
        let code_criteria: Vec<(String, String)> = spec
            .criteria()
            .filter_map(|(_, c)| {
                let r = self.results.get(&c.id)?;
                Some((c.id.clone(), format!("{:?}", r.status).to_lowercase()))
            })
            .collect();
        let (carried, earlier) = self.carry();
        let shown: Vec<String> = change
            .iter()
            .filter(|f| f.noise.is_none() && f.text.is_some())
            .map(|f| f.path.clone())
            .collect();
        let asked = house_rules::asked(self.rule_set, &shown);
        let rule_references = redacted(
            context::read_change(
                &self.ctx.workspace,
                &house_rules::references(&asked),
                &self.tested.substitutes(),
            ),
            self.redactor,
        );
        let page_asks: Vec<design_rules::PageAsk> = self
            .pages
            .iter()
            .filter_map(|page| {
                let asked = design_rules::asked(self.rule_set, &page.files);
                (!asked.is_empty()).then(|| design_rules::PageAsk {
                    page: page.clone(),
                    asked,
                })
            })
            .collect();
        let fence = Fence::new();
        /// Where the newest breaker generations seen are kept.
        const BREAKERS_SEEN_FILE: &str = "breakers-seen.json";
        let breaker_policy = BreakerPolicy::with_cooldown(spec.policy.breaker_cooldown_s);
        let breakers = match attest::open_ledger(self.ctx) {
            Ok(ledger) => Breakers::kept_in(LedgerBreakers(ledger), breaker_policy, self.key)
                .remembering(
                    &self.ctx.workspace,
                    &self.ctx.state_dir.join(BREAKERS_SEEN_FILE),
                ),
            Err(e) => {
                tracing::warn!(error = %e, "circuit breakers kept for this run only");
                Breakers::in_memory(breaker_policy)
            }
        };
        let review_events = self.events.review();
        let watch = Watch::reporting_to(review_events.clone());
        // Heartbeat lines come from the event dispatcher; on a terminal, a
        // spinner line shows the same.
        let spinner = output::heartbeat::spinner(watch.clone(), self.ctx);
        let input = ReviewInput {
            run_id: self.run_id,
            spec,
            tier: self.tier,
            change: &change,
            judged: &judged,
            judge_files: &judge_files,
            rules: &asked,
            rule_references: &rule_references,
            pages: &page_asks,
            code_criteria: &code_criteria,
            routing: self.routing,
            prompts: self.prompts,
            clients: &clients,
            policy: &spec.policy,
            fence: &fence,
            carried: &carried,
            earlier: &earlier,
            breakers: &breakers,
            slots: None,
            watch: &watch,
            events: &review_events,
        };
        let kept = self.keep(&input);
        let mut out = review::run(&input).await;
        out.record.request = Some(kept);
        spinner.stop().await;
        out.record.breakers_refused = breakers
            .refused()
            .into_iter()
            .map(|(model, why)| gate_review::record::BreakerRefusal { model, why })
            .collect();
        Ok(out)
    }

    /// What `input` sends, kept before anything is asked, for later replays.
    fn keep(&self, input: &ReviewInput<'_>) -> gate_review::record::RequestKept {
        let mut request = gate_review::replay::request::KeptRequest::capture(input);
        // The files are scrubbed already; the commands the spec keeps are
        // scrubbed as the record's are.
        for task in &mut request.spec.tasks {
            let commands = task.criteria.iter_mut().filter_map(|c| c.run.as_mut());
            let tests = task.tests.as_mut().and_then(|t| t.run.as_mut());
            for run in commands.chain(tests) {
                *run = self.redactor.redact(run);
            }
        }
        tokio::task::block_in_place(|| crate::replay::keep::keep(self.ctx, self.store, &request))
    }

    /// What the previous attempt's review offers this one: each role's
    /// answer (carried when its remit did not change), and the findings
    /// still open, which re-reviewing roles are asked to confirm or drop.
    fn carry(&self) -> (BTreeMap<Role, CarriedReview>, Vec<Finding>) {
        let Some(prev) = self.previous.filter(|_| !self.full) else {
            return (BTreeMap::new(), Vec::new());
        };
        let mut carried = BTreeMap::new();
        for s in &prev.record.review.specialists {
            let Ok(role) = s.role.parse::<Role>() else {
                continue;
            };
            if s.status != "ok" || s.remit_digest.is_empty() || role == Role::Coordinator {
                continue;
            }
            carried.insert(
                role,
                CarriedReview {
                    record: s.clone(),
                    findings: prev
                        .record
                        .findings
                        .iter()
                        .filter(|f| f.role == s.role)
                        .cloned()
                        .collect(),
                    from_run: s
                        .carried_from
                        .clone()
                        .unwrap_or_else(|| prev.record.run_id.clone()),
                },
            );
        }
        (carried, prev.record.findings.clone())
    }
}

/// The files model-judged criteria name as inputs (their task's paths when
/// they name none), sorted and unique.
fn judge_inputs(spec: &Spec, snapshot: &Snapshot) -> Vec<String> {
    let mut globs = Vec::new();
    for (task, c) in spec.criteria() {
        if c.decider() != Decider::Model {
            continue;
        }
        if c.inputs.is_empty() {
            globs.extend(task.paths.iter().cloned());
        } else {
            globs.extend(c.inputs.iter().cloned());
        }
    }
    let Ok(globs) = InputGlobs::new(&globs) else {
        return Vec::new();
    };
    if globs.is_empty() {
        return Vec::new();
    }
    snapshot
        .regular_files()
        .filter(|p| globs.is_match(p))
        .map(str::to_owned)
        .collect()
}

/// The review, or why it did not run: an interrupted run, a failed
/// cross-check or a glob that matches nothing asks no model, and neither
/// does an offline one.
pub(super) async fn review_or_skip(
    run: &super::stage::Stage<'_>,
    survey: &super::survey::Survey,
    planned: &super::planning::Planned,
    exercised: &super::exercise::Exercised,
    tier: &TierDecision,
    interrupt: &crate::interrupt::Interrupt,
) -> Result<ReviewOutput, GateError> {
    let super::stage::Stage {
        ctx,
        req,
        events,
        start,
        setup,
        history,
        trust,
        ..
    } = *run;
    let results = &exercised.harnessed.results;
    let cross_checks_failed = results
        .values()
        .any(|r| r.status == gate_harness::Status::Failed);
    let review = if exercised.harnessed.interrupted {
        ReviewOutput::skipped("the run was interrupted")
    } else if cross_checks_failed {
        ReviewOutput::skipped("a cross-check failed; no model is asked until they pass")
    } else if survey.globs_unmatched {
        ReviewOutput::skipped("a glob of the spec matches no file; no model is asked until it does")
    } else if req.offline {
        ReviewOutput::skipped("offline (--offline)")
    } else if ctx.env.advisory() && req.routing.is_none() {
        ReviewOutput::skipped(ADVISORY_UNROUTED)
    } else {
        let stage = ReviewStage {
            ctx,
            spec: &setup.spec,
            snapshot: &survey.snapshot,
            changed: &survey.changed,
            tier,
            routing: &setup.routing,
            prompts: &setup.prompts,
            results,
            plan: &planned.plan,
            run_id: &start.run_id,
            previous: history.previous.as_ref(),
            full: req.full,
            rule_set: &survey.rule_set,
            tested: &exercised.tested,
            events,
            pages: &exercised.page_shots,
            redactor: &planned.redactor,
            key: &setup.key,
            store: &setup.store,
            base: trust.base_commit.as_deref().map(|c| (&setup.git, c)),
        };
        tokio::select! {
            review = stage.run() => review?,
            () = interrupt.wait() => ReviewOutput::interrupted(),
        }
    };
    if let Some(reason) = &review.record.reason {
        events.emit(crate::events::RunEvent::ReviewSkipped {
            reason: reason.clone(),
        });
    }
    Ok(review)
}

/// The run's ledger as the review's breaker store: each model's state in
/// one transaction of the ledger's, shared with every run on it.
struct LedgerBreakers(gate_evidence::Ledger);

impl gate_review::review::breaker::BreakerStore for LedgerBreakers {
    fn update(
        &mut self,
        model: &str,
        update: &mut dyn FnMut(
            Option<gate_evidence::ledger::BreakerRecord>,
        ) -> Option<gate_evidence::ledger::BreakerRecord>,
    ) -> Result<(), String> {
        self.0
            .update_breaker(model, |current| (update(current), ()))
            .map_err(|e| e.to_string())
    }
}
