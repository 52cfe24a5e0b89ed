//! `git blame -w` of many fixes' lines with one history walk for all of
//! them, and `git blame` itself wherever the walk could differ from it.
//!
//! A blamed line is followed back the way `git blame` follows it: through
//! a commit that left its file as the commit's first parent has it (a merge
//! too: blame hands every line to the first parent with the same blob, and
//! checks the first parent first), and through a one-parent commit that
//! modified the file, by the commit's diff against its parent (the one
//! blame computes, read from git with blame's options), until the commit
//! that added the line, or a root commit. Lines of different fixes that
//! reach the same file at the same commit go on together, so every commit's
//! diff is asked of git once whatever the number of fixes behind it.
//!
//! Where the walk cannot be sure to agree with blame, it does not guess:
//! the lines that reach a merge that changed their file, a commit that
//! created the file while deleting another (blame may follow it as a
//! rename), a change of file type or to a file that is not a regular one,
//! or a commit the passes did not print, are blamed by `git blame` from
//! there (one call per file and commit, for every line that reached it).
//! So is everything when the repository names revisions for blame to
//! ignore or configures a diff driver's algorithm, which the walk's diffs
//! would not see alike, or when a pass does not read.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::Path;

use futures::StreamExt as _;

use crate::commits;
use crate::error::BlameError;
use crate::file_history::{self, FileHistory};
use crate::git::RunGit;
use crate::git_blame;
use crate::line_diff::{self, LineDiffs, Origin};

/// How many of a file's commits the first round of line diffs asks ahead
/// of its waiting lines.
const FIRST_AHEAD: usize = 2;

/// How much further each round asks than the one before.
const AHEAD_GROWTH: usize = 8;

/// The most commits one line-diff call names (its command line stays far
/// below the system's limit).
const COMMITS_PER_CALL: usize = 1000;

/// Lines to blame: line numbers of `file` at commit `commit` (full id).
#[derive(Debug, Clone)]
pub(crate) struct Lines {
    /// The commit to blame at.
    pub commit: String,
    /// The file, as that commit names it.
    pub file: String,
    /// Its lines (1-based), each once.
    pub numbers: Vec<u32>,
}

/// Lines left for `git blame`: the commit, the file, the lines.
type Parked = (String, String, Vec<Track>);

/// A line being followed: which request and line it answers, and where it
/// is now.
#[derive(Debug, Clone, Copy)]
struct Track {
    /// The request.
    request: usize,
    /// Its line in the request.
    line: u32,
    /// The line of the file at the commit the walk has reached.
    now: u32,
}

/// Blames every request's lines as `git blame --porcelain -w <commit> --
/// <file>` would: for each request in order, (line, commit) sorted by line.
pub(crate) async fn blame(
    git: &impl RunGit,
    dir: &Path,
    requests: &[Lines],
    jobs: usize,
) -> Result<Vec<Vec<(u32, String)>>, BlameError> {
    Ok(blame_counted(git, dir, requests, jobs).await?.0)
}

/// [`blame`], and how many diffs the walk followed lines through itself.
async fn blame_counted(
    git: &impl RunGit,
    dir: &Path,
    requests: &[Lines],
    jobs: usize,
) -> Result<(Vec<Vec<(u32, String)>>, usize), BlameError> {
    let mut found: Vec<Vec<(u32, String)>> = vec![Vec::new(); requests.len()];
    let starts: Vec<Parked> = requests
        .iter()
        .enumerate()
        .map(|(request, r)| {
            let tracks = r
                .numbers
                .iter()
                .map(|&line| Track {
                    request,
                    line,
                    now: line,
                })
                .collect();
            (r.commit.clone(), r.file.clone(), tracks)
        })
        .collect();
    let (left, walked) = match walk(git, dir, &starts, jobs, &mut found).await {
        Ok(walked) => walked,
        Err(why) => {
            tracing::debug!(%why, "blaming every fix's lines with git blame");
            found.iter_mut().for_each(Vec::clear);
            (starts, 0)
        }
    };
    let blamed: Vec<Result<Vec<(Track, String)>, BlameError>> =
        futures::stream::iter(left)
            .map(|(commit, file, tracks)| async move {
                git_blame(git, dir, &commit, &file, tracks).await
            })
            .buffer_unordered(jobs.max(1))
            .collect()
            .await;
    for result in blamed {
        for (track, commit) in result? {
            found[track.request].push((track.line, commit));
        }
    }
    for lines in &mut found {
        lines.sort();
    }
    Ok((found, walked))
}

