//! The git calls of a harvest, batched: one log pass over the branch, one
//! patch pass over the part of it after the oldest fork point, one over
//! the runs' own commits, a diff per change of several commits that did
//! not land otherwise, and the fixes' blame (one history walk for all of
//! them, `gate_history::szz::blame`).

use std::collections::{HashMap, HashSet};
use std::path::Path;

use gate_evidence::ledger::{BlamedLine, OutcomeEvidence};

use super::error::HarvestError;
use super::input::{Options, Run};
use super::label::evidence_commit;
use super::label::{self, Label, Source};
use super::landing::{Change, Changes, Landing};
use super::signals;
use crate::git::Git;
use gate_history::commits::{self, History, is_full_id};
use gate_history::git_blame;
use gate_history::patch::{self, DIFF_OPTIONS, Patch, PatchId, squeezed};
use gate_history::szz;

/// What the passes read.
#[derive(Debug, Default)]
pub(crate) struct Collected {
    /// The branch.
    pub history: History,
    /// Patches of the branch commits after the oldest fork point.
    pub branch_patches: HashMap<String, Patch>,
    /// Their ids.
    pub branch_ids: HashMap<String, PatchId>,
    /// Each run head's change.
    pub changes: Changes,
}

/// Reads the branch, its recent patches and the runs' own commits.
pub(crate) async fn collect(
    git: &Git,
    dir: &Path,
    tip: &str,
    runs: &[Run],
) -> Result<Collected, HarvestError> {
    let delimiter = commits::delimiter();
    let format = commits::log_format(&delimiter);
    let out = git
        .run(dir, &["log", "--topo-order", &format, tip, "--"])
        .await
        .map_err(HarvestError::Git)?;
    let history = History::new(commits::parse_log(&out, &delimiter));
    let mut changes = own_changes(git, dir, tip, runs, &history).await?;
    // From the oldest point any run may have landed after.
    let oldest = changes
        .values()
        .filter_map(|c| c.fork)
        .chain(
            runs.iter()
                .filter_map(|r| history.index.get(&r.head).copied()),
        )
        .max();
    let mut collected = Collected {
        history,
        changes: Changes::new(),
        ..Collected::default()
    };
    if let Some(oldest) = oldest {
        // From the oldest point itself: a run's own head may be it.
        let start: Vec<String> = collected.history.commits[oldest]
            .parents
            .iter()
            .map(|p| format!("^{p}"))
            .collect();
        let format = format!("--format={delimiter}%H");
        let mut args = vec!["log", "-p", "--no-merges", &format];
        args.extend(DIFF_OPTIONS);
        args.push(tip);
        args.extend(start.iter().map(String::as_str));
        args.push("--");
        let out = git.run(dir, &args).await.map_err(HarvestError::Git)?;
        collected.branch_patches = patch::parse_log(&out, &delimiter);
        collected.branch_ids = collected
            .branch_patches
            .iter()
            .filter_map(|(id, p)| Some((id.clone(), p.id()?)))
            .collect();
    }
    whole_changes(git, dir, &collected.history, &mut changes).await;
    collected.changes = changes;
    Ok(collected)
}

