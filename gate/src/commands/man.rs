//! `gate man [COMMAND…]`: a manual page in roff, generated from the
//! command-line definition (hidden commands stay hidden).

use clap::CommandFactory;

use crate::cli::Cli;
use crate::errors::GateError;
use crate::exit;
use crate::output;

/// The page of `gate`, or of the command `path` names (`["ledger",
/// "verify"]`), as roff.
pub(crate) fn page(path: &[String]) -> Result<String, GateError> {
    let mut command = Cli::command();
    command.build();
    let mut name = String::from("gate");
    for word in path {
        let next = command
            .get_subcommands()
            .find(|c| !c.is_hide_set() && c.get_name() == word)
            .cloned()
            .ok_or_else(|| {
                GateError::Usage(format!(
                    "`{name} {word}` is not a command; `{name} --help` lists them"
                ))
            })?;
        name = format!("{name}-{word}");
        command = next
            .display_name(name.clone())
            .version(env!("CARGO_PKG_VERSION"));
    }
    let mut out = Vec::new();
    clap_mangen::Man::new(command)
        .source(concat!("gate ", env!("CARGO_PKG_VERSION")))
        .render(&mut out)
        .map_err(GateError::stdout)?;
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// `gate man [COMMAND…]`: prints the page.
pub(crate) fn print(path: &[String]) -> Result<u8, GateError> {
    output::stdout(&page(path)?).map_err(GateError::stdout)?;
    Ok(exit::PASS)
}
