//! `gate init`: a commented starter spec, the routing table to edit, and a
//! signing key.

use std::path::Path;

use crate::errors::GateError;

/// The starter spec, commented; it parses and validates as written.
pub(crate) const STARTER_SPEC: &str = include_str!("init/gate.toml");

/// `gate init`: the starter files, then the signing key (an existing key
/// is kept).
pub(crate) fn run(ctx: &crate::config::Context) -> Result<u8, GateError> {
    use std::fmt::Write as _;
    let mut out = String::new();
    for path in write_starter(&ctx.workspace)? {
        let _ = writeln!(out, "wrote {path}");
    }
    if let Some(entry) = ignore_state(ctx)? {
        let _ = writeln!(
            out,
            "added {entry} to .gitignore: the signing key, ledger and bundles must never be \
             committed (a run refuses a state directory git tracks)"
        );
    }
    let keys = crate::attest::keys_dir(ctx);
    if keys.join(gate_evidence::keys::PRIVATE_KEY_FILE).exists() {
        let _ = writeln!(out, "kept the signing key in {}", keys.display());
    } else {
        let (key, paths) = crate::attest::generate_keys(ctx)?;
        let _ = writeln!(
            out,
            "wrote {} and {} (key id {})",
            paths.private.display(),
            paths.public.display(),
            key.keyid()
        );
    }
    crate::output::stdout(&out).map_err(GateError::stdout)?;
    Ok(crate::exit::PASS)
}

/// Adds the state directory, when it lies inside the workspace, to the
/// workspace's `.gitignore` (created when missing); the entry added, or
/// `None` when it was there already or the state is kept elsewhere.
fn ignore_state(ctx: &crate::config::Context) -> Result<Option<String>, GateError> {
    let Some(state) = ctx.state_inside_workspace() else {
        return Ok(None);
    };
    let workspace = ctx
        .workspace
        .canonicalize()
        .unwrap_or_else(|_| ctx.workspace.clone());
    let Some(rel) = state
        .strip_prefix(&workspace)
        .ok()
        .and_then(Path::to_str)
        .filter(|r| !r.is_empty())
    else {
        return Ok(None);
    };
    let entry = format!("/{rel}/");
    let file = ctx.workspace.join(".gitignore");
    let text = match std::fs::read_to_string(&file) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(source) => return Err(GateError::Write { path: file, source }),
    };
    let same = |line: &str| {
        let line = line.trim();
        line.trim_start_matches('/').trim_end_matches('/') == rel
    };
    if text.lines().any(same) {
        return Ok(None);
    }
    let mut new = text;
    if !new.is_empty() && !new.ends_with('\n') {
        new.push('\n');
    }
    new.push_str("# gate's state: its signing key, ledger and bundles\n");
    new.push_str(&entry);
    new.push('\n');
    std::fs::write(&file, new).map_err(|source| GateError::Write {
        path: file.clone(),
        source,
    })?;
    Ok(Some(entry))
}

/// Writes `gate.toml` and `routing.toml` (the built-in table, commented, to
/// edit) into `dir`, refusing to overwrite either: when one exists, nothing
/// is written.
pub(crate) fn write_starter(dir: &Path) -> Result<Vec<String>, GateError> {
    let spec = dir.join("gate.toml");
    let routing = dir.join("routing.toml");
    for path in [&spec, &routing] {
        if path.exists() {
            return Err(GateError::Exists { path: path.clone() });
        }
    }
    write_new(&spec, STARTER_SPEC)?;
    write_new(&routing, gate_review::routing::DEFAULT_TABLE)?;
    Ok(vec![
        spec.display().to_string(),
        routing.display().to_string(),
    ])
}

fn write_new(path: &Path, text: &str) -> Result<(), GateError> {
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| {
            if e.kind() == std::io::ErrorKind::AlreadyExists {
                GateError::Exists {
                    path: path.to_path_buf(),
                }
            } else {
                GateError::Write {
                    path: path.to_path_buf(),
                    source: e,
                }
            }
        })?;
    file.write_all(text.as_bytes())
        .map_err(|e| GateError::Write {
            path: path.to_path_buf(),
            source: e,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starter_spec_is_valid() {
        let spec = gate_specs::parse_str(
            STARTER_SPEC,
            Path::new("gate.toml"),
            gate_specs::Format::Toml,
        )
        .unwrap();
        assert!(!spec.checks.is_empty());
        assert!(!spec.tasks.is_empty());
    }

    #[test]
    fn refuses_to_overwrite() {
        let dir = tempfile::tempdir().unwrap();
        let written = write_starter(dir.path()).unwrap();
        assert_eq!(written.len(), 2);
        let err = write_starter(dir.path()).unwrap_err();
        assert!(matches!(err, GateError::Exists { .. }), "{err}");
        // One existing file means nothing is written.
        let other = tempfile::tempdir().unwrap();
        std::fs::write(other.path().join("routing.toml"), "# mine\n").unwrap();
        assert!(write_starter(other.path()).is_err());
        assert!(!other.path().join("gate.toml").exists());
    }

    #[test]
    fn the_routing_table_written_is_the_builtin_one() {
        let dir = tempfile::tempdir().unwrap();
        write_starter(dir.path()).unwrap();
        let routing =
            gate_review::routing::Routing::load(&dir.path().join("routing.toml")).unwrap();
        assert_eq!(
            routing.table,
            gate_review::routing::Routing::builtin().table
        );
    }
}