/// Runs the walk: blames what it can into `found` and returns the lines
/// left for `git blame`, by commit and file, and how many diffs it
/// followed lines through; an error when a pass could not be read
/// (nothing is then blamed).
async fn walk(
    git: &impl RunGit,
    dir: &Path,
    starts: &[Parked],
    jobs: usize,
    found: &mut [Vec<(u32, String)>],
) -> Result<(Vec<Parked>, usize), String> {
    let mut left: Vec<Parked> = Vec::new();
    let (walkable, quoted): (Vec<_>, Vec<_>) = starts
        .iter()
        .cloned()
        .partition(|(_, file, _)| !quoted(file));
    left.extend(quoted);
    if walkable.is_empty() {
        return Ok((left, 0));
    }
    let paths: HashSet<&str> = walkable.iter().map(|(_, f, _)| f.as_str()).collect();
    let mut tips: Vec<&str> = walkable.iter().map(|(c, _, _)| c.as_str()).collect();
    tips.sort_unstable();
    tips.dedup();
    let delimiter = commits::delimiter();
    let (configured, raw) = tokio::join!(
        blame_configured(git, dir),
        raw_pass(git, dir, &tips, &delimiter)
    );
    if configured? {
        return Err("the repository configures blame or a diff driver's algorithm".into());
    }
    let graph = FileHistory::parse(&raw?, &delimiter, &paths)
        .ok_or_else(|| "the raw pass did not read".to_owned())?;
    let mut pending: BTreeMap<usize, HashMap<String, Vec<Track>>> = BTreeMap::new();
    for (commit, file, tracks) in walkable {
        match graph.index.get(&commit) {
            Some(&k) => pending
                .entry(k)
                .or_default()
                .entry(file)
                .or_default()
                .extend(tracks),
            None => left.push((commit, file, tracks)),
        }
    }
    // Diffs are asked as the walk needs them, a few commits ahead of each
    // file's waiting lines, more each round: lines recently written stop
    // within a few commits, and a long-lived file's old lines are reached
    // in a few rounds.
    let mut diffs = LineDiffs::default();
    let mut asked: HashSet<(usize, String)> = HashSet::new();
    let mut ahead = FIRST_AHEAD;
    let mut used = 0usize;
    loop {
        let waiting = advance(
            &graph,
            &diffs,
            &asked,
            &mut pending,
            found,
            &mut left,
            &mut used,
        );
        if waiting.is_empty() {
            break;
        }
        let needed = diffs_ahead(&graph, &waiting, ahead, &mut asked);
        tracing::debug!(
            waiting = waiting.len(),
            ahead,
            commits = needed.len(),
            "asking line diffs"
        );
        line_diffs(git, dir, &graph, needed, jobs, &delimiter, &mut diffs).await;
        for (k, file, tracks) in waiting {
            pending
                .entry(k)
                .or_default()
                .entry(file)
                .or_default()
                .extend(tracks);
        }
        ahead = ahead.saturating_mul(AHEAD_GROWTH);
    }
    // Lines parked in different rounds may meet again at the same file and
    // commit: one `git blame` for them all.
    let mut merged: BTreeMap<(String, String), Vec<Track>> = BTreeMap::new();
    for (commit, file, tracks) in left {
        merged.entry((commit, file)).or_default().extend(tracks);
    }
    let left: Vec<Parked> = merged
        .into_iter()
        .map(|((commit, file), tracks)| (commit, file, tracks))
        .collect();
    tracing::debug!(
        commits = graph.nodes.len(),
        diffs_asked = asked.len(),
        diffs_used = used,
        left_to_git_blame = left.len(),
        "blame walk"
    );
    Ok((left, used))
}

