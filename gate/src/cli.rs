//! The command line, as clap parses it (raw); [`crate::config`] resolves it.

use std::path::PathBuf;

use clap::{ArgGroup, Args, Parser, Subcommand, ValueEnum};

/// The integration-verify gate for autonomous build pipelines.
#[derive(Debug, Parser)]
#[command(name = "gate", version, about, long_about = None, max_term_width = 100)]
pub(crate) struct Cli {
    /// Options every command takes.
    #[command(flatten)]
    pub global: GlobalArgs,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Options every command takes.
#[derive(Debug, Args)]
pub(crate) struct GlobalArgs {
    /// The workspace (default: the nearest folder at or above the current
    /// directory holding gate.toml, within the repository; else the current
    /// directory).
    #[arg(long, global = true, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// The state directory (default: `GATE_STATE_DIR`, else `.gate/` inside the workspace).
    #[arg(long, global = true, value_name = "DIR")]
    pub state: Option<PathBuf>,
    /// More progress on stderr (repeat for debug logs).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// No progress on stderr, only results and errors.
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    pub quiet: bool,
    /// Colour in terminal output (auto: only on a terminal, and never with NO_COLOR set).
    #[arg(long, global = true, value_enum, value_name = "WHEN", default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,
}

/// When to colour terminal output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ColorChoice {
    /// On a terminal, unless NO_COLOR is set.
    Auto,
    /// Always, even into a pipe.
    Always,
    /// Never.
    Never,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Write a commented starter gate.toml in the workspace.
    Init,
    /// Verify the change against the spec and print the verdict.
    Verify(VerifyArgs),
    /// Show or check the model routing table.
    #[command(subcommand)]
    Routing(RoutingCommand),
    /// Generate or show the signing key.
    #[command(subcommand)]
    Keys(KeysCommand),
    /// Verify, show or fetch a run's evidence bundle.
    #[command(subcommand)]
    Evidence(EvidenceCommand),
    /// List the runs in the ledger.
    Runs(RunsArgs),
    /// Verify, checkpoint or import into the ledger.
    #[command(subcommand)]
    Ledger(LedgerCommand),
    /// Dismiss a finding: not raised again in the spec's later attempts unless its code changes.
    Dismiss {
        /// The run that raised it (id or unique prefix).
        run: String,
        /// The finding's id (or unique prefix).
        finding: String,
        /// Why it is not worth acting on.
        #[arg(long)]
        reason: String,
    },
    /// Break glass: let a run's spec pass on the same content, signed and counted.
    Override {
        /// The run to override (id or unique prefix).
        run: String,
        /// Why.
        #[arg(long)]
        reason: String,
        /// Who decided.
        #[arg(long)]
        by: String,
    },
    /// List the house rules that apply to files; check or test them.
    Rules(RulesArgs),
    /// Record what happened after a run's decision (it later broke, or it was
    /// fine), or harvest it from git history.
    Outcome(OutcomeArgs),
    /// The gate as a coding agent's Stop hook (Claude Code, Codex), and its installer.
    #[command(subcommand)]
    Hook(HookCommand),
    /// Serve the gate to an agent over MCP on stdio (tools: rules, verify, show_run, dismiss).
    Mcp,
    /// The false-pass scorecard: how often an approved run later broke, cost, breakdowns.
    Report(ReportArgs),
    /// The scorecard as Prometheus text, for a textfile collector or a scrape.
    Metrics(MetricsArgs),
    /// Review recorded runs again with a candidate routing table or prompts,
    /// from what their reviewers were sent, scored against their outcomes.
    Replay(Box<ReplayArgs>),
    /// Check what a run here would use, spending no tokens and changing nothing.
    Doctor(DoctorArgs),
    /// Score the acceptance criteria by the wrong versions of the change's
    /// own lines they notice (mutants), each run only against the criteria
    /// that read its file.
    Mutants(MutantsArgs),
    /// Print a shell's completion script (bash, zsh, fish, powershell).
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: CompletionShell,
    },
    /// Print the JSON Schema of a file the gate reads or of an output it writes.
    Schema {
        /// Which one.
        #[arg(value_enum)]
        which: SchemaName,
    },
    /// Print the manual page (roff), of gate or of one of its commands.
    Man {
        /// A command (`verify`, `ledger verify`, …); none for gate's own page.
        #[arg(value_name = "COMMAND", num_args = 0..)]
        command: Vec<String>,
    },
    /// The gate's own code inside a run's network namespace (readiness
    /// probes, the bridge to a sandboxed browser): started by the gate only.
    #[command(name = "sandbox-helper", hide = true)]
    SandboxHelper {
        /// What to run, as the gate wrote it.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
        args: Vec<std::ffi::OsString>,
    },
}

