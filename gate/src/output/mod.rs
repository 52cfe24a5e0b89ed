//! Everything the gate prints goes through here: results to stdout,
//! progress to stderr, reports to their files.
//!
//! Renderers are views of a [`crate::record::RunRecord`]; none recomputes a
//! verdict or a status. While a run goes, [`stream`] is the one dispatcher
//! that renders its events ([`progress`] on stderr, [`jsonl`] on stdout);
//! when it is decided, [`deliver`] writes the result in every format asked.
//!
//! # Layout
//! - [`human`], [`json`], [`jsonl`], [`sarif`], [`junit`], [`github`],
//!   [`gitlab`], [`markdown`]: one module per format.
//! - [`problems`]: failed items and findings at their places, which SARIF,
//!   GitHub and GitLab show; [`site`] knows those places.
//! - [`style`]: colour; [`text`]: escaping for XML, Markdown, terminals.
//! - [`settings`]: `gate verify --print-config`.
//! - [`bar`]: the progress bar of long audits.
#![allow(clippy::print_stdout, clippy::print_stderr)]

pub(crate) mod bar;
pub(crate) mod fates;
pub(crate) mod github;
pub(crate) mod gitlab;
pub(crate) mod heartbeat;
pub(crate) mod human;
pub(crate) mod json;
pub(crate) mod jsonl;
pub(crate) mod junit;
pub(crate) mod lines;
pub(crate) mod markdown;
pub(crate) mod notes;
pub(crate) mod problems;
pub(crate) mod progress;
pub(crate) mod sarif;
pub(crate) mod settings;
pub(crate) mod site;
pub(crate) mod stream;
pub(crate) mod style;
pub(crate) mod text;

#[cfg(test)]
pub(crate) mod fixture;

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::cli::Format;
use crate::config::{Context, VerifySettings};
use crate::errors::GateError;
use crate::events::{EventSink, RunEvent};
use crate::record::RunRecord;

use self::site::Site;
use self::style::Style;

/// Writes a result to stdout. A closed pipe (`gate verify | head`) is not an
/// error worth a message.
pub(crate) fn stdout(text: &str) -> io::Result<()> {
    let mut out = io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}

/// Writes an error or a notice to stderr.
pub(crate) fn stderr(text: &str) {
    let mut err = io::stderr().lock();
    // Nothing sensible is left to do when stderr itself is gone.
    let _ = writeln!(err, "{text}");
}

/// `record` in `format` (every format but `jsonl`, which is a stream).
pub(crate) fn render(format: Format, record: &RunRecord, site: &Site, style: Style) -> String {
    let mut text = match format {
        Format::Human => human::render_styled(record, style),
        Format::Json => pretty(&json::Document::of(record)),
        Format::Jsonl => {
            // The stream's last line, on its own.
            let mut line = jsonl::event_json(
                &RunEvent::Verdict(Box::new(record.clone())),
                &jsonl::Planned::new(),
            )
            .map(|v| v.to_string())
            .unwrap_or_default();
            line.push('\n');
            line
        }
        Format::Sarif => pretty(&sarif::render(record, site)),
        Format::Junit => junit::render(record),
        Format::Github => github::render(record, site),
        Format::Gitlab => pretty(&gitlab::render(record, site)),
        Format::Markdown => markdown::render(record),
    };
    if !text.ends_with('\n') {
        text.push('\n');
    }
    text
}

/// A command's `--format json` document: pretty JSON and a final newline.
pub(crate) fn json_document<T: serde::Serialize>(value: &T) -> String {
    let mut text = pretty(value);
    text.push('\n');
    text
}

/// Pretty JSON. Every value written is strings, numbers, bools, lists and
/// maps with string keys, which cannot fail to serialise; were it to, the
/// output is still JSON, and says so.
fn pretty<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|e| {
        serde_json::json!({"error": format!("the output could not be written: {e}")}).to_string()
    })
}

/// A run being rendered as it goes: the sink its stages emit into, the
/// dispatcher, and the buffer a `--report jsonl=PATH` collects.
pub(crate) struct Live {
    sink: EventSink,
    dispatcher: stream::Dispatcher,
    jsonl: Option<Arc<Mutex<Vec<u8>>>>,
}

impl Live {
    /// Starts rendering: progress on stderr, and the JSON Lines stream on
    /// stdout (`--format jsonl`) or into a buffer (`--report jsonl=…`).
    pub(crate) fn start(ctx: &Context, settings: &VerifySettings) -> Self {
        let mut observers: Vec<Box<dyn stream::Observer>> =
            vec![Box::new(progress::Progress::stderr(
                ctx,
                Style {
                    color: ctx.colors.stderr,
                },
            ))];
        if settings.format == Format::Jsonl {
            observers.push(Box::new(jsonl::JsonlWriter::stdout()));
        }
        let jsonl = settings
            .reports
            .iter()
            .any(|(f, _)| *f == Format::Jsonl)
            .then(|| Arc::new(Mutex::new(Vec::new())));
        if let Some(buf) = &jsonl {
            observers.push(Box::new(jsonl::JsonlWriter::buffer(Arc::clone(buf))));
        }
        let (sink, dispatcher) =
            stream::start(observers, ctx.env.heartbeat().unwrap_or(stream::HEARTBEAT));
        Self {
            sink,
            dispatcher,
            jsonl,
        }
    }

