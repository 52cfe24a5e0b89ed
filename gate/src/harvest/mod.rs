//! `gate outcome harvest`: outcomes read from what happened in git after a
//! decision, so the false-pass rate needs nobody to label runs.
//!
//! The stages, in order: find the branch and refuse a shallow clone; read
//! the branch's history in one pass ([`gate_history::commits`]) and the
//! patches of the commits that may matter in another
//! ([`gate_history::patch`]); read the runs' own commits in a third; find
//! where each run landed ([`landing`]); read what later commits say about
//! landed ones ([`signals`]), blame the fixes' removed lines
//! ([`gate_history::szz`]); pick each run's strongest label and record it
//! unless a person's outcome or an as strong label stands ([`label`]).

pub(crate) mod error;
pub(crate) mod input;
pub(crate) mod label;
pub(crate) mod landing;
pub(crate) mod signals;

mod collect;

use std::collections::{BTreeSet, HashMap};
use std::path::Path;

use chrono::{DateTime, Utc};
use gate_evidence::ledger::{OutcomeEvidence, Survival};

pub(crate) use self::error::HarvestError;
pub(crate) use self::input::{Options, Run};
use self::label::{Fate, Label, Source};
use self::landing::{Changes, Index, Landing};
use crate::git::Git;
use gate_history::commits::{self, History};
use gate_history::{patch, szz};

/// One label found.
#[derive(Debug, Clone)]
pub(crate) struct Found {
    /// The run.
    pub run: Run,
    /// The label.
    pub label: Label,
    /// What becomes of it.
    pub fate: Fate,
}

/// What a harvest found.
#[derive(Debug, Default)]
pub(crate) struct Harvest {
    /// The branch, as given or found.
    pub branch: String,
    /// Its tip.
    pub tip: String,
    /// Runs looked at (of this repository, decided, with a head).
    pub runs: usize,
    /// Runs (in `--since`) of other repositories, or that recorded none,
    /// left alone.
    pub elsewhere: usize,
    /// Runs of this repository that verified files differing from their
    /// head commit, left alone: where what they decided on landed cannot
    /// be told from the commit.
    pub uncommitted: usize,
    /// Labels, each with its fate.
    pub found: Vec<Found>,
    /// Runs whose change has not landed (looked at again next time).
    pub not_integrated: Vec<String>,
    /// Landed runs with no label yet (inside their window).
    pub pending: Vec<String>,
    /// (run, note): what a later commit's message claimed of a landed run
    /// that its diff did not bear out; recorded nowhere, labels nothing.
    pub notes: Vec<(String, String)>,
}

