//! What the spec's globs cover. A glob of a task's `paths`, an item's
//! `inputs` or a page's `files` that matches no file is a critical finding
//! at the place it is written: what rests on it would pass, or be carried,
//! on nothing (a typo such as `api/model.py` for `api/models.py`). With a
//! base, the changed files that no task owns and no item names are one
//! warning: nothing of the spec answers for them.

use gate_evidence::Snapshot;
use gate_review::findings::Finding;
use gate_specs::{Format, InputGlobs, Locator, Seg, Spec, key_path};

use crate::guard::GUARD_ROLE;

/// The spec as written: where its globs are shown.
pub(crate) struct SpecSource<'a> {
    /// The spec file as findings name it (workspace-relative when inside).
    pub file: &'a str,
    /// Its text.
    pub text: &'a str,
    /// TOML or JSON.
    pub format: Format,
}

/// One glob of the spec that names files, with where it is written and
/// what it belongs to.
struct Written<'a> {
    glob: &'a str,
    at: Vec<Seg>,
    /// "task `orders`'s `paths`", …
    owner: String,
}

/// Every glob of the spec that names workspace files, in file order.
fn written(spec: &Spec) -> Vec<Written<'_>> {
    let mut out = Vec::new();
    for (c, check) in spec.checks.iter().enumerate() {
        for (k, glob) in check.inputs.iter().enumerate() {
            out.push(Written {
                glob,
                at: key_path!["check", c, "inputs", k].to_vec(),
                owner: format!("check `{}`'s `inputs`", check.id),
            });
        }
    }
    for (t, task) in spec.tasks.iter().enumerate() {
        for (k, glob) in task.paths.iter().enumerate() {
            out.push(Written {
                glob,
                at: key_path!["task", t, "paths", k].to_vec(),
                owner: format!("task `{}`'s `paths`", task.id),
            });
        }
        for (c, criterion) in task.criteria.iter().enumerate() {
            for (k, glob) in criterion.inputs.iter().enumerate() {
                out.push(Written {
                    glob,
                    at: key_path!["task", t, "criterion", c, "inputs", k].to_vec(),
                    owner: format!("criterion `{}`'s `inputs`", criterion.id),
                });
            }
        }
    }
    for (p, page) in spec.pages.iter().enumerate() {
        for (k, glob) in page.files.iter().enumerate() {
            out.push(Written {
                glob,
                at: key_path!["page", p, "files", k].to_vec(),
                owner: format!("page `{}`'s `files`", page.id),
            });
        }
    }
    out
}

/// A critical finding for each glob of the spec that matches no file of
/// the snapshot, at the line and column it is written.
pub(crate) fn unmatched_globs(
    spec: &Spec,
    source: &SpecSource<'_>,
    snapshot: &Snapshot,
) -> Vec<Finding> {
    let locator = Locator::new(source.text, source.format);
    written(spec)
        .into_iter()
        .filter(|w| {
            InputGlobs::new(&[w.glob]).is_ok_and(|g| snapshot.matching(&g).next().is_none())
        })
        .map(|w| {
            let at = locator.value_or_ancestor(&w.at);
            let title = format!("The glob `{}` in {} matches no file", w.glob, w.owner);
            let detail = format!(
                "{}:{at}: no file of the workspace matches `{}`, so nothing it names is \
                 checked and no result resting on it is carried. Fix the glob (a typo?) or \
                 remove it. Files that .gitignore ignores count only for `inputs` globs.",
                source.file, w.glob
            );
            Finding::raised(
                GUARD_ROLE,
                "critical",
                source.file.to_owned(),
                u32::try_from(at.line).ok().filter(|l| *l > 0),
                title,
                detail,
                1.0,
            )
        })
        .collect()
}

/// Changed files shown in the warning at most; the rest are counted.
const UNCOVERED_SHOWN: usize = 50;

