//! The workspace walk: a blake3 digest of every file the gate may look at.
//!
//! The walk includes hidden files, skips `.git` (a repository's folder, or
//! the file a worktree or submodule has in its place) and the state
//! directory, honours `.gitignore`, and never follows a symlink (a link is
//! recorded by the digest of its target's path, and what it points at is
//! never read). A file matched by a forced-include glob (an item's `inputs`)
//! is hashed even when ignored.
//!
//! Ignore rules come from the workspace's tree alone: its `.gitignore` files
//! (nested ones too, whether or not it is a git repository); never its
//! repository's `.git/info/exclude` (which is in no commit, so whoever wrote
//! `.git` could hide a file with it), folders above it or the user's global
//! gitignore, so the snapshot does not depend on who takes it or where.
//! `.ignore` files, which only some tools read, are not honoured.

mod entry;
mod hash;

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::Mutex;
use std::time::Instant;

use gate_specs::InputGlobs;
use ignore::{DirEntry, ParallelVisitor, ParallelVisitorBuilder, WalkBuilder, WalkState};

use crate::Digest;

pub use entry::{EntryKind, FileEntry};

/// What to walk and what to leave out.
#[derive(Debug, Clone, Default)]
pub struct WalkOptions {
    /// The state directory, when it lies inside the workspace: skipped.
    /// Compared canonically (a relative path is taken from the current
    /// directory); one that does not exist yet is nothing to skip.
    pub state_dir: Option<PathBuf>,
    /// Files skipped wherever they are: what the run itself writes (its
    /// stdout redirected into the workspace, its reports), which are not
    /// part of what it verifies. Compared canonically, like `state_dir`.
    pub own_files: Vec<PathBuf>,
    /// Globs whose files are hashed even when `.gitignore` ignores them.
    pub force_include: Option<InputGlobs>,
}

/// Every file of the workspace with its digest, keyed by workspace-relative
/// `/`-separated path.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snapshot {
    files: BTreeMap<String, FileEntry>,
}

