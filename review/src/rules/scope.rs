//! The rules in effect: loaded from their files, and which of them apply
//! to a file.

use std::collections::BTreeMap;
use std::path::Path;

use crate::rules::errors::{RuleProblem, RulesError};
use crate::rules::model::{self, CASE_IMAGE_MAX_BYTES, Rule};

/// Rules applying to one file at most, unless `gate rules check --cap` says otherwise.
pub const DEFAULT_CAP: usize = 15;

/// Rules loaded from a set of rules files.
#[derive(Debug, Clone, Default)]
pub struct RuleSet {
    /// Every rule, outermost file first, in file order within a file.
    pub rules: Vec<Rule>,
    /// The rules files read, workspace-relative, with their bytes.
    pub files: Vec<(String, Vec<u8>)>,
}

impl RuleSet {
    /// Reads and validates the rules files `sources` (workspace-relative).
    /// Every problem in every file is reported.
    pub fn load(workspace: &Path, sources: &[String]) -> Result<Self, RulesError> {
        let mut texts = Vec::new();
        for source in sources {
            let path = workspace.join(source);
            let bytes = gate_specs::read_bounded(&path, gate_specs::TEXT_MAX_BYTES)
                .map_err(|e| RulesError::Read { path, source: e })?;
            texts.push((source.clone(), bytes));
        }
        let mut set = Self::from_files(texts).map_err(RulesError::Invalid)?;
        let problems = set.read_images(workspace);
        if problems.is_empty() {
            Ok(set)
        } else {
            Err(RulesError::Invalid(problems))
        }
    }

    /// Reads every design rule's case screenshots: each must be a PNG file of
    /// the workspace. Their digests go into the rule's hash.
    fn read_images(&mut self, workspace: &Path) -> Vec<RuleProblem> {
        let mut problems = Vec::new();
        for rule in &mut self.rules {
            for (image, (line, column)) in &rule.image_sites {
                let problem = |why: String| RuleProblem::new(&rule.source, *line, *column, why);
                let read = gate_specs::within(workspace, image)
                    .and_then(|path| gate_specs::read_bounded(&path, CASE_IMAGE_MAX_BYTES));
                match read {
                    Ok(bytes) if bytes.starts_with(b"\x89PNG\r\n\x1a\n") => {
                        rule.image_digests
                            .insert(image.clone(), blake3::hash(&bytes).to_hex().to_string());
                    }
                    Ok(_) => problems.push(problem(format!("`{image}` is not a PNG file"))),
                    Err(e) => problems.push(problem(format!("`{image}` cannot be read: {e}"))),
                }
            }
        }
        problems
    }

    /// Validates rules files given as (workspace-relative path, bytes).
    pub fn from_files(mut files: Vec<(String, Vec<u8>)>) -> Result<Self, Vec<RuleProblem>> {
        // Outermost first, so the rules of enclosing folders come first and
        // a duplicate id is reported in the inner file.
        files.sort_by_key(|(s, _)| (s.matches('/').count(), s.clone()));
        files.dedup_by(|a, b| a.0 == b.0);
        let mut problems = Vec::new();
        let mut rules: Vec<Rule> = Vec::new();
        for (source, bytes) in &files {
            let text = match gate_specs::text_of(bytes, Path::new(source)) {
                Ok(text) => text,
                Err(e) => {
                    problems.push(RuleProblem::new(
                        source,
                        e.line,
                        e.column,
                        e.kind.to_string(),
                    ));
                    continue;
                }
            };
            match model::parse(text, source) {
                Ok(parsed) => rules.extend(parsed),
                Err(p) => problems.extend(p),
            }
        }
        problems.extend(duplicates_in_scope(&rules));
        if problems.is_empty() {
            Ok(Self { rules, files })
        } else {
            Err(problems)
        }
    }

    /// The rules that apply to a workspace-relative file, outermost first.
    pub fn applying_to(&self, path: &str) -> Vec<&Rule> {
        self.rules.iter().filter(|r| r.applies_to(path)).collect()
    }

    /// Rules with this id (several only in sibling folders).
    pub fn with_id(&self, id: &str) -> Vec<&Rule> {
        self.rules.iter().filter(|r| r.id == id).collect()
    }

