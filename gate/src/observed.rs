//! What an item was seen to read, as its record keeps it: each workspace
//! path it accessed with what the path held when the run began, so a
//! retry can tell whether anything it read has changed since.
//!
//! The values come from the run's snapshot (the content fingerprinted
//! before the items ran), never from the disk afterwards. Keys:
//! - `path`: a file or a probe; the value is the file's blake3, or `-`
//!   when the snapshot holds no file there and none was there after the
//!   run (a probe for a file that did not exist: creating it changes what
//!   the item would do).
//! - `dir/`: a folder it listed; the value digests the names the snapshot
//!   holds directly in it (`./` is the workspace's root).
//! - `*/name`: a relative name it used where its working directory was not
//!   known; the value digests every file that is `name` or ends with
//!   `/name`.
//!
//! A path the snapshot does not hold (an ignored file, a folder) is
//! valued from the disk, as it is after the run and as the next attempt
//! finds it before anything runs: `ignored:` and the file's blake3, `/`
//! for a folder, `link:` and its target, `-` for nothing. One an item of
//! the run wrote (an ignored build output) is left out: what produced it
//! is followed instead, through [`Observed::fed_by`]. A listed folder the
//! snapshot holds nothing in is valued by the names on the disk, unless
//! the run wrote there. What an item of a run changed that a carried one
//! had read is caught after the items ran, by valuing its keys again.
//!
//! A path the snapshot does not hold may lead through symbolic links in
//! the workspace (`l/main.rs` with `l -> src`): it is followed as the
//! links are after the run, and the links and the path reached are read
//! too, so a change to either is seen. A link an item made outside the
//! workspace that may lead back into it leaves what any item read through
//! it unknown: [`links_made`] then says why no trace of the run is whole.
//! A link made in the workspace that was gone after the run, or made by
//! two items, may have led elsewhere while the run read through it: an
//! item whose names pass through one is incomplete.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::path::{Component, Path, PathBuf};

use gate_evidence::Snapshot;
use gate_harness::trace::{Accesses, Traced};
use gate_specs::InputGlobs;
use serde::{Deserialize, Serialize};

/// The value of a key the snapshot holds nothing at.
const NOTHING: &str = "-";

/// The value of a folder the snapshot does not hold.
const FOLDER: &str = "/";

/// What a key is valued against: the fingerprinted workspace, and the disk
/// for what the fingerprint leaves out.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Tree<'a> {
    /// The run's snapshot, taken before any item ran.
    pub snapshot: &'a Snapshot,
    /// The workspace on the disk.
    pub workspace: &'a Path,
}

/// What an item was seen to read.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Observed {
    /// Each key it read (a path, `dir/` for a listing, `*/name` for a
    /// relative name) and what the key held when the run began.
    pub read: BTreeMap<String, String>,
    /// The items of the same run that wrote ignored files it read: when one
    /// of them re-runs, so does this item.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fed_by: Vec<String>,
    /// Why the trace cannot be relied on, when it cannot: the item is then
    /// never carried.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub incomplete: Option<String>,
    /// The files it read that its declared `inputs` (or its task's
    /// `paths`) do not match: what a spec could name to be exact.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub outside_inputs: Vec<String>,
}

