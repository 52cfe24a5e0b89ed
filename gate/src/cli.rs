//! The command line, as clap parses it (raw); [`crate::config`] resolves it.

use std::path::PathBuf;

use clap::{ArgGroup, Args, Parser, Subcommand, ValueEnum};

/// The integration-verify gate for autonomous build pipelines.
#[derive(Debug, Parser)]
#[command(name = "gate", version, about, long_about = None, max_term_width = 100)]
pub struct Cli {
    /// Options every command takes.
    #[command(flatten)]
    pub global: GlobalArgs,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Options every command takes.
#[derive(Debug, Args)]
pub struct GlobalArgs {
    /// The workspace (default: the current directory).
    #[arg(long, global = true, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// The state directory (default: `.gate/` inside the workspace).
    #[arg(long, global = true, value_name = "DIR", env = "GATE_STATE_DIR")]
    pub state: Option<PathBuf>,
    /// More progress on stderr (repeat for debug logs).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// No progress on stderr, only results and errors.
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    pub quiet: bool,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
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
    /// Record what happened after a run's decision: it later broke, or it was fine.
    Outcome(OutcomeArgs),
    /// The false-pass scorecard: how often an approved run later broke, cost, breakdowns.
    Report(ReportArgs),
    /// The scorecard as Prometheus text, for a textfile collector or a scrape.
    Metrics(MetricsArgs),
}

/// `gate outcome`.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("what").required(true).args(["broken", "fine"])))]
pub struct OutcomeArgs {
    /// A run id (or unique prefix) from the ledger.
    pub run: String,
    /// What the run decided on later broke (a CI failure, a revert, an incident).
    #[arg(long)]
    pub broken: bool,
    /// What the run decided on turned out fine.
    #[arg(long)]
    pub fine: bool,
    /// Why: what broke, or how it was checked.
    #[arg(long, value_name = "T")]
    pub reason: Option<String>,
    /// Where the news came from (a CI job, an incident id, a person).
    #[arg(long, value_name = "T")]
    pub source: Option<String>,
}

/// `gate report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
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
}

/// `gate metrics`.
#[derive(Debug, Args)]
pub struct MetricsArgs {
    /// Write to this file atomically instead of stdout (for a textfile collector).
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// `gate keys …`.
#[derive(Debug, Subcommand)]
pub enum KeysCommand {
    /// Write a new ed25519 key pair into the state directory's keys/.
    Generate,
    /// Print the key id and the raw public key in hex.
    Show,
}

/// `gate evidence …`.
#[derive(Debug, Subcommand)]
pub enum EvidenceCommand {
    /// Check a bundle's signature and shape (and, with --workspace, its subjects against the files now).
    Verify {
        /// A bundle file, or a run id (or unique prefix) from the ledger.
        target: String,
        /// A public key (SPKI PEM) to trust; repeatable. Default: the state directory's.
        #[arg(long = "key", value_name = "PUB")]
        keys: Vec<PathBuf>,
    },
    /// Print what the gate decided in a run, and why.
    Show {
        /// A bundle file, or a run id (or unique prefix) from the ledger.
        target: String,
        /// Human summary or the decoded predicate as JSON.
        #[arg(long, value_enum, default_value_t = ShowFormat::Human)]
        format: ShowFormat,
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

/// Output formats of the audit commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ShowFormat {
    /// Readable text.
    Human,
    /// One JSON document.
    Json,
}

/// `gate runs`.
#[derive(Debug, Args)]
pub struct RunsArgs {
    /// Only this spec id.
    #[arg(long, value_name = "ID")]
    pub spec: Option<String>,
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
pub enum LedgerCommand {
    /// Check every row: signatures, chain links, sequence, and growth since a checkpoint.
    Verify {
        /// A checkpoint printed earlier by `gate ledger checkpoint`.
        #[arg(long, value_name = "CHECKPOINT")]
        since: Option<PathBuf>,
        /// A public key to trust; repeatable. Default: the state directory's.
        #[arg(long = "key", value_name = "PUB")]
        keys: Vec<PathBuf>,
    },
    /// Print a signed checkpoint of the ledger (C2SP signed note) to keep elsewhere.
    Checkpoint,
    /// Append bundles that have no ledger row yet (all of them in the state directory, or one file).
    Import {
        /// A bundle file.
        bundle: Option<PathBuf>,
    },
}

/// `gate routing …`.
#[derive(Debug, Subcommand)]
pub enum RoutingCommand {
    /// Print the table in effect and where each row came from.
    Show(RoutingArgs),
    /// Validate the table without calling any model.
    Check(RoutingArgs),
}

/// Which routing table.
#[derive(Debug, Args)]
pub struct RoutingArgs {
    /// The table (default: routing.toml beside the spec, else the built-in one).
    #[arg(long, value_name = "FILE")]
    pub routing: Option<PathBuf>,
    /// The spec whose folder holds routing.toml (default: gate.toml in the workspace).
    #[arg(long, value_name = "FILE")]
    pub spec: Option<PathBuf>,
}

/// `gate verify`.
#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// The spec (default: gate.toml in the workspace).
    #[arg(long, value_name = "FILE")]
    pub spec: Option<PathBuf>,
    /// Git revision the change is measured from (overrides the spec's `base`).
    #[arg(long, value_name = "REV")]
    pub base: Option<String>,
    /// Re-run everything, carrying nothing forward from earlier attempts.
    #[arg(long)]
    pub full: bool,
    /// Call no model provider: decide what code can decide.
    #[arg(long)]
    pub offline: bool,
    /// The model routing table (default: routing.toml beside the spec, else the built-in one).
    #[arg(long, value_name = "FILE")]
    pub routing: Option<PathBuf>,
    /// How to print the result on stdout.
    #[arg(long, value_enum, default_value_t = Format::Human)]
    pub format: Format,
}

/// Output formats of `gate verify`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// A short readable summary.
    Human,
    /// One JSON object and nothing else.
    Json,
}