/// `gate mutants`.
#[derive(Debug, Args)]
pub(crate) struct MutantsArgs {
    /// The spec (default: gate.toml in the workspace).
    #[arg(long, value_name = "FILE")]
    pub spec: Option<PathBuf>,
    /// Git revision the change is measured from (default: the spec's `base`).
    #[arg(long, value_name = "REV")]
    pub base: Option<String>,
    /// Only this task: its criteria, and mutants of the changed files under its `paths`.
    #[arg(long, value_name = "TASK")]
    pub task: Option<String>,
    /// Run at most this many mutants (the first ones, in file and line order).
    #[arg(long, value_name = "N")]
    pub max: Option<usize>,
    /// Each criterion's time limit against a mutant, in seconds (default: its own).
    #[arg(long, value_name = "S")]
    pub timeout_s: Option<u64>,
    /// Run every criterion against every mutant, whatever it read (what
    /// scoping is measured against).
    #[arg(long)]
    pub unscoped: bool,
    /// How to print the result on stdout (default: human).
    #[arg(long, value_enum, value_name = "FORMAT", default_value = "human")]
    pub format: ShowFormat,
    /// The least isolation the runs get, as `gate verify --sandbox`.
    #[arg(long, value_enum, value_name = "MODE")]
    pub sandbox: Option<SandboxArg>,
}

/// `gate doctor`.
#[derive(Debug, Args)]
pub(crate) struct DoctorArgs {
    /// Which spec and routing table.
    #[command(flatten)]
    pub routing: RoutingArgs,
    /// Reach nothing over the network: no provider endpoint, no routing
    /// override, no bucket.
    #[arg(long)]
    pub offline: bool,
    /// Also send one small review-shaped request (at most 16 output tokens)
    /// to each provider and model of the table, and say what the server
    /// refused and which setting fixes it.
    #[arg(long, conflicts_with = "offline")]
    pub probe: bool,
    /// One line per check, or one JSON object.
    #[arg(long, value_enum, default_value_t = ShowFormat::Human)]
    pub format: ShowFormat,
}

/// The shells `gate completions` writes for.
/// A published JSON Schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum SchemaName {
    /// The spec, `gate.toml`.
    Spec,
    /// The routing table, `routing.toml`.
    Routing,
    /// A house-rules file, `docs/review/rules.toml`.
    Rules,
    /// `gate verify --format json`'s document.
    Verify,
    /// One line of `gate verify --format jsonl`.
    Events,
    /// The predicate of a run's signed bundle.
    Predicate,
    /// `gate mutants --format json`'s document.
    Mutants,
    /// `gate replay --format json`'s document (and its bundle's predicate).
    Replay,
    /// The predicate of a signed replay plan (`gate replay plan`).
    ReplayPlan,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CompletionShell {
    /// Bash.
    Bash,
    /// Zsh.
    Zsh,
    /// Fish.
    Fish,
    /// PowerShell.
    Powershell,
}

impl From<CompletionShell> for clap_complete::Shell {
    fn from(shell: CompletionShell) -> Self {
        match shell {
            CompletionShell::Bash => Self::Bash,
            CompletionShell::Zsh => Self::Zsh,
            CompletionShell::Fish => Self::Fish,
            CompletionShell::Powershell => Self::PowerShell,
        }
    }
}

/// `gate rules [--files PATH…] | check | test`.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub(crate) struct RulesArgs {
    /// Check or test instead of listing.
    #[command(subcommand)]
    pub command: Option<RulesCommand>,
    /// Only the rules that apply to these files (they need not exist yet).
    #[arg(long, num_args = 1.., value_name = "PATH")]
    pub files: Vec<PathBuf>,
    /// Human text (avoid / do / see) or JSON for agents.
    #[arg(long, value_enum, default_value_t = ShowFormat::Human)]
    pub format: ShowFormat,
}

