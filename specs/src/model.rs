//! The typed spec: what `gate.toml` (or its JSON twin) holds once parsed.
//!
//! Every struct rejects unknown keys. Field names are the file's key names, so
//! `serde` gives both the parser and the canonical serialisation that input
//! fingerprints and bundles are computed from.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// A whole spec file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "gate spec (gate.toml)")]
pub struct Spec {
    /// `[spec]`: identity and summary of the change.
    pub spec: SpecMeta,
    /// `[[check]]`: harness cross-checks, run before any model.
    #[serde(default, rename = "check", skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<Check>,
    /// `[[task]]`: the tasks of the feature and their acceptance criteria.
    #[serde(default, rename = "task", skip_serializing_if = "Vec::is_empty")]
    pub tasks: Vec<Task>,
    /// `[[page]]`: pages of the workspace's own server, looked at when the
    /// change touches their files.
    #[serde(default, rename = "page", skip_serializing_if = "Vec::is_empty")]
    pub pages: Vec<Page>,
    /// `[policy]`: thresholds and switches, all defaulted.
    #[serde(default)]
    pub policy: Policy,
    /// `[ledger]`: where the ledger lives when shared.
    #[serde(default, skip_serializing_if = "LedgerSection::is_empty")]
    pub ledger: LedgerSection,
    /// `[sandbox]`: how the processes the gate starts for the workspace are
    /// isolated.
    #[serde(default, skip_serializing_if = "SandboxSection::is_empty")]
    pub sandbox: SandboxSection,
    /// `[eval]`: how `gate outcome harvest` reads the history.
    #[serde(default, skip_serializing_if = "EvalSection::is_empty")]
    pub eval: EvalSection,
}

/// `[spec]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SpecMeta {
    /// Stable across attempts: the retry history keys on it.
    pub id: String,
    /// One line on what the change does.
    #[serde(default)]
    pub summary: String,
    /// Git revision the change is measured from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base: Option<String>,
    /// The coding agent that made the change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// Globs of verifiers the change must not alter, besides the files the
    /// checks' and criteria's `run` commands name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub protected: Vec<String>,
}

/// `[[check]]`: a plain-code cross-check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Check {
    /// Unique id.
    pub id: String,
    /// Shell command, run with the workspace as working directory.
    pub run: String,
    /// Seconds before the whole process group is killed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_s: Option<u64>,
    /// Checks that must pass first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub after: Vec<String>,
    /// Globs of the files the check depends on; none means the whole workspace.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inputs: Vec<String>,
    /// Makes this a service check: it passes when it becomes ready, and stays up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub starts: Option<Starts>,
}

/// `starts = { … }`: how a service check proves it started.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Starts {
    /// Seconds the service has to become ready (default 30).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub within_s: Option<u64>,
    /// `host:port` that must accept a TCP connection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_tcp: Option<String>,
    /// URL that must answer 2xx.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_http: Option<String>,
    /// Text that must appear on the service's output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_log: Option<String>,
}

impl Starts {
    /// Default seconds a service has to become ready.
    pub const DEFAULT_WITHIN_S: u64 = 30;

    /// The readiness window in seconds.
    pub fn within_s(&self) -> u64 {
        self.within_s.unwrap_or(Self::DEFAULT_WITHIN_S)
    }
}

/// `[[page]]`: a page of the workspace's own server, captured in a headless
/// browser when the change touches one of its `files`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Page {
    /// Unique id, in the same namespace as checks, tasks and criteria.
    pub id: String,
    /// `http://` or `https://` URL on a loopback host (127.0.0.1, localhost, `[::1]`).
    pub url: String,
    /// Globs of the files whose change makes the page worth looking at.
    pub files: Vec<String>,
    /// Checks that must pass first: the one that starts the server stays up
    /// while the page is captured.
    pub after: Vec<String>,
    /// Request headers: header name → the environment variable holding its value.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// Cookies: cookie name → the environment variable holding its value.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub cookies: BTreeMap<String, String>,
    /// Seconds the page has to load at each width (default 30).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_s: Option<u64>,
}

