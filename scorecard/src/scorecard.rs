//! The scorecard: every figure of `gate report` and `gate metrics`, built
//! from the ledger in three streamed passes (runs, the models they used,
//! their specialists) plus the outcomes, overrides and dismissals.
//!
//! Definitions:
//! - an **approved** run has verdict `pass` (an overridden pass included);
//!   a **failed** run has verdict `fail`;
//! - a run's **outcome** is its latest recorded outcome; an override counts
//!   as an outcome of fine unless an outcome recorded after it says broken;
//! - **false-pass rate** = approved runs whose outcome is broken ÷ approved
//!   runs with an outcome; **false-fail rate** = failed runs whose outcome is
//!   fine ÷ failed runs with an outcome; both with a Wilson 95% interval and
//!   the count still without an outcome;
//! - override, escalation and review `did_not_run` rates are over all runs
//!   in scope;
//! - findings: `resolved` and `superseded` are what later attempts recorded
//!   (dispositions), `dismissed` the distinct findings of in-scope runs a
//!   human dismissed, `open` the findings of each spec's latest run not
//!   dismissed there; acceptance = resolved ÷ (resolved + dismissed),
//!   superseded excluded; noise = (dismissed + duplicates) ÷ published, where
//!   published = findings reported + duplicates merged away;
//! - cost and input tokens per run: nearest-rank median and p90, and total;
//!   a run without a known cost is left out of the cost figures;
//! - a run counts for every model it used and every role on its panel.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

use chrono::{DateTime, Datelike, NaiveDate, Utc};
use gate_evidence::ledger::{self, LedgerError, OutcomeState, ReportScope, RoleFacts, RunFacts};
use gate_evidence::{Ledger, PublicKey};
use rayon::prelude::*;

use super::stats::{self, Interval, Spread};

/// How many of the latest false passes the scorecard lists.
pub const RECENT_FALSE_PASSES: usize = 20;

/// What a run's decision was, as the scorecard counts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Class {
    /// Not in the report's scope.
    #[default]
    Out,
    Approved,
    Failed,
    Escalated,
    Incomplete,
    /// A verdict this build does not know.
    Other,
}

impl Class {
    fn of(verdict: &str) -> Self {
        match verdict {
            "pass" => Self::Approved,
            "fail" => Self::Failed,
            "escalate" => Self::Escalated,
            "incomplete" => Self::Incomplete,
            _ => Self::Other,
        }
    }
}

/// What happened after a decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Outcome {
    /// Nothing recorded yet.
    #[default]
    Unknown,
    /// What the run decided on later broke.
    Broken,
    /// It was fine.
    Fine,
}

/// A run's outcome from its latest outcome and its latest override: the
/// override reads as fine unless an outcome recorded after it says otherwise.
pub fn effective_outcome(state: &OutcomeState) -> Outcome {
    let from = |broken: bool| {
        if broken {
            Outcome::Broken
        } else {
            Outcome::Fine
        }
    };
    match (state.latest, state.overridden_at) {
        (None, None) => Outcome::Unknown,
        (Some((broken, at)), overridden) if overridden.is_none_or(|o| at > o) => from(broken),
        // Overridden, and no outcome recorded after it.
        _ => Outcome::Fine,
    }
}

/// Where the outcome a run counts with came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LabelSource {
    /// A person's `gate outcome`, whatever source they named.
    Person,
    /// An override, with no outcome after it.
    Override,
    /// Harvested: `git:revert`.
    Revert,
    /// Harvested: `git:fixes`.
    Fixes,
    /// Harvested: `git:szz`.
    Szz,
    /// Harvested: `git:survived`.
    Survived,
}

impl LabelSource {
    /// The source of a recorded outcome.
    fn of(outcome: &ledger::OutcomeEntry) -> Self {
        match outcome.source.as_deref().map(str::trim) {
            Some("git:revert") => Self::Revert,
            Some("git:fixes") => Self::Fixes,
            Some("git:szz") => Self::Szz,
            Some("git:survived") => Self::Survived,
            _ => Self::Person,
        }
    }

    /// Its name in the report: `person`, `override`, or the harvested source.
    pub fn name(self) -> &'static str {
        match self {
            Self::Person => "person",
            Self::Override => "override",
            Self::Revert => "git:revert",
            Self::Fixes => "git:fixes",
            Self::Szz => "git:szz",
            Self::Survived => "git:survived",
        }
    }
}

/// How far an outcome is trusted, in hundredths: a harvested one says in
/// its evidence; a person's is trusted whole.
fn confidence(outcome: &ledger::OutcomeEntry) -> u8 {
    outcome.evidence.as_ref().map_or(100, |e| e.confidence)
}

/// What the passes after the first need to know about a run.
#[derive(Debug, Clone, Copy, Default)]
struct RunState {
    class: Class,
    outcome: Outcome,
    /// Where its outcome came from, when it has one.
    source: Option<LabelSource>,
    overridden: bool,
    tier: u32,
    week: u32,
    spec: u32,
}

/// Counts over a set of runs: the whole scope, or one group of a breakdown.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Group {
    /// Runs.
    pub runs: u64,
    /// Verdict `pass`.
    pub approved: u64,
    /// Approved, then recorded broken.
    pub approved_broken: u64,
    /// Approved, then recorded fine.
    pub approved_fine: u64,
    /// Verdict `fail`.
    pub failed: u64,
    /// Failed, and the outcome says fine (a false fail).
    pub failed_fine: u64,
    /// Failed, and the outcome says broken.
    pub failed_broken: u64,
    /// Verdict `escalate`.
    pub escalated: u64,
    /// Verdict `incomplete`.
    pub incomplete: u64,
    /// Runs with an override.
    pub overridden: u64,
    /// Runs whose review did not run.
    pub did_not_run: u64,
    /// Runs whose processes ran without a sandbox.
    pub unisolated: u64,
    /// Code-decided criteria that passed.
    pub criteria_passed: u64,
    /// Of those, the ones that failed on the base: fail-to-pass evidence.
    pub fail_to_pass: u64,
    /// Runs with a known cost.
    pub costed: u64,
    /// Their cost in US dollars.
    pub cost_usd: f64,
    /// Input tokens.
    pub input_tokens: u64,
    /// Cached input tokens.
    pub cached_input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
}

/// A rate with its interval and what it was computed from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OutcomeRate {
    /// Runs that count against the gate (broken approvals, fine failures).
    pub hits: u64,
    /// Runs with an outcome.
    pub with_outcome: u64,
    /// Runs still without one.
    pub unknown: u64,
}

impl OutcomeRate {
    /// `hits ÷ with_outcome`, `None` without outcomes.
    pub fn rate(&self) -> Option<f64> {
        stats::ratio(self.hits, self.with_outcome)
    }

    /// The Wilson 95% interval, `None` without outcomes.
    pub fn interval(&self) -> Option<Interval> {
        stats::wilson(self.hits, self.with_outcome)
    }
}

impl Group {
    fn count(&mut self, st: RunState) {
        self.runs += 1;
        match st.class {
            Class::Approved => {
                self.approved += 1;
                match st.outcome {
                    Outcome::Broken => self.approved_broken += 1,
                    Outcome::Fine => self.approved_fine += 1,
                    Outcome::Unknown => {}
                }
            }
            Class::Failed => {
                self.failed += 1;
                match st.outcome {
                    Outcome::Broken => self.failed_broken += 1,
                    Outcome::Fine => self.failed_fine += 1,
                    Outcome::Unknown => {}
                }
            }
            Class::Escalated => self.escalated += 1,
            Class::Incomplete => self.incomplete += 1,
            Class::Other | Class::Out => {}
        }
        self.overridden += u64::from(st.overridden);
    }