/// The runs' own commits (those not on the branch): one log pass over
/// every head the repository still has.
async fn own_changes(
    git: &Git,
    dir: &Path,
    tip: &str,
    runs: &[Run],
    history: &History,
) -> Result<Changes, HarvestError> {
    let mut changes = Changes::new();
    let mut off: Vec<&str> = Vec::new();
    for run in runs {
        if let Some(c) = history.get(&run.head) {
            changes.insert(
                run.head.clone(),
                Change {
                    head: run.head.clone(),
                    tree: Some(c.tree.clone()),
                    ..Change::default()
                },
            );
        } else if is_full_id(&run.head) && !off.contains(&run.head.as_str()) {
            off.push(&run.head);
        }
    }
    if off.is_empty() {
        return Ok(changes);
    }
    let delimiter = commits::delimiter();
    let format = format!("--format={delimiter}%H%x00%P%x00%T");
    let not_tip = format!("^{tip}");
    let mut args = vec!["log", "-p", "--ignore-missing", &format];
    args.extend(DIFF_OPTIONS);
    args.extend(off.iter().copied());
    args.extend([not_tip.as_str(), "--"]);
    let out = git.run(dir, &args).await.map_err(HarvestError::Git)?;
    // id → (parents, tree, patch)
    let mut own: HashMap<String, (Vec<String>, String, Patch)> = HashMap::new();
    for record in String::from_utf8_lossy(&out).split(delimiter.as_str()) {
        let (head, rest) = record.split_once('\n').unwrap_or((record, ""));
        let mut fields = head.split('\0');
        let (Some(id), Some(parents), Some(tree)) = (fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        let parents: Vec<String> = parents.split_whitespace().map(str::to_owned).collect();
        if is_full_id(id) && parents.iter().all(|p| is_full_id(p)) {
            own.insert(
                id.to_owned(),
                (parents, tree.trim().to_owned(), patch::parse(rest)),
            );
        }
    }
    for head in off {
        let Some((_, tree, _)) = own.get(head) else {
            continue;
        };
        let mut change = Change {
            head: head.to_owned(),
            tree: Some(tree.clone()),
            ..Change::default()
        };
        let mut stack = vec![head.to_owned()];
        let mut seen = HashSet::new();
        while let Some(id) = stack.pop() {
            if !seen.insert(id.clone()) {
                continue;
            }
            if let Some(&i) = history.index.get(&id) {
                change.fork = Some(change.fork.map_or(i, |f: usize| f.min(i)));
                continue;
            }
            let Some((parents, _, patch)) = own.get(&id) else {
                continue;
            };
            if parents.len() <= 1 {
                change.own.push((id.clone(), patch.id()));
            }
            stack.extend(parents.iter().cloned());
        }
        if let [(_, id)] = change.own.as_slice() {
            change.whole = *id;
        }
        changes.insert(head.to_owned(), change);
    }
    Ok(changes)
}

/// The whole patch of each change of several commits (fork point to
/// head): what a squash of it carries.
async fn whole_changes(git: &Git, dir: &Path, history: &History, changes: &mut Changes) {
    for change in changes.values_mut() {
        let (Some(fork), true) = (change.fork, change.own.len() > 1) else {
            continue;
        };
        let base = history.commits[fork].id.clone();
        let mut args = vec!["diff"];
        args.extend(DIFF_OPTIONS);
        args.extend([base.as_str(), change.head.as_str(), "--"]);
        match git.run(dir, &args).await {
            Ok(out) => change.whole = patch::parse(&String::from_utf8_lossy(&out)).id(),
            Err(e) => tracing::debug!(error = %e, head = %change.head, "no whole patch"),
        }
    }
}

/// What the later commits say of the landed runs: the strongest broken
/// label of each (by its index in `runs`), and the notes on claims a
/// message made that the diff did not bear out.
#[derive(Debug, Default)]
pub(crate) struct Signals {
    /// Run index → its strongest broken label.
    pub labels: HashMap<usize, Label>,
    /// Run index → what a message claimed of it and why it labels nothing.
    pub notes: Vec<(usize, String)>,
}

/// The strongest broken label of each landed run (by its index in `runs`),
/// from what the later commits on the branch say and do.
pub(crate) async fn signals(
    git: &Git,
    dir: &Path,
    collected: &Collected,
    runs: &[Run],
    landings: &[Option<Landing>],
    options: &Options,
) -> Result<Signals, HarvestError> {
    let history = &collected.history;
    // Landed commit → the runs it carries; patch id → the same.
    let mut by_commit: HashMap<&str, Vec<usize>> = HashMap::new();
    let mut by_patch: HashMap<PatchId, Vec<usize>> = HashMap::new();
    for (k, landing) in landings.iter().enumerate() {
        let Some(landing) = landing else { continue };
        for c in &landing.commits {
            by_commit.entry(c.as_str()).or_default().push(k);
            if let Some(id) = collected.branch_ids.get(c) {
                by_patch.entry(*id).or_default().push(k);
            }
        }
        if let Some(id) = collected.changes.get(&runs[k].head).and_then(|c| c.whole) {
            by_patch.entry(id).or_default().push(k);
        }
    }
    let mut out = Signals::default();
    let mut labels: HashMap<usize, Label> = HashMap::new();
    let mut offer = |k: usize, label: Label| match labels.get(&k) {
        Some(had) if had.source >= label.source => {}
        _ => {
            labels.insert(k, label);
        }
    };
    let Some(oldest) = landings.iter().flatten().map(|l| l.at).max() else {
        return Ok(out);
    };
    let named = named_signals(
        collected, landings, oldest, &by_commit, &by_patch, options, &mut offer,
    );
    out.notes = named.notes;
    for (x, k) in named.claimed {
        let commit = &history.commits[x];
        if undoes(git, dir, collected, commit, landings[k].as_ref()).await {
            offer(
                k,
                broken(
                    Source::Revert,
                    label::REVERT_NAMED,
                    landings,
                    k,
                    commit,
                    "reverted by",
                ),
            );
        } else {
            out.notes.push((
                k,
                format!(
                    "commit {} says it reverts a landed commit of this run, but its diff does \
                     not undo that commit's change: not a label",
                    &commit.id[..12]
                ),
            ));
        }
    }
    for (x, blamed) in blame_fixes(git, dir, collected, &named.fixes, &by_commit, options).await? {
        let commit = &history.commits[x];
        let mut runs_blamed: HashMap<usize, Vec<BlamedLine>> = HashMap::new();
        for line in blamed {
            for &k in by_commit.get(line.commit.as_str()).into_iter().flatten() {
                let Some(landing) = &landings[k] else {
                    continue;
                };
                // Arrival times, not commit dates: the agent dates its commits.
                let landed = history.arrival(landing.at);
                let within = history.arrival(x) - landed
                    <= chrono::Duration::days(i64::from(options.window_days));
                if x < landing.at && within {
                    runs_blamed.entry(k).or_default().push(line.clone());
                }
            }
        }
        for (k, lines) in runs_blamed {
            let mut label = broken(
                Source::Szz,
                label::SZZ,
                landings,
                k,
                commit,
                "its lines changed by the fix",
            );
            label.reason = format!(
                "{} of its lines changed by fix {}",
                lines.len(),
                &commit.id[..12]
            );
            label.evidence.blamed = lines;
            offer(k, label);
        }
    }
    out.labels = labels;
    Ok(out)
}

/// What the messages of later commits say, before their diffs are asked.
#[derive(Debug, Default)]
struct Named {
    /// The fix commits (by `fix_pattern`), for blame.
    fixes: Vec<usize>,
    /// (commit, run) pairs: the commit's message says it reverts one of the
    /// run's landed commits, and its diff is not the exact inverse.
    claimed: Vec<(usize, usize)>,
    /// Claims that label nothing.
    notes: Vec<(usize, String)>,
}

/// Reverts whose diff is a landed patch's exact inverse, and fixes that
/// name a landed commit and change one of its files, offered as labels;
/// the reverts a message alone claims set aside for their diff to be
/// read; the fix commits (by `fix_pattern`) newer than `oldest` returned
/// for blame.
fn named_signals(
    collected: &Collected,
    landings: &[Option<Landing>],
    oldest: usize,
    by_commit: &HashMap<&str, Vec<usize>>,
    by_patch: &HashMap<PatchId, Vec<usize>>,
    options: &Options,
    offer: &mut impl FnMut(usize, Label),
) -> Named {
    let history = &collected.history;
    let mut out = Named::default();
    for x in 0..oldest {
        let commit = &history.commits[x];
        let after = |k: usize| landings[k].as_ref().is_some_and(|l| x < l.at);
        let named = |ids: Vec<String>| -> Vec<usize> {
            let mut runs: Vec<usize> = ids
                .iter()
                .filter_map(|id| history.resolve(id))
                .filter_map(|id| by_commit.get(id))
                .flatten()
                .copied()
                .filter(|&k| after(k))
                .collect();
            runs.sort_unstable();
            runs.dedup();
            runs
        };
        let patch = collected.branch_patches.get(&commit.id);
        let inverse: Vec<usize> = patch
            .and_then(Patch::inverse_id)
            .and_then(|id| by_patch.get(&id))
            .into_iter()
            .flatten()
            .copied()
            .filter(|&k| after(k))
            .collect();
        let claimed = named(signals::reverted(&commit.message));
        for &k in &inverse {
            // The exact inverse is a revert whatever the message says; a
            // message that names it too makes it surer.
            let (confidence, how) = if claimed.contains(&k) {
                (label::REVERT_NAMED, "reverted by")
            } else {
                (label::REVERT_INVERSE, "undone exactly by")
            };
            offer(
                k,
                broken(Source::Revert, confidence, landings, k, commit, how),
            );
        }
        out.claimed.extend(
            claimed
                .into_iter()
                .filter(|k| !inverse.contains(k))
                .map(|k| (x, k)),
        );
        for k in named(signals::fixed(&commit.message)) {
            let touched = landed_files(collected, landings[k].as_ref());
            let shares = patch.is_some_and(|p| {
                p.files
                    .iter()
                    .flat_map(|f| [&f.old, &f.new])
                    .flatten()
                    .any(|f| touched.contains(f.as_str()))
            });
            if shares {
                offer(
                    k,
                    broken(
                        Source::Fixes,
                        label::FIXES,
                        landings,
                        k,
                        commit,
                        "named as fixed by",
                    ),
                );
            } else {
                out.notes.push((
                    k,
                    format!(
                        "commit {} names a landed commit of this run as what it fixes, but \
                         changes none of its files: not a label",
                        &commit.id[..12]
                    ),
                ));
            }
        }
        if commit.parents.len() == 1 && options.fix_pattern.is_match(&commit.message) {
            out.fixes.push(x);
        }
    }
    out
}

/// The files a landing's commits changed, by either name.
fn landed_files<'a>(collected: &'a Collected, landing: Option<&Landing>) -> HashSet<&'a str> {
    landing
        .into_iter()
        .flat_map(|l| l.commits.iter())
        .filter_map(|c| collected.branch_patches.get(c))
        .flat_map(|p| p.files.iter())
        .flat_map(|f| [&f.old, &f.new])
        .flatten()
        .map(String::as_str)
        .collect()
}

