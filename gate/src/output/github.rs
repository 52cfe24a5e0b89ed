//! `--format github`: GitHub Actions workflow commands. Every problem is an
//! annotation (`::error file=…,line=…,title=…::message`) — failed items and
//! critical findings as errors, warnings as warnings, suggestions as
//! notices — within GitHub's per-step limits, with a last notice saying how
//! many were left out; then the readable summary inside a log group, with
//! workflow commands stopped so captured output cannot issue any.
//!
//! The Markdown job summary (`$GITHUB_STEP_SUMMARY`) is written by
//! [`append_summary`], kept under GitHub's 1 MiB per step.

use std::fmt::Write as _;
use std::io::{self, Write as _};
use std::path::Path;

use super::problems::{self, Level, Problem};
use super::site::Site;
use super::text;
use crate::errors::GateError;
use crate::record::RunRecord;

/// Error annotations GitHub shows per step.
pub(crate) const MAX_ERRORS: usize = 10;
/// Warning annotations GitHub shows per step.
pub(crate) const MAX_WARNINGS: usize = 10;
/// Notice annotations GitHub shows per step (the last one may be the
/// "more not shown" notice).
pub(crate) const MAX_NOTICES: usize = 10;
/// The most a step summary may hold.
pub(crate) const SUMMARY_LIMIT: u64 = 1024 * 1024;
/// Room kept below the limit (the cut note, other writers' newlines).
const SUMMARY_MARGIN: u64 = 4 * 1024;

