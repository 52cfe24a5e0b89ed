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
//! A path that was there after the run but is not in the snapshot (an
//! ignored build output, a folder) is left out: what produced it is
//! followed instead, through [`Observed::fed_by`].

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use gate_evidence::Snapshot;
use gate_harness::trace::Accesses;
use gate_specs::InputGlobs;
use serde::{Deserialize, Serialize};

/// The value of a key the snapshot holds nothing at.
const NOTHING: &str = "-";

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
    /// absent path from an ignored one; `fed_by` names the writers.
    pub(crate) fn new(
        accesses: &Accesses,
        snapshot: &Snapshot,
        workspace: &Path,
        fed_by: &BTreeSet<&str>,
    ) -> Self {
        let mut read = BTreeMap::new();
        for path in &accesses.paths {
            match snapshot.get(path) {
                Some(entry) => {
                    read.insert(path.clone(), entry.digest.to_hex());
                }
                None if std::fs::symlink_metadata(workspace.join(path)).is_err() => {
                    read.insert(path.clone(), NOTHING.to_owned());
                }
                None => {}
            }
        }
        for dir in &accesses.listed {
            let key = listing_key(dir);
            let value = value(&key, snapshot);
            read.insert(key, value);
        }
        for suffix in &accesses.suffixes {
            let key = format!("*/{suffix}");
            let value = value(&key, snapshot);
            read.insert(key, value);
        }
        Self {
            read,
            fed_by: fed_by.iter().map(|s| (*s).to_owned()).collect(),
            incomplete: accesses.incomplete.clone(),
            outside_inputs: Vec::new(),
        }
    }

    /// The keys whose value in `snapshot` differs from what was read.
    pub(crate) fn changed(&self, snapshot: &Snapshot) -> Vec<&str> {
        self.read
            .iter()
            .filter(|(key, was)| value(key, snapshot) != **was)
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
                    && !key.ends_with('/')
                    && !key.starts_with("*/")
                    && !declared.is_match(key)
            })
            .map(|(key, _)| key.clone())
            .collect();
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

/// What `key` holds in `snapshot`.
fn value(key: &str, snapshot: &Snapshot) -> String {
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
        let names: BTreeSet<&str> = snapshot
            .entries()
            .filter_map(|(path, _)| path.strip_prefix(prefix.as_str()))
            .map(|rest| rest.split('/').next().unwrap_or(rest))
            .collect();
        let mut hasher = blake3::Hasher::new();
        for name in names {
            hasher.update(name.as_bytes());
            hasher.update(b"\n");
        }
        return hasher.finalize().to_hex().to_string();
    }
    snapshot
        .get(key)
        .map_or_else(|| NOTHING.to_owned(), |e| e.digest.to_hex())
}

#[cfg(test)]
mod tests {
    use super::*;
    use gate_evidence::snapshot::{EntryKind, FileEntry};

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
        let observed = Observed::new(&accesses, &before, ws.path(), &BTreeSet::new());
        assert!(observed.changed(&before).is_empty());
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
            assert_eq!(observed.changed(&after).first().copied(), want, "{name}");
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
        let observed = Observed::new(&accesses, &snapshot(&[]), ws.path(), &fed);
        assert!(observed.read.is_empty(), "{:?}", observed.read);
        assert_eq!(observed.fed_by, ["build"]);
    }
}