/// The walk failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SnapshotError {
    /// The workspace itself cannot be read.
    #[error("cannot read workspace {}: {source}", path.display())]
    Root {
        /// The workspace.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

impl Snapshot {
    /// Walks `root` and hashes every file, in parallel.
    ///
    /// Keys are workspace-relative `/`-separated paths. A name that is not
    /// UTF-8 cannot be named by a spec's globs: such a file (or folder, with
    /// everything under it) is left out with a warning. A file that
    /// disappears during the walk is left out; one that cannot be read is an
    /// error naming it. FIFOs, sockets and devices are left out unopened.
    #[tracing::instrument(level = "debug", skip(opts), fields(root = %root.display()))]
    pub fn take(root: &Path, opts: &WalkOptions) -> Result<Self, SnapshotError> {
        let started = Instant::now();
        let root = canonical_root(root)?;
        let skip = Skip {
            state_dir: opts.state_dir.as_ref().and_then(|d| d.canonicalize().ok()),
            // One that does not exist yet is not there to walk.
            own_files: opts
                .own_files
                .iter()
                .filter_map(|f| f.canonicalize().ok())
                .collect(),
        };
        let mut files: BTreeMap<String, FileEntry> =
            walk(&root, std::slice::from_ref(&root), &skip, true, &|_| true)?
                .into_iter()
                .collect();
        if let Some(globs) = &opts.force_include {
            let forced = force_included(&root, &skip, globs, &files)?;
            tracing::debug!(count = forced.len(), "ignored files hashed for inputs");
            files.extend(forced);
        }
        tracing::debug!(
            files = files.len(),
            bytes = files.values().map(|e| e.size).sum::<u64>(),
            elapsed_ms = started.elapsed().as_millis() as u64,
            "workspace snapshot taken"
        );
        Ok(Self { files })
    }

    /// Builds a snapshot from entries (tests and re-loading).
    pub fn from_entries(files: BTreeMap<String, FileEntry>) -> Self {
        Self { files }
    }

    /// Every entry in path order.
    pub fn entries(&self) -> impl Iterator<Item = (&str, &FileEntry)> {
        self.files.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// Regular files only (what checks may read), in path order.
    pub fn regular_files(&self) -> impl Iterator<Item = &str> {
        self.files
            .iter()
            .filter(|(_, e)| e.kind == EntryKind::File)
            .map(|(k, _)| k.as_str())
    }

    /// One entry.
    pub fn get(&self, rel_path: &str) -> Option<&FileEntry> {
        self.files.get(rel_path)
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    /// Whether the snapshot is empty.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// Entries whose path matches `globs`, in path order.
    pub fn matching<'a>(
        &'a self,
        globs: &'a InputGlobs,
    ) -> impl Iterator<Item = (&'a str, &'a FileEntry)> + 'a {
        self.entries().filter(move |(p, _)| globs.is_match(p))
    }

    /// Digest over the (path, digest) pairs matching `globs`, or over every
    /// entry when `globs` is `None` (the whole workspace).
    pub fn digest_of(&self, globs: Option<&InputGlobs>) -> Digest {
        let mut h = blake3::Hasher::new();
        for (path, entry) in self.entries() {
            if globs.is_none_or(|g| g.is_match(path)) {
                h.update(path.as_bytes());
                h.update(&[0]);
                h.update(&entry.digest.0);
            }
        }
        h.finalize().into()
    }
}

/// The input fingerprint of one check or criterion: blake3 over its canonical
/// definition and the digests of the files its inputs match (the whole
/// workspace when it has none).
pub fn item_digest(definition: &[u8], inputs: Option<&InputGlobs>, snapshot: &Snapshot) -> Digest {
    let mut h = blake3::Hasher::new();
    h.update(b"gate.item.v1\0");
    h.update(&(definition.len() as u64).to_le_bytes());
    h.update(definition);
    h.update(&snapshot.digest_of(inputs).0);
    h.finalize().into()
}

/// What the walk never enters, whatever the ignore rules say.
#[derive(Debug, Clone)]
struct Skip {
    /// The state directory, canonical; `None` when it does not exist.
    state_dir: Option<PathBuf>,
    /// The run's own output files, canonical (a few at most).
    own_files: Vec<PathBuf>,
}

impl Skip {
    /// Whether the walk may enter or record `path` (named `name`).
    fn allows(&self, path: &Path, name: &OsStr) -> bool {
        if name == ".git"
            || self.state_dir.as_deref() == Some(path)
            || self.own_files.iter().any(|f| f == path)
        {
            return false;
        }
        if name.to_str().is_none() {
            tracing::warn!(
                path = %path.display(),
                "left out of the snapshot: the name is not UTF-8, so no spec can name it"
            );
            return false;
        }
        true
    }
}

fn canonical_root(root: &Path) -> Result<PathBuf, SnapshotError> {
    let fail = |source| SnapshotError::Root {
        path: root.to_path_buf(),
        source,
    };
    let canonical = root.canonicalize().map_err(fail)?;
    if !canonical.is_dir() {
        return Err(fail(io::Error::new(
            io::ErrorKind::NotADirectory,
            "not a directory",
        )));
    }
    Ok(canonical)
}

/// Walks `starts` (paths under `root`) and hashes every file and symlink
/// whose workspace-relative path `keep` accepts. With `ignores` the
/// workspace's ignore rules apply; without, everything is visited.
fn walk(
    root: &Path,
    starts: &[PathBuf],
    skip: &Skip,
    ignores: bool,
    keep: &(dyn Fn(&str) -> bool + Sync),
) -> Result<Vec<(String, FileEntry)>, SnapshotError> {
    let Some((first, rest)) = starts.split_first() else {
        return Ok(Vec::new());
    };
    let mut builder = WalkBuilder::new(first);
    for start in rest {
        builder.add(start);
    }
    let filter = skip.clone();
    builder
        .standard_filters(false)
        .git_ignore(ignores)
        // `.git/info/exclude` is not in the tree: whoever wrote `.git` could
        // hide a file from the fingerprint with it.
        .git_exclude(false)
        .require_git(false)
        .follow_links(false)
        .threads(0)
        .filter_entry(move |d| filter.allows(d.path(), d.file_name()));
    let shared = Shared {
        root,
        keep,
        found: Mutex::new(Vec::new()),
        failure: Mutex::new(None),
    };
    builder
        .build_parallel()
        .visit(&mut Builder { shared: &shared });
    if let Some(err) = lock(&shared.failure).take() {
        return Err(err);
    }
    Ok(shared
        .found
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner))
}