/// Follows every pending line as far as the diffs known so far allow:
/// blames what it can into `found`, hands to `left` what only `git blame`
/// can say, and returns the lines waiting on a diff not asked yet.
fn advance(
    graph: &FileHistory,
    diffs: &LineDiffs,
    asked: &HashSet<(usize, String)>,
    pending: &mut BTreeMap<usize, HashMap<String, Vec<Track>>>,
    found: &mut [Vec<(u32, String)>],
    left: &mut Vec<Parked>,
    used: &mut usize,
) -> Vec<(usize, String, Vec<Track>)> {
    let mut waiting: Vec<(usize, String, Vec<Track>)> = Vec::new();
    while let Some((k, files)) = pending.pop_first() {
        let id = &graph.nodes[k].id;
        for (file, tracks) in files {
            match step(graph, diffs, k, &file) {
                Step::Keep => {
                    for t in tracks {
                        found[t.request].push((t.line, id.clone()));
                    }
                }
                Step::Parent(p) => pending
                    .entry(p)
                    .or_default()
                    .entry(file)
                    .or_default()
                    .extend(tracks),
                Step::Diff(p, changes) => {
                    *used += 1;
                    let mut passed = Vec::new();
                    for t in tracks {
                        match line_diff::origin(changes, t.now) {
                            Origin::Changed => found[t.request].push((t.line, id.clone())),
                            Origin::Parent(now) => passed.push(Track { now, ..t }),
                        }
                    }
                    if !passed.is_empty() {
                        pending
                            .entry(p)
                            .or_default()
                            .entry(file)
                            .or_default()
                            .extend(passed);
                    }
                }
                Step::Git if modified(graph, k, &file) && !asked.contains(&(k, file.clone())) => {
                    waiting.push((k, file, tracks));
                }
                Step::Git => left.push((id.clone(), file, tracks)),
            }
        }
    }
    waiting
}

/// What the walk does with the lines of a file at a commit.
enum Step<'a> {
    /// The commit is theirs.
    Keep,
    /// They are the same lines of the file at this parent.
    Parent(usize),
    /// The diff against this parent says which are.
    Diff(usize, &'a [line_diff::Change]),
    /// `git blame` must say.
    Git,
}

/// What `git blame` does with lines of `path` at commit `k`, when the walk
/// can be sure of it.
fn step<'a>(graph: &FileHistory, diffs: &'a LineDiffs, k: usize, path: &str) -> Step<'a> {
    let node = &graph.nodes[k];
    // A root commit (or a shallow clone's edge) keeps every line.
    let Some(first) = node.parents.first() else {
        return Step::Keep;
    };
    let Some(first) = *first else {
        return Step::Git;
    };
    match graph.change(k, path) {
        None => Step::Parent(first),
        Some(c) if c.status == 'M' && c.old_blob == c.new_blob => Step::Parent(first),
        Some(_) if node.parents.len() > 1 => Step::Git,
        Some(c) if c.status == 'M' && c.regular() => match diffs.changes(&node.id, path) {
            Some(changes) => Step::Diff(first, changes),
            None => Step::Git,
        },
        // Created with nothing deleted beside it: no rename to follow.
        Some(c) if c.status == 'A' && !node.deletes => Step::Keep,
        Some(_) => Step::Git,
    }
}