impl Page {
    /// Default seconds a page has to load.
    pub const DEFAULT_TIMEOUT_S: u64 = 30;

    /// The load bound in seconds.
    pub fn timeout_s(&self) -> u64 {
        self.timeout_s.unwrap_or(Self::DEFAULT_TIMEOUT_S)
    }
}

/// `[[task]]`: one task of the feature.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Task {
    /// Unique id.
    pub id: String,
    /// Human title.
    #[serde(default)]
    pub title: String,
    /// Globs of the files this task owns.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<String>,
    /// Tasks this one builds on (the task graph; review context only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub after: Vec<String>,
    /// The task's own unit tests: the precondition the gate runs after.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tests: Option<TaskTests>,
    /// `[[task.criterion]]`: acceptance criteria.
    #[serde(default, rename = "criterion", skip_serializing_if = "Vec::is_empty")]
    pub criteria: Vec<Criterion>,
}

/// `tests = { report = … }` or `tests = { run = … }`: exactly one of the two.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskTests {
    /// A JUnit XML report the task's test run wrote.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report: Option<String>,
    /// A command that runs the task's tests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
    /// Timeout for `run`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_s: Option<u64>,
    /// The checks `run` waits for (a dependency install, a build).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub after: Vec<String>,
}

/// `[[task.criterion]]`: an acceptance criterion.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Criterion {
    /// Unique id.
    pub id: String,
    /// What must hold, in words.
    pub text: String,
    /// Decided by code: the command's exit 0 means met.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
    /// Decided by a model; the only accepted value is `"model"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge: Option<String>,
    /// Globs of the files the criterion depends on; none means its task's `paths`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inputs: Vec<String>,
    /// Checks that must pass first (and services that must be up).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub after: Vec<String>,
    /// Timeout for `run`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_s: Option<u64>,
    /// Probability a model must give for a judged criterion to pass.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threshold: Option<f64>,
    /// What its result on the base must be for a pass to count (a
    /// code-decided criterion only); none means `[policy] expect_default`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect: Option<Expect>,
}

impl Criterion {
    /// How this criterion is decided; validation guarantees exactly one applies.
    pub fn decider(&self) -> Decider<'_> {
        match &self.run {
            Some(run) => Decider::Code(run),
            None => Decider::Model,
        }
    }

    /// Its expectation of the base under `policy`: its own `expect`, else
    /// the policy's default; a model-judged criterion has none (`any`).
    pub fn expectation(&self, policy: &Policy) -> Expect {
        if self.run.is_none() {
            return Expect::Any;
        }
        self.expect.unwrap_or(policy.expect_default)
    }
}

/// What a criterion's result on the base must be for its pass to count.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    Default,
    schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Expect {
    /// Fails without the change: its pass shows the feature.
    FailToPass,
    /// Passes without the change too: it guards what already worked.
    PassToPass,
    /// Nothing is asked of the base.
    #[default]
    Any,
}

impl Expect {
    /// The name as written.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::FailToPass => "fail-to-pass",
            Self::PassToPass => "pass-to-pass",
            Self::Any => "any",
        }
    }
}

/// Which criteria run on the base.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    Default,
    schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum BaseRuns {
    /// None: an expectation other than `any` leaves its criterion unverified.
    Never,
    /// Those whose expectation is other than `any`.
    #[default]
    Expected,
    /// Every code-decided criterion (its base result is recorded).
    Always,
}

impl BaseRuns {
    /// The name as written.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Never => "never",
            Self::Expected => "expected",
            Self::Always => "always",
        }
    }
}

/// Who decides a criterion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decider<'a> {
    /// A command; exit 0 means met.
    Code(&'a str),
    /// A model, asked as a yes/no question.
    Model,
}

/// What a reviewer that could not run means for the verdict.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    Default,
    schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum ReviewUnavailable {
    /// Ignore it (the pass says it was unreviewed): a flaky reviewer must
    /// not block merges.
    #[default]
    Pass,
    /// The run is `incomplete`: the gate could not decide without it.
    Incomplete,
    /// The run fails.
    Fail,
}

