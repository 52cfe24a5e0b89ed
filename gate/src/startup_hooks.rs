//! Python's start-up hooks in the workspace's virtual environments: the
//! code every Python of the environment runs before its own, the exam's
//! among them.
//!
//! A `.pth` file with an `import` line, `sitecustomize.py`,
//! `usercustomize.py` and a `pytest11` entry point all run before a test
//! does, so one an item or the change wrote decides the exam however the
//! tests read. A hook is the environment's only when a distribution
//! installed from an index or a lock file (its `.dist-info` has no
//! `direct_url.json`, which pip writes for a local folder, a URL or an
//! editable install) lists it in its `RECORD` with the digest it has now,
//! and so is every module of the environment an executable `.pth` line
//! imports. Anything else is a critical finding naming the file. A `.pth`
//! of paths alone (an editable install's) adds folders to `sys.path` and
//! runs nothing. The one `.pth` no distribution lists that is still the
//! environment's is the `import _virtualenv` line `virtualenv` and `uv
//! venv` write when they make one; the module it imports is theirs too and
//! is not compared with anything.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use gate_review::findings::Finding;
use sha2::Digest as _;

use crate::guard::GUARD_ROLE;

/// How deep below the workspace a virtual environment's `pyvenv.cfg` is
/// looked for (`.venv/pyvenv.cfg` is one level down).
const VENV_DEPTH: usize = 3;

/// Folders never searched for an environment.
const SKIPPED: [&str; 3] = [".git", "node_modules", "target"];

/// The start-up hooks of the workspace's environments that nothing
/// vouches for, as critical findings (workspace-relative paths).
pub(crate) fn unvouched(workspace: &Path) -> Vec<Finding> {
    let mut out = Vec::new();
    for venv in environments(workspace) {
        for site in site_packages(&venv) {
            let records = Records::read(&site);
            for (hook, why) in hooks(&site)
                .into_iter()
                .filter_map(|h| records.judge(&site, &h).map(|why| (h, why)))
            {
                let rel = hook
                    .path()
                    .strip_prefix(workspace)
                    .unwrap_or(hook.path())
                    .display()
                    .to_string();
                out.push(finding(&rel, &why));
            }
        }
    }
    out
}

/// What items wrote, by workspace-relative path, that is a start-up hook's
/// place (a `.pth`, `sitecustomize.py` or `usercustomize.py` in a
/// `site-packages` or `dist-packages` folder, a distribution's
/// `entry_points.txt`, where `pytest11` plugins are named) and is gone from
/// `workspace` after the run: whatever Python ran while it was there ran
/// it, and the scan after the run cannot see it. Each is a critical
/// finding naming the file and the items that wrote it.
pub(crate) fn written_and_gone<'a>(
    workspace: &Path,
    written: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Vec<Finding> {
    let mut gone: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (item, path) in written {
        if hook_place(path) && std::fs::symlink_metadata(workspace.join(path)).is_err() {
            gone.entry(path).or_default().push(item);
        }
    }
    gone.into_iter()
        .map(|(path, items)| {
            let by = items
                .iter()
                .map(|i| format!("`{i}`"))
                .collect::<Vec<_>>()
                .join(", ");
            Finding::raised(
                GUARD_ROLE,
                "critical",
                path.to_owned(),
                None,
                format!(
                    "`{path}`, a Python start-up hook, was written by {by} and gone after the run"
                ),
                format!(
                    "Python runs a start-up hook of an environment before any test, and this one \
                     was there only while the run's items ran, so whatever Python ran meanwhile \
                     (the exam among them) may have run it, and no look at the workspace after \
                     the run shows it. Written by {by}."
                ),
                1.0,
            )
        })
        .collect()
}

/// Whether a workspace path is where Python or pytest finds start-up code.
fn hook_place(path: &str) -> bool {
    let mut parts = path.rsplit('/');
    let name = parts.next().unwrap_or(path);
    let folder = parts.next().unwrap_or("");
    let in_site = folder == "site-packages" || folder == "dist-packages";
    let pth = Path::new(name).extension().is_some_and(|e| e == "pth");
    (in_site && (pth || name == "sitecustomize.py" || name == "usercustomize.py"))
        || (name == "entry_points.txt"
            && Path::new(folder)
                .extension()
                .is_some_and(|e| e == "dist-info" || e == "egg-info"))
}