    /// Where the run's stages emit.
    pub(crate) fn sink(&self) -> &EventSink {
        &self.sink
    }

    /// Emits the run's last event (its verdict, or the error that stopped
    /// it) and waits until everything was rendered; returns the JSON Lines
    /// a `--report jsonl` collected.
    pub(crate) async fn finish(self, result: &Result<RunRecord, GateError>) -> Option<Vec<u8>> {
        self.sink.emit(match result {
            Ok(record) => RunEvent::Verdict(Box::new(record.clone())),
            Err(e) => RunEvent::Failed {
                message: e.to_string(),
                exit_code: e.exit_code(),
            },
        });
        self.dispatcher.finish(self.sink).await;
        self.jsonl
            .map(|buf| buf.lock().map(|b| b.clone()).unwrap_or_default())
    }
}

/// The files this run writes its results to: stdout when the shell
/// redirected it to a file, and every `--report` path. A run leaves them out
/// of the workspace it verifies: `gate verify --format json > result.json`
/// in the workspace is the shell's empty file while the gate runs, not part
/// of the change, and a report kept from the previous run is not either.
pub(crate) fn own_files(settings: &VerifySettings) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = settings.reports.iter().map(|(_, p)| p.clone()).collect();
    files.extend(stdout_file());
    files
}

/// The file stdout was opened on, when it is a regular file (Linux names it
/// in `/proc`; elsewhere the redirect is not recognised).
fn stdout_file() -> Option<PathBuf> {
    let fd = Path::new("/proc/self/fd/1");
    std::fs::metadata(fd)
        .ok()
        .filter(std::fs::Metadata::is_file)?;
    std::fs::read_link(fd).ok()
}

/// Writes a decided run in every format asked: each `--report` to its file
/// (atomically), the GitHub job summary when asked for GitHub output inside
/// Actions, and `--format` to stdout (unless it was the stream).
pub(crate) fn deliver(
    ctx: &Context,
    settings: &VerifySettings,
    record: &RunRecord,
    jsonl: Option<&[u8]>,
) -> Result<(), GateError> {
    let site = Site::locate(&ctx.workspace, &settings.spec_path);
    let mut first_error = None;
    for (format, path) in &settings.reports {
        let bytes = match (format, &jsonl) {
            (Format::Jsonl, Some(lines)) => lines.to_vec(),
            _ => render(*format, record, &site, Style::PLAIN).into_bytes(),
        };
        if let Err(e) = write_report(&ctx.workspace, path, &bytes) {
            stderr(&report_not_written(
                &ctx.workspace,
                format.as_str(),
                path,
                &e,
            ));
            first_error.get_or_insert(GateError::Write {
                path: path.clone(),
                source: e,
            });
        }
    }
    let github = settings.format == Format::Github
        || settings.reports.iter().any(|(f, _)| *f == Format::Github);
    if github
        && let Some(summary) = ctx.env.github_step_summary()
        && let Err(e) = github::append_summary(&summary, &markdown::render(record))
    {
        stderr(&format!(
            "gate: cannot append the job summary to {}: {e}",
            summary.display()
        ));
    }
    if settings.format != Format::Jsonl {
        let style = Style {
            color: ctx.colors.stdout,
        };
        stdout(&render(settings.format, record, &site, style)).map_err(GateError::stdout)?;
    }
    first_error.map_or(Ok(()), Err)
}

/// Writes a report to `path` atomically, creating missing folders and
/// following no symbolic link below the workspace (every component of a
/// path outside it): the run's checks have run by now, and may have made
/// the report's folder a link to a host folder.
pub(crate) fn write_report(workspace: &Path, path: &Path, bytes: &[u8]) -> io::Result<()> {
    gate_evidence::place::replace_file(workspace, path, bytes)
}

/// What stderr says of a report `write_report` could not write: the link
/// it refused (relative to the workspace when inside it), or why.
pub(crate) fn report_not_written(
    workspace: &Path,
    format: &str,
    path: &Path,
    e: &io::Error,
) -> String {
    let shown_path = |p: &Path| {
        let p = p.strip_prefix(workspace).unwrap_or(p);
        text::shown(&p.display().to_string()).into_owned()
    };
    match gate_evidence::place::refused_link(e) {
        Some(link) => format!(
            "gate: not writing the {format} report {}: {} is a symbolic link",
            shown_path(path),
            shown_path(link)
        ),
        None => format!(
            "gate: cannot write the {format} report {}: {}",
            shown_path(path),
            text::shown(&e.to_string())
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_replace_the_file_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nested/dir/gate.sarif");
        write_report(dir.path(), &path, b"first").unwrap();
        write_report(dir.path(), &path, b"second").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"second");
        let names: Vec<_> = std::fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["gate.sarif"], "no temporary file is left behind");
    }

    #[test]
    fn every_format_renders_without_colour_unless_asked() {
        let record = fixture::record();
        let site = fixture::site();
        for format in <Format as clap::ValueEnum>::value_variants() {
            let text = render(*format, &record, &site, Style::PLAIN);
            assert!(!text.contains("\x1b["), "{format:?}");
            assert!(text.ends_with('\n'));
        }
        let colored = render(Format::Human, &record, &site, Style { color: true });
        assert!(colored.contains("\x1b[1;31mFAIL\x1b[0m"), "{colored}");
    }
}