impl ReviewUnavailable {
    /// The word as written in the spec.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pass => "pass",
            Self::Incomplete => "incomplete",
            Self::Fail => "fail",
        }
    }

    const NAMES: &'static [&'static str] = &["pass", "fail", "incomplete"];

    fn parse<E: serde::de::Error>(word: &str) -> Result<Self, E> {
        match word {
            "pass" => Ok(Self::Pass),
            "incomplete" => Ok(Self::Incomplete),
            "fail" => Ok(Self::Fail),
            other => Err(E::unknown_variant(other, Self::NAMES)),
        }
    }
}

/// `on_review_unavailable`: one value for every tier
/// (`"incomplete"`), or one per tier (`{ trivial = "pass", light = "pass",
/// full = "incomplete" }`, a tier left out is `"pass"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct OnReviewUnavailable {
    /// For a trivial run.
    pub trivial: ReviewUnavailable,
    /// For a light run.
    pub light: ReviewUnavailable,
    /// For a full run.
    pub full: ReviewUnavailable,
}

impl OnReviewUnavailable {
    /// The tiers, in the order the spec names them.
    pub const TIERS: [&'static str; 3] = ["trivial", "light", "full"];

    /// The same value in every tier.
    pub const fn all(value: ReviewUnavailable) -> Self {
        Self {
            trivial: value,
            light: value,
            full: value,
        }
    }

    /// The value for a tier (`trivial`, `light` or `full`; anything else
    /// reads as `full`, the strictest tier).
    pub fn for_tier(&self, tier: &str) -> ReviewUnavailable {
        match tier {
            "trivial" => self.trivial,
            "light" => self.light,
            _ => self.full,
        }
    }

    /// Each tier with its value.
    pub fn by_tier(&self) -> [(&'static str, ReviewUnavailable); 3] {
        [
            ("trivial", self.trivial),
            ("light", self.light),
            ("full", self.full),
        ]
    }
}

/// The two shapes `on_review_unavailable` takes, for its schema.
#[derive(schemars::JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)]
enum OnReviewUnavailableShape {
    /// One value for every tier.
    Every(ReviewUnavailable),
    /// One value per tier; a tier left out is `"pass"`.
    ByTier {
        /// For a trivial run.
        #[serde(default)]
        trivial: ReviewUnavailable,
        /// For a light run.
        #[serde(default)]
        light: ReviewUnavailable,
        /// For a full run.
        #[serde(default)]
        full: ReviewUnavailable,
    },
}

impl schemars::JsonSchema for OnReviewUnavailable {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "OnReviewUnavailable".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        OnReviewUnavailableShape::json_schema(generator)
    }
}

impl Serialize for OnReviewUnavailable {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        if self.trivial == self.light && self.light == self.full {
            return self.full.serialize(s);
        }
        let mut map = s.serialize_map(Some(3))?;
        for (tier, value) in self.by_tier() {
            map.serialize_entry(tier, &value)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for OnReviewUnavailable {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = OnReviewUnavailable;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(
                    "\"pass\", \"fail\" or \"incomplete\", or a table by tier such as \
                     { trivial = \"pass\", light = \"pass\", full = \"incomplete\" }",
                )
            }

            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
                ReviewUnavailable::parse(v).map(OnReviewUnavailable::all)
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Self::Value, A::Error> {
                let mut out = OnReviewUnavailable::default();
                while let Some(tier) = map.next_key::<String>()? {
                    let word: String = map.next_value()?;
                    let value = ReviewUnavailable::parse(&word)?;
                    match tier.as_str() {
                        "trivial" => out.trivial = value,
                        "light" => out.light = value,
                        "full" => out.full = value,
                        other => {
                            return Err(serde::de::Error::unknown_field(
                                other,
                                &OnReviewUnavailable::TIERS,
                            ));
                        }
                    }
                }
                Ok(out)
            }
        }
        d.deserialize_any(Visit)
    }
}