/// The findings of `after` whose file `before` did not already name.
pub(crate) fn new_since(before: &[Finding], after: Vec<Finding>) -> Vec<Finding> {
    after
        .into_iter()
        .filter(|f| !before.iter().any(|b| b.file == f.file))
        .collect()
}

fn finding(file: &str, why: &str) -> Finding {
    Finding::raised(
        GUARD_ROLE,
        "critical",
        file.to_owned(),
        None,
        format!(
            "`{file}` runs at every Python start-up, before the exam, and nothing vouches for it"
        ),
        format!(
            "Python runs this start-up hook of a virtual environment in the workspace before \
             any test, so it can decide the exam whatever the tests say; {why}. Remove it, or \
             install what brings it from an index or a lock file."
        ),
        1.0,
    )
}

/// The folders under `workspace` holding a `pyvenv.cfg`.
pub(crate) fn environments(workspace: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut level = vec![workspace.to_path_buf()];
    for _ in 0..VENV_DEPTH {
        let mut next = Vec::new();
        for dir in level {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                let path = entry.path();
                let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
                let skipped = SKIPPED.iter().any(|s| entry.file_name() == *s);
                if !is_dir || skipped {
                    continue;
                }
                if path.join("pyvenv.cfg").is_file() {
                    found.push(path);
                } else {
                    next.push(path);
                }
            }
        }
        level = next;
    }
    found.sort();
    found
}

/// `lib/python*/site-packages` (and `lib64`) of an environment.
fn site_packages(venv: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for lib in ["lib", "lib64"] {
        let Ok(entries) = std::fs::read_dir(venv.join(lib)) else {
            continue;
        };
        for entry in entries.flatten() {
            let site = entry.path().join("site-packages");
            let python = entry.file_name().to_string_lossy().starts_with("python");
            // `lib64` is often a link to `lib`: one look is enough.
            if python && site.is_dir() && !out.iter().any(|o: &PathBuf| same_file(o, &site)) {
                out.push(site);
            }
        }
    }
    out
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// A hook found in a site-packages folder.
#[derive(Debug)]
enum Hook {
    /// A `.pth` file with an `import` line: the modules its lines import.
    Pth(PathBuf, Vec<String>),
    /// `sitecustomize.py` or `usercustomize.py`.
    Customize(PathBuf),
    /// A distribution's `entry_points.txt` with a `[pytest11]` section:
    /// the modules it names, which pytest imports at start-up.
    PytestPlugin(PathBuf, Vec<String>),
}

impl Hook {
    fn path(&self) -> &Path {
        match self {
            Self::Pth(p, _) | Self::Customize(p) | Self::PytestPlugin(p, _) => p,
        }
    }

    /// The modules it makes Python import, by dotted name.
    fn imports(&self) -> &[String] {
        match self {
            Self::Pth(_, m) | Self::PytestPlugin(_, m) => m,
            Self::Customize(_) => &[],
        }
    }
}

/// The modules the `[pytest11]` section of an `entry_points.txt` names
/// (`name = package.module:object`).
fn pytest_plugins(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut inside = false;
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            inside = line == "[pytest11]";
            continue;
        }
        if !inside {
            continue;
        }
        if let Some((_, target)) = line.split_once('=') {
            let module = target.split(':').next().unwrap_or("").trim();
            if !module.is_empty() && !out.iter().any(|o| o == module) {
                out.push(module.to_owned());
            }
        }
    }
    out
}

/// The files importing `module` (dotted) runs in `site`: each package's
/// `__init__.py` on the way, and the module's own file.
fn module_files(site: &Path, module: &str) -> Vec<PathBuf> {
    let parts: Vec<&str> = module.split('.').collect();
    let mut out = Vec::new();
    let mut dir = site.to_path_buf();
    for (i, part) in parts.iter().enumerate() {
        if i + 1 == parts.len() {
            out.push(dir.join(format!("{part}.py")));
        }
        dir = dir.join(part);
        out.push(dir.join("__init__.py"));
    }
    out
}