/// Whether `revert`'s diff undoes `landing`'s change: it removes every line
/// of the landed commits that still exists on its parent (blamed there),
/// at least one; or, none existing, it puts back every line they removed.
/// A message cannot do this; only a diff that takes the change out can.
async fn undoes(
    git: &Git,
    dir: &Path,
    collected: &Collected,
    revert: &commits::Commit,
    landing: Option<&Landing>,
) -> bool {
    let (Some(landing), Some(patch), Some(parent)) = (
        landing,
        collected.branch_patches.get(&revert.id),
        revert.parents.first(),
    ) else {
        return false;
    };
    let landed: Vec<&Patch> = landing
        .commits
        .iter()
        .filter_map(|c| collected.branch_patches.get(c))
        .collect();
    if landed.is_empty() {
        return false;
    }
    let mut files: Vec<&str> = landed
        .iter()
        .flat_map(|p| p.files.iter())
        .filter_map(|f| f.new.as_deref())
        .collect();
    files.sort_unstable();
    files.dedup();
    // The revert's removed lines, by file and line of its parent.
    let removed: HashSet<(&str, u32)> = patch
        .files
        .iter()
        .filter_map(|f| Some((f.old.as_deref()?, &f.hunks)))
        .flat_map(|(file, hunks)| {
            hunks.iter().flat_map(move |h| {
                (0..h.removed.len()).map(move |k| (file, h.old_start + k as u32))
            })
        })
        .collect();
    let mut surviving = 0usize;
    for file in files {
        // A file gone from the parent holds none of the change's lines.
        let Ok(out) = git
            .run(
                dir,
                &[
                    "blame",
                    "--porcelain",
                    "-w",
                    "--no-textconv",
                    parent,
                    "--",
                    file,
                ],
            )
            .await
        else {
            continue;
        };
        for (line, commit) in git_blame::parse_porcelain(&out) {
            if landing.commits.contains(&commit) {
                if !removed.contains(&(file, line)) {
                    return false;
                }
                surviving += 1;
            }
        }
    }
    if surviving > 0 {
        return true;
    }
    // Nothing of it left to remove: a change that only removed lines is
    // undone by putting them back.
    let mut put_back: HashMap<String, usize> = HashMap::new();
    for f in &patch.files {
        for h in &f.hunks {
            for line in &h.added {
                *put_back.entry(squeezed(line)).or_default() += 1;
            }
        }
    }
    let mut wanted = 0usize;
    for f in landed.iter().flat_map(|p| p.files.iter()) {
        for line in f.hunks.iter().flat_map(|h| h.removed.iter()) {
            let line = squeezed(line);
            if line.is_empty() {
                continue;
            }
            wanted += 1;
            match put_back.get_mut(&line) {
                Some(n) if *n > 0 => *n -= 1,
                _ => return false,
            }
        }
    }
    wanted > 0
}