/// Harvests the labels of `runs` from the repository at `dir`.
pub(crate) async fn harvest(
    git: &Git,
    dir: &Path,
    runs: Vec<Run>,
    options: &Options,
) -> Result<Harvest, HarvestError> {
    let shallow = git
        .run(dir, &["rev-parse", "--is-shallow-repository"])
        .await
        .map_err(HarvestError::NoRepository)?;
    if shallow.starts_with(b"true") {
        return Err(HarvestError::Shallow);
    }
    let branch = match &options.branch {
        Some(b) => b.clone(),
        None => default_branch(git, dir).await,
    };
    let tip = git
        .resolve_commit(dir, &branch)
        .await
        .map_err(|reason| HarvestError::Branch {
            branch: branch.clone(),
            reason,
        })?;
    let roots: BTreeSet<String> = git.root_commits(dir, &tip).await.into_iter().collect();
    let runs: Vec<Run> = runs
        .into_iter()
        .filter(|r| options.since.is_none_or(|s| r.started_at >= s))
        .collect();
    let total = runs.len();
    let mut runs = runs;
    // Index order is time order: a later run of a change supersedes.
    runs.sort_by_key(|r| r.started_at);
    let (runs, uncommitted): (Vec<Run>, Vec<Run>) = runs
        .into_iter()
        .filter(|r| r.roots.iter().any(|root| roots.contains(root)))
        .partition(|r| r.uncommitted == 0);
    let mut out = Harvest {
        branch,
        tip: tip.clone(),
        runs: runs.len(),
        elsewhere: total - runs.len() - uncommitted.len(),
        uncommitted: uncommitted.len(),
        ..Harvest::default()
    };
    if runs.is_empty() {
        return Ok(out);
    }
    let collected = collect::collect(git, dir, &tip, &runs).await?;
    let history = &collected.history;
    let index = Index::new(history, &collected.branch_ids);
    let mut landings: Vec<Option<Landing>> = runs
        .iter()
        .map(|r| {
            collected
                .changes
                .get(&r.head)
                .and_then(|c| landing::find(history, &index, c))
        })
        .collect();
    superseded(&runs, &collected.changes, &mut landings);
    let signals = collect::signals(git, dir, &collected, &runs, &landings, options).await?;
    out.notes = signals
        .notes
        .iter()
        .map(|(k, note)| (runs[*k].id.clone(), note.clone()))
        .collect();
    let newest = (!history.commits.is_empty()).then(|| history.arrival(0));
    for (k, run) in runs.into_iter().enumerate() {
        let Some(landing) = &landings[k] else {
            out.not_integrated.push(run.id);
            continue;
        };
        let label = signals
            .labels
            .get(&k)
            .cloned()
            .or_else(|| survived(history, landing, newest, options));
        let Some(label) = label else {
            out.pending.push(run.id);
            continue;
        };
        let fate = label::fate(label.source, &run.outcomes);
        out.found.push(Found { run, label, fate });
    }
    Ok(out)
}

/// The branch harvested without `--branch`: the remote's default branch
/// (`origin/HEAD`), else the branch checked out, else `HEAD`.
async fn default_branch(git: &Git, dir: &Path) -> String {
    for args in [
        &["symbolic-ref", "--short", "-q", "refs/remotes/origin/HEAD"][..],
        &["symbolic-ref", "--short", "-q", "HEAD"][..],
    ] {
        if let Ok(out) = git.run(dir, args).await {
            let name = String::from_utf8_lossy(&out).trim().to_owned();
            if !name.is_empty() {
                return name;
            }
        }
    }
    "HEAD".to_owned()
}

/// A run superseded by a later run of the same change did not land
/// itself: the later one did. Only the same change supersedes (see
/// [`same_change`]): a later change that merely contains a run's commit
/// (the next pull request of a one-spec repository, built on the last)
/// leaves it standing.
fn superseded(runs: &[Run], changes: &Changes, landings: &mut [Option<Landing>]) {
    // Only a run that shares a head, a whole patch or a landed commit can
    // be of the same change: each run looks among those alone.
    let keys: Vec<Vec<String>> = runs
        .iter()
        .zip(landings.iter())
        .map(|(r, landing)| {
            let mut keys = vec![r.head.clone()];
            keys.extend(landing.iter().flat_map(|l| l.commits.iter().cloned()));
            if let Some(whole) = changes.get(&r.head).and_then(|c| c.whole) {
                // Not a commit id: a patch id, marked apart.
                keys.push(format!("patch:{}", hex::encode(whole)));
            }
            keys
        })
        .collect();
    let mut near: HashMap<&str, Vec<usize>> = HashMap::new();
    for (b, keys) in keys.iter().enumerate() {
        if landings[b].is_some() {
            for k in keys {
                near.entry(k.as_str()).or_default().push(b);
            }
        }
    }
    let gone: Vec<usize> = (0..runs.len())
        .filter(|&a| {
            let Some(la) = &landings[a] else { return false };
            let mut candidates: Vec<usize> = keys[a]
                .iter()
                .filter_map(|k| near.get(k.as_str()))
                .flatten()
                .copied()
                .filter(|&b| b > a)
                .collect();
            candidates.sort_unstable();
            candidates.dedup();
            candidates.into_iter().any(|b| {
                landings[b].as_ref().is_some_and(|lb| {
                    runs[a].spec_id == runs[b].spec_id
                        && runs[a].started_at <= runs[b].started_at
                        && same_change(&runs[a], la, &runs[b], lb, changes)
                })
            })
        })
        .collect();
    for a in gone {
        landings[a] = None;
    }
}