/// `gate rules check | test`.
#[derive(Debug, Subcommand)]
pub(crate) enum RulesCommand {
    /// Fail on a file more rules apply to than the cap, and on a judged rule
    /// never tested, changed since its test, or below the margin.
    Check(RulesCheckArgs),
    /// Score every rule's labelled cases against the model and record the
    /// margin in the rule's `tested` table.
    Test(RulesTestArgs),
}

/// `gate rules check`.
#[derive(Debug, Args)]
pub(crate) struct RulesCheckArgs {
    /// Rules that may apply to one file at most.
    #[arg(long, value_name = "N", default_value_t = gate_review::rules::scope::DEFAULT_CAP)]
    pub cap: usize,
}

/// `gate rules test`.
#[derive(Debug, Args)]
pub(crate) struct RulesTestArgs {
    /// Only this rule (every rule with this id).
    #[arg(long, value_name = "ID")]
    pub rule: Option<String>,
    /// Ask the model the routing table gives the rules reviewer on this tier.
    #[arg(long, value_name = "TIER", default_value = "full")]
    pub tier: gate_review::tier::Tier,
    /// Which routing table.
    #[command(flatten)]
    pub routing: RoutingArgs,
}

/// `gate hook …`.
#[derive(Debug, Subcommand)]
pub(crate) enum HookCommand {
    /// Claude Code's Stop hook: reads the hook's JSON on stdin, runs the gate (advisory), answers.
    ClaudeCode(HookRunArgs),
    /// Codex's Stop hook: reads the hook's JSON on stdin, runs the gate (advisory), answers.
    Codex(HookRunArgs),
    /// Aider's test command (`--test-cmd`): runs the gate (advisory), prints what to fix, exits 0 on a pass.
    Aider(HookRunArgs),
    /// Add the gate as an agent's Stop hook, merged into its settings.
    Install(HookInstallArgs),
}

/// `gate hook claude-code | codex`.
#[derive(Debug, Args)]
pub(crate) struct HookRunArgs {
    /// Measure the change from this revision (default: the spec's `[spec] base`).
    #[arg(long, value_name = "REV")]
    pub base: Option<String>,
    /// Answer within this many seconds, whatever the run is doing (keep it under the agent's hook timeout).
    #[arg(long, value_name = "S", default_value_t = 570)]
    pub timeout_s: u64,
    /// Review with this routing table (default: advisory-routing.toml in the user's gate configuration folder; with neither, review does not run).
    #[arg(long, value_name = "FILE")]
    pub routing: Option<PathBuf>,
}

/// The agents `gate hook install` knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum HookAgent {
    /// Claude Code: `.claude/settings.json`.
    ClaudeCode,
    /// OpenAI Codex CLI: `.codex/hooks.json`.
    Codex,
}

impl HookAgent {
    /// The name on the command line.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::ClaudeCode => "claude-code",
            Self::Codex => "codex",
        }
    }
}

/// `gate hook install`.
#[derive(Debug, Args)]
pub(crate) struct HookInstallArgs {
    /// The agent whose settings get the hook.
    #[arg(value_enum)]
    pub agent: HookAgent,
    /// Measure the change from this revision (default: the spec's `[spec] base`).
    #[arg(long, value_name = "REV")]
    pub base: Option<String>,
    /// Install in the user's own settings (`~/.claude/settings.json`, `$CODEX_HOME/hooks.json`), out of the workspace.
    #[arg(long)]
    pub user: bool,
}