    fn spend(&mut self, cost: Option<f64>, input: u64, cached: u64, output: u64) {
        if let Some(c) = cost {
            self.costed += 1;
            self.cost_usd += c;
        }
        self.input_tokens += input;
        self.cached_input_tokens += cached;
        self.output_tokens += output;
    }

    /// Approved runs later broken, of those with an outcome.
    pub fn false_pass(&self) -> OutcomeRate {
        let with_outcome = self.approved_broken + self.approved_fine;
        OutcomeRate {
            hits: self.approved_broken,
            with_outcome,
            unknown: self.approved - with_outcome,
        }
    }

    /// Failed runs later found fine, of those with an outcome.
    pub fn false_fail(&self) -> OutcomeRate {
        let with_outcome = self.failed_broken + self.failed_fine;
        OutcomeRate {
            hits: self.failed_fine,
            with_outcome,
            unknown: self.failed - with_outcome,
        }
    }

    /// Overridden runs ÷ runs.
    pub fn override_rate(&self) -> Option<f64> {
        stats::ratio(self.overridden, self.runs)
    }

    /// Escalated runs ÷ runs.
    pub fn escalation_rate(&self) -> Option<f64> {
        stats::ratio(self.escalated, self.runs)
    }

    /// Runs whose review did not run ÷ runs.
    pub fn did_not_run_rate(&self) -> Option<f64> {
        stats::ratio(self.did_not_run, self.runs)
    }

    /// Runs whose processes ran unisolated ÷ runs.
    pub fn unisolated_rate(&self) -> Option<f64> {
        stats::ratio(self.unisolated, self.runs)
    }

    /// Passed criteria with fail-to-pass evidence ÷ passed criteria.
    pub fn fail_to_pass_share(&self) -> Option<f64> {
        stats::ratio(self.fail_to_pass, self.criteria_passed)
    }

    /// Cached input tokens ÷ input tokens.
    pub fn cached_input_share(&self) -> Option<f64> {
        stats::ratio(self.cached_input_tokens, self.input_tokens)
    }
}

/// What became of the findings.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FindingCounts {
    /// Fixed in a later attempt.
    pub resolved: u64,
    /// Dismissed by a human.
    pub dismissed: u64,
    /// Its code was deleted: nothing can be inferred.
    pub superseded: u64,
    /// Still raised by each spec's latest run.
    pub open: u64,
    /// Merged away as duplicates of another finding.
    pub duplicates: u64,
    /// Raised by reviewers: reported plus merged away.
    pub published: u64,
}

impl FindingCounts {
    /// resolved ÷ (resolved + dismissed).
    pub fn acceptance_rate(&self) -> Option<f64> {
        stats::ratio(self.resolved, self.resolved + self.dismissed)
    }

    /// (dismissed + duplicates) ÷ published.
    pub fn noise_rate(&self) -> Option<f64> {
        stats::ratio(self.dismissed + self.duplicates, self.published)
    }
}

/// One specialist seat's use: a role answered by a model.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RoleUsage {
    /// Runs by the seat's status (`ok`, `did_not_run`).
    pub statuses: BTreeMap<String, u64>,
    /// Input tokens.
    pub input_tokens: u64,
    /// Cached input tokens.
    pub cached_input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Cost in US dollars (of the calls with a known price).
    pub cost_usd: f64,
}

/// A run approved and later recorded broken.
#[derive(Debug, Clone, PartialEq)]
pub struct FalsePass {
    /// The run.
    pub run_id: String,
    /// Its spec.
    pub spec_id: String,
    /// Its tier.
    pub tier: String,
    /// When it started.
    pub started_at: DateTime<Utc>,
    /// The models it used.
    pub models: Vec<String>,
    /// Why it was recorded broken.
    pub reason: Option<String>,
    /// Where the news came from.
    pub source: Option<String>,
    /// What a harvested outcome rests on (commits, blamed lines).
    pub evidence: Option<ledger::OutcomeEvidence>,
    /// Its evidence bundle.
    pub bundle_path: String,
}

/// The breakdowns, each by its key.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Breakdowns {
    /// By risk tier.
    pub tier: BTreeMap<String, Group>,
    /// By model (a run counts for every model it used).
    pub model: BTreeMap<String, Group>,
    /// By specialist role on the run's panel.
    pub role: BTreeMap<String, Group>,
    /// By spec.
    pub spec: BTreeMap<String, Group>,
    /// By coding agent (runs whose spec names one).
    pub agent: BTreeMap<String, Group>,
    /// By ISO week the run started in (`2025-W09`).
    pub week: BTreeMap<String, Group>,
    /// By where the counted outcome came from (`person`, `override`,
    /// `git:revert`, `git:fixes`, `git:szz`, `git:survived`): runs with an
    /// outcome only.
    pub source: BTreeMap<String, Group>,
}

/// What of the ledger the scorecard may count beyond outcomes and
/// dismissals (which carry their own envelopes): decided against the
/// bundles before it is built, since its streamed tables are columns.
#[derive(Debug, Clone, Default)]
pub struct Vouched {
    /// Runs whose row is not as its bundle signed (a column edited, the
    /// bundle missing, altered or not verifying), by seq: left out of
    /// every figure.
    pub runs_left_out: HashSet<u64>,
    /// Of those, the ones in the report's scope.
    pub runs_left_out_in_scope: u64,
    /// The runs with an override the gate signed, each with when its
    /// latest such override was recorded.
    pub overrides: HashMap<String, DateTime<Utc>>,
    /// Overrides left out (unsigned, edited, or their bundle missing).
    pub overrides_left_out: u64,
}

/// What the scorecard left out for not being as the gate signed it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LeftOut {
    /// Runs in scope whose row disagrees with its bundle, or whose bundle
    /// is missing or does not verify.
    pub runs: u64,
    /// Outcomes of runs in scope without a valid envelope, or edited since.
    pub outcomes: u64,
    /// Overrides whose own bundle is missing, does not verify, or disagrees
    /// with the row.
    pub overrides: u64,
    /// Replays whose row disagrees with their signed bundle, or whose
    /// bundle is missing or does not verify (counted by `gate report`,
    /// which alone reads replays' bundles).
    pub replays: u64,
}

impl LeftOut {
    /// What `vouched` left out, and the outcomes that did not vouch of the
    /// runs in scope (`unsigned`: per run's seq, how many).
    fn of(vouched: &Vouched, unsigned: &[(u64, u64)], states: &[RunState]) -> Self {
        let out = Self {
            runs: vouched.runs_left_out_in_scope,
            outcomes: unsigned
                .iter()
                .filter(|(seq, _)| state_at(states, *seq).is_some())
                .map(|(_, n)| *n)
                .sum(),
            overrides: vouched.overrides_left_out,
            replays: 0,
        };
        if !out.is_empty() {
            tracing::warn!(
                runs = out.runs,
                outcomes = out.outcomes,
                overrides = out.overrides,
                "what the gate did not sign is left out of the report"
            );
        }
        out
    }

    /// Nothing was left out.
    pub fn is_empty(&self) -> bool {
        self.runs == 0 && self.outcomes == 0 && self.overrides == 0 && self.replays == 0
    }
}

