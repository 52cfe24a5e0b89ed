//! `gate outcome`: what happened after a run's decision, recorded by a
//! person or harvested from git.

use std::collections::HashMap;
use std::fmt::Write as _;

use gate_evidence::ledger::{self, HARVESTED_SOURCE_PREFIX, OutcomeEntry, RunFilter};
use serde_json::json;

use crate::attest;
use crate::cli::{BlameArgs, HarvestArgs, OutcomeArgs, ShowFormat};
use crate::config::Context;
use crate::errors::GateError;
use crate::exit;
use crate::harvest::label::Fate;
use crate::harvest::{self, Found, Harvest, Run};
use crate::output;
use crate::output::text::shown;

/// `gate outcome RUN (--broken|--fine) [--reason T] [--source T]`: appends
/// an outcome, signed by the gate's key (the report counts no outcome it
/// cannot vouch for); earlier ones stay as history and the latest counts.
pub(crate) fn record(ctx: &Context, args: &OutcomeArgs) -> Result<u8, GateError> {
    let source = args.source.clone().filter(|s| !s.trim().is_empty());
    if source.as_deref().is_some_and(|s| {
        s.trim()
            .to_ascii_lowercase()
            .starts_with(HARVESTED_SOURCE_PREFIX)
    }) {
        return Err(GateError::Usage(format!(
            "--source {}: sources beginning `{HARVESTED_SOURCE_PREFIX}` are reserved to \
             `gate outcome harvest`; name where the news came from otherwise",
            shown(source.as_deref().unwrap_or_default())
        )));
    }
    let Some(run) = args.run.as_deref() else {
        return Err(GateError::Usage("name the run the outcome is about".into()));
    };
    let mut ledger = attest::open_existing_ledger(ctx)?;
    let run = ledger.resolve(run)?.entry;
    let (key, _) = attest::signing_key(ctx)?;
    let unsigned = OutcomeEntry {
        run_id: run.run_id.clone(),
        broken: args.broken,
        reason: args.reason.clone().filter(|r| !r.trim().is_empty()),
        source,
        recorded_at: chrono::Utc::now(),
        evidence: None,
        envelope: None,
    };
    let outcome = ledger::seal(&unsigned, &key);
    ledger.add_outcome(&outcome)?;
    let history = ledger.outcomes(&run.run_id)?.len();
    let what = if args.broken { "broken" } else { "fine" };
    let because = outcome
        .reason
        .as_deref()
        .map(|r| format!(" ({r})"))
        .unwrap_or_default();
    let earlier = match history {
        0 | 1 => String::new(),
        n => format!(
            "; {} earlier outcomes kept as history, this one counts",
            n - 1
        ),
    };
    output::stdout(&format!(
        "recorded: run {} (spec {}, verdict {}) was {what}{because}{earlier}\n",
        shown(&run.run_id),
        shown(&run.spec_id),
        run.verdict
    ))
    .map_err(GateError::stdout)?;
    Ok(exit::PASS)
}

/// `gate outcome harvest`: labels the decided runs of this repository from
/// the branch's history, signs each label like a typed outcome, and records
/// those that are new or stronger than the run's harvested one.
pub(crate) async fn harvest(ctx: &Context, args: &HarvestArgs) -> Result<u8, GateError> {
    let fix_pattern = crate::config::configured_fix_pattern(&ctx.workspace.join("gate.toml"))
        .map_err(|e| GateError::Usage(format!("gate.toml: {e}")))?;
    let options = harvest::Options {
        branch: args.branch.clone(),
        window_days: args.window,
        min_commits: args.min_commits,
        since: args
            .since
            .as_deref()
            .map(|t| crate::config::parse_date("--since", t))
            .transpose()?,
        fix_pattern: harvest::signals::fix_pattern(fix_pattern.as_deref())
            .map_err(harvest::HarvestError::FixPattern)?,
        jobs: std::thread::available_parallelism().map_or(2, |n| n.get() * 2),
    };
    let mut ledger = attest::open_existing_ledger(ctx)?;
    let runs = decided_runs(ctx, &ledger)?;
    let git = workspace_git(ctx);
    let found = harvest::harvest(&git, &ctx.workspace, runs, &options).await?;
    if !args.dry_run {
        let (key, _) = attest::signing_key(ctx)?;
        let now = chrono::Utc::now();
        let outcomes: Vec<OutcomeEntry> = found
            .found
            .iter()
            .filter(|f| matches!(f.fate, Fate::New | Fate::Stronger(_)))
            .map(|f| {
                ledger::seal(
                    &OutcomeEntry {
                        run_id: f.run.id.clone(),
                        broken: f.label.source.broken(),
                        reason: Some(f.label.reason.clone()),
                        source: Some(f.label.source.as_str().to_owned()),
                        recorded_at: now,
                        evidence: Some(f.label.evidence.clone()),
                        envelope: None,
                    },
                    &key,
                )
            })
            .collect();
        ledger.add_outcomes(&outcomes)?;
        ledger.set_harvest_states(&states(&found), now)?;
    }
    let text = match args.format {
        ShowFormat::Json => {
            let doc = serde_json::to_string_pretty(&harvest_json(&found, args.dry_run))
                .map_err(GateError::encode("the harvest"))?;
            format!("{doc}\n")
        }
        ShowFormat::Human => harvest_text(&found, args.dry_run),
    };
    output::stdout(&text).map_err(GateError::stdout)?;
    Ok(exit::PASS)
}