/// The ignored files `globs` match, hashed: each pattern's literal base is
/// walked with ignore rules off.
fn force_included(
    root: &Path,
    skip: &Skip,
    globs: &InputGlobs,
    have: &BTreeMap<String, FileEntry>,
) -> Result<Vec<(String, FileEntry)>, SnapshotError> {
    let keep = |rel: &str| globs.is_match(rel) && !have.contains_key(rel);
    let (folders, leaves) = forced_bases(root, skip, globs);
    let mut found = walk(root, &folders, skip, false, &keep)?;
    // The walker follows a symlink given as a starting point, so a base that
    // is not a folder is hashed here.
    let mut bufs = hash::Buffers::default();
    for leaf in leaves {
        let Some(rel) = relative(root, &leaf).filter(|rel| keep(rel)) else {
            continue;
        };
        let meta = match std::fs::symlink_metadata(&leaf) {
            Ok(meta) => meta,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(source) => return Err(SnapshotError::Read { path: leaf, source }),
        };
        let hashed = if meta.is_symlink() {
            hash::symlink(&leaf)
        } else if meta.is_file() {
            hash::file(&leaf, &mut bufs)
        } else {
            Ok(hash::Hashed::Special)
        };
        match hashed {
            Ok(hash::Hashed::Entry(entry)) => found.push((rel, entry)),
            Ok(hash::Hashed::Gone | hash::Hashed::Special) => {}
            Err(source) => return Err(SnapshotError::Read { path: leaf, source }),
        }
    }
    Ok(found)
}

/// Where the files `globs` can match lie: each pattern's literal base, when
/// it lies inside the workspace through real folders only (a symlinked
/// folder is never entered) and is neither `.git` nor the state directory.
/// Returns the folders to walk (none inside another) and the other entries
/// (files, symlinks) outside them.
fn forced_bases(root: &Path, skip: &Skip, globs: &InputGlobs) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let mut bases: Vec<(PathBuf, bool)> = globs
        .literal_bases()
        .iter()
        .filter_map(|base| walkable_base(root, skip, base))
        .collect();
    bases.sort();
    let mut folders: Vec<PathBuf> = Vec::new();
    let mut leaves: Vec<PathBuf> = Vec::new();
    for (base, is_dir) in bases {
        if folders.iter().any(|f| base.starts_with(f)) || leaves.contains(&base) {
            continue;
        }
        if is_dir {
            folders.push(base);
        } else {
            leaves.push(base);
        }
    }
    leaves.retain(|leaf| !folders.iter().any(|f| leaf.starts_with(f)));
    (folders, leaves)
}

/// `root` joined with `base`, and whether it is a real folder; `None` when
/// it does not exist or may not be entered.
fn walkable_base(root: &Path, skip: &Skip, base: &str) -> Option<(PathBuf, bool)> {
    let mut path = root.to_path_buf();
    let mut is_dir = true;
    for component in Path::new(base).components() {
        let Component::Normal(name) = component else {
            tracing::debug!(base, "input glob base leaves the workspace; not walked");
            return None;
        };
        // Only the last component may be something other than a folder.
        if !is_dir {
            return None;
        }
        path.push(name);
        if !skip.allows(&path, name) {
            return None;
        }
        is_dir = std::fs::symlink_metadata(&path).ok()?.is_dir();
    }
    Some((path, is_dir))
}

/// What the walker's threads share.
struct Shared<'a> {
    root: &'a Path,
    keep: &'a (dyn Fn(&str) -> bool + Sync),
    found: Mutex<Vec<(String, FileEntry)>>,
    failure: Mutex<Option<SnapshotError>>,
}

/// Hands each walker thread a visitor over the shared state.
struct Builder<'s> {
    shared: &'s Shared<'s>,
}

impl<'s> ParallelVisitorBuilder<'s> for Builder<'s> {
    fn build(&mut self) -> Box<dyn ParallelVisitor + 's> {
        Box::new(Visitor {
            shared: self.shared,
            bufs: hash::Buffers::default(),
            found: Vec::new(),
        })
    }
}

/// One walker thread: hashes what it is handed with its own buffers and
/// hands its results over when the walk ends.
struct Visitor<'s> {
    shared: &'s Shared<'s>,
    bufs: hash::Buffers,
    found: Vec<(String, FileEntry)>,
}