/// Everything `gate report` and `gate metrics` show.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Scorecard {
    /// The scope it covers.
    pub scope: ReportScope,
    /// All runs in scope.
    pub total: Group,
    /// What became of the findings.
    pub findings: FindingCounts,
    /// Cost per run (runs with a known cost).
    pub cost_usd: Spread<f64>,
    /// Input tokens per run.
    pub input_tokens: Spread<u64>,
    /// The breakdowns.
    pub by: Breakdowns,
    /// Per tier, per week.
    pub tier_weeks: BTreeMap<String, BTreeMap<String, Group>>,
    /// Per model, per week.
    pub model_weeks: BTreeMap<String, BTreeMap<String, Group>>,
    /// Cost per run, per week.
    pub week_cost: BTreeMap<String, Spread<f64>>,
    /// Per (role, model) seat.
    pub seats: BTreeMap<(String, String), RoleUsage>,
    /// The latest false passes, newest first (at most [`RECENT_FALSE_PASSES`]).
    pub recent_false_passes: Vec<FalsePass>,
    /// All false passes in scope.
    pub false_pass_count: u64,
    /// Outcomes below this confidence (hundredths) were not counted.
    pub min_confidence: u8,
    /// Decided runs in scope the last harvest found not integrated yet.
    pub not_integrated: u64,
    /// What was left out for not being as signed.
    pub left_out: LeftOut,
    /// The newest replay of each candidate routing table (`gate replay`),
    /// whatever the scope, of those whose row is what their signed bundle
    /// holds: empty as built, filled by `gate report` once vouched for.
    pub replays: Vec<crate::replays::ReplaySeen>,
}

impl Scorecard {
    /// Decided runs (approved or failed) still without an outcome, and
    /// how many runs were decided.
    pub fn without_outcome(&self) -> (u64, u64) {
        let t = &self.total;
        (
            t.false_pass().unknown + t.false_fail().unknown,
            t.approved + t.failed,
        )
    }
}

/// The ISO week of a day, as `2025-W09`.
pub fn iso_week(day: NaiveDate) -> String {
    let w = day.iso_week();
    format!("{}-W{:02}", w.year(), w.week())
}

/// Strings seen in a pass, each given a small index. Most dimensions have
/// a handful of values (tiers, roles, models), found by a linear scan
/// faster than any hash; the rest (specs, weeks) go through a hash map.
#[derive(Default)]
struct Interner {
    index: HashMap<Box<str>, u32, BuildHasherDefault<FxHasher>>,
    names: Vec<String>,
}

/// Up to this many names, a lookup is a linear scan.
const LINEAR: usize = 16;

impl Interner {
    fn get(&mut self, name: &str) -> u32 {
        if self.names.len() <= LINEAR {
            if let Some(i) = self.names.iter().position(|n| n == name) {
                return i as u32;
            }
        } else if let Some(&i) = self.index.get(name) {
            return i;
        }
        let i = self.names.len() as u32;
        self.names.push(name.to_owned());
        if self.names.len() == LINEAR + 1 {
            for (k, n) in self.names.iter().enumerate() {
                self.index.insert(n.as_str().into(), k as u32);
            }
        } else if self.names.len() > LINEAR + 1 {
            self.index.insert(name.into(), i);
        }
        i
    }
}

/// The multiply-rotate hash rustc uses (FxHash): a few cycles per word,
/// plenty for keys that are not chosen by an adversary.
#[derive(Default)]
struct FxHasher(u64);

impl Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        const K: u64 = 0x51_7c_c1_b7_27_22_0a_95;
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let word = u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
            self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(K);
        }
        for &b in chunks.remainder() {
            self.0 = (self.0.rotate_left(5) ^ u64::from(b)).wrapping_mul(K);
        }
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// Groups keyed by interned index, turned into names at the end.
#[derive(Default)]
struct Groups {
    keys: Interner,
    groups: Vec<Group>,
}

impl Groups {
    fn at(&mut self, i: u32) -> &mut Group {
        let i = i as usize;
        if self.groups.len() <= i {
            self.groups.resize_with(i + 1, Group::default);
        }
        &mut self.groups[i]
    }

    fn named(&mut self, name: &str) -> &mut Group {
        let i = self.keys.get(name);
        self.at(i)
    }

    fn into_map(self) -> BTreeMap<String, Group> {
        self.keys.names.into_iter().zip(self.groups).collect()
    }
}

/// A seat's figures while the pass runs: counts by interned status.
#[derive(Default)]
struct SeatTally {
    statuses: Vec<u64>,
    usage: RoleUsage,
}

/// Per spec, its latest run in scope.
#[derive(Default, Clone, Copy)]
struct Latest {
    seq: u64,
    findings: u64,
}

/// The first pass's running state.
#[derive(Default)]
struct Pass {
    states: Vec<RunState>,
    total: Group,
    findings: FindingCounts,
    tiers: Groups,
    specs: Groups,
    agents: Groups,
    weeks: Groups,
    latest: Vec<Latest>,
    costs: Vec<f64>,
    week_costs: Vec<Vec<f64>>,
    inputs: Vec<u64>,
    last_day: Option<(NaiveDate, u32)>,
    false_passes: Vec<u64>,
    sources: Groups,
}

impl Pass {
    fn week_of(&mut self, day: NaiveDate) -> u32 {
        if let Some((d, w)) = self.last_day
            && d == day
        {
            return w;
        }
        let w = self.weeks.keys.get(&iso_week(day));
        self.last_day = Some((day, w));
        w
    }

    fn run(&mut self, f: &RunFacts<'_>) {
        let Some(slot) = usize::try_from(f.seq)
            .ok()
            .filter(|&i| i < self.states.len())
        else {
            return;
        };
        let mut st = self.states[slot];
        st.class = Class::of(f.verdict);
        st.tier = self.tiers.keys.get(f.tier);
        st.spec = self.specs.keys.get(f.spec_id);
        st.week = self.week_of(f.started_on);
        self.states[slot] = st;

        let did_not_run = f.review == Some("did_not_run");
        let add = |g: &mut Group| {
            g.count(st);
            g.spend(
                f.cost_usd,
                f.input_tokens,
                f.cached_input_tokens,
                f.output_tokens,
            );
            g.did_not_run += u64::from(did_not_run);
            g.unisolated += u64::from(f.unisolated);
            g.criteria_passed += f.criteria_passed;
            g.fail_to_pass += f.fail_to_pass;
        };
        add(&mut self.total);
        add(self.tiers.at(st.tier));
        add(self.specs.at(st.spec));
        add(self.weeks.at(st.week));
        if let Some(agent) = f.agent {
            add(self.agents.named(agent));
        }
        if let (Some(source), false) = (st.source, st.outcome == Outcome::Unknown) {
            add(self.sources.named(source.name()));
        }

        if let Some(c) = f.cost_usd {
            self.costs.push(c);
            let w = st.week as usize;
            if self.week_costs.len() <= w {
                self.week_costs.resize_with(w + 1, Vec::new);
            }
            self.week_costs[w].push(c);
        }
        self.inputs.push(f.input_tokens);

        self.findings.resolved += f.resolved;
        self.findings.superseded += f.superseded;
        self.findings.duplicates += f.duplicates;
        self.findings.published += f.findings + f.duplicates;
        let s = st.spec as usize;
        if self.latest.len() <= s {
            self.latest.resize(s + 1, Latest::default());
        }
        if f.seq >= self.latest[s].seq {
            self.latest[s] = Latest {
                seq: f.seq,
                findings: f.findings,
            };
        }
        if st.class == Class::Approved && st.outcome == Outcome::Broken {
            self.false_passes.push(f.seq);
        }
    }
}

