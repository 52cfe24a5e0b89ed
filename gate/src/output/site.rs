//! Where things are, for renderers that point into the repository (SARIF,
//! GitHub annotations, GitLab Code Quality): the workspace's place in its
//! repository, the spec file, and the line each check and criterion is
//! defined on. Places only: nothing here decides anything.

use std::collections::HashMap;
use std::path::Path;

use gate_specs::{Format, Locator, Seg};

/// The places a run's results point at.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Site {
    /// From the repository root to the workspace, with a trailing `/`
    /// (empty when the workspace is the root, or in no repository).
    pub prefix: String,
    /// The spec file, relative to the repository root.
    pub spec_file: String,
    /// The 1-based line each check and criterion id is defined on.
    pub lines: HashMap<String, u32>,
}

impl Site {
    /// The site of a run over `workspace` with the spec at `spec_path`
    /// (both absolute).
    pub(crate) fn locate(workspace: &Path, spec_path: &Path) -> Self {
        let root = repository_root(workspace).unwrap_or(workspace);
        let prefix = workspace
            .strip_prefix(root)
            .ok()
            .map(slash_path)
            .filter(|p| !p.is_empty())
            .map(|p| format!("{p}/"))
            .unwrap_or_default();
        let spec_file = spec_path
            .strip_prefix(root)
            .ok()
            .map(slash_path)
            .or_else(|| {
                spec_path
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
            })
            .unwrap_or_else(|| "gate.toml".to_owned());
        let lines = std::fs::read_to_string(spec_path)
            .map(|text| spec_lines(&text, Format::from_path(spec_path)))
            .unwrap_or_default();
        Self {
            prefix,
            spec_file,
            lines,
        }
    }

    /// A workspace-relative path as a repository-relative one.
    pub(crate) fn path(&self, workspace_relative: &str) -> String {
        let p = workspace_relative.trim_start_matches("./");
        format!("{}{p}", self.prefix)
    }

    /// The spec line an item is defined on (1 when unknown).
    pub(crate) fn line_of(&self, id: &str) -> u32 {
        self.lines.get(id).copied().unwrap_or(1)
    }
}

/// The nearest folder at or above `dir` holding `.git`.
fn repository_root(dir: &Path) -> Option<&Path> {
    dir.ancestors().find(|d| d.join(".git").exists())
}

fn slash_path(p: &Path) -> String {
    p.to_string_lossy().replace('\\', "/")
}

/// Lines of every check, task-tests precondition and criterion in a spec.
fn spec_lines(text: &str, format: Format) -> HashMap<String, u32> {
    let Ok(spec) = gate_specs::parse_str(text, Path::new("spec"), format) else {
        return HashMap::new();
    };
    let locator = Locator::new(text, format);
    let line = |path: &[Seg]| {
        locator
            .key(path)
            .and_then(|p| u32::try_from(p.line).ok())
            .unwrap_or(1)
    };
    let mut lines = HashMap::new();
    for (i, check) in spec.checks.iter().enumerate() {
        lines.insert(
            check.id.clone(),
            line(&gate_specs::key_path!["check", i, "id"]),
        );
    }
    for (t, task) in spec.tasks.iter().enumerate() {
        lines.insert(
            format!("{}.tests", task.id),
            line(&gate_specs::key_path!["task", t, "tests"]),
        );
        for (c, criterion) in task.criteria.iter().enumerate() {
            lines.insert(
                criterion.id.clone(),
                line(&gate_specs::key_path!["task", t, "criterion", c, "id"]),
            );
        }
    }
    for (id, key) in [
        ("builtin.secrets", "builtin_secrets"),
        ("builtin.conflicts", "builtin_conflicts"),
        ("builtin.parse", "builtin_parse"),
    ] {
        lines.insert(id.to_owned(), line(&gate_specs::key_path!["policy", key]));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_point_at_their_definition_and_paths_at_the_repository_root() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path();
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        let ws = repo.join("services/shop");
        std::fs::create_dir_all(&ws).unwrap();
        let spec = ws.join("gate.toml");
        std::fs::write(
            &spec,
            "[spec]\nid = \"s\"\n\n[[check]]\nid = \"build\"\nrun = \"true\"\n\n[[task]]\nid = \"t\"\ntests = { run = \"true\" }\n[[task.criterion]]\nid = \"c\"\ntext = \"x\"\nrun = \"true\"\n",
        )
        .unwrap();
        let site = Site::locate(&ws, &spec);
        assert_eq!(site.prefix, "services/shop/");
        assert_eq!(site.spec_file, "services/shop/gate.toml");
        assert_eq!(site.path("src/a.rs"), "services/shop/src/a.rs");
        for (id, want) in [
            ("build", 5),
            ("t.tests", 10),
            ("c", 12),
            ("builtin.secrets", 1),
            ("nope", 1),
        ] {
            assert_eq!(site.line_of(id), want, "{id}");
        }

        // A workspace in no repository is its own root.
        let lone = tempfile::tempdir().unwrap();
        let spec = lone.path().join("gate.toml");
        std::fs::write(&spec, "[spec]\nid = \"s\"\n").unwrap();
        let site = Site::locate(lone.path(), &spec);
        assert_eq!(site.prefix, "");
        assert_eq!(site.spec_file, "gate.toml");
    }
}