    /// Files more than `cap` rules apply to, with how many do.
    pub fn over_cap(&self, files: &[String], cap: usize) -> Vec<(String, usize)> {
        files
            .iter()
            .map(|f| (f.clone(), self.applying_to(f).len()))
            .filter(|(_, n)| *n > cap)
            .collect()
    }
}

/// Whether a rule homed at `outer` can apply to files of `inner`.
fn encloses(outer: &str, inner: &str) -> bool {
    outer.is_empty()
        || inner == outer
        || inner
            .strip_prefix(outer)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// Two rules with one id whose scopes can meet (one's home at or below the
/// other's) would make answers ambiguous: the inner one is an error.
/// Siblings may share an id. Within one file, parsing already reports it.
fn duplicates_in_scope(rules: &[Rule]) -> Vec<RuleProblem> {
    let mut by_id: BTreeMap<&str, Vec<&Rule>> = BTreeMap::new();
    for r in rules {
        by_id.entry(r.id.as_str()).or_default().push(r);
    }
    let mut problems = Vec::new();
    for group in by_id.values() {
        for (i, inner) in group.iter().enumerate() {
            let outer = group[..i]
                .iter()
                .find(|o| o.source != inner.source && encloses(&o.home, &inner.home));
            if let Some(outer) = outer {
                problems.push(RuleProblem::new(
                    &inner.source,
                    inner.at.0,
                    inner.at.1,
                    format!(
                        "duplicate id `{}`: {}:{}:{} has a rule with that id that applies here too",
                        inner.id, outer.source, outer.at.0, outer.at.1
                    ),
                ));
            }
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::discover;

    fn rule(id: &str, extra: &str) -> String {
        format!(
            "[[rule]]\nid = \"{id}\"\nstatement = \"{id} holds\"\nfix = \"f\"\njudge = false\n{extra}\n"
        )
    }

    /// A tree of real files: the root's rules, a service's, its sibling's,
    /// and a nested folder's.
    fn tree() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let files = [
            ("docs/review/rules.toml", rule("root-all", "")),
            (
                "services/api/docs/review/rules.toml",
                rule("api-all", "") + &rule("api-rust", "applies = [\"src/**/*.rs\"]"),
            ),
            (
                "services/web/docs/review/rules.toml",
                rule("web-all", "") + &rule("shared-id", ""),
            ),
            (
                "services/api/src/db/docs/review/rules.toml",
                rule("db-only", "") + &rule("shared-id", ""),
            ),
            ("services/api/src/db/pool.rs", String::new()),
        ];
        for (rel, text) in files {
            let p = dir.path().join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        dir
    }

    #[test]
    fn rules_apply_at_home_and_below_narrowed_by_applies() {
        let dir = tree();
        let cases: &[(&str, &[&str])] = &[
            ("README.md", &["root-all"]),
            ("services/api/README.md", &["root-all", "api-all"]),
            (
                "services/api/src/handler.rs",
                &["root-all", "api-all", "api-rust"],
            ),
            ("services/api/src/handler.ts", &["root-all", "api-all"]),
            (
                "services/api/src/db/pool.rs",
                &["root-all", "api-all", "api-rust", "db-only", "shared-id"],
            ),
            (
                "services/web/src/app.rs",
                &["root-all", "web-all", "shared-id"],
            ),
            ("services/apiary/x.rs", &["root-all"]),
        ];
        let all = RuleSet::load(dir.path(), &discover::all(dir.path(), None)).unwrap();
        for (file, want) in cases {
            // Walking up from the file finds exactly the rules that apply.
            let near = RuleSet::load(
                dir.path(),
                &discover::for_files(dir.path(), &[(*file).to_owned()]),
            )
            .unwrap();
            for set in [&all, &near] {
                let ids: Vec<&str> = set
                    .applying_to(file)
                    .iter()
                    .map(|r| r.id.as_str())
                    .collect();
                assert_eq!(ids, *want, "{file}");
            }
        }
    }

    #[test]
    fn design_rules_read_their_screenshots_and_hash_their_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let rules = "[[rule]]\nid = \"one-primary\"\napplies = [\"web/**\"]\nmistake = \"m\"\nfix = \"f\"\n\
                     [[rule.cases.violating]]\nimages = [\"cases/bad.png\"]\n\
                     [[rule.cases.compliant]]\nimages = [\"cases/good.png\", \"cases/gone.png\"]\n";
        let write = |rel: &str, bytes: &[u8]| {
            let p = dir.path().join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, bytes).unwrap();
        };
        write("docs/review/rules.toml", rules.as_bytes());
        write("cases/bad.png", b"\x89PNG\r\n\x1a\nbad");
        write("cases/good.png", b"GIF89a not a png");
        let sources = vec!["docs/review/rules.toml".to_owned()];
        let Err(RulesError::Invalid(problems)) = RuleSet::load(dir.path(), &sources) else {
            panic!("loaded with a missing and a non-PNG screenshot");
        };
        let said: Vec<String> = problems.iter().map(ToString::to_string).collect();
        assert_eq!(said.len(), 2, "{said:?}");
        assert!(
            said[0].starts_with("docs/review/rules.toml:9:11: `cases/good.png` is not a PNG file"),
            "{said:?}"
        );
        assert!(
            said[1].starts_with("docs/review/rules.toml:9:29: `cases/gone.png` cannot be read"),
            "{said:?}"
        );

        write("cases/good.png", b"\x89PNG\r\n\x1a\ngood");
        write("cases/gone.png", b"\x89PNG\r\n\x1a\nhere");
        let set = RuleSet::load(dir.path(), &sources).unwrap();
        let rule = &set.rules[0];
        assert!(rule.design);
        assert_eq!(rule.image_digests.len(), 3);
        let before = rule.hash();
        // The same words, another picture: the hash moves.
        write("cases/bad.png", b"\x89PNG\r\n\x1a\nworse");
        let after = RuleSet::load(dir.path(), &sources).unwrap().rules[0].hash();
        assert_ne!(before, after);
        // Design rules are never asked of diffs.
        assert!(crate::review::house_rules::asked(&set, &["web/a.html".to_owned()]).is_empty());
        let asked = crate::review::design_rules::asked(
            &set,
            &["web/a.html".to_owned(), "api/x.rs".to_owned()],
        );
        assert_eq!(asked.len(), 1);
        assert_eq!(asked[0].files, ["web/a.html"]);
    }

    #[test]
    fn the_cap_counts_rules_per_file() {
        let dir = tree();
        let set = RuleSet::load(dir.path(), &discover::all(dir.path(), None)).unwrap();
        let files = vec![
            "services/api/src/db/pool.rs".to_owned(),
            "services/web/a.rs".to_owned(),
            "README.md".to_owned(),
        ];
        assert_eq!(
            set.over_cap(&files, 3),
            [("services/api/src/db/pool.rs".to_owned(), 5)]
        );
        assert!(set.over_cap(&files, 5).is_empty());
        assert_eq!(set.over_cap(&files, 0).len(), 3);
    }

    #[test]
    fn an_id_repeated_where_scopes_meet_is_an_error() {
        let ok = |files: &[(&str, String)]| {
            RuleSet::from_files(
                files
                    .iter()
                    .map(|(p, t)| ((*p).to_owned(), t.clone().into_bytes()))
                    .collect(),
            )
        };
        // Siblings may share an id.
        assert!(
            ok(&[
                ("a/docs/review/rules.toml", rule("x", "")),
                ("b/docs/review/rules.toml", rule("x", "")),
            ])
            .is_ok()
        );
        // A parent's id repeated below is reported in the inner file, at its id,
        // whatever order the files come in.
        let err = ok(&[
            ("a/b/docs/review/rules.toml", rule("x", "")),
            ("docs/review/rules.toml", format!("\n{}", rule("x", ""))),
        ])
        .unwrap_err();
        assert_eq!(err.len(), 1);
        assert_eq!(
            err[0].to_string(),
            "a/b/docs/review/rules.toml:2:1: duplicate id `x`: docs/review/rules.toml:3:1 \
             has a rule with that id that applies here too"
        );
        // `a` does not enclose `ab`.
        assert!(
            ok(&[
                ("a/docs/review/rules.toml", rule("x", "")),
                ("ab/docs/review/rules.toml", rule("x", "")),
            ])
            .is_ok()
        );
    }
}
