//! `gate completions SHELL`: the shell's completion script, generated from
//! the command-line definition (hidden commands stay hidden).

use clap::CommandFactory;

use crate::cli::{Cli, CompletionShell};
use crate::errors::GateError;
use crate::exit;
use crate::output;

/// The command line without its hidden commands (the completion
/// generator would offer them).
fn visible() -> clap::Command {
    let full = Cli::command();
    let mut visible = clap::Command::new("gate")
        .version(env!("CARGO_PKG_VERSION"))
        .about(full.get_about().cloned().unwrap_or_default())
        .subcommand_required(true)
        .args(full.get_arguments().cloned());
    for sub in full.get_subcommands().filter(|c| !c.is_hide_set()) {
        visible = visible.subcommand(sub.clone());
    }
    visible
}

/// The script for `shell`, as text.
pub(crate) fn script(shell: CompletionShell) -> String {
    let mut command = visible();
    let mut out = Vec::new();
    clap_complete::generate(
        clap_complete::Shell::from(shell),
        &mut command,
        "gate",
        &mut out,
    );
    String::from_utf8_lossy(&out).into_owned()
}

/// `gate completions SHELL`: prints the script.
pub(crate) fn print(shell: CompletionShell) -> Result<u8, GateError> {
    output::stdout(&script(shell)).map_err(GateError::stdout)?;
    Ok(exit::PASS)
}