/// Groups of a breakdown that also splits by week.
#[derive(Default)]
struct WeeklyGroups {
    all: Groups,
    weekly: HashMap<(u32, u32), Group>,
}

impl WeeklyGroups {
    fn count(&mut self, key: u32, st: RunState) {
        self.all.at(key).count(st);
        self.weekly.entry((key, st.week)).or_default().count(st);
    }

    fn weekly_map(
        &mut self,
        weeks: &[String],
        names: &[String],
    ) -> BTreeMap<String, BTreeMap<String, Group>> {
        let mut out: BTreeMap<String, BTreeMap<String, Group>> = BTreeMap::new();
        for ((key, week), g) in self.weekly.drain() {
            out.entry(names[key as usize].clone())
                .or_default()
                .insert(weeks[week as usize].clone(), g);
        }
        out
    }
}

impl Scorecard {
    /// Builds the scorecard of the runs in `scope`, every outcome counted.
    #[cfg(test)]
    pub fn build(
        ledger: &Ledger,
        scope: &ReportScope,
        trusted: &[PublicKey],
    ) -> Result<Self, LedgerError> {
        Self::build_with(ledger, scope, trusted, 0, &Vouched::as_stored(ledger)?)
    }

    /// Builds the scorecard of the runs in `scope`, counting only outcomes
    /// of at least `min_confidence` (hundredths): a run whose latest
    /// outcome is weaker counts as one without an outcome. Only what
    /// `vouched` vouches for counts: its runs left out are in no figure,
    /// and only its overrides count.
    pub fn build_with(
        ledger: &Ledger,
        scope: &ReportScope,
        trusted: &[PublicKey],
        min_confidence: u8,
        vouched: &Vouched,
    ) -> Result<Self, LedgerError> {
        let max_seq = usize::try_from(ledger.max_seq()?).unwrap_or(usize::MAX - 1);
        let mut pass = Pass {
            states: vec![RunState::default(); max_seq.saturating_add(1)],
            ..Pass::default()
        };
        let clock = std::time::Instant::now();
        let lap = |what: &str| {
            tracing::debug!(
                elapsed_ms = clock.elapsed().as_millis(),
                "scorecard: {what}"
            );
        };
        let unsigned_outcomes =
            read_outcomes(&mut pass.states, ledger, trusted, min_confidence, vouched)?;
        let harvested = ledger.harvest_states()?;
        lap("outcomes read");
        ledger.scan_run_facts(scope, |f| {
            if !vouched.runs_left_out.contains(&f.seq) {
                pass.run(f);
            }
        })?;
        lap("runs read");
        let states = std::mem::take(&mut pass.states);
        let state_of = |seq: u64| state_at(&states, seq);

        let mut models = WeeklyGroups::default();
        ledger.scan_run_models(scope, |seq, model| {
            if let Some(st) = state_of(seq) {
                let key = models.all.keys.get(model);
                models.count(key, st);
            }
        })?;

        lap("models read");
        let mut roles = Groups::default();
        let (mut seat_models, mut statuses) = (Interner::default(), Interner::default());
        let mut seats: HashMap<(u32, u32), SeatTally> = HashMap::new();
        ledger.scan_run_roles(scope, |r: &RoleFacts<'_>| {
            let Some(st) = state_of(r.seq) else { return };
            // A reviewer with nothing to review was not asked: it decided
            // nothing and cost nothing, so its role is not credited the run.
            if r.status == "skipped" {
                return;
            }
            let role = roles.keys.get(r.role);
            let g = roles.at(role);
            g.count(st);
            g.spend(
                r.cost_usd,
                r.input_tokens,
                r.cached_input_tokens,
                r.output_tokens,
            );
            g.did_not_run += u64::from(r.status == "did_not_run");
            let seat = seats.entry((role, seat_models.get(r.model))).or_default();
            let status = statuses.get(r.status) as usize;
            if seat.statuses.len() <= status {
                seat.statuses.resize(status + 1, 0);
            }
            seat.statuses[status] += 1;
            let u = &mut seat.usage;
            u.input_tokens += r.input_tokens;
            u.cached_input_tokens += r.cached_input_tokens;
            u.output_tokens += r.output_tokens;
            u.cost_usd += r.cost_usd.unwrap_or(0.0);
        })?;
        let seats = seat_usage(
            seats,
            &roles.keys.names,
            &seat_models.names,
            &statuses.names,
        );

        lap("roles read");
        let mut findings = pass.findings;
        count_dismissals(ledger, &states, &pass.latest, &mut findings, trusted)?;

        let week_names = pass.weeks.keys.names.clone();
        let tier_weeks = tier_weeks(&states, &pass.tiers.keys.names, &week_names);
        let model_names = models.all.keys.names.clone();
        let model_weeks = models.weekly_map(&week_names, &model_names);
        let week_cost = pass
            .week_costs
            .iter_mut()
            .enumerate()
            .filter(|(_, v)| !v.is_empty())
            .map(|(w, v)| (week_names[w].clone(), stats::cost_spread(v)))
            .collect();

        let not_integrated = harvested
            .iter()
            .filter(|(seq, state)| {
                state == ledger::NOT_INTEGRATED
                    && state_of(*seq)
                        .is_some_and(|s| matches!(s.class, Class::Approved | Class::Failed))
            })
            .count() as u64;
        let false_pass_count = pass.false_passes.len() as u64;
        let recent = recent_false_passes(ledger, &pass.false_passes, trusted)?;
        let left_out = LeftOut::of(vouched, &unsigned_outcomes, &states);
        lap("done");
        Ok(Self {
            scope: scope.clone(),
            total: pass.total,
            findings,
            cost_usd: stats::cost_spread(&mut pass.costs),
            input_tokens: stats::count_spread(&mut pass.inputs),
            by: Breakdowns {
                tier: pass.tiers.into_map(),
                model: models.all.into_map(),
                role: roles.into_map(),
                spec: pass.specs.into_map(),
                agent: pass.agents.into_map(),
                week: pass.weeks.into_map(),
                source: pass.sources.into_map(),
            },
            tier_weeks,
            model_weeks,
            week_cost,
            seats,
            recent_false_passes: recent,
            false_pass_count,
            min_confidence,
            not_integrated,
            left_out,
            // Shown only once vouched for against their bundles, which
            // only the gate reads (`gate report` fills them).
            replays: Vec::new(),
        })
    }
}

/// Gives each run with an outcome its effective outcome and where it came
/// from (only what the gate signed, and at least `min_confidence`; only
/// the overrides `vouched` holds). Returns, per run with any, how many of
/// its outcomes do not vouch.
fn read_outcomes(
    states: &mut [RunState],
    ledger: &Ledger,
    trusted: &[PublicKey],
    min_confidence: u8,
    vouched: &Vouched,
) -> Result<Vec<(u64, u64)>, LedgerError> {
    let mut unsigned = Vec::new();
    for (mut o, source, bad) in vouched_outcomes(ledger.outcome_states()?, trusted, min_confidence)
    {
        if bad > 0 {
            unsigned.push((o.seq, bad));
        }
        o.overridden_at = vouched.overrides.get(&o.run_id).copied();
        if let Some(st) = usize::try_from(o.seq).ok().and_then(|i| states.get_mut(i)) {
            st.outcome = effective_outcome(&o);
            st.overridden = o.overridden_at.is_some();
            // An override counts unless an outcome came after it.
            st.source = match (o.latest, o.overridden_at) {
                (Some((_, at)), Some(over)) if at <= over => Some(LabelSource::Override),
                (None, Some(_)) => Some(LabelSource::Override),
                _ => source,
            };
        }
    }
    Ok(unsigned)
}

