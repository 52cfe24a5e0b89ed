//! `gate init`: a commented starter spec.

use std::path::Path;

use crate::errors::GateError;

/// The starter spec, commented; it parses and validates as written.
pub const STARTER_SPEC: &str = include_str!("init/gate.toml");

/// Writes `gate.toml` into `dir`, refusing to overwrite one.
pub fn write_starter(dir: &Path) -> Result<Vec<String>, GateError> {
    let path = dir.join("gate.toml");
    write_new(&path, STARTER_SPEC)?;
    Ok(vec![path.display().to_string()])
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
        write_starter(dir.path()).unwrap();
        let err = write_starter(dir.path()).unwrap_err();
        assert!(matches!(err, GateError::Exists { .. }), "{err}");
    }
}