/// Whether runs `a` and `b` (of one spec, landed as `la` and `lb`) are of
/// the same change: the same head; the same change identity (the commit
/// it forked from on the branch and its whole patch: the change re-made,
/// amended or rebased); or the same series (a key the pipeline named)
/// whose later run's landing brought every commit the earlier one landed
/// as (an earlier attempt that came in with the merge, or the rebase, of
/// the attempt that passed).
fn same_change(a: &Run, la: &Landing, b: &Run, lb: &Landing, changes: &Changes) -> bool {
    if a.head == b.head {
        return true;
    }
    let identity = |r: &Run| changes.get(&r.head).and_then(|c| Some((c.fork?, c.whole?)));
    if identity(a).is_some_and(|x| identity(b) == Some(x)) {
        return true;
    }
    // Runs recorded without a series key (the spec's own series, every run
    // before keys) are not taken for attempts of one change.
    a.series.is_some() && a.series == b.series && la.commits.iter().all(|c| lb.commits.contains(c))
}

/// The survival label, when the window and the later commits have passed.
fn survived(
    history: &History,
    landing: &Landing,
    newest: Option<DateTime<Utc>>,
    options: &Options,
) -> Option<Label> {
    let landed_on = history.landed_at[landing.at];
    let later = history.later[landed_on]?;
    let date = history.arrival(landing.at);
    let days = (newest? - date).num_days();
    if later < options.min_commits || days < i64::from(options.window_days) {
        return None;
    }
    Some(Label {
        source: Source::Survived,
        reason: format!("survived {later} later commits over {days} days"),
        evidence: OutcomeEvidence {
            confidence: label::SURVIVED,
            landed: landing.commits.clone(),
            landed_by: landing.by.as_str().to_owned(),
            survived: Some(Survival {
                later_commits: later,
                days: u32::try_from(days).unwrap_or(u32::MAX),
            }),
            ..OutcomeEvidence::default()
        },
    })
}

/// What SZZ blames for one fix commit: every line it removed or modified
/// (as [`szz`] filters them), blamed on its first parent.
#[derive(Debug, Clone)]
pub(crate) struct FixBlame {
    /// The fix.
    pub commit: String,
    /// Its first parent; `None` for a root commit (which blames nothing).
    pub parent: Option<String>,
    /// The lines blamed, by file and line.
    pub blamed: Vec<gate_evidence::ledger::BlamedLine>,
}