/// The state of run `seq`, if it is in scope.
fn state_at(states: &[RunState], seq: u64) -> Option<RunState> {
    usize::try_from(seq)
        .ok()
        .and_then(|i| states.get(i))
        .copied()
        .filter(|s| s.class != Class::Out)
}

/// Each tier's runs, week by week.
fn tier_weeks(
    states: &[RunState],
    tier_names: &[String],
    week_names: &[String],
) -> BTreeMap<String, BTreeMap<String, Group>> {
    let mut out: BTreeMap<String, BTreeMap<String, Group>> = BTreeMap::new();
    for slot in states.iter().filter(|s| s.class != Class::Out) {
        out.entry(tier_names[slot.tier as usize].clone())
            .or_default()
            .entry(week_names[slot.week as usize].clone())
            .or_default()
            .count(*slot);
    }
    out
}

/// Each seat's figures under its role's and model's names, its statuses
/// by name.
fn seat_usage(
    seats: HashMap<(u32, u32), SeatTally>,
    role_names: &[String],
    model_names: &[String],
    status_names: &[String],
) -> BTreeMap<(String, String), RoleUsage> {
    seats
        .into_iter()
        .map(|((role, model), seat)| {
            let mut usage = seat.usage;
            usage.statuses = seat
                .statuses
                .iter()
                .enumerate()
                .filter(|(_, n)| **n > 0)
                .map(|(i, n)| (status_names[i].clone(), *n))
                .collect();
            let key = (
                role_names[role as usize].clone(),
                model_names[model as usize].clone(),
            );
            (key, usage)
        })
        .collect()
}

/// Dismissals: distinct findings per spec, of runs in scope; those against
/// a spec's latest run are no longer open.
/// The outcome states with only what the gate signed: a run's latest
/// outcome that vouches counts (an unsigned or edited later one is passed
/// over); a run with none that vouches has no outcome. Checked in parallel.
/// A latest outcome below `min_confidence` (hundredths) leaves the run
/// without one. Each state comes with its counted outcome's source and how
/// many of its outcomes do not vouch.
fn vouched_outcomes(
    states: Vec<OutcomeState>,
    trusted: &[PublicKey],
    min_confidence: u8,
) -> Vec<(OutcomeState, Option<LabelSource>, u64)> {
    states
        .into_par_iter()
        .map(|mut s| {
            let good: Vec<bool> = s
                .outcomes
                .iter()
                .map(|o| ledger::vouch(o, trusted).is_ok())
                .collect();
            let bad = good.iter().filter(|ok| !**ok).count() as u64;
            let vouched = s
                .outcomes
                .iter()
                .zip(&good)
                .rev()
                .find(|(_, ok)| **ok)
                .map(|(o, _)| o)
                .filter(|o| confidence(o) >= min_confidence);
            s.latest = vouched.map(|o| (o.broken, o.recorded_at));
            let source = vouched.map(LabelSource::of);
            (s, source, bad)
        })
        .collect()
}

fn count_dismissals(
    ledger: &Ledger,
    states: &[RunState],
    latest: &[Latest],
    findings: &mut FindingCounts,
    trusted: &[PublicKey],
) -> Result<(), LedgerError> {
    let state_of = |seq: u64| state_at(states, seq);
    let mut dismissed: HashSet<(u32, String)> = HashSet::new();
    let mut dismissed_latest: HashSet<(u32, String)> = HashSet::new();
    let refs = ledger.dismissal_refs()?;
    let all = refs.len();
    let refs: Vec<_> = refs
        .into_par_iter()
        .filter(|d| ledger::vouch(&d.dismissal, trusted).is_ok())
        .collect();
    if refs.len() < all {
        tracing::warn!(
            ignored = all - refs.len(),
            "dismissals the gate did not sign are not counted"
        );
    }
    for d in refs {
        let Some(st) = state_of(d.seq) else { continue };
        if latest.get(st.spec as usize).map(|l| l.seq) == Some(d.seq) {
            dismissed_latest.insert((st.spec, d.finding_id.clone()));
        }
        dismissed.insert((st.spec, d.finding_id));
    }
    findings.dismissed = dismissed.len() as u64;
    let mut open_per_spec = vec![0u64; latest.len()];
    for (spec, _) in &dismissed_latest {
        open_per_spec[*spec as usize] += 1;
    }
    findings.open = latest
        .iter()
        .zip(&open_per_spec)
        .map(|(l, gone)| l.findings.saturating_sub(*gone))
        .sum();
    Ok(())
}

/// The newest false passes, with the outcome that said broken.
fn recent_false_passes(
    ledger: &Ledger,
    seqs: &[u64],
    trusted: &[PublicKey],
) -> Result<Vec<FalsePass>, LedgerError> {
    let mut newest: Vec<u64> = seqs.to_vec();
    newest.sort_unstable_by(|a, b| b.cmp(a));
    newest.truncate(RECENT_FALSE_PASSES);
    let mut out = Vec::with_capacity(newest.len());
    for seq in newest {
        let Some(row) = ledger.row_at(seq)? else {
            continue;
        };
        let e = row.entry;
        // The outcome it is listed for: its latest the gate signed.
        let last = ledger
            .outcomes(&e.run_id)?
            .into_iter()
            .rev()
            .find_map(|o| ledger::vouch(&o, trusted).ok());
        let models = gate_evidence::ledger::RowFacts::read(&e.extra).models;
        out.push(FalsePass {
            run_id: e.run_id,
            spec_id: e.spec_id,
            tier: e.tier,
            started_at: e.started_at,
            models,
            reason: last.as_ref().and_then(|o| o.reason.clone()),
            evidence: last.as_ref().and_then(|o| o.evidence.clone()),
            source: last.and_then(|o| o.source),
            bundle_path: e.bundle_path,
        });
    }
    Ok(out)
}