/// The hooks of `site`, in name order.
fn hooks(site: &Path) -> Vec<Hook> {
    let Ok(entries) = std::fs::read_dir(site) else {
        return Vec::new();
    };
    let mut names: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    names.sort();
    let mut out = Vec::new();
    for path in names {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        // As `site` does: the ending as it is spelled, `.pth`.
        if path.extension().is_some_and(|e| e == "pth") && path.is_file() {
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            let imports = pth_imports(&text);
            if text.lines().any(executable_line) && !creators_hook(&name, &text) {
                out.push(Hook::Pth(path, imports));
            }
        } else if (name == "sitecustomize.py" || name == "usercustomize.py")
            || (path.is_dir() && (name == "sitecustomize" || name == "usercustomize"))
        {
            out.push(Hook::Customize(path));
        } else if name.ends_with(".dist-info") {
            let entry_points = path.join("entry_points.txt");
            let text = std::fs::read_to_string(&entry_points).unwrap_or_default();
            if text.lines().any(|l| l.trim() == "[pytest11]") {
                out.push(Hook::PytestPlugin(entry_points, pytest_plugins(&text)));
            }
        }
    }
    out
}

/// Whether the `.pth` is the one `virtualenv` and `uv venv` write when
/// they make an environment (no distribution lists it): exactly one line,
/// `import _virtualenv`.
fn creators_hook(name: &str, text: &str) -> bool {
    name == "_virtualenv.pth" && text.trim_end() == "import _virtualenv"
}

/// Whether `site` runs a `.pth` line: one that starts with `import`
/// followed by a space or a tab.
fn executable_line(line: &str) -> bool {
    line.starts_with("import ") || line.starts_with("import\t")
}

/// The top-level modules the executable lines of a `.pth` import.
fn pth_imports(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines().filter(|l| executable_line(l)) {
        for statement in line.split(';') {
            let Some(rest) = statement.trim().strip_prefix("import") else {
                continue;
            };
            for name in rest.split(',') {
                let top = name.split_whitespace().next().unwrap_or("");
                let top = top.split('.').next().unwrap_or("");
                if !top.is_empty() && !out.iter().any(|o| o == top) {
                    out.push(top.to_owned());
                }
            }
        }
    }
    out
}

/// What the distributions of one site-packages folder list: a file's
/// path (relative to the folder) → its `sha256=` digest, for those
/// installed from an index or a lock file.
struct Records {
    from_index: BTreeMap<PathBuf, String>,
    /// Files listed by a distribution installed from a folder, a URL or
    /// in editable mode: the change's, not the environment's.
    from_elsewhere: BTreeMap<PathBuf, String>,
}

impl Records {
    fn read(site: &Path) -> Self {
        let mut records = Self {
            from_index: BTreeMap::new(),
            from_elsewhere: BTreeMap::new(),
        };
        let Ok(entries) = std::fs::read_dir(site) else {
            return records;
        };
        for entry in entries.flatten() {
            let dist = entry.path();
            if !dist.to_string_lossy().ends_with(".dist-info") {
                continue;
            }
            let Ok(text) = std::fs::read_to_string(dist.join("RECORD")) else {
                continue;
            };
            let from_index = !dist.join("direct_url.json").exists();
            for line in text.lines() {
                // `path,sha256=digest,size`; a path with a comma is quoted.
                let (path, rest) = match line.strip_prefix('"') {
                    Some(quoted) => match quoted.split_once("\",") {
                        Some(parts) => parts,
                        None => continue,
                    },
                    None => match line.split_once(',') {
                        Some(parts) => parts,
                        None => continue,
                    },
                };
                let Some(digest) = rest
                    .split(',')
                    .next()
                    .and_then(|h| h.strip_prefix("sha256="))
                else {
                    continue;
                };
                let into = if from_index {
                    &mut records.from_index
                } else {
                    &mut records.from_elsewhere
                };
                into.insert(PathBuf::from(path), digest.to_owned());
            }
        }
        records
    }

    /// Why `hook` is not the environment's, or `None` when it is.
    fn judge(&self, site: &Path, hook: &Hook) -> Option<String> {
        let own = self.vouch(site, hook.path());
        if own.is_some() {
            return own;
        }
        for module in hook.imports() {
            for file in module_files(site, module) {
                if file.is_file()
                    && let Some(why) = self.vouch(site, &file)
                {
                    return Some(format!(
                        "it imports `{module}` from the environment, and {why}"
                    ));
                }
            }
        }
        None
    }