impl ParallelVisitor for Visitor<'_> {
    fn visit(&mut self, entry: Result<DirEntry, ignore::Error>) -> WalkState {
        let entry = match entry {
            Ok(entry) => entry,
            Err(err) => return self.fail_unless_harmless(err),
        };
        if let Some(err) = entry.error() {
            tracing::warn!(path = %entry.path().display(), %err, "problem reading an ignore file");
        }
        let Some(file_type) = entry.file_type() else {
            return WalkState::Continue;
        };
        if file_type.is_dir() {
            return WalkState::Continue;
        }
        let Some(rel) = relative(self.shared.root, entry.path()) else {
            return WalkState::Continue;
        };
        if !(self.shared.keep)(&rel) {
            return WalkState::Continue;
        }
        let hashed = if file_type.is_symlink() {
            hash::symlink(entry.path())
        } else if file_type.is_file() {
            hash::file(entry.path(), &mut self.bufs)
        } else {
            Ok(hash::Hashed::Special)
        };
        match hashed {
            Ok(hash::Hashed::Entry(e)) => self.found.push((rel, e)),
            Ok(hash::Hashed::Gone) => tracing::debug!(path = rel, "disappeared during the walk"),
            Ok(hash::Hashed::Special) => {
                tracing::debug!(path = rel, "not a regular file or symlink; left out");
            }
            Err(source) => {
                return self.fail(SnapshotError::Read {
                    path: entry.path().to_path_buf(),
                    source,
                });
            }
        }
        WalkState::Continue
    }
}

impl Visitor<'_> {
    /// A walker error: problems with an ignore file are warnings, a vanished
    /// entry is skipped, anything else ends the walk.
    fn fail_unless_harmless(&mut self, err: ignore::Error) -> WalkState {
        if err.is_partial() {
            tracing::warn!(%err, "problem reading an ignore file");
            return WalkState::Continue;
        }
        if err.io_error().map(io::Error::kind) == Some(io::ErrorKind::NotFound) {
            tracing::debug!(%err, "disappeared during the walk");
            return WalkState::Continue;
        }
        let path = error_path(&err).unwrap_or_else(|| self.shared.root.to_path_buf());
        let message = err.to_string();
        let source = err
            .into_io_error()
            .unwrap_or_else(|| io::Error::other(message));
        let err = if path == self.shared.root {
            SnapshotError::Root { path, source }
        } else {
            SnapshotError::Read { path, source }
        };
        self.fail(err)
    }

    fn fail(&mut self, err: SnapshotError) -> WalkState {
        lock(&self.shared.failure).get_or_insert(err);
        WalkState::Quit
    }
}

impl Drop for Visitor<'_> {
    fn drop(&mut self) {
        lock(&self.shared.found).append(&mut self.found);
    }
}

/// The path a walker error is about, if it names one.
fn error_path(err: &ignore::Error) -> Option<PathBuf> {
    match err {
        ignore::Error::WithPath { path, .. } => Some(path.clone()),
        ignore::Error::WithDepth { err, .. } | ignore::Error::WithLineNumber { err, .. } => {
            error_path(err)
        }
        ignore::Error::Partial(errs) => errs.iter().find_map(error_path),
        _ => None,
    }
}

/// `path` relative to `root`, `/`-separated as the snapshot's keys are;
/// `None` for `root` itself, a path outside it or a name that is not UTF-8.
pub fn relative(root: &Path, path: &Path) -> Option<String> {
    let rel = path.strip_prefix(root).ok()?;
    let mut out = String::new();
    for component in rel.components() {
        if !out.is_empty() {
            out.push('/');
        }
        out.push_str(component.as_os_str().to_str()?);
    }
    (!out.is_empty()).then_some(out)
}