impl Observed {
    /// What `accesses` read, valued from `snapshot`; `workspace` tells an
    /// absent path from an ignored one; `made` holds the run's links that
    /// cannot be followed as they are now; `fed_by` names the writers.
    pub(crate) fn new(
        accesses: &Accesses,
        snapshot: &Snapshot,
        (workspace, made): (&Path, &MadeLinks),
        fed_by: &BTreeSet<&str>,
    ) -> Self {
        let mut read = BTreeMap::new();
        let mut incomplete = accesses.incomplete.clone();
        let mut links = Links::new(workspace, &made.unstable);
        let tree = Tree {
            snapshot,
            workspace,
        };
        let keep = |read: &mut BTreeMap<String, String>, path: &str| {
            // An output of the run is followed through its producer; the
            // workspace's own folder (looked at by every `cd`) is always
            // there, and a listing of it is kept apart.
            if path.is_empty() || (snapshot.get(path).is_none() && made.written.contains(path)) {
                return;
            }
            read.insert(path.to_owned(), value(path, tree));
        };
        for path in &accesses.paths {
            let followed = match snapshot.get(path) {
                Some(_) => None,
                None => links.follow(path),
            };
            // A name through links is read as the links and what they reach.
            let Some(followed) = followed else {
                keep(&mut read, path);
                continue;
            };
            {
                if let Some(why) = &followed.unstable {
                    incomplete.get_or_insert_with(|| format!("it read {path} {why}"));
                }
                for link in &followed.links {
                    keep(&mut read, link);
                }
                if let Some(reached) = &followed.reached {
                    keep(&mut read, reached);
                }
            }
        }
        for dir in &accesses.listed {
            let mut dirs = vec![dir.clone()];
            if let Some(followed) = links.follow(dir) {
                if let Some(why) = &followed.unstable {
                    incomplete.get_or_insert_with(|| format!("it listed {dir} {why}"));
                }
                for link in &followed.links {
                    keep(&mut read, link);
                }
                dirs.extend(followed.reached);
            }
            for dir in dirs {
                let key = listing_key(&dir);
                if made.wrote_under(&dir) && !holds_under(snapshot, &dir) {
                    continue;
                }
                let value = value(&key, tree);
                read.insert(key, value);
            }
        }
        for suffix in &accesses.suffixes {
            let key = format!("*/{suffix}");
            let value = value(&key, tree);
            read.insert(key, value);
        }
        // A name whose folder is not known may have passed through any link.
        if let (Some(suffix), Some((link, why))) =
            (accesses.suffixes.first(), made.unstable.iter().next())
        {
            incomplete.get_or_insert_with(|| {
                format!(
                    "it used the name {suffix} from a folder not known, and the link {link} {why}"
                )
            });
        }
        Self {
            read,
            fed_by: fed_by.iter().map(|s| (*s).to_owned()).collect(),
            incomplete,
            outside_inputs: Vec::new(),
        }
    }

    /// The keys whose value in `tree` differs from what was read.
    pub(crate) fn changed(&self, tree: Tree<'_>) -> Vec<&str> {
        self.read
            .iter()
            .filter(|(key, was)| value(key, tree) != **was)
            .map(|(key, _)| key.as_str())
            .collect()
    }

    /// Notes the files it read that `declared` (its inputs) does not match.
    pub(crate) fn note_outside(&mut self, declared: &InputGlobs) {
        self.outside_inputs = self
            .read
            .iter()
            .filter(|(key, value)| {
                *value != NOTHING
                    && *value != FOLDER
                    && !key.ends_with('/')
                    && !key.starts_with("*/")
                    && !declared.is_match(key)
            })
            .map(|(key, _)| key.clone())
            .collect();
    }
}

/// The links a run's items made, as far as their traces tell what was
/// read through them.
#[derive(Debug, Default)]
pub(crate) struct MadeLinks {
    /// Why no trace of the run can be relied on: a link that may lead into
    /// the workspace by a name the tracers cannot place.
    pub(crate) leads_back: Option<String>,
    /// Links made in the workspace that may have led elsewhere while the
    /// run read through them, with why: gone after the run, or made by
    /// more than one item.
    unstable: BTreeMap<String, String>,
    /// Every workspace path an item of the run wrote.
    pub(crate) written: BTreeSet<String>,
}

impl MadeLinks {
    /// Whether an item of the run wrote in `dir` (`""`: anywhere).
    fn wrote_under(&self, dir: &str) -> bool {
        dir.is_empty()
            || self
                .written
                .iter()
                .any(|w| w.strip_prefix(dir).is_some_and(|r| r.starts_with('/')))
    }
}

/// Whether `snapshot` holds anything in `dir`.
fn holds_under(snapshot: &Snapshot, dir: &str) -> bool {
    dir.is_empty()
        || snapshot
            .entries()
            .any(|(p, _)| p.strip_prefix(dir).is_some_and(|r| r.starts_with('/')))
}