/// `gate outcome RUN (--broken|--fine)`, or `gate outcome harvest`.
#[derive(Debug, Args)]
#[command(
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true,
    subcommand_value_name = "COMMAND",
    group(ArgGroup::new("what").required(true).args(["broken", "fine"]))
)]
pub(crate) struct OutcomeArgs {
    /// Harvest outcomes from git instead of recording one.
    #[command(subcommand)]
    pub command: Option<OutcomeCommand>,
    /// A run id (or unique prefix) from the ledger.
    #[arg(required = true)]
    pub run: Option<String>,
    /// What the run decided on later broke (a CI failure, a revert, an incident).
    #[arg(long)]
    pub broken: bool,
    /// What the run decided on turned out fine.
    #[arg(long)]
    pub fine: bool,
    /// Why: what broke, or how it was checked.
    #[arg(long, value_name = "T")]
    pub reason: Option<String>,
    /// Where the news came from (a CI job, an incident id, a person); not
    /// one beginning `git:`, which are the harvester's.
    #[arg(long, value_name = "T")]
    pub source: Option<String>,
}

/// `gate outcome harvest`.
#[derive(Debug, Subcommand)]
pub(crate) enum OutcomeCommand {
    /// Label decided runs from what happened in git after them: reverted,
    /// named by a fix, blamed by a fix (SZZ), or survived.
    Harvest(HarvestArgs),
    /// Show the commits SZZ blames for fix commits, as harvest blames them
    /// (to audit a `git:szz` label).
    Blame(BlameArgs),
}

/// `gate outcome blame`.
#[derive(Debug, Args)]
pub(crate) struct BlameArgs {
    /// Fix commits (ids or revisions).
    #[arg(required = true, value_name = "FIX")]
    pub fixes: Vec<String>,
    /// One line per blamed line, or one JSON object.
    #[arg(long, value_enum, default_value_t = ShowFormat::Human)]
    pub format: ShowFormat,
}

/// `gate outcome harvest`.
#[derive(Debug, Args)]
pub(crate) struct HarvestArgs {
    /// The integration branch (default: the remote's default branch,
    /// `origin/HEAD`, else the branch checked out).
    #[arg(long, value_name = "B")]
    pub branch: Option<String>,
    /// Days after landing within which a fix is blamed (SZZ), and that a
    /// change must live through to survive (by commit dates).
    #[arg(long, value_name = "DAYS", default_value_t = 30)]
    pub window: u32,
    /// Later commits on the branch a change must live through to survive.
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub min_commits: u32,
    /// Only runs started on or after this date (YYYY-MM-DD or RFC 3339).
    #[arg(long, value_name = "DATE")]
    pub since: Option<String>,
    /// Say what would be recorded, and record nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// One line per label, or one JSON object.
    #[arg(long, value_enum, default_value_t = ShowFormat::Human)]
    pub format: ShowFormat,
}

/// `gate replay`.
#[derive(Debug, Args)]
#[command(
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true,
    subcommand_value_name = "COMMAND"
)]
pub(crate) struct ReplayArgs {
    /// Pre-register a replay, or run a pre-registered one.
    #[command(subcommand)]
    pub command: Option<ReplayCommand>,
    /// Which runs, what reviews them, within what limits.
    #[command(flatten)]
    pub replay: ReplayFlags,
    /// Human text or one JSON document.
    #[arg(long, value_enum, default_value_t = ShowFormat::Human)]
    pub format: ShowFormat,
}

/// `gate replay plan | run`.
#[derive(Debug, Subcommand)]
pub(crate) enum ReplayCommand {
    /// Write a signed plan (selection, seed, minimum sample, targets) before
    /// any request is sent.
    Plan(Box<ReplayPlanArgs>),
    /// Execute a signed plan and say which of its targets were met.
    Run(ReplayRunArgs),
}

/// `gate replay plan`.
#[derive(Debug, Args)]
pub(crate) struct ReplayPlanArgs {
    /// Which runs, what reviews them, within what limits.
    #[command(flatten)]
    pub replay: ReplayFlags,
    /// A target the candidate must meet, `FIGURE OP VALUE`: `recall >= 0.8`,
    /// `noise <= 0.1`, `cost_usd <= 2.5`, `recall_gain >= 0.1` (candidate
    /// minus baseline), `cost_ratio <= 0.5`; repeatable.
    #[arg(long = "target", value_name = "TARGET")]
    pub targets: Vec<String>,
    /// Where to write the plan.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: PathBuf,
}