    /// Why the file at `path` is not as an index-installed distribution
    /// left it, or `None` when it is.
    fn vouch(&self, site: &Path, path: &Path) -> Option<String> {
        let rel = path.strip_prefix(site).unwrap_or(path);
        let name = rel.display();
        if path.is_dir() {
            return Some(format!(
                "`{name}` is a package no distribution's record can vouch for"
            ));
        }
        let Some(listed) = self.from_index.get(rel) else {
            return Some(if self.from_elsewhere.contains_key(rel) {
                format!(
                    "`{name}` was installed from a folder, a URL or in editable mode: code of \
                     the change's, not the environment's"
                )
            } else {
                format!("no distribution installed from an index lists `{name}`")
            });
        };
        let Ok(bytes) = std::fs::read(path) else {
            return Some(format!("`{name}` cannot be read"));
        };
        let digest =
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(&bytes));
        (digest != *listed)
            .then(|| format!("`{name}` differs from what its distribution installed"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Which written paths are start-up hooks' places, and that only the
    /// ones gone after the run are findings.
    #[test]
    fn a_hook_written_and_gone_is_a_finding() {
        let cases = [
            (".venv/lib/python3.11/site-packages/evil.pth", true),
            (".venv/lib/python3.11/site-packages/sitecustomize.py", true),
            ("env/lib/python3/dist-packages/usercustomize.py", true),
            (
                ".venv/lib/python3.11/site-packages/p-1.0.dist-info/entry_points.txt",
                true,
            ),
            ("src/p.egg-info/entry_points.txt", true),
            (".venv/lib/python3.11/site-packages/pkg/x.pth", false),
            ("notes.pth", false),
            ("src/sitecustomize.py", false),
        ];
        for (path, hook) in cases {
            assert_eq!(hook_place(path), hook, "{path}");
        }
        let ws = tempfile::tempdir().unwrap();
        let kept = ".venv/lib/python3.11/site-packages/kept.pth";
        std::fs::create_dir_all(ws.path().join(".venv/lib/python3.11/site-packages")).unwrap();
        std::fs::write(ws.path().join(kept), "import x\n").unwrap();
        let gone = ".venv/lib/python3.11/site-packages/evil.pth";
        let found = written_and_gone(
            ws.path(),
            [("plant", gone), ("plant", kept), ("build", "src/x.py")],
        );
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].file, gone);
        assert!(found[0].title.contains("`plant`"), "{}", found[0].title);
    }