impl Vouched {
    /// Every run and override taken as stored: for the scorecard's own
    /// tests, whose rows have no bundles.
    #[cfg(test)]
    pub fn as_stored(ledger: &Ledger) -> Result<Self, LedgerError> {
        let mut overrides = HashMap::new();
        for o in ledger.overrides(None)? {
            overrides.insert(o.run_id, o.recorded_at);
        }
        Ok(Self {
            overrides,
            ..Self::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;
    use gate_evidence::ledger::{Dismissal, OutcomeEntry, OverrideEntry, RunEntry};
    use serde_json::{Value, json};

    use super::*;

    /// The key the tests' outcomes and dismissals are signed with.
    fn test_key() -> gate_evidence::SigningKey {
        gate_evidence::SigningKey::from_seed(&[7; 32])
    }

    fn trusted() -> Vec<PublicKey> {
        vec![test_key().public_key().clone()]
    }
    use crate::json::render;

    fn at(day: u32, hour: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2025, 3, day, hour, 0, 0).unwrap()
    }

    /// A run in March 2025 with the given extra (as `RowExtra::of` writes it).
    fn run(
        id: &str,
        spec: &str,
        verdict: &str,
        tier: &str,
        day: u32,
        (cost, input, cached): (Option<f64>, u64, u64),
        extra: Value,
    ) -> RunEntry {
        RunEntry {
            run_id: id.into(),
            spec_id: spec.into(),
            attempt: 1,
            series: None,
            verdict: verdict.into(),
            tier: tier.into(),
            started_at: at(day, 9),
            finished_at: at(day, 10),
            input_tokens: input,
            cached_input_tokens: cached,
            output_tokens: 7,
            cost_usd: cost,
            bundle_path: format!("/state/bundles/{id}.dsse.json"),
            extra,
        }
    }

    fn role(role: &str, model: &str, status: &str, input: u64, cost: Option<f64>) -> Value {
        json!({"role": role, "model": model, "status": status, "input_tokens": input,
               "cached_input_tokens": 0, "output_tokens": 1, "cost_usd": cost})
    }

    fn findings(ids: &[&str]) -> Value {
        ids.iter()
            .map(|id| json!({"id": id, "severity": "warning", "role": "quality", "file": "a.rs", "line": 1}))
            .collect()
    }

    /// What happens after the runs.
    enum Event {
        Outcome(&'static str, bool, u32),
        Override(&'static str, u32),
        Dismiss(&'static str, &'static str),
    }
    use Event::{Dismiss, Outcome as Out, Override};

    /// Seven runs over three ISO weeks (W09: 1 Mar; W10: 3–4 Mar; W11: 10–13 Mar).
    fn mixed() -> (Vec<RunEntry>, Vec<Event>) {
        let runs = vec![
            run(
                "r1",
                "shop",
                "pass",
                "light",
                3,
                (Some(0.03), 150, 30),
                json!({
                "agent": "claude", "review": "ran", "models": ["m1", "m2"],
                "roles": [role("quality", "m1", "ok", 100, Some(0.01)), role("security", "m2", "ok", 50, Some(0.02))],
                "findings": findings(&["f1", "f2"]), "duplicates": 1,
                "criteria_passed": 4, "fail_to_pass": 3}),
            ),
            run(
                "r2",
                "shop",
                "pass",
                "light",
                4,
                (Some(0.01), 100, 0),
                json!({
                "agent": "claude", "review": "ran", "models": ["m1"],
                "roles": [role("quality", "m1", "ok", 100, Some(0.01))],
                "findings": findings(&["f3"]),
                "dispositions": {"resolved": ["f1"], "superseded": ["f2"]},
                "criteria_passed": 2, "fail_to_pass": 0}),
            ),
            run(
                "r3",
                "blog",
                "pass",
                "trivial",
                10,
                (Some(0.05), 400, 200),
                json!({
                "agent": "codex", "review": "ran", "models": ["m2"],
                "roles": [role("quality", "m2", "ok", 400, Some(0.05))], "findings": [],
                "isolation": {"kind": "bwrap", "network": "host", "reason": null}}),
            ),
            run(
                "r4",
                "blog",
                "fail",
                "full",
                11,
                (Some(0.2), 1000, 100),
                json!({
                "agent": "codex", "review": "ran", "models": ["m1", "m3"],
                "roles": [role("quality", "m1", "ok", 1000, Some(0.2)),
                          role("integration", "m3", "did_not_run", 0, None),
                          role("docs", "", "skipped", 0, Some(0.0))],
                "findings": findings(&["f7", "f8", "f9"]), "duplicates": 2,
                "isolation": {"kind": "bwrap", "network": "loopback", "reason": null}}),
            ),
            run(
                "r5",
                "api",
                "fail",
                "light",
                12,
                (Some(0.0), 0, 0),
                json!({"agent": null, "review": "did_not_run", "models": [], "roles": [], "findings": []}),
            ),
            run(
                "r6",
                "api",
                "escalate",
                "light",
                13,
                (None, 0, 0),
                json!({"review": "did_not_run", "models": [], "roles": [], "findings": []}),
            ),
            run(
                "r7",
                "api",
                "pass",
                "light",
                1,
                (Some(0.04), 300, 0),
                json!({
                "review": "ran", "models": ["m1"], "roles": [role("quality", "m1", "ok", 300, Some(0.04))],
                "findings": []}),
            ),
        ];
        let events = vec![
            Out("r1", false, 1),
            Out("r1", true, 2),
            Out("r2", false, 1),
            Out("r7", true, 1),
            // An override is fine unless an outcome after it says broken.
            Out("r4", true, 3),
            Override("r4", 5),
            Override("r5", 1),
            Out("r5", true, 4),
            Dismiss("r4", "f8"),
            Dismiss("r4", "f8"),
            Dismiss("r1", "f2"),
        ];
        (runs, events)
    }

    fn ledger_of(dir: &std::path::Path, runs: &[RunEntry], events: &[Event]) -> Ledger {
        let mut l = Ledger::open(dir.join("ledger.db")).unwrap();
        for r in runs {
            l.append(r, r.run_id.as_bytes()).unwrap();
        }
        let spec_of = |id: &str| {
            runs.iter()
                .find(|r| r.run_id == id)
                .unwrap()
                .spec_id
                .clone()
        };
        for (i, e) in events.iter().enumerate() {
            match *e {
                Out(run, broken, hour) => l
                    .add_outcome(&ledger::seal(
                        &OutcomeEntry {
                            run_id: run.into(),
                            broken,
                            reason: Some(format!("reason {i}")),
                            source: Some("ci".into()),
                            recorded_at: at(20, hour),
                            envelope: None,
                            evidence: None,
                        },
                        &test_key(),
                    ))
                    .unwrap(),
                Override(run, hour) => l
                    .add_override(&OverrideEntry {
                        run_id: run.into(),
                        spec_id: spec_of(run),
                        reason: "hotfix".into(),
                        by: "ana".into(),
                        content_digest: "d".into(),
                        bundle_path: format!("o{i}"),
                        bundle_sha256: format!("sha{i}"),
                        recorded_at: at(20, hour),
                    })
                    .unwrap(),
                Dismiss(run, finding) => l
                    .add_dismissal(&ledger::seal(
                        &Dismissal {
                            run_id: run.into(),
                            spec_id: spec_of(run),
                            finding_id: finding.into(),
                            reason: "noise".into(),
                            code_digest: None,
                            recorded_at: at(20, 1),
                            envelope: None,
                            by: None,
                        },
                        &test_key(),
                    ))
                    .unwrap(),
            }
        }
        l
    }

    /// Equal, with fractions to 4 decimal places (the precision of hand
    /// arithmetic) and integers exactly.
    fn same(got: &Value, want: &Value) -> bool {
        match (got, want) {
            (Value::Object(g), Value::Object(w)) => {
                g.len() == w.len() && w.iter().all(|(k, w)| g.get(k).is_some_and(|g| same(g, w)))
            }
            (Value::Number(g), Value::Number(w)) if w.is_f64() => g
                .as_f64()
                .is_some_and(|g| (g - w.as_f64().unwrap_or(f64::NAN)).abs() < 5e-5),
            _ => got == want,
        }
    }

    fn check(name: &str, doc: &Value, want: &[(&str, Value)]) {
        for (pointer, want) in want {
            let got = doc
                .pointer(pointer)
                .unwrap_or_else(|| panic!("{name}: no {pointer} in {doc:#}"));
            assert!(same(got, want), "{name}: {pointer} is {got}, want {want}");
        }
    }

    /// A name, a ledger (runs and what happened after), a scope, and the
    /// expected values at JSON pointers.
    type Case = (
        &'static str,
        Vec<RunEntry>,
        Vec<Event>,
        ReportScope,
        Vec<(&'static str, Value)>,
    );

    #[test]
    fn scorecard_against_hand_computed_answers() {
        let since = |d| Some(at(d, 0));
        let (mixed_runs, mixed_events) = mixed();
        let quiet_runs: Vec<RunEntry> = mixed_runs.iter().take(4).cloned().collect();
        let cases: Vec<Case> = vec![
            (
                "empty ledger: every rate is null, not 0",
                vec![],
                vec![],
                ReportScope::default(),
                vec![
                    ("/runs", json!(0)),
                    (
                        "/false_pass",
                        json!({"rate": null, "low": null, "high": null, "broken": 0, "with_outcome": 0, "unknown": 0}),
                    ),
                    ("/false_fail/rate", json!(null)),
                    ("/override_rate", json!(null)),
                    ("/escalation_rate", json!(null)),
                    ("/did_not_run_rate", json!(null)),
                    ("/unisolated_rate", json!(null)),
                    ("/findings/acceptance_rate", json!(null)),
                    ("/findings/noise_rate", json!(null)),
                    (
                        "/cost_usd",
                        json!({"median": null, "p90": null, "total": 0.0}),
                    ),
                    (
                        "/input_tokens",
                        json!({"median": null, "p90": null, "total": 0}),
                    ),
                    ("/cached_input_share", json!(null)),
                    ("/by/tier", json!({})),
                ],
            ),
            (
                "runs without any outcome: rates null, every approved run unknown",
                quiet_runs,
                vec![],
                ReportScope::default(),
                vec![
                    ("/runs", json!(4)),
                    (
                        "/false_pass",
                        json!({"rate": null, "low": null, "high": null, "broken": 0, "with_outcome": 0, "unknown": 3}),
                    ),
                    (
                        "/false_fail",
                        json!({"rate": null, "low": null, "high": null, "fine": 0, "with_outcome": 0, "unknown": 1}),
                    ),
                    ("/override_rate", json!(0.0)),
                    (
                        "/by/tier/light",
                        json!({"runs": 2, "false_pass": {"rate": null, "low": null, "high": null},
                               "fail_to_pass_share": 0.5}),
                    ),
                ],
            ),
            (
                "all runs",
                mixed_runs.clone(),
                mixed().1,
                ReportScope::default(),
                vec![
                    ("/since", json!(null)),
                    ("/runs", json!(7)),
                    ("/false_pass/rate", json!(2.0 / 3.0)),
                    ("/false_pass/low", json!(0.2077)),
                    ("/false_pass/high", json!(0.9385)),
                    ("/false_pass/broken", json!(2)),
                    ("/false_pass/with_outcome", json!(3)),
                    ("/false_pass/unknown", json!(1)),
                    // r4: broken, then overridden → fine; r5: overridden, then broken.
                    (
                        "/false_fail",
                        json!({"rate": 0.5, "low": 0.0945, "high": 0.9055, "fine": 1, "with_outcome": 2, "unknown": 0}),
                    ),
                    ("/override_rate", json!(2.0 / 7.0)),
                    ("/escalation_rate", json!(1.0 / 7.0)),
                    ("/did_not_run_rate", json!(2.0 / 7.0)),
                    // Only r3 and r4 recorded a sandbox.
                    ("/unisolated_rate", json!(5.0 / 7.0)),
                    // f1 resolved; f2 superseded (excluded); f8 dismissed twice, f2 once;
                    // published: (2 + 1 duplicate) + 1 + (3 + 2 duplicates) = 9.
                    (
                        "/findings",
                        json!({"acceptance_rate": 1.0 / 3.0, "noise_rate": 5.0 / 9.0,
                                         "resolved": 1, "dismissed": 2, "superseded": 1, "open": 3}),
                    ),
                    (
                        "/cost_usd",
                        json!({"median": 0.03, "p90": 0.2, "total": 0.33}),
                    ),
                    (
                        "/input_tokens",
                        json!({"median": 150, "p90": 1000, "total": 1950}),
                    ),
                    ("/cached_input_share", json!(330.0 / 1950.0)),
                    ("/by/tier/light/runs", json!(5)),
                    ("/by/tier/light/false_pass/rate", json!(2.0 / 3.0)),
                    (
                        "/by/tier/trivial",
                        json!({"runs": 1, "false_pass": {"rate": null, "low": null, "high": null},
                               "fail_to_pass_share": null}),
                    ),
                    ("/by/tier/full/runs", json!(1)),
                    // A run counts for every model it used.
                    ("/by/model/m1/runs", json!(4)),
                    ("/by/model/m1/false_pass/rate", json!(2.0 / 3.0)),
                    (
                        "/by/model/m2",
                        json!({"runs": 2, "false_pass": {"rate": 1.0, "low": 0.2065, "high": 1.0}}),
                    ),
                    (
                        "/by/model/m3",
                        json!({"runs": 1, "false_pass": {"rate": null, "low": null, "high": null}}),
                    ),
                    ("/by/role/quality/runs", json!(5)),
                    ("/by/role/security/false_pass/rate", json!(1.0)),
                    ("/by/role/integration/runs", json!(1)),
                    ("/by/spec/shop/false_pass/rate", json!(0.5)),
                    // Passed criteria with fail-to-pass evidence: 3 of 6.
                    (
                        "/fail_to_pass",
                        json!({"share": 0.5, "evidenced": 3, "passed": 6}),
                    ),
                    ("/by/spec/shop/fail_to_pass_share", json!(0.5)),
                    ("/by/spec/blog/fail_to_pass_share", json!(null)),
                    ("/by/tier/light/fail_to_pass_share", json!(0.5)),
                    ("/by/spec/api/runs", json!(3)),
                    ("/by/spec/blog/false_pass/rate", json!(null)),
                    (
                        "/by/agent",
                        json!({
                        "claude": {"runs": 2, "false_pass": {"rate": 0.5, "low": 0.0945, "high": 0.9055},
                                   "fail_to_pass_share": 0.5},
                        "codex": {"runs": 2, "false_pass": {"rate": null, "low": null, "high": null},
                                  "fail_to_pass_share": null}}),
                    ),
                    ("/by/week/2025-W09/false_pass/rate", json!(1.0)),
                    ("/by/week/2025-W10/runs", json!(2)),
                    ("/by/week/2025-W11/runs", json!(4)),
                    ("/by/week/2025-W11/false_pass/rate", json!(null)),
                ],
            ),
            (
                "--spec shop",
                mixed_runs.clone(),
                mixed().1,
                ReportScope {
                    spec_id: Some("shop".into()),
                    since: None,
                },
                vec![
                    ("/runs", json!(2)),
                    (
                        "/false_pass",
                        json!({"rate": 0.5, "low": 0.0945, "high": 0.9055, "broken": 1, "with_outcome": 2, "unknown": 0}),
                    ),
                    ("/false_fail/rate", json!(null)),
                    ("/override_rate", json!(0.0)),
                    (
                        "/findings",
                        json!({"acceptance_rate": 0.5, "noise_rate": 0.5,
                                         "resolved": 1, "dismissed": 1, "superseded": 1, "open": 1}),
                    ),
                    (
                        "/cost_usd",
                        json!({"median": 0.01, "p90": 0.03, "total": 0.04}),
                    ),
                    ("/by/model/m1/runs", json!(2)),
                    ("/by/model/m2/runs", json!(1)),
                    (
                        "/by/spec",
                        json!({"shop": {"runs": 2, "false_pass": {"rate": 0.5, "low": 0.0945, "high": 0.9055}, "fail_to_pass_share": 0.5}}),
                    ),
                ],
            ),
            (
                "--since 2025-03-10",
                mixed_runs,
                mixed_events,
                ReportScope {
                    spec_id: None,
                    since: since(10),
                },
                vec![
                    ("/since", json!("2025-03-10T00:00:00Z")),
                    ("/runs", json!(4)),
                    (
                        "/false_pass",
                        json!({"rate": null, "low": null, "high": null, "broken": 0, "with_outcome": 0, "unknown": 1}),
                    ),
                    ("/false_fail/rate", json!(0.5)),
                    (
                        "/findings",
                        json!({"acceptance_rate": 0.0, "noise_rate": 3.0 / 5.0,
                                         "resolved": 0, "dismissed": 1, "superseded": 0, "open": 2}),
                    ),
                    (
                        "/by/week",
                        json!({"2025-W11": {"runs": 4, "false_pass": {"rate": null, "low": null, "high": null}, "fail_to_pass_share": null}}),
                    ),
                    ("/by/model/m1/runs", json!(1)),
                ],
            ),
        ];
        for (name, runs, events, scope, want) in cases {
            let dir = tempfile::tempdir().unwrap();
            let ledger = ledger_of(dir.path(), &runs, &events);
            let card = Scorecard::build(&ledger, &scope, &trusted()).unwrap();
            check(name, &render(&card), &want);
        }
    }

    #[test]
    fn interned_names_keep_their_index_past_the_linear_scan() {
        let mut i = Interner::default();
        let names: Vec<String> = (0..40).map(|k| format!("spec-{k}")).collect();
        for (k, n) in names.iter().enumerate() {
            assert_eq!(i.get(n) as usize, k);
        }
        for (k, n) in names.iter().enumerate().rev() {
            assert_eq!(i.get(n) as usize, k, "{n}");
        }
        assert_eq!(i.names, names);
    }

    #[test]
    fn overrides_count_as_fine_unless_a_later_outcome_says_broken() {
        let t = |h| Some(at(20, h));
        let cases = [
            (None, None, Outcome::Unknown),
            (Some((true, at(20, 1))), None, Outcome::Broken),
            (Some((false, at(20, 1))), None, Outcome::Fine),
            (None, t(1), Outcome::Fine),
            (Some((true, at(20, 2))), t(1), Outcome::Broken),
            (Some((false, at(20, 2))), t(1), Outcome::Fine),
            (Some((true, at(20, 1))), t(2), Outcome::Fine),
            (Some((true, at(20, 1))), t(1), Outcome::Fine),
        ];
        for (latest, overridden_at, want) in cases {
            let state = OutcomeState {
                seq: 1,
                run_id: "r".into(),
                outcomes: Vec::new(),
                latest,
                overridden_at,
            };
            assert_eq!(effective_outcome(&state), want, "{state:?}");
        }
    }

    #[test]
    fn recent_false_passes_newest_first_with_their_outcome() {
        let dir = tempfile::tempdir().unwrap();
        let (runs, events) = mixed();
        let ledger = ledger_of(dir.path(), &runs, &events);
        let card = Scorecard::build(&ledger, &ReportScope::default(), &trusted()).unwrap();
        let got: Vec<(&str, Option<&str>, &str)> = card
            .recent_false_passes
            .iter()
            .map(|p| {
                (
                    p.run_id.as_str(),
                    p.reason.as_deref(),
                    p.bundle_path.as_str(),
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                ("r7", Some("reason 3"), "/state/bundles/r7.dsse.json"),
                ("r1", Some("reason 1"), "/state/bundles/r1.dsse.json"),
            ]
        );
        assert_eq!(card.recent_false_passes[1].models, ["m1", "m2"]);
        assert_eq!(card.false_pass_count, 2);
        // Per-tier and per-model weeks, and cost by week, for the page.
        assert_eq!(card.tier_weeks["light"]["2025-W10"].approved_broken, 1);
        assert_eq!(card.model_weeks["m2"]["2025-W11"].runs, 1);
        assert_eq!(card.week_cost["2025-W11"].median, Some(0.05));
        let quality = &card.seats[&("quality".to_owned(), "m1".to_owned())];
        assert_eq!((quality.statuses["ok"], quality.input_tokens), (4, 1500));
        // A reviewer skipped for having nothing to review is not credited the run.
        assert!(!card.seats.keys().any(|(role, _)| role == "docs"));
    }

    /// The JSON has exactly the documented keys, nested as documented.
    #[test]
    fn json_keys_are_the_contract() {
        fn shape(v: &Value) -> Value {
            match v {
                Value::Object(m) => m.iter().map(|(k, v)| (k.clone(), shape(v))).collect(),
                _ => Value::Null,
            }
        }
        let design: Value = serde_json::from_str(
            r#"{"format_version": 1, "since": null, "runs": 0,
 "false_pass": {"rate": 0.0, "low": 0.0, "high": 0.0, "broken": 0, "with_outcome": 0, "unknown": 0},
 "false_fail": {"rate": 0.0, "low": 0.0, "high": 0.0, "fine": 0, "with_outcome": 0, "unknown": 0},
 "without_outcome": {"share": 0.0, "runs": 0, "decided": 0}, "not_integrated": 0, "min_confidence": 0.0,
 "left_out": {"runs": 0, "outcomes": 0, "overrides": 0, "replays": 0},
 "override_rate": 0.0, "escalation_rate": 0.0, "did_not_run_rate": 0.0, "unisolated_rate": 0.0,
 "fail_to_pass": {"share": 0.0, "evidenced": 0, "passed": 0},
 "findings": {"acceptance_rate": 0.0, "noise_rate": 0.0, "resolved": 0, "dismissed": 0, "superseded": 0, "open": 0},
 "cost_usd": {"median": 0.0, "p90": 0.0, "total": 0.0}, "input_tokens": {"median": 0, "p90": 0, "total": 0},
 "cached_input_share": 0.0,
 "by": {"tier": {"light": {"runs": 0, "false_pass": {"rate": 0.0, "low": 0.0, "high": 0.0},
                           "fail_to_pass_share": 0.0}},
        "model": {}, "role": {}, "spec": {}, "agent": {}, "week": {}, "source": {}},
 "replays": []}"#,
        )
        .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let runs = vec![run("r", "s", "pass", "light", 3, (None, 0, 0), json!({}))];
        let ledger = ledger_of(dir.path(), &runs, &[]);
        let mut doc =
            render(&Scorecard::build(&ledger, &ReportScope::default(), &trusted()).unwrap());
        let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
        assert_eq!(
            keys(&doc),
            keys(&design),
            "top-level keys in the documented order"
        );
        // Every other breakdown has the tier breakdown's shape.
        for dim in ["spec", "week"] {
            let group = doc["by"][dim].as_object().unwrap().values().next().unwrap();
            assert_eq!(shape(group), shape(&design["by"]["tier"]["light"]), "{dim}");
        }
        for dim in ["spec", "week"] {
            doc["by"][dim] = json!({});
        }
        assert_eq!(shape(&doc), shape(&design));
    }
}