/// `[policy]`: the gate's thresholds, each key optional with the default
/// `docs/configuration.md` lists.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Policy {
    /// Trivial tier: at most this many tasks.
    pub trivial_max_tasks: u32,
    /// Trivial tier: at most this many criteria.
    pub trivial_max_criteria: u32,
    /// Light tier: at most this many tasks (above in both: full).
    pub light_max_tasks: u32,
    /// Light tier: at most this many criteria (above in both: full).
    pub light_max_criteria: u32,
    /// Globs whose change lifts a run to the full tier.
    pub sensitive_paths: Vec<String>,
    /// Built-in check: committed private keys and API-token shapes.
    pub builtin_secrets: bool,
    /// Built-in check: unresolved merge-conflict markers.
    pub builtin_conflicts: bool,
    /// Built-in check: JSON, TOML and YAML files that do not parse.
    pub builtin_parse: bool,
    /// Files the built-in checks do not look at: for every check, or per check.
    pub builtin_exclude: BuiltinExclude,
    /// Built-in page check: horizontal overflow at phone width.
    pub builtin_overflow: bool,
    /// Built-in page check: colour contrast below WCAG AA (axe-core).
    pub builtin_contrast: bool,
    /// Default timeout for a check or plain-code criterion.
    pub check_timeout_s: u64,
    /// Bytes of output kept per item; the rest is counted.
    pub output_cap_bytes: u64,
    /// Timeout for one specialist.
    pub specialist_timeout_s: u64,
    /// Timeout for the whole review.
    pub review_timeout_s: u64,
    /// Seconds a streamed reply may stay silent.
    pub inactivity_timeout_s: u64,
    /// Seconds to connect to a provider.
    pub connect_timeout_s: u64,
    /// No new attempt starts with less than this left.
    pub min_attempt_time_s: u64,
    /// Per-role timeout overrides.
    pub role_timeout_s: BTreeMap<String, u64>,
    /// Seconds an open circuit breaker waits before its probe.
    pub breaker_cooldown_s: u64,
    /// What a reviewer that did not run (or a review that did not run at
    /// all) means, by tier.
    pub on_review_unavailable: OnReviewUnavailable,
    /// What part of the change a reviewer that ran was not shown (a file
    /// too large for the review's parts or budget) means, by tier.
    pub on_review_cut: OnReviewUnavailable,
    /// Probability a judged criterion needs to pass.
    pub judge_threshold: f64,
    /// Compliance a house rule needs.
    pub rule_threshold: f64,
    /// Findings below this confidence are dropped.
    pub confidence_floor: f64,
    /// Whether the model coordinator may drop or downgrade (with a reason) a
    /// critical finding that two or more roles raised, or that one raised
    /// with confidence 0.9 or more.
    pub coordinator_may_drop_critical: bool,
    /// Estimated input tokens a run may send.
    pub max_input_tokens: u64,
    /// Share of its remit a review must have seen.
    pub min_coverage: f64,
    /// Attempt budget per series.
    pub max_attempts: u32,
    /// Doom loop: identical failure sets in a row.
    pub repeat_attempts: u32,
    /// Doom loop: attempts without fewer failures.
    pub no_progress_attempts: u32,
    /// The expectation of a code-decided criterion without its own `expect`.
    pub expect_default: Expect,
    /// Which criteria run on the base.
    pub base_runs: BaseRuns,
    /// Mutation scoring of the criteria, run by `gate verify` after they
    /// pass; off when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mutants: Option<MutantsPolicy>,
}

/// `[policy] mutants`: mutants of the change's own lines, each run against
/// the criteria that read its file, and what a low score means.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct MutantsPolicy {
    /// The least share of scored mutants the criteria must kill, 0 to 1.
    pub min_score: f64,
    /// What a score below `min_score` does.
    pub on_below: OnBelow,
    /// At most this many mutants run (the first, in file and line order).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max: Option<u32>,
}

impl Default for MutantsPolicy {
    fn default() -> Self {
        Self {
            min_score: 0.0,
            on_below: OnBelow::Warn,
            max: None,
        }
    }
}