/// The diffs to ask next for the lines `waiting` (each at a commit that
/// modified their file): for each, the next `ahead` commits along the
/// file's history that modified it and were not asked yet, as far as the
/// walk could follow it.
fn diffs_ahead(
    graph: &FileHistory,
    waiting: &[(usize, String, Vec<Track>)],
    ahead: usize,
    asked: &mut HashSet<(usize, String)>,
) -> BTreeMap<usize, Vec<String>> {
    let none = LineDiffs::default();
    let mut needed: BTreeMap<usize, Vec<String>> = BTreeMap::new();
    for (start, path, _) in waiting {
        let (mut k, mut n) = (*start, 0);
        while n < ahead {
            match step(graph, &none, k, path) {
                Step::Parent(p) => k = p,
                Step::Git if modified(graph, k, path) => {
                    if asked.insert((k, path.clone())) {
                        needed.entry(k).or_default().push(path.clone());
                        n += 1;
                    }
                    match graph.nodes[k].parents.first() {
                        Some(Some(p)) => k = *p,
                        _ => break,
                    }
                }
                Step::Keep | Step::Diff(..) | Step::Git => break,
            }
        }
    }
    needed
}

/// Whether commit `k`, with one parent, modified regular file `path`.
fn modified(graph: &FileHistory, k: usize, path: &str) -> bool {
    graph.nodes[k].parents.len() == 1
        && graph
            .change(k, path)
            .is_some_and(|c| c.status == 'M' && c.regular())
}

/// The raw pass over every commit behind `tips`.
async fn raw_pass(
    git: &impl RunGit,
    dir: &Path,
    tips: &[&str],
    delimiter: &str,
) -> Result<Vec<u8>, String> {
    let format = format!("--format={delimiter}%H %P");
    let mut args = vec!["log"];
    args.extend(file_history::RAW_OPTIONS);
    args.push(&format);
    args.extend(tips);
    args.push("--");
    git.run_whole(dir, &args).await
}

/// Commits (by index) and the files of each one line-diff call asks.
type Group = Vec<(usize, Vec<String>)>;

/// Adds the line diffs of `needed` to `diffs`, asked in calls of
/// consecutive commits (about as many diffs each, at most `jobs` calls
/// unless one would name too many commits) run together. A call that
/// fails or does not read adds nothing: the walk hands the lines waiting
/// on it to `git blame`.
async fn line_diffs(
    git: &impl RunGit,
    dir: &Path,
    graph: &FileHistory,
    needed: BTreeMap<usize, Vec<String>>,
    jobs: usize,
    delimiter: &str,
    diffs: &mut LineDiffs,
) {
    let total: usize = needed.values().map(Vec::len).sum();
    let calls = jobs.max(1).max(needed.len().div_ceil(COMMITS_PER_CALL));
    let per_call = total.div_ceil(calls).max(1);
    let mut groups: Vec<Group> = vec![Vec::new()];
    let mut size = 0;
    for (k, paths) in needed {
        let full = groups
            .last()
            .is_some_and(|g| size >= per_call || g.len() >= COMMITS_PER_CALL);
        if full {
            groups.push(Vec::new());
            size = 0;
        }
        size += paths.len();
        if let Some(g) = groups.last_mut() {
            g.push((k, paths));
        }
    }
    let read: Vec<(Group, Result<Vec<u8>, String>)> =
        futures::stream::iter(groups.into_iter().filter(|g| !g.is_empty()))
            .map(|group| async move {
                let commits: Vec<&str> = group
                    .iter()
                    .map(|(k, _)| graph.nodes[*k].id.as_str())
                    .collect();
                let mut paths: Vec<String> = group
                    .iter()
                    .flat_map(|(_, p)| p.iter())
                    .map(|p| format!(":(literal){p}"))
                    .collect();
                paths.sort_unstable();
                paths.dedup();
                let format = format!("--format={delimiter}%H");
                let mut args = vec!["log", "--no-walk=unsorted"];
                args.extend(line_diff::DIFF_OPTIONS);
                args.push(&format);
                args.extend(commits);
                args.push("--");
                args.extend(paths.iter().map(String::as_str));
                let out = git.run_whole(dir, &args).await;
                (group, out)
            })
            .buffer_unordered(jobs.max(1))
            .collect()
            .await;
    for (group, out) in read {
        let asked: Vec<(&str, &[String])> = group
            .iter()
            .map(|(k, paths)| (graph.nodes[*k].id.as_str(), paths.as_slice()))
            .collect();
        let learnt = match out {
            Ok(out) => diffs.read(&out, delimiter.as_bytes(), &asked).is_some(),
            Err(why) => {
                tracing::debug!(%why, "a line-diff pass failed");
                false
            }
        };
        if !learnt {
            tracing::debug!("a line-diff pass left to git blame");
        }
    }
}