/// Locks `m`, carrying on past a poisoned lock: a panicking walker thread
/// aborts the walk anyway, and what it left behind is never half-written.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use std::fs;
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::symlink;

    use super::*;

    fn write(root: &Path, rel: &str, bytes: impl AsRef<[u8]>) {
        let path = root.join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, bytes).unwrap();
    }

    fn keys(s: &Snapshot) -> Vec<&str> {
        s.entries().map(|(k, _)| k).collect()
    }

    fn globs(patterns: &[&str]) -> InputGlobs {
        InputGlobs::new(patterns).unwrap()
    }

    fn forcing(patterns: &[&str]) -> WalkOptions {
        WalkOptions {
            force_include: Some(globs(patterns)),
            ..WalkOptions::default()
        }
    }

    /// Deterministic bytes that differ from one `seed` to the next.
    fn bytes(seed: &str, len: usize) -> Vec<u8> {
        let mut out = vec![0; len];
        blake3::Hasher::new()
            .update(seed.as_bytes())
            .finalize_xof()
            .fill(&mut out);
        out
    }

    #[derive(Debug, Clone, Copy)]
    enum Repo {
        None,
        GitDir,
        Worktree,
    }

    #[test]
    fn walk_keeps_hidden_files_and_skips_git_state_own_files_and_ignored() {
        for repo in [Repo::None, Repo::GitDir, Repo::Worktree] {
            let tmp = tempfile::tempdir().unwrap();
            let ws = tmp.path().join("ws");
            for rel in [
                "a.txt",
                ".env.example",
                ".github/workflows/ci.yml",
                "x.log",
                "build/out.bin",
                "local.tmp",
                "sub/local.tmp",
                "sub/deeper/local.tmp",
                "sub/keep.log",
                "sub/other.log",
                "excluded.txt",
                "nested/f.txt",
                ".gate/ledger.db",
                ".gate/keys/signing.key",
                "result.json",
            ] {
                write(&ws, rel, rel);
            }
            write(&ws, ".gitignore", "*.log\nbuild/\n");
            write(&ws, "sub/.gitignore", "local.tmp\n!keep.log\n");
            // A submodule or nested worktree has a `.git` file.
            write(&ws, "nested/.git", "gitdir: /nonexistent\n");
            match repo {
                Repo::None => {}
                Repo::GitDir => {
                    write(&ws, ".git/HEAD", "ref: refs/heads/main\n");
                    write(&ws, ".git/info/exclude", "excluded.txt\n");
                }
                Repo::Worktree => {
                    let common = tmp.path().join("main/.git");
                    write(&common, "HEAD", "ref: refs/heads/main\n");
                    write(&common, "info/exclude", "excluded.txt\n");
                    let own = common.join("worktrees/ws");
                    write(&own, "commondir", "../..\n");
                    write(&own, "HEAD", "ref: refs/heads/ws\n");
                    write(&ws, ".git", format!("gitdir: {}\n", own.display()));
                }
            }
            // The workspace reached through a symlink, and the state directory
            // and the run's own output named by different, non-canonical
            // paths: compared canonically.
            let alias = tmp.path().join("alias");
            symlink(&ws, &alias).unwrap();
            let opts = WalkOptions {
                state_dir: Some(ws.join("sub/../.gate")),
                own_files: vec![ws.join("sub/../result.json")],
                force_include: None,
            };
            let snap = Snapshot::take(&alias, &opts).unwrap();

            let mut want = vec![
                ".env.example",
                ".github/workflows/ci.yml",
                ".gitignore",
                "a.txt",
                "local.tmp",
                "nested/f.txt",
                "sub/.gitignore",
                "sub/keep.log",
                // `.git/info/exclude` hides nothing.
                "excluded.txt",
            ];
            want.sort_unstable();
            assert_eq!(keys(&snap), want, "{repo:?}");
        }
    }

    #[test]
    fn force_include_brings_back_only_matched_ignored_files() {
        let tmp = tempfile::tempdir().unwrap();
        let ws = tmp.path();
        write(ws, ".gitignore", "*.log\nbuild/\n");
        for rel in [
            "src/main.rs",
            "x.log",
            "logs/y.log",
            "build/report.xml",
            "build/sub/a.xml",
            "build/sub/b.bin",
            ".git/config",
            ".git/x.log",
            ".gate/state.json",
        ] {
            write(ws, rel, rel);
        }
        symlink("/etc", ws.join("build/link")).unwrap();
        symlink("build", ws.join("ws_link")).unwrap();
        let always = [".gitignore", "src/main.rs", "ws_link"];
        let cases: &[(&[&str], &[&str])] = &[
            (&["build/report.xml"], &["build/report.xml"]),
            (
                &["build/**/*.xml"],
                &["build/report.xml", "build/sub/a.xml"],
            ),
            (&["**/*.log"], &["logs/y.log", "x.log"]),
            (
                &["build"],
                &[
                    "build/link",
                    "build/report.xml",
                    "build/sub/a.xml",
                    "build/sub/b.bin",
                ],
            ),
            (&["build/link"], &["build/link"]),
            (
                &["build/sub/*.xml", "build/**/*.xml"],
                &["build/report.xml", "build/sub/a.xml"],
            ),
            (&["src/**"], &[]),
            (&[".git/**", ".gate/**", "**/*.json"], &[]),
            (&["missing/**", "/etc/**", "../**"], &[]),
            // Through a symlinked folder: never entered.
            (&["ws_link/**", "ws_link/sub/*.xml"], &[]),
        ];
        for (patterns, extra) in cases {
            let mut opts = forcing(patterns);
            opts.state_dir = Some(ws.join(".gate"));
            let snap = Snapshot::take(ws, &opts).unwrap();
            let mut want: Vec<&str> = always.iter().chain(extra.iter()).copied().collect();
            want.sort_unstable();
            assert_eq!(keys(&snap), want, "{patterns:?}");
            for rel in *extra {
                let entry = snap.get(rel).unwrap();
                let want = if entry.kind == EntryKind::Symlink {
                    Digest::of(b"/etc")
                } else {
                    Digest::of(rel.as_bytes())
                };
                assert_eq!(entry.digest, want, "{rel}");
            }
        }
    }

    #[test]
    fn symlinks_are_recorded_by_target_and_never_followed() {
        let tmp = tempfile::tempdir().unwrap();
        let outside = tmp.path().join("outside");
        write(&outside, "secret.txt", "secret");
        // Opening a FIFO for reading blocks until a writer comes: the walk
        // would hang if it opened one.
        let fifo = outside.join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        let ws = tmp.path().join("ws");
        write(&ws, "a.txt", "a");
        nix::unistd::mkfifo(&ws.join("pipe"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        let links: Vec<(&str, PathBuf)> = vec![
            ("to_file", outside.join("secret.txt")),
            ("to_dir", outside.clone()),
            ("to_fifo", fifo),
            ("dangling", PathBuf::from("nowhere/at/all")),
            ("rel", PathBuf::from("a.txt")),
        ];
        for (name, target) in &links {
            symlink(target, ws.join(name)).unwrap();
        }
        let opts = forcing(&["to_dir/**", "to_file", "to_fifo"]);
        let snap = Snapshot::take(&ws, &opts).unwrap();
        assert_eq!(
            keys(&snap),
            ["a.txt", "dangling", "rel", "to_dir", "to_fifo", "to_file"]
        );
        for (name, target) in &links {
            let entry = snap.get(name).unwrap();
            let target = target.as_os_str().as_bytes();
            assert_eq!(entry.kind, EntryKind::Symlink, "{name}");
            assert_eq!(entry.digest, Digest::of(target), "{name}");
            assert_eq!(entry.size, target.len() as u64, "{name}");
        }
        assert_eq!(snap.regular_files().collect::<Vec<_>>(), ["a.txt"]);
    }

    #[test]
    fn digests_are_blake3_of_the_bytes() {
        let tmp = tempfile::tempdir().unwrap();
        let large = usize::try_from(hash::LARGE_FILE).unwrap();
        let sizes = [
            0,
            1,
            1023,
            16 * 1024,
            256 * 1024,
            256 * 1024 + 1,
            1024 * 1024 + 7,
            large - 1,
            large + 4 * 1024 * 1024 + 3,
        ];
        for (i, len) in sizes.iter().enumerate() {
            write(tmp.path(), &format!("f{i}"), bytes(&i.to_string(), *len));
        }
        let snap = Snapshot::take(tmp.path(), &WalkOptions::default()).unwrap();
        assert_eq!(snap.len(), sizes.len());
        for (i, len) in sizes.iter().enumerate() {
            let entry = snap.get(&format!("f{i}")).unwrap();
            let want = blake3::hash(&bytes(&i.to_string(), *len));
            assert_eq!(entry.digest, Digest::from(want), "size {len}");
            assert_eq!(entry.size, *len as u64);
            assert_eq!(entry.kind, EntryKind::File);
        }
    }

    #[test]
    fn input_digests_change_exactly_when_inputs_or_definition_change() {
        type Change = fn(&Path);
        let base = |ws: &Path| {
            write(ws, ".gitignore", "*.tmp\n");
            write(ws, "src/a.rs", "fn a() {}");
            write(ws, "src/b.rs", "fn b() {}");
            write(ws, "docs/x.md", "# x");
            symlink("a.rs", ws.join("src/link")).unwrap();
        };
        // (what, change, matched inputs change, whole workspace changes)
        let cases: &[(&str, Change, bool, bool)] = &[
            ("nothing", |_| {}, false, false),
            (
                "same bytes rewritten",
                |ws| write(ws, "src/a.rs", "fn a() {}"),
                false,
                false,
            ),
            (
                "matched file edited",
                |ws| write(ws, "src/a.rs", "fn a() { 1 }"),
                true,
                true,
            ),
            (
                "matched file added",
                |ws| write(ws, "src/c.rs", ""),
                true,
                true,
            ),
            (
                "matched file deleted",
                |ws| fs::remove_file(ws.join("src/b.rs")).unwrap(),
                true,
                true,
            ),
            (
                "matched file renamed",
                |ws| fs::rename(ws.join("src/b.rs"), ws.join("src/c.rs")).unwrap(),
                true,
                true,
            ),
            (
                "matched symlink retargeted",
                |ws| {
                    fs::remove_file(ws.join("src/link")).unwrap();
                    symlink("b.rs", ws.join("src/link")).unwrap();
                },
                true,
                true,
            ),
            (
                "unmatched file edited",
                |ws| write(ws, "docs/x.md", "# y"),
                false,
                true,
            ),
            (
                "unmatched file added",
                |ws| write(ws, "docs/y.md", ""),
                false,
                true,
            ),
            (
                "ignored file added",
                |ws| write(ws, "src/scratch.tmp", "x"),
                false,
                false,
            ),
        ];
        let inputs = globs(&["src/**"]);
        let def = b"run = \"./check.sh\"";
        for (what, change, inputs_change, whole_change) in cases {
            let tmp = tempfile::tempdir().unwrap();
            base(tmp.path());
            let before = Snapshot::take(tmp.path(), &WalkOptions::default()).unwrap();
            change(tmp.path());
            let after = Snapshot::take(tmp.path(), &WalkOptions::default()).unwrap();
            let changed = |d: &dyn Fn(&Snapshot) -> Digest| d(&before) != d(&after);
            assert_eq!(
                changed(&|s| s.digest_of(Some(&inputs))),
                *inputs_change,
                "{what}: digest_of(inputs)"
            );
            assert_eq!(
                changed(&|s| item_digest(def, Some(&inputs), s)),
                *inputs_change,
                "{what}: item_digest(inputs)"
            );
            assert_eq!(
                changed(&|s| s.digest_of(None)),
                *whole_change,
                "{what}: digest_of(None)"
            );
            assert_eq!(
                changed(&|s| item_digest(def, None, s)),
                *whole_change,
                "{what}: item_digest(None)"
            );
            // The definition counts on its own, with the files unchanged.
            assert_ne!(
                item_digest(def, Some(&inputs), &after),
                item_digest(b"run = \"./check.sh --all\"", Some(&inputs), &after),
                "{what}: definition"
            );
        }
    }

    #[test]
    fn names_that_are_not_utf8_are_left_out() {
        let tmp = tempfile::tempdir().unwrap();
        let ws = tmp.path();
        write(ws, "ok.txt", "ok");
        fs::write(ws.join(OsStr::from_bytes(b"bad\xff.txt")), "x").unwrap();
        let dir = ws.join(OsStr::from_bytes(b"dir\xfe"));
        fs::create_dir(&dir).unwrap();
        fs::write(dir.join("inner.txt"), "x").unwrap();
        let snap = Snapshot::take(ws, &forcing(&["**"])).unwrap();
        assert_eq!(keys(&snap), ["ok.txt"]);
    }

    #[test]
    fn a_workspace_that_is_not_a_folder_is_an_error_naming_it() {
        let tmp = tempfile::tempdir().unwrap();
        write(tmp.path(), "file", "x");
        for rel in ["missing", "file"] {
            let path = tmp.path().join(rel);
            let err = Snapshot::take(&path, &WalkOptions::default()).unwrap_err();
            assert!(
                matches!(&err, SnapshotError::Root { path: p, .. } if *p == path),
                "{rel}: {err:?}"
            );
            assert!(
                err.to_string().contains(&path.display().to_string()),
                "{err}"
            );
        }
    }
}