/// The gate's hardened git over the workspace's repository.
fn workspace_git(ctx: &Context) -> crate::git::Git {
    crate::git::Git::new(
        gate_harness::Launcher::new(crate::git::environment(
            ctx.env.path().map(ToOwned::to_owned),
            None,
        )),
        crate::git::Repository::find(&ctx.workspace),
    )
}

/// `gate outcome blame FIX…`: what the SZZ step blames for each fix.
pub(crate) async fn blame(ctx: &Context, args: &BlameArgs) -> Result<u8, GateError> {
    let git = workspace_git(ctx);
    let jobs = std::thread::available_parallelism().map_or(2, |n| n.get() * 2);
    let found = harvest::blame_fixes(&git, &ctx.workspace, &args.fixes, jobs).await?;
    let text = match args.format {
        ShowFormat::Json => {
            let fixes: Vec<serde_json::Value> = found
                .iter()
                .map(|f| {
                    let commits: std::collections::BTreeSet<&str> =
                        f.blamed.iter().map(|b| b.commit.as_str()).collect();
                    json!({"commit": f.commit, "parent": f.parent, "commits": commits,
                           "blamed": f.blamed})
                })
                .collect();
            let doc = serde_json::to_string_pretty(&json!({"format_version": 1, "fixes": fixes}))
                .map_err(GateError::encode("the blame"))?;
            format!("{doc}\n")
        }
        ShowFormat::Human => {
            let mut out = String::new();
            for f in &found {
                let _ = writeln!(out, "fix {}: {} lines blamed", f.commit, f.blamed.len());
                for b in &f.blamed {
                    let _ = writeln!(out, "  {}:{} ← {}", shown(&b.file), b.line, b.commit);
                }
            }
            out
        }
    };
    output::stdout(&text).map_err(GateError::stdout)?;
    Ok(exit::PASS)
}

/// The ledger's decided runs (pass or fail) with the head they verified,
/// each with the outcomes the gate vouches for.
fn decided_runs(ctx: &Context, ledger: &gate_evidence::Ledger) -> Result<Vec<Run>, GateError> {
    let trusted = crate::commands::report::report_keys(ctx);
    let mut vouched: HashMap<String, Vec<OutcomeEntry>> = HashMap::new();
    for state in ledger.outcome_states()? {
        let good: Vec<OutcomeEntry> = state
            .outcomes
            .iter()
            .filter_map(|o| ledger::vouch(o, &trusted).ok())
            .collect();
        vouched.insert(state.run_id, good);
    }
    let rows = ledger.list(&RunFilter::default())?;
    let mut runs: Vec<Run> = rows
        .into_iter()
        .filter(|r| matches!(r.entry.verdict.as_str(), "pass" | "fail"))
        .filter_map(|r| {
            let verified = crate::row::RowExtra::read(&r.entry.extra).verified?;
            Some(Run {
                head: verified.commit?,
                roots: verified.root_commits,
                uncommitted: verified.uncommitted,
                outcomes: vouched.remove(&r.entry.run_id).unwrap_or_default(),
                id: r.entry.run_id,
                spec_id: r.entry.spec_id,
                series: r.entry.series,
                verdict: r.entry.verdict,
                started_at: r.entry.started_at,
            })
        })
        .collect();
    runs.sort_by_key(|r| r.started_at);
    Ok(runs)
}

/// What the harvest found of each run it looked at, as the ledger keeps it.
fn states(h: &Harvest) -> Vec<(String, String)> {
    let of = |ids: &[String], state: &str| -> Vec<(String, String)> {
        ids.iter()
            .map(|id| (id.clone(), state.to_owned()))
            .collect()
    };
    let mut out = of(&h.not_integrated, ledger::NOT_INTEGRATED);
    out.extend(of(&h.pending, "pending"));
    out.extend(
        h.found
            .iter()
            .map(|f| (f.run.id.clone(), "labelled".to_owned())),
    );
    out
}

