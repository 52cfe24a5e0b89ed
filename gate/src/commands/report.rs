//! `gate report`: the false-pass scorecard, as text, JSON or a page.

use gate_evidence::ledger::ReportScope;

use crate::attest;
use crate::cli::{ReportArgs, ShowFormat};
use crate::commands::runs::parse_since;
use crate::config::{self, Context, Verbosity};
use crate::errors::GateError;
use crate::eval::{Scorecard, html, json, text};
use crate::exit;
use crate::output;

/// Writes a file whole or not at all, creating its folder when missing.
pub(crate) fn write_atomically(path: &std::path::Path, bytes: &[u8]) -> Result<(), GateError> {
    let err = |source| GateError::Write {
        path: path.to_path_buf(),
        source,
    };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(err)?;
    }
    gate_evidence::replace_file(path, bytes).map_err(err)
}

/// `gate report [--html F] [--format human|json] [--since DATE] [--spec ID]`.
pub fn report(ctx: &Context, args: &ReportArgs) -> Result<u8, GateError> {
    let scope = ReportScope {
        spec_id: args.spec.clone(),
        since: args.since.as_deref().map(parse_since).transpose()?,
    };
    let ledger = attest::open_ledger(ctx)?;
    let started = std::time::Instant::now();
    let card = Scorecard::build(&ledger, &scope)?;
    tracing::info!(
        runs = card.total.runs,
        elapsed_ms = started.elapsed().as_millis(),
        "scorecard built"
    );
    if let Some(path) = &args.html {
        let path = config::from_cwd(path);
        let page = html::render(&card, chrono::Utc::now());
        write_atomically(&path, page.as_bytes())?;
        if ctx.verbosity > Verbosity::Quiet {
            output::stderr(&format!("wrote {}", path.display()));
        }
    }
    let doc = match args.format {
        ShowFormat::Human => text::render(&card),
        ShowFormat::Json => {
            let mut s = serde_json::to_string_pretty(&json::render(&card)).unwrap_or_default();
            s.push('\n');
            s
        }
    };
    output::stdout(&doc).map_err(GateError::stdout)?;
    Ok(exit::PASS)
}