/// What the links made in a run leave unknown.
pub(crate) fn links_made(traced: &[Traced<'_>], workspace: &Path) -> MadeLinks {
    let mut made = MadeLinks::default();
    let mut makers: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (id, accesses, _) in traced {
        if let Some(what) = &accesses.leads_back {
            made.leads_back.get_or_insert_with(|| {
                format!(
                    "{id} made a link that may lead into the workspace by another name \
                     ({what}): what any item of the run read through it cannot be told"
                )
            });
        }
        for path in &accesses.linked {
            makers.entry(path.as_str()).or_default().push(id);
        }
        made.written.extend(accesses.written.iter().cloned());
    }
    for (path, ids) in makers {
        let there = std::fs::symlink_metadata(workspace.join(path))
            .is_ok_and(|m| m.file_type().is_symlink());
        if ids.len() > 1 {
            made.unstable.insert(
                path.to_owned(),
                format!("through the link at {path}, made by {}", ids.join(" and ")),
            );
        } else if !there {
            made.unstable.insert(
                path.to_owned(),
                format!(
                    "through the link {} made at {path}, gone after the run",
                    ids[0]
                ),
            );
        }
    }
    made
}

/// Where a workspace path led through symbolic links.
#[derive(Debug, PartialEq, Eq)]
struct Followed {
    /// The links on the way, workspace-relative.
    links: Vec<String>,
    /// The path reached, when it is in the workspace.
    reached: Option<String>,
    /// Why where it led cannot be told: it went through a link made in the
    /// run that may have led elsewhere then.
    unstable: Option<String>,
}

/// How many links a path may go through, as Linux allows.
const MAX_LINKS: usize = 40;

/// Symbolic links in the workspace as they are after the run, each looked
/// at once.
struct Links<'a> {
    workspace: &'a Path,
    /// Links made in the run that may have led elsewhere while it ran.
    unstable: &'a BTreeMap<String, String>,
    /// Each workspace path looked at, and what is there.
    seen: HashMap<String, There>,
}

/// What is at a workspace path after the run.
#[derive(Debug, Clone)]
enum There {
    /// A symbolic link, with its target.
    Link(PathBuf),
    /// Something else.
    Other,
    /// Nothing.
    Missing,
}

impl<'a> Links<'a> {
    fn new(workspace: &'a Path, unstable: &'a BTreeMap<String, String>) -> Self {
        Self {
            workspace,
            unstable,
            seen: HashMap::new(),
        }
    }

    /// What is at `rel`.
    fn at(&mut self, rel: &str) -> There {
        let workspace = self.workspace;
        self.seen
            .entry(rel.to_owned())
            .or_insert_with(|| {
                let path = workspace.join(rel);
                match std::fs::symlink_metadata(&path) {
                    Ok(meta) if meta.file_type().is_symlink() => {
                        std::fs::read_link(&path).map_or(There::Missing, There::Link)
                    }
                    Ok(_) => There::Other,
                    Err(_) => There::Missing,
                }
            })
            .clone()
    }

    /// Where `rel` leads, when a link or a `..` is on its way; `None` when
    /// neither is.
    fn follow(&mut self, rel: &str) -> Option<Followed> {
        let mut todo: VecDeque<String> = rel.split('/').map(str::to_owned).collect();
        let mut at: Vec<String> = Vec::new();
        let mut links = Vec::new();
        let mut missing = false;
        // Where it ended short of a path: out of the workspace, too many
        // links, or through one that cannot be followed.
        let short = |links: Vec<String>, unstable: Option<&String>| Followed {
            links,
            reached: None,
            unstable: unstable.cloned(),
        };
        while let Some(part) = todo.pop_front() {
            match part.as_str() {
                "" | "." => continue,
                ".." => {
                    if at.pop().is_none() {
                        return Some(short(links, None));
                    }
                    continue;
                }
                _ => at.push(part),
            }
            let here = at.join("/");
            if let Some(why) = self.unstable.get(&here) {
                return Some(short(links, Some(why)));
            }
            if missing {
                continue;
            }
            let target = match self.at(&here) {
                There::Link(target) => target,
                There::Other => continue,
                There::Missing => {
                    // Nothing below can be a link: the rest is lexical.
                    missing = true;
                    continue;
                }
            };
            links.push(here);
            if links.len() > MAX_LINKS {
                return Some(short(links, None));
            }
            at.pop();
            let rest = if target.is_absolute() {
                let Ok(rest) = target.strip_prefix(self.workspace) else {
                    return Some(short(links, None));
                };
                at.clear();
                rest.to_path_buf()
            } else {
                target
            };
            let parts: Vec<String> = rest
                .components()
                .filter_map(|c| match c {
                    Component::Normal(p) => Some(p.to_string_lossy().into_owned()),
                    Component::ParentDir => Some("..".to_owned()),
                    _ => None,
                })
                .collect();
            for part in parts.into_iter().rev() {
                todo.push_front(part);
            }
        }
        if links.is_empty() && !rel.split('/').any(|p| p == "..") {
            return None;
        }
        Some(Followed {
            links,
            reached: Some(at.join("/")),
            unstable: None,
        })
    }
}