/// Whether the repository sets what `git blame` reads and the walk's diffs
/// would not: an ignored-revisions file (blame's other settings change how
/// it prints, not what it names), or a diff driver's `algorithm` (which
/// `git log -p` honours and blame does not).
async fn blame_configured(git: &impl RunGit, dir: &Path) -> Result<bool, String> {
    let out = git.run_whole(dir, &["config", "--null", "--list"]).await?;
    Ok(out
        .split(|b| *b == 0)
        .filter_map(|entry| entry.split(|b| *b == b'\n').next())
        .filter_map(|key| std::str::from_utf8(key).ok())
        .any(|key| {
            let key = key.to_ascii_lowercase();
            key == "blame.ignorerevsfile"
                || (key.starts_with("diff.")
                    && key.ends_with(".algorithm")
                    && key != "diff.algorithm")
        }))
}

/// Whether git would quote `path` in its output (the passes then could
/// not name it as asked).
fn quoted(path: &str) -> bool {
    path.bytes()
        .any(|b| b < 0x20 || b == 0x7f || b == b'"' || b == b'\\')
}

/// `git blame --porcelain -w` of the tracked lines of `file` at `commit`.
async fn git_blame(
    git: &impl RunGit,
    dir: &Path,
    commit: &str,
    file: &str,
    tracks: Vec<Track>,
) -> Result<Vec<(Track, String)>, BlameError> {
    let lines: BTreeSet<u32> = tracks.iter().map(|t| t.now).collect();
    let blamed: HashMap<u32, String> =
        git_blame::blame_ranges(git, dir, commit, file, &git_blame::line_ranges(lines))
            .await?
            .into_iter()
            .collect();
    Ok(tracks
        .into_iter()
        .filter_map(|t| Some((t, blamed.get(&t.now)?.clone())))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::host::HostGit;

    /// Histories whose every line, at every commit, the walk must blame as
    /// `git blame -w` does; each a shell script run in a fresh repository
    /// (`c MESSAGE` commits everything), and whether the walk is expected
    /// to follow some lines itself rather than leave them all to git.
    const CASES: [(&str, &str); 8] = [
        (
            "edits, insertions and deletions",
            "seq 1 30 > f; c one
             sed -i 's/^5$/five/; 10d' f; c two
             sed -i '20a new\\nlines' f; printf 'tail\\n' >> f; c three
             sed -i '1,3d; s/^25$/x/' f; c four",
        ),
        (
            "whitespace-only changes",
            "printf 'a\\nb\\nc\\nd\\n' > f; c one
             printf 'a\\n    b\\nc\\t\\nd\\n' > f; c reindent
             printf 'a\\n  b\\nC\\nd\\n' > f; c edit
             printf 'a\\r\\n  b\\r\\nC\\r\\nd' > f; c crlf",
        ),
        (
            "lines moved",
            "seq 1 40 > f; c one
             (seq 21 40; seq 1 20) > f; c swap
             (seq 1 10; seq 31 40; seq 11 30) > f; c again",
        ),
        (
            "a rename, and a rename with edits",
            "seq 1 20 > f; seq 100 140 > g; c one
             git mv f f2; c rename
             sed -i 's/^7$/seven/' f2; c edit
             git mv f2 f3; sed -i '1d; s/^15$/x/' f3; c rename-edit",
        ),
        (
            "merges in the file's history",
            "seq 1 20 > f; echo x > other; c one
             git checkout -qb side; sed -i 's/^3$/three/' f; c side
             git checkout -q main; echo y > other; c main
             git merge -q --no-edit side
             sed -i 's/^17$/seventeen/' f; c after
             git checkout -qb side2; echo z > other; c side2
             git checkout -q main; sed -i 's/^9$/nine/' f; c main2
             git merge -q --no-edit side2
             git checkout -qb side3; sed -i 's/^1$/one/' f; c side3
             git checkout -q main; sed -i 's/^20$/twenty/' f; c main3
             git merge -q --no-edit side3
             sed -i 's/^2$/two/' f; c after3",
        ),
        (
            "a file deleted and added back",
            "seq 1 10 > f; echo keep > k; c one
             git rm -q f; c gone
             seq 1 12 > f; c back
             sed -i 's/^4$/four/' f; c edit",
        ),
        (
            "a file created while another is deleted",
            "seq 1 30 > a; seq 50 60 > k; c one
             git rm -q a; seq 1 28 > b; echo extra >> b; c swap
             sed -i 's/^2$/two/' b; c edit",
        ),
        (
            "a mode change, a file made a link and back",
            "seq 1 10 > f; c one
             chmod +x f; c mode
             sed -i 's/^2$/two/' f; c edit
             rm f; ln -s k f; c link
             rm f; seq 1 10 > f; c file",
        ),
    ];

    #[tokio::test]
    async fn the_walk_blames_as_git_blame_does() {
        let mut walked_somewhere = 0;
        for (name, script) in CASES {
            let dir = tempfile::tempdir().unwrap();
            let ws = dir.path().canonicalize().unwrap();
            let prelude = "set -e; export GIT_AUTHOR_DATE='2020-01-01T00:00:00Z' \
                 GIT_COMMITTER_DATE='2020-01-01T00:00:00Z'; \
                 c() { git add -A; git -c user.name=t -c user.email=t@e commit -qm \"$1\"; }; \
                 git init -q -b main; git config user.name t; git config user.email t@e;";
            #[allow(clippy::disallowed_methods)] // test set-up
            let ok = std::process::Command::new("sh")
                .args(["-c", &format!("{prelude}\n{script}")])
                .current_dir(&ws)
                .status()
                .unwrap()
                .success();
            assert!(ok, "{name}: the script failed");
            let git = HostGit;
            // Every line of every regular file at every commit.
            let commits = git.run(&ws, &["rev-list", "--all"]).await.unwrap();
            let mut requests = Vec::new();
            for commit in String::from_utf8_lossy(&commits).lines() {
                let files = git
                    .run(&ws, &["ls-tree", "-r", "--name-only", commit])
                    .await
                    .unwrap();
                for file in String::from_utf8_lossy(&files).lines() {
                    let blob = format!("{commit}:{file}");
                    let text = git.run(&ws, &["cat-file", "-p", &blob]).await.unwrap();
                    let lines =
                        text.split(|b| *b == b'\n').count() - usize::from(text.ends_with(b"\n"));
                    if lines == 0 {
                        continue;
                    }
                    requests.push(Lines {
                        commit: commit.to_owned(),
                        file: file.to_owned(),
                        numbers: (1..=lines as u32).collect(),
                    });
                }
            }
            let (got, walked) = blame_counted(&git, &ws, &requests, 2).await.unwrap();
            walked_somewhere += walked;
            for (request, got) in requests.iter().zip(got) {
                let want = git_blame::blame_ranges(
                    &git,
                    &ws,
                    &request.commit,
                    &request.file,
                    &git_blame::line_ranges(request.numbers.iter().copied()),
                )
                .await
                .unwrap();
                assert_eq!(got, want, "{name}: {} at {}", request.file, request.commit);
            }
        }
        assert!(walked_somewhere > 0, "the walk followed no line itself");
    }
}