/// What a mutation score below `[policy] mutants.min_score` does.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum OnBelow {
    /// A warning finding; the verdict stands.
    #[default]
    Warn,
    /// A critical finding: the run fails.
    Fail,
}

impl OnBelow {
    /// The name as written.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Warn => "warn",
            Self::Fail => "fail",
        }
    }
}

impl Policy {
    /// The roles `role_timeout_s` may name.
    pub const ROLES: [&'static str; 8] = [
        "quality",
        "security",
        "performance",
        "docs",
        "integration",
        "judge",
        "coordinator",
        "rules",
    ];

    /// Default sensitive-path globs.
    pub const DEFAULT_SENSITIVE_PATHS: [&'static str; 4] = [
        "**/auth/**",
        "**/crypto/**",
        "**/migrations/**",
        ".github/workflows/**",
    ];
}

impl Default for Policy {
    fn default() -> Self {
        Self {
            trivial_max_tasks: 1,
            trivial_max_criteria: 5,
            light_max_tasks: 4,
            light_max_criteria: 20,
            sensitive_paths: Self::DEFAULT_SENSITIVE_PATHS
                .iter()
                .map(|s| (*s).to_owned())
                .collect(),
            builtin_secrets: true,
            builtin_conflicts: true,
            builtin_parse: true,
            builtin_exclude: BuiltinExclude::default(),
            builtin_overflow: true,
            builtin_contrast: true,
            check_timeout_s: 300,
            output_cap_bytes: 1024 * 1024,
            specialist_timeout_s: 300,
            review_timeout_s: 1500,
            inactivity_timeout_s: 60,
            connect_timeout_s: 10,
            min_attempt_time_s: 120,
            role_timeout_s: BTreeMap::new(),
            breaker_cooldown_s: 120,
            on_review_unavailable: OnReviewUnavailable::all(ReviewUnavailable::Pass),
            // A full-tier pass must not rest on code nobody read; a cut is
            // no defect found, so the run is undecided rather than failed.
            on_review_cut: OnReviewUnavailable {
                trivial: ReviewUnavailable::Pass,
                light: ReviewUnavailable::Pass,
                full: ReviewUnavailable::Incomplete,
            },
            judge_threshold: 0.8,
            rule_threshold: 0.8,
            confidence_floor: 0.5,
            coordinator_may_drop_critical: false,
            max_input_tokens: 5_000_000,
            min_coverage: 0.0,
            max_attempts: 6,
            repeat_attempts: 3,
            no_progress_attempts: 4,
            expect_default: Expect::Any,
            base_runs: BaseRuns::Expected,
            mutants: None,
        }
    }
}

/// `[policy] builtin_exclude`: globs of files the built-in checks do not
/// look at (a test fixture that is meant not to parse, a fake key), either
/// a list for every built-in check or a table by check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum BuiltinExclude {
    /// `builtin_exclude = ["tests/fixtures/**"]`: every built-in check.
    Every(Vec<String>),
    /// `builtin_exclude = { parse = [...], secrets = [...] }`.
    ByCheck(BuiltinExcludeByCheck),
}

/// The table form of `builtin_exclude`: globs by built-in check, and `all`
/// for every check.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BuiltinExcludeByCheck {
    /// Every built-in check.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub all: Vec<String>,
    /// The merge-conflict marker check.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conflicts: Vec<String>,
    /// The secrets check.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub secrets: Vec<String>,
    /// The parse check.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parse: Vec<String>,
}

impl Default for BuiltinExclude {
    fn default() -> Self {
        Self::Every(Vec::new())
    }
}

impl BuiltinExclude {
    /// The globs that apply to the built-in check `name` (`conflicts`,
    /// `secrets` or `parse`): those for every check, then its own.
    pub fn for_check(&self, name: &str) -> Vec<String> {
        match self {
            Self::Every(globs) => globs.clone(),
            Self::ByCheck(t) => {
                let own = match name {
                    "conflicts" => &t.conflicts,
                    "secrets" => &t.secrets,
                    "parse" => &t.parse,
                    _ => return t.all.clone(),
                };
                t.all.iter().chain(own).cloned().collect()
            }
        }
    }
}