/// Runs the SZZ step, as a harvest does, on the fix commits `fixes`
/// (revisions, each resolved to a commit first): one log pass for their
/// patches, their lines blamed with one history walk (`gate_history::szz::blame`).
pub(crate) async fn blame_fixes(
    git: &Git,
    dir: &Path,
    fixes: &[String],
    jobs: usize,
) -> Result<Vec<FixBlame>, HarvestError> {
    if fixes.is_empty() {
        return Ok(Vec::new());
    }
    let ids = git
        .resolve_commits(dir, fixes)
        .await
        .map_err(HarvestError::NoCommit)?;
    let delimiter = commits::delimiter();
    let format = format!("--format={delimiter}%H%x00%P");
    let mut args = vec!["log", "--no-walk=unsorted", "-p", &format];
    args.extend(patch::DIFF_OPTIONS);
    args.extend(ids.iter().map(String::as_str));
    args.push("--");
    let out = git.run(dir, &args).await.map_err(HarvestError::Git)?;
    let mut found: HashMap<String, (Option<String>, patch::Patch)> = HashMap::new();
    for record in String::from_utf8_lossy(&out).split(delimiter.as_str()) {
        let (head, rest) = record.split_once('\n').unwrap_or((record, ""));
        let (id, parents) = head.split_once('\0').unwrap_or((head, ""));
        if commits::is_full_id(id) {
            let parent = parents
                .split_whitespace()
                .next()
                .filter(|p| commits::is_full_id(p));
            found.insert(
                id.to_owned(),
                (parent.map(str::to_owned), patch::parse(rest)),
            );
        }
    }
    let mut calls = Vec::new();
    for (k, id) in ids.iter().enumerate() {
        if let Some((Some(parent), patch)) = found.get(id) {
            calls.extend(szz::calls(k, parent, patch));
        }
    }
    let mut blamed: HashMap<usize, Vec<gate_evidence::ledger::BlamedLine>> =
        szz::blame(git, dir, calls, jobs)
            .await?
            .into_iter()
            .collect();
    Ok(ids
        .into_iter()
        .enumerate()
        .map(|(k, commit)| FixBlame {
            parent: found.get(&commit).and_then(|(p, _)| p.clone()),
            blamed: blamed.remove(&k).unwrap_or_default(),
            commit,
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone as _;

    use super::landing::{Change, LandedBy};
    use super::*;

    fn id(c: char) -> String {
        c.to_string().repeat(40)
    }

    #[test]
    fn only_a_later_run_of_the_same_change_supersedes() {
        let run = |head: char, series: &str, minute: i64| Run {
            id: format!("run-{head}-{minute}"),
            spec_id: "app".into(),
            series: (!series.is_empty()).then(|| series.to_owned()),
            verdict: "pass".into(),
            started_at: Utc
                .timestamp_opt(minute * 60, 0)
                .single()
                .unwrap_or_default(),
            head: id(head),
            roots: Vec::new(),
            uncommitted: 0,
            outcomes: Vec::new(),
        };
        let landed = |commits: &[char]| Landing {
            commits: commits.iter().map(|&c| id(c)).collect(),
            at: 0,
            by: LandedBy::Merge,
        };
        let changes: Changes = [('x', 7, [1; 32]), ('y', 7, [1; 32]), ('z', 7, [2; 32])]
            .into_iter()
            .map(|(head, fork, whole)| {
                let change = Change {
                    head: id(head),
                    fork: Some(fork),
                    whole: Some(whole),
                    ..Change::default()
                };
                (id(head), change)
            })
            .collect();
        // (what, the earlier run and its landing, the later one and its,
        // whether the earlier is superseded)
        type Case = (&'static str, (Run, Landing), (Run, Landing), bool);
        let cases: Vec<Case> = vec![
            (
                "an attempt merged with the one that passed",
                (run('a', "pr-1", 1), landed(&['m', 'a'])),
                (run('b', "pr-1", 2), landed(&['m', 'a', 'b'])),
                true,
            ),
            (
                "the next pull request, built on it",
                (run('a', "pr-1", 1), landed(&['m', 'a'])),
                (run('b', "pr-2", 2), landed(&['n', 'b', 'a'])),
                false,
            ),
            (
                "two commits of one merge, recorded without a series",
                (run('a', "", 1), landed(&['m', 'a', 'b'])),
                (run('b', "", 2), landed(&['m', 'a', 'b'])),
                false,
            ),
            (
                "the next commit of one series, each landed alone",
                (run('a', "main", 1), landed(&['a'])),
                (run('b', "main", 2), landed(&['b'])),
                false,
            ),
            (
                "the same head, run again",
                (run('a', "pr-1", 1), landed(&['a'])),
                (run('a', "pr-2", 2), landed(&['a'])),
                true,
            ),
            (
                "the same fork point and patch, amended",
                (run('x', "pr-1", 1), landed(&['s'])),
                (run('y', "pr-2", 2), landed(&['s'])),
                true,
            ),
            (
                "another patch from the same fork point",
                (run('x', "pr-1", 1), landed(&['s'])),
                (run('z', "pr-2", 2), landed(&['t'])),
                false,
            ),
        ];
        for (what, (a, la), (b, lb), want) in cases {
            let mut landings = vec![Some(la), Some(lb)];
            superseded(&[a, b], &changes, &mut landings);
            assert_eq!(landings[0].is_none(), want, "{what}");
            assert!(landings[1].is_some(), "{what}: the later stands");
        }
    }
}
