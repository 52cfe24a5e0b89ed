//! The content the items ran on, after they ran.
//!
//! Reviewers, house rules and the bundle's subjects must see the files the
//! checks and criteria were run on, not what the disk holds once they have
//! run: code under test can rewrite its own file at start-up (a backdoor
//! that scrubs itself), and the reviewers would be sent the scrubbed text.
//! For each fingerprinted file the items changed, the content fingerprinted
//! before they ran is recovered from the commit the workspace is at, when
//! git's copy has that fingerprint; otherwise it is gone, and nothing is
//! shown or recorded in its place.

use std::collections::BTreeMap;
use std::path::Path;

use gate_evidence::{Digest, Snapshot};

use crate::git::Git;

/// A file the items changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Altered {
    /// Whether HEAD's tree holds the file (a tracked file, not a build's
    /// output).
    pub tracked: bool,
    /// What it held when it was fingerprinted, when HEAD's copy is that.
    pub bytes: Option<Vec<u8>>,
}

/// The files the items changed, by workspace-relative path.
#[derive(Debug, Clone, Default)]
pub(crate) struct Tested {
    altered: BTreeMap<String, Altered>,
}

impl Tested {
    /// Compares the fingerprints taken before (`before`) and after
    /// (`after`) the items ran, and recovers each changed file's tested
    /// content from `head` (the commit the workspace was at, resolved
    /// before they ran).
    pub(crate) async fn recover(
        git: &Git,
        workspace: &Path,
        head: Option<&str>,
        before: &Snapshot,
        after: &Snapshot,
    ) -> Self {
        let mut altered = BTreeMap::new();
        for (path, entry) in before.entries() {
            if after
                .get(path)
                .is_some_and(|now| now.digest == entry.digest)
            {
                continue;
            }
            let committed = match head {
                Some(commit) => git
                    .read_at(commit, &workspace.join(path))
                    .await
                    .ok()
                    .flatten(),
                None => None,
            };
            let tracked = committed.is_some();
            let bytes = committed.filter(|b| Digest::of(b) == entry.digest);
            altered.insert(path.to_owned(), Altered { tracked, bytes });
        }
        Self { altered }
    }

    /// What became of `path`, when the items changed it.
    pub(crate) fn altered(&self, path: &str) -> Option<&Altered> {
        self.altered.get(path)
    }

    /// The tested content of each changed file, `None` where it is gone:
    /// what a reader of the workspace takes instead of the disk.
    pub(crate) fn substitutes(&self) -> BTreeMap<String, Option<&[u8]>> {
        self.altered
            .iter()
            .map(|(path, a)| (path.clone(), a.bytes.as_deref()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gate_evidence::snapshot::WalkOptions;

    /// A tracked file rewritten by the items is recovered from HEAD, a
    /// tracked file edited before the run and then rewritten is gone, an
    /// untracked one is gone and untracked, an untouched one is absent.
    #[tokio::test]
    async fn what_the_items_changed_is_recovered_from_the_commit_when_it_was_committed() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path();
        let git_in = |args: &[&str]| {
            #[allow(clippy::disallowed_methods)] // test set-up
            let ok = std::process::Command::new("git")
                .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
                .args(args)
                .current_dir(ws)
                .status()
                .unwrap()
                .success();
            assert!(ok, "git {args:?}");
        };
        git_in(&["init", "-q", "-b", "main"]);
        for file in ["app.py", "edited.py", "same.py"] {
            std::fs::write(ws.join(file), format!("{file} committed\n")).unwrap();
        }
        git_in(&["add", "."]);
        git_in(&["commit", "-qm", "work"]);
        std::fs::write(ws.join("edited.py"), "edited before the run\n").unwrap();
        std::fs::write(ws.join("new.py"), "untracked\n").unwrap();
        let before = Snapshot::take(ws, &WalkOptions::default()).unwrap();
        for file in ["app.py", "edited.py", "new.py"] {
            std::fs::write(ws.join(file), "scrubbed\n").unwrap();
        }
        let after = Snapshot::take(ws, &WalkOptions::default()).unwrap();
        let path = crate::environment::Environment::capture()
            .path()
            .map(ToOwned::to_owned);
        let git = Git::new(
            gate_harness::Launcher::new(crate::git::environment(path, None)),
            crate::git::Repository::find(ws),
        );
        let head = git.resolve_commit(ws, "HEAD").await.unwrap();
        let tested = Tested::recover(&git, ws, Some(&head), &before, &after).await;
        let committed = Altered {
            tracked: true,
            bytes: Some(b"app.py committed\n".to_vec()),
        };
        for (file, want) in [
            ("app.py", Some(committed)),
            (
                "edited.py",
                Some(Altered {
                    tracked: true,
                    bytes: None,
                }),
            ),
            (
                "new.py",
                Some(Altered {
                    tracked: false,
                    bytes: None,
                }),
            ),
            ("same.py", None),
        ] {
            assert_eq!(tested.altered(file), want.as_ref(), "{file}");
        }
    }
}