fn broken(
    source: Source,
    confidence: u8,
    landings: &[Option<Landing>],
    k: usize,
    commit: &commits::Commit,
    how: &str,
) -> Label {
    let landing = landings[k].as_ref();
    Label {
        source,
        reason: format!("{how} {}", &commit.id[..12]),
        evidence: OutcomeEvidence {
            confidence,
            landed: landing.map(|l| l.commits.clone()).unwrap_or_default(),
            landed_by: landing
                .map(|l| l.by.as_str().to_owned())
                .unwrap_or_default(),
            commits: vec![evidence_commit(commit)],
            ..OutcomeEvidence::default()
        },
    }
}

/// Blames each fix's meaningful removed lines on its parent, as
/// `git blame -w` would ([`szz::blame`]); only files some landed commit
/// touched are looked at. Fix index → the blamed lines that name a landed
/// commit.
async fn blame_fixes(
    git: &Git,
    dir: &Path,
    collected: &Collected,
    fixes: &[usize],
    by_commit: &HashMap<&str, Vec<usize>>,
    options: &Options,
) -> Result<Vec<(usize, Vec<BlamedLine>)>, HarvestError> {
    let touched: HashSet<&str> = by_commit
        .keys()
        .filter_map(|c| collected.branch_patches.get(*c))
        .flat_map(|p| p.files.iter())
        .filter_map(|f| f.new.as_deref())
        .collect();
    let mut calls: Vec<szz::BlameCall> = Vec::new();
    for &x in fixes {
        let commit = &collected.history.commits[x];
        let (Some(patch), Some(parent)) = (
            collected.branch_patches.get(&commit.id),
            commit.parents.first(),
        ) else {
            continue;
        };
        calls.extend(
            szz::calls(x, parent, patch)
                .into_iter()
                .filter(|c| touched.contains(c.file.as_str())),
        );
    }
    let mut out = szz::blame(git, dir, calls, options.jobs).await?;
    for (_, lines) in &mut out {
        lines.retain(|l| by_commit.contains_key(l.commit.as_str()));
    }
    out.retain(|(_, lines)| !lines.is_empty());
    out.sort_by_key(|(x, _)| std::cmp::Reverse(*x));
    Ok(out)
}