impl<'de> Deserialize<'de> for BuiltinExclude {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Shapes;
        impl<'de> serde::de::Visitor<'de> for Shapes {
            type Value = BuiltinExclude;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a list of globs, or a table of them by built-in check")
            }

            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                seq: A,
            ) -> Result<Self::Value, A::Error> {
                Vec::deserialize(serde::de::value::SeqAccessDeserializer::new(seq))
                    .map(BuiltinExclude::Every)
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<Self::Value, A::Error> {
                BuiltinExcludeByCheck::deserialize(serde::de::value::MapAccessDeserializer::new(
                    map,
                ))
                .map(BuiltinExclude::ByCheck)
            }
        }
        deserializer.deserialize_any(Shapes)
    }
}

/// `[ledger]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LedgerSection {
    /// A shared ledger's URL (`postgres://…`); `GATE_LEDGER` wins over it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

impl LedgerSection {
    fn is_empty(&self) -> bool {
        self.url.is_none()
    }
}

/// `[eval]`: how `gate outcome harvest` labels runs from git history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EvalSection {
    /// A regular expression a commit message must match for the commit to
    /// count as a fix (SZZ); default: the usual fix, bug and regression
    /// words, case-insensitive. Add a tracker's keys with an alternative, e.g.
    /// `(?i)\b(fix(e[sd])?|bugs?|regressions?)\b|\bSHOP-[0-9]+\b`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fix_pattern: Option<String>,
}

impl EvalSection {
    fn is_empty(&self) -> bool {
        self.fix_pattern.is_none()
    }
}

/// `[sandbox]`: how the processes the gate starts for the workspace are
/// isolated. Every key is optional; what the gate does without one is its
/// documented default.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SandboxSection {
    /// `auto`, `required` or `off`; the operator's floor (`--sandbox`,
    /// `GATE_SANDBOX`) wins when it is stricter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<SandboxMode>,
    /// `host` or `loopback`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<SandboxNetwork>,
    /// Absolute or `~/` paths outside the workspace made writable (shared
    /// with later runs).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub writable: Vec<String>,
    /// Absolute or `~/` host paths shown read-only, besides the system's
    /// folders and the toolchains.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub readable: Vec<String>,
    /// Absolute or `~/` paths made unreachable, besides the built-in list.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hidden: Vec<String>,
    /// Environment variables passed to the processes, by exact name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pass_env: Vec<String>,
}

impl SandboxSection {
    fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// Whether the gate isolates what it runs, from weakest to strictest.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    Default,
    schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum SandboxMode {
    /// Never isolate.
    Off,
    /// Isolate where the machine allows; otherwise run unisolated and say so.
    #[default]
    Auto,
    /// Isolate, or refuse to run.
    Required,
}

impl SandboxMode {
    /// The name as written.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Off => "off",
            Self::Auto => "auto",
            Self::Required => "required",
        }
    }
}

/// The network the processes see, from widest to narrowest.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    Default,
    schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum SandboxNetwork {
    /// The host's network.
    #[default]
    Host,
    /// One private network namespace for the whole run: loopback only.
    Loopback,
}

impl SandboxNetwork {
    /// The name as written.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Host => "host",
            Self::Loopback => "loopback",
        }
    }
}

impl Spec {
    /// Every criterion with the task that holds it, in file order.
    pub fn criteria(&self) -> impl Iterator<Item = (&Task, &Criterion)> {
        self.tasks
            .iter()
            .flat_map(|t| t.criteria.iter().map(move |c| (t, c)))
    }

    /// Number of acceptance criteria across all tasks.
    pub fn criteria_count(&self) -> usize {
        self.tasks.iter().map(|t| t.criteria.len()).sum()
    }

    /// The id of a task's unit-test cross-check.
    pub fn tests_check_id(task: &Task) -> String {
        format!("{}.tests", task.id)
    }
}