fn fate_name(fate: Fate) -> &'static str {
    match fate {
        Fate::New => "recorded",
        Fate::Stronger(_) => "replaced",
        Fate::PersonKept => "kept_person",
        Fate::Already => "already",
    }
}

fn counts(h: &Harvest) -> (usize, usize, usize, usize) {
    let recorded = h
        .found
        .iter()
        .filter(|f| matches!(f.fate, Fate::New | Fate::Stronger(_)));
    let broken = recorded.clone().filter(|f| f.label.source.broken()).count();
    let total = recorded.count();
    let kept = h
        .found
        .iter()
        .filter(|f| f.fate == Fate::PersonKept)
        .count();
    let already = h.found.iter().filter(|f| f.fate == Fate::Already).count();
    (total, broken, kept, already)
}

fn harvest_text(h: &Harvest, dry_run: bool) -> String {
    let mut out = String::new();
    let verb = if dry_run { "would record" } else { "recorded" };
    for f in h
        .found
        .iter()
        .filter(|f| matches!(f.fate, Fate::New | Fate::Stronger(_)))
    {
        out.push_str(&label_line(f, verb));
    }
    for (run, note) in &h.notes {
        let _ = writeln!(out, "note: run {}: {}", shown(run), shown(note));
    }
    let (recorded, broken, kept, already) = counts(h);
    let _ = write!(
        out,
        "harvested {} at {}: {} runs of this repository looked at; {verb} {recorded} \
         ({broken} broken, {} fine); {kept} kept a person's outcome; {already} already labelled; \
         {} landed with no label yet; {} not integrated yet",
        shown(&h.branch),
        h.tip.get(..12).unwrap_or(&h.tip),
        h.runs,
        recorded - broken,
        h.pending.len(),
        h.not_integrated.len(),
    );
    if h.uncommitted > 0 {
        let _ = write!(
            out,
            "; {} runs that verified uncommitted files left alone",
            h.uncommitted
        );
    }
    if h.elsewhere > 0 {
        let _ = write!(
            out,
            "; {} runs of other repositories (or recorded without one) left alone",
            h.elsewhere
        );
    }
    out.push('\n');
    out
}

fn label_line(f: &Found, verb: &str) -> String {
    let what = if f.label.source.broken() {
        "broken"
    } else {
        "fine"
    };
    let evidence = f
        .label
        .evidence
        .commits
        .first()
        .map(|c| format!(" — {} \"{}\"", &c.commit[..12], shown(&c.summary)))
        .unwrap_or_default();
    let replaced = match f.fate {
        Fate::Stronger(had) => format!(" (over {})", had.as_str()),
        _ => String::new(),
    };
    format!(
        "{verb}: run {} (spec {}, verdict {}) was {what} [{}, confidence {:.2}]: {}{evidence}{replaced}\n",
        shown(&f.run.id),
        shown(&f.run.spec_id),
        shown(&f.run.verdict),
        f.label.source.as_str(),
        f64::from(f.label.evidence.confidence) / 100.0,
        shown(&f.label.reason),
    )
}

fn harvest_json(h: &Harvest, dry_run: bool) -> serde_json::Value {
    let (recorded, broken, kept, already) = counts(h);
    let labels: Vec<serde_json::Value> = h
        .found
        .iter()
        .map(|f| {
            json!({
                "run_id": f.run.id,
                "spec_id": f.run.spec_id,
                "verdict": f.run.verdict,
                "broken": f.label.source.broken(),
                "source": f.label.source.as_str(),
                "reason": f.label.reason,
                "confidence": f64::from(f.label.evidence.confidence) / 100.0,
                "fate": fate_name(f.fate),
                "replaced": match f.fate { Fate::Stronger(had) => Some(had.as_str()), _ => None },
                "evidence": f.label.evidence,
            })
        })
        .collect();
    json!({
        "format_version": 1,
        "branch": h.branch,
        "tip": h.tip,
        "dry_run": dry_run,
        "runs": h.runs,
        "elsewhere": h.elsewhere,
        "uncommitted": h.uncommitted,
        "recorded": recorded,
        "broken": broken,
        "fine": recorded - broken,
        "kept_person": kept,
        "already": already,
        "pending": h.pending.len(),
        "not_integrated": h.not_integrated,
        "labels": labels,
        "notes": h.notes.iter().map(|(run, note)| json!({"run_id": run, "note": note})).collect::<Vec<_>>(),
    })
}