/// The key of a listing of `dir` (workspace-relative, `""` for the root).
fn listing_key(dir: &str) -> String {
    if dir.is_empty() {
        "./".to_owned()
    } else {
        format!("{dir}/")
    }
}

/// What `key` holds in `tree`.
fn value(key: &str, tree: Tree<'_>) -> String {
    let snapshot = tree.snapshot;
    if let Some(suffix) = key.strip_prefix("*/") {
        let tail = format!("/{suffix}");
        let mut hasher = blake3::Hasher::new();
        let mut any = false;
        for (path, entry) in snapshot.entries() {
            if path == suffix || path.ends_with(&tail) {
                any = true;
                hasher.update(path.as_bytes());
                hasher.update(b"\0");
                hasher.update(entry.digest.to_hex().as_bytes());
                hasher.update(b"\n");
            }
        }
        return if any {
            hasher.finalize().to_hex().to_string()
        } else {
            NOTHING.to_owned()
        };
    }
    if let Some(dir) = key.strip_suffix('/') {
        let prefix = if dir == "." {
            String::new()
        } else {
            format!("{dir}/")
        };
        let mut names: BTreeSet<String> = snapshot
            .entries()
            .filter_map(|(path, _)| path.strip_prefix(prefix.as_str()))
            .map(|rest| rest.split('/').next().unwrap_or(rest).to_owned())
            .collect();
        // A folder the fingerprint holds nothing of is listed as it is.
        if names.is_empty()
            && let Ok(entries) = std::fs::read_dir(tree.workspace.join(dir))
        {
            names.extend(
                entries
                    .filter_map(Result::ok)
                    .map(|e| e.file_name().to_string_lossy().into_owned()),
            );
        }
        let mut hasher = blake3::Hasher::new();
        for name in names {
            hasher.update(name.as_bytes());
            hasher.update(b"\n");
        }
        return hasher.finalize().to_hex().to_string();
    }
    match snapshot.get(key) {
        Some(entry) => entry.digest.to_hex(),
        None => on_disk(&tree.workspace.join(key)),
    }
}

