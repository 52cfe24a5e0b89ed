//! The command line, as clap parses it (raw); [`crate::config`] resolves it.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

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