    fn record_line(site: &Path, rel: &str) -> String {
        let bytes = std::fs::read(site.join(rel)).unwrap();
        let digest =
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(&bytes));
        format!("{rel},sha256={digest},{}\n", bytes.len())
    }

    /// A workspace with one environment, `.venv`, and its site-packages.
    fn venv() -> (tempfile::TempDir, PathBuf) {
        let ws = tempfile::tempdir().unwrap();
        let venv = ws.path().join(".venv");
        std::fs::create_dir_all(venv.join("lib/python3.11/site-packages")).unwrap();
        std::fs::write(venv.join("pyvenv.cfg"), "home = /usr/bin\n").unwrap();
        let site = venv.join("lib/python3.11/site-packages");
        (ws, site)
    }

    /// Installs a distribution `name` listing `files` (already written),
    /// from an index or, with `direct`, from a folder.
    fn install(site: &Path, name: &str, files: &[&str], direct: bool) {
        let dist = site.join(format!("{name}-1.0.dist-info"));
        std::fs::create_dir_all(&dist).unwrap();
        let record: String = files.iter().map(|f| record_line(site, f)).collect();
        std::fs::write(dist.join("RECORD"), record).unwrap();
        if direct {
            std::fs::write(dist.join("direct_url.json"), "{\"url\": \"file:///ws\"}").unwrap();
        }
    }

    #[test]
    fn only_hooks_an_index_installed_distribution_vouches_for_are_the_environments() {
        struct Case {
            what: &'static str,
            set_up: fn(&Path),
            flagged: &'static [&'static str],
        }
        let cases = [
            Case {
                what: "paths alone run nothing",
                set_up: |site| std::fs::write(site.join("editable.pth"), "/ws/src\n").unwrap(),
                flagged: &[],
            },
            Case {
                what: "what virtualenv and uv write when they make an environment",
                set_up: |site| {
                    std::fs::write(site.join("_virtualenv.pth"), "import _virtualenv").unwrap();
                },
                flagged: &[],
            },
            Case {
                what: "an executable line nothing lists",
                set_up: |site| {
                    std::fs::write(site.join("evil.pth"), "import os; os._exit(0)\n").unwrap();
                },
                flagged: &["evil.pth"],
            },
            Case {
                what: "setuptools' own hook, as installed",
                set_up: |site| {
                    std::fs::write(
                        site.join("distutils-precedence.pth"),
                        "import os; var = 'SETUPTOOLS_USE_DISTUTILS'\n",
                    )
                    .unwrap();
                    install(site, "setuptools", &["distutils-precedence.pth"], false);
                },
                flagged: &[],
            },
            Case {
                what: "an installed hook edited since",
                set_up: |site| {
                    std::fs::write(site.join("x.pth"), "import os\n").unwrap();
                    install(site, "x", &["x.pth"], false);
                    std::fs::write(site.join("x.pth"), "import os; os._exit(0)\n").unwrap();
                },
                flagged: &["x.pth"],
            },
            Case {
                what: "an installed hook importing a module edited since",
                set_up: |site| {
                    std::fs::write(site.join("hack.pth"), "import _hack; _hack.go()\n").unwrap();
                    std::fs::write(site.join("_hack.py"), "def go(): pass\n").unwrap();
                    install(site, "hack", &["hack.pth", "_hack.py"], false);
                    std::fs::write(site.join("_hack.py"), "import os\nos._exit(0)\n").unwrap();
                },
                flagged: &["hack.pth"],
            },
            Case {
                what: "a hook built from the workspace",
                set_up: |site| {
                    std::fs::write(site.join("mine.pth"), "import os\n").unwrap();
                    install(site, "mine", &["mine.pth"], true);
                },
                flagged: &["mine.pth"],
            },
            Case {
                what: "customize modules and a pytest plugin",
                set_up: |site| {
                    std::fs::write(site.join("sitecustomize.py"), "").unwrap();
                    std::fs::write(site.join("usercustomize.py"), "").unwrap();
                    let dist = site.join("plug-1.0.dist-info");
                    std::fs::create_dir_all(&dist).unwrap();
                    std::fs::write(dist.join("entry_points.txt"), "[pytest11]\nplug = plug\n")
                        .unwrap();
                },
                flagged: &[
                    "plug-1.0.dist-info/entry_points.txt",
                    "sitecustomize.py",
                    "usercustomize.py",
                ],
            },
            Case {
                what: "an installed pytest plugin, as installed",
                set_up: |site| plugin(site, false),
                flagged: &[],
            },
            Case {
                what: "an installed pytest plugin whose module was edited since",
                set_up: |site| plugin(site, true),
                flagged: &["cov-1.0.dist-info/entry_points.txt"],
            },
        ];
        /// A pytest plugin installed from an index (`cov.plugin`), its
        /// module edited after with `edit`.
        fn plugin(site: &Path, edit: bool) {
            let dist = site.join("cov-1.0.dist-info");
            std::fs::create_dir_all(site.join("cov")).unwrap();
            std::fs::create_dir_all(&dist).unwrap();
            std::fs::write(site.join("cov/__init__.py"), "").unwrap();
            std::fs::write(
                site.join("cov/plugin.py"),
                "def pytest_addoption(p): pass
",
            )
            .unwrap();
            std::fs::write(
                dist.join("entry_points.txt"),
                "[console_scripts]\nx = cov:main\n\n[pytest11]\npytest_cov = cov.plugin\n",
            )
            .unwrap();
            install(
                site,
                "cov",
                &[
                    "cov/__init__.py",
                    "cov/plugin.py",
                    "cov-1.0.dist-info/entry_points.txt",
                ],
                false,
            );
            if edit {
                std::fs::write(site.join("cov/plugin.py"), "import os\nos._exit(0)\n").unwrap();
            }
        }
        for case in cases {
            let (ws, site) = venv();
            (case.set_up)(&site);
            let mut got: Vec<String> = unvouched(ws.path())
                .into_iter()
                .map(|f| {
                    f.file
                        .trim_start_matches(".venv/lib/python3.11/site-packages/")
                        .to_owned()
                })
                .collect();
            got.sort();
            assert_eq!(got, case.flagged, "{}", case.what);
        }
    }

    #[test]
    fn a_pytest11_section_names_its_modules() {
        assert_eq!(
            pytest_plugins(
                "[console_scripts]\na = b:c\n[pytest11]\nx = p.q:obj\ny=r\n[other]\nz = s\n"
            ),
            ["p.q", "r"]
        );
        let site = Path::new("/s");
        assert_eq!(
            module_files(site, "p.q"),
            [
                site.join("p/__init__.py"),
                site.join("p/q.py"),
                site.join("p/q/__init__.py")
            ]
        );
    }

    #[test]
    fn the_imports_of_a_pth_line_are_its_top_level_modules() {
        assert_eq!(
            pth_imports("import a.b, c as d; a.b.go()\nimport\te\n/path\n"),
            ["a", "c", "e"]
        );
    }
}
