//! State the agent cannot plant: the gate's records and key never come
//! from the repository under review.
//!
//! The agent writes the repository. A signing key, a ledger or a state
//! directory that git tracks (committed, or staged to be) is one the change
//! could have put there: a key of the agent's would sign the run's bundle,
//! a ledger of its own would carry a forged history of attempts. Such a run
//! is refused before anything of the workspace runs; a state directory the
//! CI keeps inside the project folder (GitLab keeps caches and artifacts
//! only from there) is fine as long as git does not track it.

use std::path::{Path, PathBuf};

use crate::errors::GateError;
use crate::git::Git;

/// Refuses the run when git tracks any of `own` (the gate's records and
/// key, [`crate::attest::record_paths`]): in HEAD's tree or in the index.
/// Outside a repository, or for paths outside its work tree, there is
/// nothing to plant them with.
pub(crate) async fn refuse_tracked(git: &Git, own: &[PathBuf]) -> Result<(), GateError> {
    let Ok(repository) = git.repository() else {
        return Ok(());
    };
    let top = repository.work_tree().to_path_buf();
    let inside: Vec<String> = own
        .iter()
        .filter_map(|p| relative(&top, p))
        .map(|rel| format!(":(literal){rel}"))
        .collect();
    if inside.is_empty() {
        return Ok(());
    }
    let mut listings = Vec::new();
    if git.head(&top).await.is_ok() {
        let mut args = vec!["ls-tree", "-r", "-z", "--name-only", "HEAD", "--"];
        args.extend(inside.iter().map(String::as_str));
        listings.push(git.run(&top, &args).await);
    }
    let mut args = vec!["ls-files", "-z", "--cached", "--"];
    args.extend(inside.iter().map(String::as_str));
    listings.push(git.run(&top, &args).await);
    let mut tracked: Vec<String> = Vec::new();
    for listing in listings {
        let listing = listing.map_err(|why| GateError::Workspace {
            path: top.clone(),
            reason: format!("cannot tell whether git tracks the gate's state: {why}"),
        })?;
        tracked.extend(
            listing
                .split(|b| *b == 0)
                .filter(|p| !p.is_empty())
                .map(|p| String::from_utf8_lossy(p).into_owned()),
        );
    }
    tracked.sort();
    tracked.dedup();
    match tracked.first() {
        None => Ok(()),
        Some(first) => Err(GateError::Usage(format!(
            "git tracks {} of the gate's own state ({first}{}): a signing key, ledger or state \
             directory in the repository under review is one the change could have planted, so \
             the run is refused. Keep the state out of git (`git rm -r --cached` it and add it \
             to .gitignore) or set GATE_STATE_DIR to a folder outside the repository",
            if tracked.len() == 1 {
                "a file".to_owned()
            } else {
                format!("{} files", tracked.len())
            },
            if tracked.len() > 1 { ", …" } else { "" },
        ))),
    }
}

/// `path` relative to `top` (`/`-separated), when it lies inside it:
/// compared canonically where it exists, else through its nearest existing
/// folder.
fn relative(top: &Path, path: &Path) -> Option<String> {
    let mut existing = path.to_path_buf();
    let mut rest: Vec<std::ffi::OsString> = Vec::new();
    let real = loop {
        if let Ok(real) = existing.canonicalize() {
            break real;
        }
        rest.push(existing.file_name()?.to_os_string());
        existing = existing.parent()?.to_path_buf();
    };
    let full = rest.iter().rev().fold(real, |acc, part| acc.join(part));
    let rel = full.strip_prefix(top).ok()?;
    let text = rel.to_str()?.to_owned();
    (!text.is_empty()).then_some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_named_from_the_top_canonically_even_before_they_exist() {
        let dir = tempfile::tempdir().unwrap();
        let top = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(top.join("app/.gate")).unwrap();
        for (path, want) in [
            (top.join("app/.gate"), Some("app/.gate")),
            (
                top.join("app/./.gate/keys/signing.key"),
                Some("app/.gate/keys/signing.key"),
            ),
            (top.join("app/new/ledger.db"), Some("app/new/ledger.db")),
            (top.clone(), None),
            (PathBuf::from("/"), None),
        ] {
            assert_eq!(relative(&top, &path).as_deref(), want, "{}", path.display());
        }
    }
}