/// Escapes workflow-command data (the message).
pub(crate) fn escape_data(s: &str) -> String {
    s.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// Escapes a workflow-command property value (file, title).
pub(crate) fn escape_property(s: &str) -> String {
    escape_data(s).replace(':', "%3A").replace(',', "%2C")
}

/// The command for one problem. Its text is [`text::shown`] first (the
/// file too: the runner's log shows it, and would obey an ESC in it), then
/// escaped as GitHub reads it.
pub(crate) fn annotation(p: &Problem) -> String {
    let command = match p.level {
        Level::Failed | Level::Critical => "error",
        Level::Warning => "warning",
        Level::Suggestion => "notice",
    };
    format!(
        "::{command} file={},line={},title={}::{}",
        escape_property(&text::shown(&p.file)),
        p.line.max(1),
        escape_property(&text::shown(&p.title)),
        escape_data(&text::shown_block(&p.message)),
    )
}

/// One `::error` command: `title`, an optional place (`file`, line,
/// column; the file relative to the repository root) and the message.
pub(crate) fn error_line(title: &str, at: Option<(&str, usize, usize)>, message: &str) -> String {
    let place = match at {
        Some((file, line, column)) if line > 0 => format!(
            "file={},line={line},col={},",
            escape_property(&text::shown(file)),
            column.max(1)
        ),
        Some((file, _, _)) => format!("file={},", escape_property(&text::shown(file))),
        None => String::new(),
    };
    format!(
        "::error {place}title={}::{}",
        escape_property(&text::shown(title)),
        escape_data(&text::shown_block(message))
    )
}

/// A usage or configuration error as annotations: one per spec problem, at
/// its place, else one for the error.
pub(crate) fn error_annotations(e: &GateError, workspace: &Path) -> Vec<String> {
    let relative = |p: &Path| -> String {
        let root = workspace
            .ancestors()
            .find(|d| d.join(".git").exists())
            .unwrap_or(workspace);
        p.strip_prefix(root)
            .unwrap_or(p)
            .to_string_lossy()
            .replace('\\', "/")
    };
    match e {
        GateError::Spec(errors) => errors
            .iter()
            .map(|s| {
                let file = relative(&s.file);
                error_line(
                    "gate: spec error",
                    Some((&file, s.line, s.column)),
                    &s.kind.to_string(),
                )
            })
            .collect(),
        other => vec![error_line(
            "gate: usage or configuration error",
            None,
            &other.to_string(),
        )],
    }
}

/// The annotations of a run, capped per kind; a final notice counts what
/// was left out.
pub(crate) fn annotations(problems: &[Problem]) -> Vec<String> {
    let count = |levels: &[Level]| {
        problems
            .iter()
            .filter(|p| levels.contains(&p.level))
            .count()
    };
    let errors = count(&[Level::Failed, Level::Critical]);
    let warnings = count(&[Level::Warning]);
    let notices = count(&[Level::Suggestion]);
    let over = errors > MAX_ERRORS || warnings > MAX_WARNINGS || notices > MAX_NOTICES;
    // The "not shown" notice takes one notice slot.
    let notice_cap = if over { MAX_NOTICES - 1 } else { MAX_NOTICES };
    let (mut e, mut w, mut n) = (0, 0, 0);
    let mut out = Vec::new();
    for p in problems {
        let (used, cap) = match p.level {
            Level::Failed | Level::Critical => (&mut e, MAX_ERRORS),
            Level::Warning => (&mut w, MAX_WARNINGS),
            Level::Suggestion => (&mut n, notice_cap),
        };
        if *used < cap {
            *used += 1;
            out.push(annotation(p));
        }
    }
    let left = problems.len() - (e + w + n);
    if left > 0 {
        out.push(format!(
            "::notice title={}::{}",
            escape_property("gate: more problems"),
            escape_data(&format!(
                "{left} more problem(s) not annotated (GitHub shows {MAX_ERRORS} errors, \
                 {MAX_WARNINGS} warnings and {MAX_NOTICES} notices per step): see the job summary, \
                 or the SARIF report in code scanning"
            ))
        ));
    }
    out
}

/// What `--format github` prints: annotations, then the readable summary
/// in a log group with workflow commands stopped.
pub(crate) fn render(record: &RunRecord, site: &Site) -> String {
    let problems = problems::collect(record, site);
    let mut out = String::new();
    for line in annotations(&problems) {
        out.push_str(&line);
        out.push('\n');
    }
    let token = stop_token();
    let _ = writeln!(
        out,
        "::group::{}",
        escape_data(&format!(
            "gate: {} ({}, attempt {})",
            text::shown(&crate::record::verdict_line(record)),
            text::shown(&record.spec_id),
            record.attempt
        ))
    );
    // Captured output may hold lines that look like workflow commands.
    let _ = writeln!(out, "::stop-commands::{token}");
    out.push_str(&super::human::render(record));
    let _ = writeln!(out, "::{token}::");
    out.push_str("::endgroup::\n");
    out
}

/// A token nobody can guess, so captured output cannot resume commands.
fn stop_token() -> String {
    let mut bytes = [0u8; 16];
    if getrandom::fill(&mut bytes).is_err() {
        // Without randomness, a fixed token is still better than none.
        return "gate-stop-commands".to_owned();
    }
    format!("gate-{}", hex::encode(bytes))
}

/// Appends `markdown` to the step summary at `path`, cut so the file stays
/// under GitHub's 1 MiB; returns how many bytes were written.
pub(crate) fn append_summary(path: &Path, markdown: &str) -> io::Result<usize> {
    let existing = std::fs::metadata(path).map_or(0, |m| m.len());
    let budget = SUMMARY_LIMIT.saturating_sub(existing + SUMMARY_MARGIN);
    let budget = usize::try_from(budget).unwrap_or(usize::MAX);
    let mut body = String::new();
    if existing > 0 {
        body.push('\n');
    }
    if markdown.len() < budget {
        body.push_str(markdown);
    } else {
        const CUT: &str = "\n\n… cut to keep the job summary under GitHub's 1 MiB limit; \
                           the full result is in the JSON or SARIF report.\n";
        let keep = budget.saturating_sub(CUT.len() + 1);
        if keep == 0 {
            return Ok(0);
        }
        body.push_str(text::truncate_bytes(markdown, keep));
        body.push_str(CUT);
    }
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    file.write_all(body.as_bytes())?;
    file.flush()?;
    Ok(body.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::fixture;

    /// Undoes GitHub's escaping, as the runner does.
    fn unescape(s: &str, property: bool) -> String {
        let mut out = s.replace("%0D", "\r").replace("%0A", "\n");
        if property {
            out = out.replace("%3A", ":").replace("%2C", ",");
        }
        out.replace("%25", "%")
    }

    /// Splits `::cmd k=v,k=v::data` as the runner does: properties end at
    /// the first `::`, split on `,`, then on the first `=`.
    fn parse(line: &str) -> (String, Vec<(String, String)>, String) {
        let rest = line.strip_prefix("::").unwrap();
        let (head, data) = rest.split_once("::").unwrap();
        let (cmd, props) = head.split_once(' ').unwrap_or((head, ""));
        let props = props
            .split(',')
            .filter(|p| !p.is_empty())
            .map(|p| {
                let (k, v) = p.split_once('=').unwrap();
                (k.to_owned(), unescape(v, true))
            })
            .collect();
        (cmd.to_owned(), props, unescape(data, false))
    }

    /// A spec that does not load is one error annotation per problem, at
    /// its place; any other usage error is one annotation.
    #[test]
    fn usage_and_spec_errors_are_annotations() {
        let dir = tempfile::tempdir().unwrap();
        let spec = dir.path().join("gate.toml");
        let errors = gate_specs::parse_str(
            "[spec]\nid = \"s\"\nsumary = \"x\"\n[[check]]\nid = \"a\"\nrun = \"b\"\nafer = []\n",
            &spec,
            gate_specs::Format::Toml,
        )
        .unwrap_err();
        let lines = error_annotations(&GateError::Spec(errors), dir.path());
        assert_eq!(lines.len(), 2, "{lines:?}");
        let (command, props, data) = parse(&lines[0]);
        assert_eq!(command, "error");
        let prop = |k: &str| {
            props
                .iter()
                .find(|(key, _)| key == k)
                .map(|(_, v)| unescape(v, true))
        };
        assert_eq!(prop("file").as_deref(), Some("gate.toml"));
        assert_eq!(prop("line").as_deref(), Some("3"));
        assert_eq!(prop("col").as_deref(), Some("1"));
        assert!(
            unescape(&data, false).contains("did you mean `summary`"),
            "{data}"
        );
        let lines = error_annotations(
            &GateError::Usage("CI is set and no signing key is configured".into()),
            dir.path(),
        );
        assert_eq!(
            lines,
            [
                "::error title=gate%3A usage or configuration error::CI is set and no signing key is configured"
            ]
        );
    }

    #[test]
    fn hostile_names_and_messages_survive_the_round_trip() {
        let cases = [
            (
                "src/a, b.rs",
                "title: with, commas",
                "50% done\nline two\r\n::error::injected",
            ),
            ("dir:odd/x%41.rs", "100%25 literal", "%0A is not a newline"),
            ("plain.rs", "t", "m"),
            // Control characters are shown escaped, then escaped for GitHub.
            (
                "a\nverdict: PASS\x1b[8m.rs",
                "t\rPASS\u{9b}",
                "tail\x1b[2K\rPASS\nnext",
            ),
        ];
        for (file, title, message) in cases {
            let p = Problem {
                rule: "check".into(),
                level: Level::Failed,
                title: title.into(),
                message: message.into(),
                file: file.into(),
                line: 7,
                key: "k".into(),
            };
            let line = annotation(&p);
            assert!(!line.contains('\n') && !line.contains('\r'), "{line:?}");
            let (cmd, props, data) = parse(&line);
            assert_eq!(cmd, "error");
            assert_eq!(
                props,
                vec![
                    ("file".to_owned(), text::shown(file).into_owned()),
                    ("line".to_owned(), "7".to_owned()),
                    ("title".to_owned(), text::shown(title).into_owned()),
                ]
            );
            assert_eq!(data, text::shown_block(message));
            assert!(!line.contains(['\x1b', '\u{9b}']), "{line:?}");
        }
        assert_eq!(escape_data("a%b\r\nc"), "a%25b%0D%0Ac");
        assert_eq!(escape_property("a:b,c%\n"), "a%3Ab%2Cc%25%0A");
    }

    fn problems(errors: usize, warnings: usize, notices: usize) -> Vec<Problem> {
        let mk = |level, i| Problem {
            rule: "check".into(),
            level,
            title: format!("p{i}"),
            message: "m".into(),
            file: "f".into(),
            line: 1,
            key: format!("{i}"),
        };
        (0..errors)
            .map(|i| mk(Level::Failed, i))
            .chain((0..warnings).map(|i| mk(Level::Warning, i)))
            .chain((0..notices).map(|i| mk(Level::Suggestion, i)))
            .collect()
    }

    #[test]
    fn annotations_are_capped_per_kind_with_a_final_notice() {
        // (errors, warnings, notices) → (shown errors, warnings, notices incl. the final one, left out)
        for ((e, w, n), (se, sw, sn, left)) in [
            ((3, 2, 1), (3, 2, 1, 0)),
            ((10, 10, 10), (10, 10, 10, 0)),
            ((25, 0, 0), (10, 0, 1, 15)),
            ((0, 11, 0), (0, 10, 1, 1)),
            ((0, 0, 10), (0, 0, 10, 0)),
            ((0, 0, 11), (0, 0, 10, 2)),
            ((12, 12, 12), (10, 10, 10, 7)),
        ] {
            let lines = annotations(&problems(e, w, n));
            let count = |p: &str| lines.iter().filter(|l| l.starts_with(p)).count();
            assert_eq!(
                (count("::error "), count("::warning "), count("::notice ")),
                (se, sw, sn),
                "{e}/{w}/{n}"
            );
            let last = lines.last().unwrap();
            if left > 0 {
                assert!(
                    last.starts_with("::notice title=gate%3A more problems::")
                        && last.contains(&format!("{left} more problem(s)")),
                    "{last}"
                );
            } else {
                assert!(!last.contains("more problem"));
            }
        }
    }

    #[test]
    fn captured_output_cannot_issue_commands() {
        let mut record = fixture::record();
        record.checks[0].output.tail = "::add-mask::x\n::error::forged\n".into();
        let out = render(&record, &fixture::site());
        let stop = out
            .lines()
            .position(|l| l.starts_with("::stop-commands::"))
            .unwrap();
        let token = out.lines().nth(stop).unwrap()["::stop-commands::".len()..].to_owned();
        assert!(token.len() > 20);
        let resume = out
            .lines()
            .position(|l| l == format!("::{token}::"))
            .unwrap();
        // The captured line itself (annotations quote it escaped, on their own line).
        let forged = out
            .lines()
            .position(|l| l.ends_with("│ ::error::forged"))
            .unwrap();
        assert!(stop < forged && forged < resume);
        assert_eq!(out.lines().last(), Some("::endgroup::"));
    }

    #[test]
    fn the_summary_is_appended_and_kept_under_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("summary.md");
        // Another step wrote first: it stays, ours follows.
        std::fs::write(&path, "# earlier\n").unwrap();
        append_summary(&path, "## gate\nok\n").unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "# earlier\n\n## gate\nok\n"
        );

        // A summary larger than the limit is cut, on a character boundary.
        let huge = "é".repeat(700_000);
        append_summary(&path, &huge).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.len() as u64 <= SUMMARY_LIMIT, "{}", text.len());
        assert!(text.starts_with("# earlier\n\n## gate\nok\n"));
        assert!(text.ends_with("the full result is in the JSON or SARIF report.\n"));

        // A full file takes nothing more.
        assert_eq!(append_summary(&path, &huge).unwrap(), 0);
        assert!(std::fs::metadata(&path).unwrap().len() <= SUMMARY_LIMIT);
    }
}