/// `gate replay run`.
#[derive(Debug, Args)]
pub(crate) struct ReplayRunArgs {
    /// The plan `gate replay plan` wrote.
    pub plan: PathBuf,
    /// A public key to trust for the plan; repeatable. Default: the state directory's.
    #[arg(long = "key", value_name = "PUB")]
    pub keys: Vec<PathBuf>,
    /// Human text or one JSON document.
    #[arg(long, value_enum, default_value_t = ShowFormat::Human)]
    pub format: ShowFormat,
}

/// What a replay runs: the runs, the candidate, the limits and the
/// minimum sample.
#[derive(Debug, Clone, Args)]
pub(crate) struct ReplayFlags {
    /// Which recorded runs.
    #[command(flatten)]
    pub selection: ReplaySelection,
    /// What reviews them again.
    #[command(flatten)]
    pub candidate: ReplayCandidate,
    /// What it may spend, how many runs at once.
    #[command(flatten)]
    pub limits: ReplayLimits,
    /// Runs a stratum needs before it is given a rate.
    #[arg(long, value_name = "N", default_value_t = 5)]
    pub min_sample: u64,
}

/// The recorded runs a replay selects.
#[derive(
    Debug,
    Clone,
    Default,
    PartialEq,
    Eq,
    Args,
    serde::Serialize,
    serde::Deserialize,
    schemars::JsonSchema,
)]
pub(crate) struct ReplaySelection {
    /// Only this spec id.
    #[arg(long, value_name = "ID")]
    pub spec: Option<String>,
    /// Only this series key (`pr:42`, `branch:main`…).
    #[arg(long, value_name = "KEY")]
    pub series: Option<String>,
    /// Only runs started on or after this date (YYYY-MM-DD or RFC 3339).
    #[arg(long, value_name = "DATE")]
    pub since: Option<String>,
    /// Only runs started before this date (YYYY-MM-DD or RFC 3339).
    #[arg(long, value_name = "DATE")]
    pub until: Option<String>,
    /// Only this tier (trivial, light, full).
    #[arg(long, value_name = "T")]
    pub tier: Option<String>,
    /// Only this verdict (pass, fail, escalate, incomplete).
    #[arg(long, value_name = "V")]
    pub verdict: Option<String>,
    /// Only runs with a recorded outcome (broken or fine).
    #[arg(long)]
    pub labelled: bool,
    /// At most N runs, drawn at random with the seed.
    #[arg(long, value_name = "N")]
    pub sample: Option<u32>,
    /// The seed `--sample` draws with (default: a fresh one, reported).
    #[arg(long, value_name = "SEED")]
    pub seed: Option<u64>,
}

/// What a replay may spend, and how many runs it reviews at once.
#[derive(
    Debug, Clone, Copy, PartialEq, Args, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
pub(crate) struct ReplayLimits {
    /// US dollars the candidate may spend: a run whose estimated cost would
    /// pass what is left is not started (listed as skipped).
    #[arg(long, value_name = "USD")]
    pub budget: Option<f64>,
    /// Runs reviewed at once (each provider's `concurrency` still holds
    /// across them).
    #[arg(long, value_name = "N", default_value_t = 4)]
    pub jobs: usize,
}

/// What a replay reviews with.
#[derive(
    Debug,
    Clone,
    Default,
    PartialEq,
    Eq,
    Args,
    serde::Serialize,
    serde::Deserialize,
    schemars::JsonSchema,
)]
pub(crate) struct ReplayCandidate {
    /// The candidate routing table.
    #[arg(long, value_name = "FILE")]
    pub routing: Option<PathBuf>,
    /// A folder of prompts (`security.md`, `quality.md`… by prompt key),
    /// each replacing that prompt.
    #[arg(long, value_name = "DIR")]
    pub prompts: Option<PathBuf>,
}

/// `gate report`.
#[derive(Debug, Args)]
pub(crate) struct ReportArgs {
    /// Also write a self-contained HTML page with charts to this file.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Human summary or one JSON object.
    #[arg(long, value_enum, default_value_t = ShowFormat::Human)]
    pub format: ShowFormat,
    /// Only runs started on or after this date (YYYY-MM-DD or RFC 3339).
    #[arg(long, value_name = "DATE")]
    pub since: Option<String>,
    /// Only this spec id.
    #[arg(long, value_name = "ID")]
    pub spec: Option<String>,
    /// Count only outcomes of at least this confidence (0 to 1): a
    /// person's is 1; a harvested one's is its source's (see docs/outcomes.md).
    #[arg(long, value_name = "C", default_value_t = 0.0, value_parser = confidence)]
    pub min_confidence: f64,
}