/// What a path the fingerprint leaves out holds on the disk.
fn on_disk(path: &Path) -> String {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return NOTHING.to_owned();
    };
    if meta.is_dir() {
        return FOLDER.to_owned();
    }
    if meta.file_type().is_symlink() {
        return std::fs::read_link(path).map_or_else(
            |e| format!("unreadable: {}", e.kind()),
            |t| format!("link:{}", t.display()),
        );
    }
    if !meta.is_file() {
        return "special".to_owned();
    }
    let mut hasher = blake3::Hasher::new();
    match std::fs::File::open(path).and_then(|f| hasher.update_reader(f).map(|_| ())) {
        Ok(()) => format!("ignored:{}", hasher.finalize().to_hex()),
        // Unreadable now may be readable later: never equal to a read.
        Err(e) => format!("unreadable: {}", e.kind()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gate_evidence::snapshot::{EntryKind, FileEntry};

    fn tree<'a>(snapshot: &'a Snapshot, workspace: &'a Path) -> Tree<'a> {
        Tree {
            snapshot,
            workspace,
        }
    }

    fn snapshot(files: &[(&str, &str)]) -> Snapshot {
        Snapshot::from_entries(
            files
                .iter()
                .map(|(path, content)| {
                    (
                        (*path).to_owned(),
                        FileEntry {
                            digest: gate_evidence::Digest::of(content.as_bytes()),
                            size: content.len() as u64,
                            kind: EntryKind::File,
                        },
                    )
                })
                .collect(),
        )
    }

    /// Each kind of key, read on one tree and looked at on another: which
    /// change is seen.
    #[test]
    fn a_change_to_anything_read_is_seen_and_nothing_else() {
        let before = snapshot(&[
            ("src/lib.rs", "a"),
            ("src/set.rs", "b"),
            ("tests/ttl.rs", "c"),
            ("README.md", "d"),
        ]);
        let accesses = Accesses {
            paths: ["src/lib.rs", "src/set.rs", "src/conftest.py"]
                .map(String::from)
                .into(),
            listed: ["tests"].map(String::from).into(),
            suffixes: ["ttl.rs"].map(String::from).into(),
            ..Accesses::default()
        };
        let ws = tempfile::tempdir().unwrap();
        let observed = Observed::new(
            &accesses,
            &before,
            (ws.path(), &MadeLinks::default()),
            &BTreeSet::new(),
        );
        assert!(observed.changed(tree(&before, ws.path())).is_empty());
        type Case = (
            &'static str,
            Vec<(&'static str, &'static str)>,
            Option<&'static str>,
        );
        let cases: Vec<Case> = vec![
            (
                "a source it stat'ed",
                vec![("src/set.rs", "B")],
                Some("src/set.rs"),
            ),
            (
                "a file it probed for is created",
                vec![("src/conftest.py", "x")],
                Some("src/conftest.py"),
            ),
            (
                "a file appears in a folder it listed",
                vec![("tests/more.rs", "x")],
                Some("tests/"),
            ),
            (
                "the file its relative name reached",
                vec![("tests/ttl.rs", "C")],
                Some("*/ttl.rs"),
            ),
            ("a file it never looked at", vec![("README.md", "D")], None),
        ];
        for (name, edits, want) in cases {
            let mut files: BTreeMap<String, String> = [
                ("src/lib.rs", "a"),
                ("src/set.rs", "b"),
                ("tests/ttl.rs", "c"),
                ("README.md", "d"),
            ]
            .into_iter()
            .map(|(p, c)| (p.to_owned(), c.to_owned()))
            .collect();
            for (path, content) in edits {
                files.insert(path.to_owned(), content.to_owned());
            }
            let pairs: Vec<(&str, &str)> = files
                .iter()
                .map(|(p, c)| (p.as_str(), c.as_str()))
                .collect();
            let after = snapshot(&pairs);
            assert_eq!(
                observed.changed(tree(&after, ws.path())).first().copied(),
                want,
                "{name}"
            );
        }
    }

    #[test]
    fn an_ignored_output_is_left_to_its_producer() {
        let ws = tempfile::tempdir().unwrap();
        std::fs::create_dir(ws.path().join("target")).unwrap();
        std::fs::write(ws.path().join("target/app"), "bin").unwrap();
        let accesses = Accesses {
            paths: ["target/app", "target"].map(String::from).into(),
            ..Accesses::default()
        };
        let fed: BTreeSet<&str> = ["build"].into();
        let made = MadeLinks {
            written: ["target", "target/app"].map(String::from).into(),
            ..MadeLinks::default()
        };
        let observed = Observed::new(&accesses, &snapshot(&[]), (ws.path(), &made), &fed);
        assert!(observed.read.is_empty(), "{:?}", observed.read);
        assert_eq!(observed.fed_by, ["build"]);
    }

    /// What the fingerprint leaves out and no item of the run wrote is
    /// valued from the disk: an ignored file, one probed for, a folder, a
    /// hard link to a tracked file, an ignored folder's listing.
    #[test]
    fn an_ignored_file_nothing_of_the_run_wrote_is_read_from_the_disk() {
        let ws = tempfile::tempdir().unwrap();
        let at = |p: &str| ws.path().join(p);
        std::fs::create_dir_all(at(".cache/dir")).unwrap();
        std::fs::write(at(".cache/ign.txt"), "one").unwrap();
        std::fs::write(at("data.txt"), "tracked").unwrap();
        std::fs::hard_link(at("data.txt"), at(".cache/hard.txt")).unwrap();
        let before = snapshot(&[("data.txt", "tracked")]);
        let accesses = Accesses {
            paths: [
                "",
                ".cache/ign.txt",
                ".cache/flag",
                ".cache/dir",
                ".cache/hard.txt",
            ]
            .map(String::from)
            .into(),
            listed: [".cache"].map(String::from).into(),
            ..Accesses::default()
        };
        let observed = Observed::new(
            &accesses,
            &before,
            (ws.path(), &MadeLinks::default()),
            &BTreeSet::new(),
        );
        assert_eq!(observed.read[".cache/flag"], NOTHING);
        assert_eq!(observed.read[".cache/dir"], FOLDER);
        assert!(
            !observed.read.contains_key(""),
            "the workspace is always there"
        );
        assert!(observed.read[".cache/ign.txt"].starts_with("ignored:"));
        assert!(observed.changed(tree(&before, ws.path())).is_empty());
        type Edit = fn(&Path);
        let cases: [(&str, Edit, &str); 5] = [
            (
                "an ignored file edited",
                |w| {
                    std::fs::write(w.join(".cache/ign.txt"), "two").unwrap();
                },
                ".cache/ign.txt",
            ),
            (
                "a file probed for is created",
                |w| {
                    std::fs::write(w.join(".cache/flag"), "").unwrap();
                },
                ".cache/flag",
            ),
            (
                "a folder removed",
                |w| {
                    std::fs::remove_dir(w.join(".cache/dir")).unwrap();
                },
                ".cache/dir",
            ),
            (
                "the tracked file behind a hard link edited in place",
                |w| {
                    std::fs::write(w.join("data.txt"), "changed").unwrap();
                },
                ".cache/hard.txt",
            ),
            (
                "a file appears in an ignored folder it listed",
                |w| {
                    std::fs::write(w.join(".cache/new"), "").unwrap();
                },
                ".cache/",
            ),
        ];
        for (name, edit, want) in cases {
            let copy = tempfile::tempdir().unwrap();
            let cp = |p: &str| copy.path().join(p);
            std::fs::create_dir_all(cp(".cache/dir")).unwrap();
            std::fs::write(cp(".cache/ign.txt"), "one").unwrap();
            std::fs::write(cp("data.txt"), "tracked").unwrap();
            std::fs::hard_link(cp("data.txt"), cp(".cache/hard.txt")).unwrap();
            assert!(
                observed.changed(tree(&before, copy.path())).is_empty(),
                "{name}"
            );
            edit(copy.path());
            assert!(
                observed.changed(tree(&before, copy.path())).contains(&want),
                "{name}: {:?}",
                observed.changed(tree(&before, copy.path()))
            );
        }
    }

    /// A name through a link in the workspace is read as the links on the
    /// way and the path they reach: a change to the file reached, or a file
    /// appearing where a probe looked, is seen through the link.
    #[test]
    fn a_name_through_a_link_in_the_workspace_reads_what_it_reaches() {
        use std::os::unix::fs::symlink;
        let ws = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(ws.path().join("src/inner")).unwrap();
        std::fs::write(ws.path().join("src/main.rs"), "a").unwrap();
        symlink("src", ws.path().join("l")).unwrap();
        symlink(ws.path().join("src/inner"), ws.path().join("abs")).unwrap();
        symlink("../..", ws.path().join("src/up")).unwrap();
        symlink("loop", ws.path().join("loop")).unwrap();
        // (the name read, the links on the way, the path reached)
        let cases: [(&str, &[&str], Option<&str>); 6] = [
            ("l/main.rs", &["l"], Some("src/main.rs")),
            ("l/flag", &["l"], Some("src/flag")),
            ("abs/x/y", &["abs"], Some("src/inner/x/y")),
            ("l/inner/../main.rs", &["l"], Some("src/main.rs")),
            ("src/up/etc", &["src/up"], None),
            ("loop/x", &["loop"; 41], None),
        ];
        let none = BTreeMap::new();
        let mut links = Links::new(ws.path(), &none);
        for (name, via, reached) in cases {
            let got = links.follow(name).unwrap();
            assert_eq!(got.links, via, "{name}");
            assert_eq!(got.reached.as_deref(), reached, "{name}");
        }
        assert_eq!(links.follow("src/main.rs"), None);
        // No link, but `..`: where it leads all the same.
        assert_eq!(
            links.follow("src/inner/../main.rs"),
            Some(Followed {
                links: Vec::new(),
                reached: Some("src/main.rs".into()),
                unstable: None,
            })
        );
        assert_eq!(links.follow("src/none/x"), None);

        let before = snapshot(&[("src/main.rs", "a"), ("l", "src")]);
        let accesses = Accesses {
            paths: ["l/main.rs", "l/flag"].map(String::from).into(),
            listed: ["l"].map(String::from).into(),
            ..Accesses::default()
        };
        let observed = Observed::new(
            &accesses,
            &before,
            (ws.path(), &MadeLinks::default()),
            &BTreeSet::new(),
        );
        let keys: Vec<&str> = observed.read.keys().map(String::as_str).collect();
        assert_eq!(keys, ["l", "l/", "src/", "src/flag", "src/main.rs"]);
        let cases = [
            (
                "the file reached",
                vec![("src/main.rs", "b"), ("l", "src")],
                "src/main.rs",
            ),
            (
                "a file where it probed",
                vec![("src/main.rs", "a"), ("l", "src"), ("src/flag", "x")],
                "src/",
            ),
            ("the link", vec![("src/main.rs", "a"), ("l", "other")], "l"),
        ];
        for (name, files, want) in cases {
            let after = snapshot(&files);
            assert!(
                observed.changed(tree(&after, ws.path())).contains(&want),
                "{name}: {:?}",
                observed.changed(tree(&after, ws.path()))
            );
        }
    }

    /// Links made in a run: one that may lead back into the workspace
    /// leaves every trace of the run short; one gone after the run, or made
    /// by two items, leaves short only an item whose names pass through it;
    /// one still there, made once, none.
    #[test]
    fn links_made_in_a_run_that_cannot_be_followed_are_told() {
        let ws = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(ws.path().join("src")).unwrap();
        std::os::unix::fs::symlink("src", ws.path().join("l")).unwrap();
        let made = |linked: &[&str], back: Option<&str>, read: &[&str]| Accesses {
            linked: linked.iter().map(|s| (*s).to_owned()).collect(),
            leads_back: back.map(str::to_owned),
            paths: read.iter().map(|s| (*s).to_owned()).collect(),
            ..Accesses::default()
        };
        let (kept, gone, out, none, through_l, through_m) = (
            made(&["l"], None, &[]),
            made(&["m"], None, &[]),
            made(&[], Some("/tmp/l -> /ws"), &[]),
            made(&[], None, &["src/x"]),
            made(&[], None, &["l/x"]),
            made(&[], None, &["m/x"]),
        );
        // (case, the run's items, whether every trace is short, the items
        // left short)
        type Case<'a> = (&'a str, Vec<Traced<'a>>, bool, &'a [&'a str]);
        let cases: [Case<'_>; 6] = [
            ("nothing made", vec![("a", &none, (0, 1))], false, &[]),
            (
                "a link still there",
                vec![("a", &kept, (0, 1)), ("b", &through_l, (0, 1))],
                false,
                &[],
            ),
            (
                "a link gone, read through",
                vec![
                    ("a", &gone, (0, 1)),
                    ("b", &through_m, (0, 1)),
                    ("c", &none, (0, 1)),
                ],
                false,
                &["b"],
            ),
            (
                "a link made by two items",
                vec![
                    ("a", &kept, (0, 1)),
                    ("b", &kept, (0, 1)),
                    ("c", &through_l, (0, 1)),
                ],
                false,
                &["c"],
            ),
            (
                "a link made by two items, not read through",
                vec![
                    ("a", &kept, (0, 1)),
                    ("b", &kept, (0, 1)),
                    ("c", &none, (0, 1)),
                ],
                false,
                &[],
            ),
            (
                "a link that leads back",
                vec![("a", &none, (0, 1)), ("b", &out, (0, 1))],
                true,
                &[],
            ),
        ];
        for (name, traced, all, short) in cases {
            let made = links_made(&traced, ws.path());
            assert_eq!(made.leads_back.is_some(), all, "{name}");
            let got: Vec<&str> = traced
                .iter()
                .filter(|(_, accesses, _)| {
                    Observed::new(
                        accesses,
                        &snapshot(&[]),
                        (ws.path(), &made),
                        &BTreeSet::new(),
                    )
                    .incomplete
                    .is_some()
                })
                .map(|(id, _, _)| *id)
                .collect();
            assert_eq!(got, short, "{name}");
        }
    }
}