/// With a base: the changed files that no task's `paths`, no item's
/// `inputs`, no task's test report and no page's `files` name, as one
/// warning — `None` when there are none, or when the spec has no task to
/// own anything. `own` are the gate's own configuration files (the spec,
/// the routing table, prompts, rules files), which no task needs to own.
pub(crate) fn uncovered_changes(
    spec: &Spec,
    spec_file: &str,
    changed: &[String],
    own: &[String],
) -> Option<Finding> {
    if spec.tasks.is_empty() {
        return None;
    }
    let reports = spec
        .tasks
        .iter()
        .filter_map(|t| t.tests.as_ref()?.report.as_deref());
    let mut globs: Vec<&str> = written(spec).into_iter().map(|w| w.glob).collect();
    globs.extend(reports);
    let covered = InputGlobs::new(&globs).ok()?;
    let uncovered: Vec<&String> = changed
        .iter()
        .filter(|f| !covered.is_match(f) && !own.contains(f))
        .collect();
    if uncovered.is_empty() {
        return None;
    }
    let n = uncovered.len();
    let mut list: Vec<&str> = uncovered.iter().map(|f| f.as_str()).collect();
    list.sort_unstable();
    // The finding stands at the spec (what to change); its title names the
    // files themselves when they are few, so no reader takes the spec for
    // the file that belongs to no task.
    let named = |files: &[&str]| {
        files
            .iter()
            .map(|f| format!("`{f}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let title = match n {
        1 => format!(
            "The changed file {} belongs to no task and is named by no item's inputs",
            named(&list)
        ),
        2 | 3 => format!(
            "The changed files {} belong to no task and are named by no item's inputs",
            named(&list)
        ),
        _ => format!("{n} changed files belong to no task and are named by no item's inputs"),
    };
    list.truncate(UNCOVERED_SHOWN);
    let more = n.saturating_sub(UNCOVERED_SHOWN);
    let more = if more > 0 {
        format!(" and {more} more")
    } else {
        String::new()
    };
    let detail = format!(
        "{}{more}: no task's `paths` owns them and no `inputs` glob names them, so no task's \
         tests or criteria answer for them. Add them to the `paths` of the task that made \
         them (or to an item's `inputs`).",
        list.join(", ")
    );
    Some(Finding::raised(
        GUARD_ROLE,
        "warning",
        spec_file.to_owned(),
        None,
        title,
        detail,
        1.0,
    ))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::path::Path;

    use gate_evidence::Digest;
    use gate_evidence::snapshot::{EntryKind, FileEntry};

    use super::*;

    const SPEC: &str = r#"[spec]
id = "s"

[[check]]
id = "lint"
run = "true"
inputs = ["api/**", "scripts/lint.cfg"]

[[task]]
id = "likes-model"
paths = ["api/model.py", "api/likes/**"]
tests = { report = "reports/likes.xml" }

[[task.criterion]]
id = "like-count"
text = "t"
run = "true"
inputs = ["tests/test_likes.py", "tests/test_like.py"]

[[page]]
id = "home"
url = "http://127.0.0.1:8000/"
files = ["web/**"]
after = ["lint"]
"#;

    fn spec() -> Spec {
        gate_specs::parse_str(SPEC, Path::new("gate.toml"), Format::Toml).unwrap()
    }

    fn snapshot(files: &[&str]) -> Snapshot {
        Snapshot::from_entries(
            files
                .iter()
                .map(|p| {
                    (
                        (*p).to_owned(),
                        FileEntry {
                            digest: Digest::of(p.as_bytes()),
                            size: 1,
                            kind: EntryKind::File,
                        },
                    )
                })
                .collect::<BTreeMap<_, _>>(),
        )
    }

    #[test]
    fn a_glob_that_matches_nothing_is_named_where_it_is_written() {
        let source = SpecSource {
            file: "gate.toml",
            text: SPEC,
            format: Format::Toml,
        };
        let snap = snapshot(&[
            "api/models.py",
            "api/likes/view.py",
            "tests/test_likes.py",
            "web/index.html",
        ]);
        let found = unmatched_globs(&spec(), &source, &snap);
        let got: Vec<(&str, Option<u32>, &str)> = found
            .iter()
            .map(|f| (f.title.as_str(), f.line, f.severity.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                (
                    "The glob `scripts/lint.cfg` in check `lint`'s `inputs` matches no file",
                    Some(7),
                    "critical"
                ),
                (
                    "The glob `api/model.py` in task `likes-model`'s `paths` matches no file",
                    Some(11),
                    "critical"
                ),
                (
                    "The glob `tests/test_like.py` in criterion `like-count`'s `inputs` matches no file",
                    Some(18),
                    "critical"
                ),
            ]
        );
        assert!(
            found[1].detail.starts_with("gate.toml:11:10: "),
            "{}",
            found[1].detail
        );
        assert!(found.iter().all(|f| f.role == GUARD_ROLE));
        // With every file there, nothing is said.
        let whole = snapshot(&[
            "api/model.py",
            "api/likes/a.py",
            "scripts/lint.cfg",
            "tests/test_likes.py",
            "tests/test_like.py",
            "web/a.css",
        ]);
        assert!(unmatched_globs(&spec(), &source, &whole).is_empty());
    }

    #[test]
    fn changed_files_nothing_names_are_one_warning() {
        let changed: Vec<String> = [
            "api/models.py",
            "api/likes/view.py",
            "reports/likes.xml",
            "gate.toml",
            "README.md",
            "web/app.css",
            "db/schema.sql",
        ]
        .map(str::to_owned)
        .to_vec();
        let own = vec!["gate.toml".to_owned()];
        let f = uncovered_changes(&spec(), "gate.toml", &changed, &own).unwrap();
        assert_eq!(f.severity, "warning");
        assert_eq!(
            f.title,
            "The changed files `README.md`, `db/schema.sql` belong to no task and are named by \
             no item's inputs"
        );
        // `api/models.py` is named by the check's `api/**`; the report is its task's.
        assert!(
            f.detail.starts_with("README.md, db/schema.sql: "),
            "{}",
            f.detail
        );
        let covered = vec!["api/likes/view.py".to_owned()];
        assert!(uncovered_changes(&spec(), "gate.toml", &covered, &own).is_none());
        // A spec without tasks claims no ownership to be missing from.
        let checks_only = gate_specs::parse_str(
            "[spec]\nid = \"c\"\n[[check]]\nid = \"b\"\nrun = \"true\"\n",
            Path::new("gate.toml"),
            Format::Toml,
        )
        .unwrap();
        assert!(uncovered_changes(&checks_only, "gate.toml", &changed, &own).is_none());
    }
}