/// A confidence from 0 to 1.
fn confidence(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(c) if (0.0..=1.0).contains(&c) => Ok(c),
        _ => Err(format!("{text:?} is not a number from 0 to 1")),
    }
}

/// A confidence from 0 to 1 in hundredths (rounded up, so `0.9` counts 90).
pub(crate) fn hundredths(c: f64) -> u8 {
    (c * 100.0 - 1e-9).ceil().clamp(0.0, 100.0) as u8
}

/// `gate metrics`.
#[derive(Debug, Args)]
pub(crate) struct MetricsArgs {
    /// Write to this file atomically instead of stdout (for a textfile collector).
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Count only outcomes of at least this confidence (0 to 1).
    #[arg(long, value_name = "C", default_value_t = 0.0, value_parser = confidence)]
    pub min_confidence: f64,
}

/// `gate keys …`.
#[derive(Debug, Subcommand)]
pub(crate) enum KeysCommand {
    /// Write a new ed25519 key pair into the state directory's keys/.
    Generate,
    /// Print the key id and the raw public key in hex.
    Show,
}

/// `gate evidence …`.
#[derive(Debug, Subcommand)]
pub(crate) enum EvidenceCommand {
    /// Check a bundle's signature and shape (and, with --workspace, its subjects against the files now).
    Verify {
        /// A bundle file, or a run id (or unique prefix) from the ledger.
        target: String,
        /// A public key (SPKI PEM) to trust; repeatable. Default: the state directory's.
        #[arg(long = "key", value_name = "PUB")]
        keys: Vec<PathBuf>,
    },
    /// Print what the gate decided in a run, and why, in any output format
    /// (from its bundle: nothing runs again).
    Show {
        /// A bundle file, or a run id (or unique prefix) from the ledger.
        target: String,
        /// How to print it: as `gate verify --format` would have, or the
        /// bundle's decoded predicate.
        #[arg(long, value_enum, value_name = "FORMAT", default_value_t = EvidenceFormat::Human)]
        format: EvidenceFormat,
        /// A public key to verify the signature with; repeatable.
        #[arg(long = "key", value_name = "PUB")]
        keys: Vec<PathBuf>,
    },
    /// Copy a run's bundle to a file.
    Fetch {
        /// A run id (or unique prefix) from the ledger.
        run: String,
        /// Where to write it.
        #[arg(short, long, value_name = "FILE")]
        output: PathBuf,
    },
}

/// Output formats of `gate evidence show`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum EvidenceFormat {
    /// The readable summary, after the bundle's signature and plan.
    Human,
    /// The document `gate verify --format json` prints.
    Json,
    /// One Markdown comment for a pull or merge request.
    Markdown,
    /// SARIF 2.1.0, for code scanning.
    Sarif,
    /// JUnit XML: one test suite per stage.
    Junit,
    /// GitHub Actions workflow commands (annotations).
    Github,
    /// A GitLab Code Quality report.
    Gitlab,
    /// The bundle's decoded predicate, whole.
    Predicate,
}

impl EvidenceFormat {
    /// The same format of `gate verify`, where there is one.
    pub(crate) fn as_verify(self) -> Option<Format> {
        Some(match self {
            Self::Human => Format::Human,
            Self::Json => Format::Json,
            Self::Markdown => Format::Markdown,
            Self::Sarif => Format::Sarif,
            Self::Junit => Format::Junit,
            Self::Github => Format::Github,
            Self::Gitlab => Format::Gitlab,
            Self::Predicate => return None,
        })
    }
}

/// Output formats of the audit commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ShowFormat {
    /// Readable text.
    Human,
    /// One JSON document.
    Json,
}

/// `gate runs`.
#[derive(Debug, Args)]
pub(crate) struct RunsArgs {
    /// Only this spec id.
    #[arg(long, value_name = "ID")]
    pub spec: Option<String>,
    /// Only this series key (as `gate runs` shows it: `pr:42`, `branch:main`…).
    #[arg(long, value_name = "KEY")]
    pub series: Option<String>,
    /// Only this verdict (pass, fail, escalate, incomplete).
    #[arg(long, value_name = "V")]
    pub verdict: Option<String>,
    /// Only runs started on or after this date (YYYY-MM-DD or RFC 3339).
    #[arg(long, value_name = "DATE")]
    pub since: Option<String>,
    /// At most this many runs, newest first.
    #[arg(long, value_name = "N")]
    pub limit: Option<u32>,
    /// Human table or JSON.
    #[arg(long, value_enum, default_value_t = ShowFormat::Human)]
    pub format: ShowFormat,
}

/// `gate ledger …`.
#[derive(Debug, Subcommand)]
pub(crate) enum LedgerCommand {
    /// Check every row: signatures, chain links, sequence, columns against
    /// their signed bundles, signed outcomes, dismissals and overrides, and
    /// growth since a checkpoint.
    Verify {
        /// A checkpoint printed earlier by `gate ledger checkpoint`.
        #[arg(long, value_name = "CHECKPOINT")]
        since: Option<PathBuf>,
        /// A public key to trust; repeatable. Default: the state directory's.
        #[arg(long = "key", value_name = "PUB")]
        keys: Vec<PathBuf>,
        /// Human text or one JSON document.
        #[arg(long, value_enum, default_value_t = ShowFormat::Human)]
        format: ShowFormat,
    },
    /// Print a signed checkpoint of the ledger (C2SP signed note) to keep elsewhere.
    Checkpoint,
    /// Append bundles that have no ledger row yet (all of them in the state directory, or one file).
    Import {
        /// A bundle file.
        bundle: Option<PathBuf>,
    },
    /// Copy a ledger into an empty one, chain intact (e.g. a local SQLite
    /// ledger into a shared PostgreSQL one).
    Migrate {
        /// The ledger to copy: a path, sqlite://PATH or postgres://…
        #[arg(long, value_name = "URL")]
        from: String,
        /// The empty ledger to copy into: postgres://…, sqlite://PATH or a path.
        #[arg(long, value_name = "URL")]
        to: String,
    },
}

/// `gate routing …`.
#[derive(Debug, Subcommand)]
pub(crate) enum RoutingCommand {
    /// Print the table in effect and where each row came from.
    Show(RoutingShowArgs),
    /// Validate the table without calling any model (with --qualify, also
    /// test the house rules against every model the rules reviewer can use).
    Check(RoutingCheckArgs),
}

/// `gate routing check`.
#[derive(Debug, Args)]
pub(crate) struct RoutingCheckArgs {
    /// Which routing table.
    #[command(flatten)]
    pub routing: RoutingArgs,
    /// Run every rule test against each model the rules reviewer could be
    /// routed to (every tier, failbacks included) and flag those below the margin.
    #[arg(long)]
    pub qualify: bool,
}

/// Which routing table.
#[derive(Debug, Args)]
pub(crate) struct RoutingArgs {
    /// The table (default: routing.toml beside the spec, else the built-in one).
    #[arg(long, value_name = "FILE")]
    pub routing: Option<PathBuf>,
    /// The spec whose folder holds routing.toml (default: gate.toml in the workspace).
    #[arg(long, value_name = "FILE")]
    pub spec: Option<PathBuf>,
}

/// `gate routing show`.
#[derive(Debug, Args)]
pub(crate) struct RoutingShowArgs {
    /// Which routing table.
    #[command(flatten)]
    pub routing: RoutingArgs,
    /// Do not fetch the routing override (GATE_ROUTING_URL).
    #[arg(long)]
    pub offline: bool,
}

/// `gate verify`.
#[derive(Debug, Args)]
pub(crate) struct VerifyArgs {
    /// The spec (default: gate.toml in the workspace).
    #[arg(long, value_name = "FILE")]
    pub spec: Option<PathBuf>,
    /// Git revision the change is measured from (overrides the spec's `base`).
    #[arg(long, value_name = "REV")]
    pub base: Option<String>,
    /// Re-run everything, carrying nothing forward from earlier attempts.
    #[arg(long)]
    pub full: bool,
    /// Start a new attempt series and lift the spec's escalation on this
    /// base (an operator's step, once a human looked).
    #[arg(long)]
    pub new_series: bool,
    /// The series this run is an attempt of: the pull or merge request (or
    /// branch) the work is on (default: the CI's pull or merge request,
    /// else the branch).
    #[arg(long, value_name = "KEY")]
    pub series: Option<String>,
    /// Run nothing on the base for a quick local look: criteria that ask
    /// for a base result no earlier run left are unverified (recorded).
    #[arg(long)]
    pub no_base_runs: bool,
    /// Call no model provider: decide what code can decide (also `GATE_OFFLINE=1`).
    #[arg(long)]
    pub offline: bool,
    /// The model routing table (default: routing.toml beside the spec, else the built-in one).
    #[arg(long, value_name = "FILE")]
    pub routing: Option<PathBuf>,
    /// How to print the result on stdout (default: `GATE_FORMAT`, else human).
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub format: Option<Format>,
    /// Also write the result as FORMAT to PATH (repeatable; each file is written atomically).
    #[arg(long = "report", value_name = "FORMAT=PATH", value_parser = parse_report)]
    pub reports: Vec<ReportArg>,
    /// Print the effective configuration, and where each value came from, then exit.
    #[arg(long)]
    pub print_config: bool,
    /// The least isolation the run gets; the spec's `[sandbox] mode` can only
    /// make it stricter (default: `GATE_SANDBOX`, else auto).
    #[arg(long, value_enum, value_name = "MODE")]
    pub sandbox: Option<SandboxArg>,
}

/// `--sandbox`: the operator's floor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SandboxArg {
    /// Isolate where the machine allows; otherwise run unisolated and say so.
    Auto,
    /// Isolate, or refuse to run (exit 2).
    Required,
    /// Do not isolate (a spec can still ask for isolation).
    Off,
}

impl From<SandboxArg> for gate_specs::SandboxMode {
    fn from(arg: SandboxArg) -> Self {
        match arg {
            SandboxArg::Auto => Self::Auto,
            SandboxArg::Required => Self::Required,
            SandboxArg::Off => Self::Off,
        }
    }
}

/// Output formats of `gate verify`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, ValueEnum)]
pub(crate) enum Format {
    /// A short readable summary.
    Human,
    /// One JSON object and nothing else.
    Json,
    /// Events as they happen, one JSON object a line, ending with the verdict.
    Jsonl,
    /// SARIF 2.1.0, for code scanning (GitHub and others).
    Sarif,
    /// JUnit XML: one test suite per stage.
    Junit,
    /// GitHub Actions workflow commands (annotations), plus the job summary.
    Github,
    /// A GitLab Code Quality report.
    Gitlab,
    /// One Markdown comment for a pull or merge request.
    Markdown,
}

impl Format {
    /// The name used on the command line.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Human => "human",
            Self::Json => "json",
            Self::Jsonl => "jsonl",
            Self::Sarif => "sarif",
            Self::Junit => "junit",
            Self::Github => "github",
            Self::Gitlab => "gitlab",
            Self::Markdown => "markdown",
        }
    }
}

/// One `--report FORMAT=PATH`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ReportArg {
    /// The format.
    pub format: Format,
    /// Where to write it, as given.
    pub path: PathBuf,
}

/// Parses `FORMAT=PATH`.
fn parse_report(s: &str) -> Result<ReportArg, String> {
    let (format, path) = s
        .split_once('=')
        .ok_or_else(|| format!("expected FORMAT=PATH (e.g. sarif=gate.sarif), got `{s}`"))?;
    let format = Format::from_str(format, true).map_err(|_| {
        let names: Vec<&str> = Format::value_variants()
            .iter()
            .map(|f| f.as_str())
            .collect();
        format!("unknown format `{format}`; one of {}", names.join(", "))
    })?;
    if path.is_empty() {
        return Err(format!("no path after `{}=`", format.as_str()));
    }
    Ok(ReportArg {
        format,
        path: PathBuf::from(path),
    })
}
