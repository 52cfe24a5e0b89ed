//! A rules file as written (`docs/review/rules.toml`) and a rule as the gate
//! uses it, with the checks that make each problem an error at its line and
//! column.

use std::collections::BTreeMap;
use std::path::Path;

use gate_specs::{InputGlobs, Locator, Seg, key_path};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::rules::errors::RuleProblem;

/// Where a rules file sits inside the folder it governs.
pub const RULES_FILE: &str = "docs/review/rules.toml";

/// The margin a rule's wording must reach on its cases to be trusted.
pub const PASS_MARGIN: f64 = 0.5;

/// How bad breaking a rule is.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Fails the run.
    Critical,
    /// Reported, not blocking (the default: a hint is a pointer, not a verdict).
    #[default]
    Warning,
    /// A gentle pointer.
    Suggestion,
}

impl Severity {
    /// The word used in findings and output.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Critical => "critical",
            Self::Warning => "warning",
            Self::Suggestion => "suggestion",
        }
    }
}

/// `docs/review/rules.toml`, the house rules, as written: unknown keys are
/// errors.
#[derive(Debug, Clone, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "gate house rules (docs/review/rules.toml)")]
pub struct RawFile {
    /// `[[rule]]`: one house rule each.
    #[serde(default)]
    rule: Vec<RawRule>,
}

/// `[[rule]]`: a rule reviewers are told to check; exactly one of
/// `mistake` and `statement`.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct RawRule {
    /// Its stable id.
    id: String,
    /// What breaking it looks like (true when the change breaks the rule).
    #[serde(default)]
    mistake: Option<String>,
    /// What following it looks like (true when the change follows the rule).
    #[serde(default)]
    statement: Option<String>,
    /// How to fix a change that breaks it.
    fix: String,
    /// A workspace file showing the rule followed (relative to the workspace root).
    #[serde(default)]
    reference: Option<String>,
    /// Globs, relative to the rules file's folder, narrowing the files it
    /// applies to (none: everything below that folder).
    #[serde(default)]
    applies: Vec<String>,
    /// How bad breaking it is.
    #[serde(default)]
    severity: Severity,
    /// Whether reviewers are asked it (false: a guide entry, listed, never asked).
    #[serde(default = "yes")]
    judge: bool,
    /// Labelled changes that break it and follow it, for `gate rules test`.
    #[serde(default)]
    cases: Cases,
    /// What `gate rules test` last found (written by it).
    #[serde(default)]
    tested: Option<Tested>,
}

fn yes() -> bool {
    true
}

/// A rule's labelled cases.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Cases {
    /// Changes that break the rule.
    #[serde(default)]
    pub violating: Vec<Case>,
    /// Changes that follow it.
    #[serde(default)]
    pub compliant: Vec<Case>,
}

/// One labelled change: a file and a diff of it, or (for a design rule)
/// screenshots of a page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Case {
    /// Workspace-relative file the diff is of.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub file: String,
    /// The diff.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub diff: String,
    /// Workspace-relative PNG screenshots (desktop, then phone) of a page.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<String>,
}

impl Case {
    /// What the case shows, in one line: its file, or its screenshots.
    pub fn label(&self) -> String {
        if self.images.is_empty() {
            self.file.clone()
        } else {
            self.images.join(" + ")
        }
    }
}

/// Screenshots a case may hold at most.
pub const MAX_CASE_IMAGES: usize = 4;
/// The most bytes one case screenshot may hold (it is sent downscaled to
/// a few MB; a full-page capture is rarely over 20 MB).
pub const CASE_IMAGE_MAX_BYTES: u64 = 64 << 20;

/// What `gate rules test` last found, written back into the rule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Tested {
    /// Lowest compliant score minus highest violating score.
    pub margin: f64,
    /// The model (or models) that answered.
    pub model: String,
    /// [`Rule::hash`] when it was tested.
    pub hash: String,
    /// When (RFC 3339, UTC).
    pub when: String,
}

/// What a rule claims, in the team's words.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Claim {
    /// True when the change breaks the rule.
    Mistake(String),
    /// True when the change follows the rule.
    Statement(String),
}

impl Claim {
    /// The words.
    pub fn text(&self) -> &str {
        match self {
            Self::Mistake(t) | Self::Statement(t) => t,
        }
    }

    /// `mistake` or `statement`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Mistake(_) => "mistake",
            Self::Statement(_) => "statement",
        }
    }

    /// The probability that the change complies, from the probability `p`
    /// that the claim is true: a mistake's is flipped.
    pub fn compliance(&self, p: f64) -> f64 {
        match self {
            Self::Mistake(_) => 1.0 - p,
            Self::Statement(_) => p,
        }
    }
}

/// One house rule, validated.
#[derive(Debug, Clone)]
pub struct Rule {
    /// Its id, unique among the rules that can apply to one file.
    pub id: String,
    /// What it claims.
    pub claim: Claim,
    /// How to put it right.
    pub fix: String,
    /// Workspace-relative file showing the right pattern.
    pub reference: Option<String>,
    /// Globs relative to the home narrowing where it applies (none: everywhere below the home).
    pub applies: Vec<String>,
    /// Compiled `applies`.
    pub globs: InputGlobs,
    /// Severity of a finding when it is broken.
    pub severity: Severity,
    /// False for a guide entry: listed, never asked.
    pub judge: bool,
    /// Labelled cases.
    pub cases: Cases,
    /// A design rule: its cases are screenshots, and it is asked about the
    /// screenshots of pages, not about diffs.
    pub design: bool,
    /// blake3 of each case image, by path (filled when the rules are loaded
    /// from a workspace): part of [`Rule::hash`].
    pub image_digests: BTreeMap<String, String>,
    /// Each case image with the line and column it is named at.
    pub image_sites: Vec<(String, (usize, usize))>,
    /// The last test's result.
    pub tested: Option<Tested>,
    /// The folder that holds its `docs/review/` (workspace-relative, "" for the root).
    pub home: String,
    /// The rules file it is written in (workspace-relative).
    pub source: String,
    /// Its index among the file's `[[rule]]` tables.
    pub index: usize,
    /// Line and column of its `id` in the source.
    pub at: (usize, usize),
}

impl Rule {
    /// Whether it applies to a workspace-relative file: the file is at or
    /// below the home and, when `applies` is given, a glob matches its path
    /// relative to the home.
    pub fn applies_to(&self, path: &str) -> bool {
        let rel = if self.home.is_empty() {
            path
        } else {
            match path
                .strip_prefix(self.home.as_str())
                .and_then(|r| r.strip_prefix('/'))
            {
                Some(rel) => rel,
                None => return false,
            }
        };
        self.applies.is_empty() || self.globs.is_match(rel)
    }

    /// Where it applies, as a question's prefix says it: `src/api/**`,
    /// `src/api/**/*.rs`, or the whole workspace.
    pub fn scope(&self) -> String {
        let join = |glob: &str| {
            if self.home.is_empty() {
                glob.to_owned()
            } else {
                format!("{}/{glob}", self.home)
            }
        };
        if self.applies.is_empty() {
            if self.home.is_empty() {
                "the whole workspace".to_owned()
            } else {
                join("**")
            }
        } else {
            self.applies
                .iter()
                .map(|g| join(g))
                .collect::<Vec<_>>()
                .join(", ")
        }
    }

    /// The question asked of a model: the rule's own words, prefixed with where it applies.
    pub fn question(&self) -> String {
        format!("In {}: {}", self.scope(), self.claim.text())
    }

    /// blake3 (hex) over the rule's id, claim, `applies` and cases as
    /// canonical JSON (sorted keys, no spaces): what `tested.hash` must equal.
    pub fn hash(&self) -> String {
        let mut value = json!({
            "id": self.id,
            self.claim.kind(): self.claim.text(),
            "applies": self.applies,
            "cases": self.cases,
        });
        // A design rule's cases are files: their bytes count, not only their names.
        if !self.image_digests.is_empty() {
            value["images"] = json!(self.image_digests);
        }
        blake3::hash(canonical_json(&value).as_bytes())
            .to_hex()
            .to_string()
    }

    /// Why its `tested` record cannot be trusted, or `None` when it can.
    /// Guide entries are never tested.
    pub fn staleness(&self) -> Option<String> {
        if !self.judge {
            return None;
        }
        match &self.tested {
            None => Some("never tested: run `gate rules test`".to_owned()),
            Some(t) if t.hash != self.hash() => Some(
                "its wording or cases changed since it was last tested: run `gate rules test`"
                    .to_owned(),
            ),
            Some(t) if t.margin < PASS_MARGIN => Some(format!(
                "its last test scored a margin of {:.2}, below {PASS_MARGIN}: reword it or its cases",
                t.margin
            )),
            Some(_) => None,
        }
    }
}

/// JSON with object keys sorted and no spaces.
pub fn canonical_json(value: &Value) -> String {
    fn sorted(value: &Value) -> Value {
        match value {
            Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                Value::Object(
                    keys.into_iter()
                        .map(|k| (k.clone(), sorted(&map[k])))
                        .collect(),
                )
            }
            Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    // `preserve_order` keeps insertion order, so sorted insertion is sorted output.
    serde_json::to_string(&sorted(value)).unwrap_or_default()
}

/// The home of a rules file: the folder holding its `docs/review/`.
pub fn home_of(source: &str) -> Option<String> {
    if source == RULES_FILE {
        return Some(String::new());
    }
    source
        .strip_suffix(RULES_FILE)
        .and_then(|h| h.strip_suffix('/'))
        .map(str::to_owned)
}

/// Parses and validates one rules file's text; `source` is its
/// workspace-relative path. Every problem is reported, each located.
pub fn parse(text: &str, source: &str) -> Result<Vec<Rule>, Vec<RuleProblem>> {
    let file = Path::new(source);
    let raw: RawFile = gate_specs::from_toml_str(text, file).map_err(|e| {
        vec![RuleProblem::new(
            source,
            e.line,
            e.column,
            e.kind.to_string(),
        )]
    })?;
    let locator = Locator::new(text, gate_specs::Format::Toml);
    let home = home_of(source).unwrap_or_default();
    let mut problems = Vec::new();
    let mut rules = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    for (i, r) in raw.rule.iter().enumerate() {
        let mut problem = |path: &[Seg], message: String| {
            let at = locator.key_or_ancestor(path);
            problems.push(RuleProblem::new(source, at.line, at.column, message));
        };
        if !valid_id(&r.id) {
            problem(
                &key_path!["rule", i, "id"],
                format!(
                    "invalid id `{}`: use letters, digits, `.`, `_` and `-`",
                    r.id
                ),
            );
        } else if seen.contains(&r.id.as_str()) {
            problem(
                &key_path!["rule", i, "id"],
                format!("duplicate id `{}`", r.id),
            );
        }
        seen.push(&r.id);
        let claim = match (&r.mistake, &r.statement) {
            (Some(m), None) => Some(Claim::Mistake(m.clone())),
            (None, Some(s)) => Some(Claim::Statement(s.clone())),
            (Some(_), Some(_)) => {
                problem(
                    &key_path!["rule", i, "statement"],
                    format!(
                        "rule `{}` has both `mistake` and `statement`; give exactly one",
                        r.id
                    ),
                );
                None
            }
            (None, None) => {
                problem(
                    &key_path!["rule", i],
                    format!(
                        "rule `{}` has neither `mistake` nor `statement`; give exactly one",
                        r.id
                    ),
                );
                None
            }
        };
        if let Some(c) = &claim
            && c.text().trim().is_empty()
        {
            problem(
                &key_path!["rule", i, c.kind()],
                format!("`{}` is empty", c.kind()),
            );
        }
        if r.fix.trim().is_empty() {
            problem(&key_path!["rule", i, "fix"], "`fix` is empty".to_owned());
        }
        let (image_sites, design) = check_cases(r, i, &locator, &mut problem);
        if let Some(reference) = &r.reference
            && let Some(why) = bad_path(reference)
        {
            problem(&key_path!["rule", i, "reference"], why);
        }
        for (j, g) in r.applies.iter().enumerate() {
            if let Some(why) = bad_path(g) {
                problem(&key_path!["rule", i, "applies", j], why);
            }
        }
        let globs = match InputGlobs::new(&r.applies) {
            Ok(g) => Some(g),
            Err(e) => {
                let j = r.applies.iter().position(|g| *g == e.glob).unwrap_or(0);
                problem(&key_path!["rule", i, "applies", j], e.to_string());
                None
            }
        };
        let at = locator.key_or_ancestor(&key_path!["rule", i, "id"]);
        if let (Some(claim), Some(globs)) = (claim, globs) {
            rules.push(Rule {
                id: r.id.clone(),
                claim,
                fix: r.fix.clone(),
                reference: r.reference.clone(),
                applies: r.applies.clone(),
                globs,
                severity: r.severity,
                judge: r.judge,
                cases: r.cases.clone(),
                design,
                image_digests: BTreeMap::new(),
                image_sites,
                tested: r.tested.clone(),
                home: home.clone(),
                source: source.to_owned(),
                index: i,
                at: (at.line, at.column),
            });
        }
    }
    if problems.is_empty() {
        Ok(rules)
    } else {
        problems.sort_by_key(|p| (p.line, p.column));
        Err(problems)
    }
}

/// A screenshot a case names, with the line and column that name it.
type ImageSite = (String, (usize, usize));

/// The checks of a rule's cases: a judged rule has both kinds, each case
/// is a diff or screenshots (PNG, at most a few), never both, and a rule's
/// cases are all of one kind. Returns where each screenshot is named and
/// whether the rule is a design rule (its cases are screenshots).
fn check_cases(
    r: &RawRule,
    i: usize,
    locator: &Locator,
    problem: &mut dyn FnMut(&[Seg], String),
) -> (Vec<ImageSite>, bool) {
    if r.judge {
        for (kind, list) in [
            ("violating", &r.cases.violating),
            ("compliant", &r.cases.compliant),
        ] {
            if list.is_empty() {
                problem(
                    &key_path!["rule", i, "cases"],
                    format!(
                        "rule `{}` is judged but has no {kind} case: add a \
                         [[rule.cases.{kind}]] (or set judge = false for a guide entry)",
                        r.id
                    ),
                );
            }
        }
    }
    let mut image_sites = Vec::new();
    let all_cases = || {
        [
            ("violating", &r.cases.violating),
            ("compliant", &r.cases.compliant),
        ]
        .into_iter()
        .flat_map(|(kind, list)| list.iter().enumerate().map(move |(j, c)| (kind, j, c)))
    };
    for (kind, j, case) in all_cases() {
        let here = key_path!["rule", i, "cases", kind, j];
        if case.images.is_empty() {
            if let Some(why) = bad_path(&case.file) {
                problem(&[here.as_slice(), &key_path!["file"]].concat(), why);
            }
            if case.diff.trim().is_empty() {
                problem(
                    &[here.as_slice(), &key_path!["diff"]].concat(),
                    "`diff` is empty".to_owned(),
                );
            }
            continue;
        }
        if !case.diff.is_empty() || !case.file.is_empty() {
            problem(
                &here,
                "a case has either `file` and `diff`, or `images`, not both".to_owned(),
            );
        }
        if case.images.len() > MAX_CASE_IMAGES {
            problem(
                &[here.as_slice(), &key_path!["images"]].concat(),
                format!("a case holds at most {MAX_CASE_IMAGES} screenshots"),
            );
        }
        for (k, image) in case.images.iter().enumerate() {
            let path = [here.as_slice(), &key_path!["images", k]].concat();
            if let Some(why) = bad_path(image) {
                problem(&path, why);
            } else if !image.to_ascii_lowercase().ends_with(".png") {
                problem(
                    &path,
                    format!("`{image}` must be a PNG screenshot (`.png`)"),
                );
            } else {
                let at = locator.value_or_ancestor(&path);
                image_sites.push((image.clone(), (at.line, at.column)));
            }
        }
    }
    let with_images = all_cases().filter(|(_, _, c)| !c.images.is_empty()).count();
    let design = with_images > 0;
    if design && with_images < all_cases().count() {
        problem(
            &key_path!["rule", i, "cases"],
            format!(
                "rule `{}` mixes diff cases and screenshot cases: a design rule's cases are all `images`",
                r.id
            ),
        );
    }
    (image_sites, design)
}

fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

/// Why a path or glob cannot be used (absolute, or reaching out with `..`).
fn bad_path(p: &str) -> Option<String> {
    if p.trim().is_empty() {
        return Some("a path is empty".to_owned());
    }
    if p.starts_with('/') || p.split('/').any(|c| c == "..") {
        return Some(format!(
            "`{p}` must be a relative path with `/` that stays inside the workspace"
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
[[rule]]
id = "errors-bubble-up"
applies = ["**/*.rs"]
mistake = "The change catches an error and returns None"
fix = "Let the error propagate"
reference = "src/retry.rs"
[[rule.cases.violating]]
file = "src/lookup.rs"
diff = "+    Err(_) => return None,"
[[rule.cases.compliant]]
file = "src/lookup.rs"
diff = "+    Err(e) => return Err(e.into()),"
"#;

    /// Each broken file: where the error is and what it says.
    #[test]
    fn format_errors_are_located() {
        let cases: &[(&str, &str, (usize, usize), &str)] = &[
            (
                "unknown key",
                "[[rule]]\nid = \"a\"\nmistake = \"m\"\nfix = \"f\"\njudge = false\ncolour = 1\n",
                (6, 1),
                "unknown key `colour`",
            ),
            (
                "unknown key in a case",
                "[[rule]]\nid = \"a\"\nmistake = \"m\"\nfix = \"f\"\n[[rule.cases.violating]]\nfile = \"a.rs\"\ndiff = \"+x\"\nline = 3\n",
                (8, 1),
                "unknown key `line`",
            ),
            (
                "both mistake and statement",
                "[[rule]]\nid = \"a\"\nmistake = \"m\"\nstatement = \"s\"\nfix = \"f\"\njudge = false\n",
                (4, 1),
                "has both `mistake` and `statement`",
            ),
            (
                "neither mistake nor statement",
                "\n[[rule]]\nid = \"a\"\nfix = \"f\"\njudge = false\n",
                (2, 1),
                "has neither `mistake` nor `statement`",
            ),
            (
                "judged without a compliant case",
                "[[rule]]\nid = \"a\"\nmistake = \"m\"\nfix = \"f\"\n[[rule.cases.violating]]\nfile = \"a.rs\"\ndiff = \"+x\"\n",
                (5, 8),
                "no compliant case",
            ),
            (
                "judged without any case",
                "[[rule]]\nid = \"a\"\nmistake = \"m\"\nfix = \"f\"\n",
                (1, 1),
                "no violating case",
            ),
            (
                "duplicate id",
                "[[rule]]\nid = \"a\"\nmistake = \"m\"\nfix = \"f\"\njudge = false\n[[rule]]\nid = \"a\"\nmistake = \"n\"\nfix = \"f\"\njudge = false\n",
                (7, 1),
                "duplicate id `a`",
            ),
            (
                "missing fix",
                "[[rule]]\nid = \"a\"\nmistake = \"m\"\njudge = false\n",
                (1, 1),
                "missing key `fix`",
            ),
            (
                "bad severity",
                "[[rule]]\nid = \"a\"\nmistake = \"m\"\nfix = \"f\"\njudge = false\nseverity = \"blocker\"\n",
                (6, 12),
                "unknown variant `blocker`",
            ),
            (
                "wrong type",
                "[[rule]]\nid = \"a\"\nmistake = \"m\"\nfix = \"f\"\njudge = \"no\"\n",
                (5, 9),
                "rule[0].judge",
            ),
            (
                "a reference escaping the workspace",
                "[[rule]]\nid = \"a\"\nmistake = \"m\"\nfix = \"f\"\njudge = false\nreference = \"../x.rs\"\n",
                (6, 1),
                "stays inside the workspace",
            ),
            (
                "a glob that does not compile",
                "[[rule]]\nid = \"a\"\nmistake = \"m\"\nfix = \"f\"\njudge = false\napplies = [\"ok/**\", \"src/[a\"]\n",
                (6, 21),
                "does not compile",
            ),
            (
                "an invalid id",
                "[[rule]]\nid = \"has space\"\nmistake = \"m\"\nfix = \"f\"\njudge = false\n",
                (2, 1),
                "invalid id",
            ),
            (
                "a case with a diff and images",
                "[[rule]]\nid = \"a\"\nmistake = \"m\"\nfix = \"f\"\n[[rule.cases.violating]]\nfile = \"a.rs\"\ndiff = \"+x\"\nimages = [\"a.png\"]\n[[rule.cases.compliant]]\nimages = [\"b.png\"]\n",
                (5, 1),
                "either `file` and `diff`, or `images`, not both",
            ),
            (
                "a screenshot that is not a PNG",
                "[[rule]]\nid = \"a\"\nmistake = \"m\"\nfix = \"f\"\n[[rule.cases.violating]]\nimages = [\"a.png\", \"b.jpg\"]\n[[rule.cases.compliant]]\nimages = [\"c.png\"]\n",
                (6, 20),
                "must be a PNG screenshot",
            ),
            (
                "diff cases and screenshot cases mixed",
                "[[rule]]\nid = \"a\"\nmistake = \"m\"\nfix = \"f\"\n[[rule.cases.violating]]\nimages = [\"a.png\"]\n[[rule.cases.compliant]]\nfile = \"a.rs\"\ndiff = \"+x\"\n",
                (5, 8),
                "mixes diff cases and screenshot cases",
            ),
            (
                "not TOML",
                "[[rule]\nid = \"a\"\n",
                (1, 8),
                "unclosed array table",
            ),
        ];
        for (name, text, (line, column), want) in cases {
            let problems = parse(text, "svc/docs/review/rules.toml")
                .err()
                .unwrap_or_else(|| panic!("{name}: parsed"));
            let p = &problems[0];
            assert_eq!((p.line, p.column), (*line, *column), "{name}: {p}");
            assert!(p.message.contains(want), "{name}: {p}");
            assert!(
                p.to_string()
                    .starts_with(&format!("svc/docs/review/rules.toml:{line}:{column}: ")),
                "{name}: {p}"
            );
        }
    }

    #[test]
    fn a_rule_as_used() {
        let rules = parse(GOOD, "svc/api/docs/review/rules.toml").unwrap();
        let r = &rules[0];
        assert_eq!(r.home, "svc/api");
        assert_eq!(r.severity, Severity::Warning);
        assert!(r.judge);
        assert_eq!(
            r.question(),
            "In svc/api/**/*.rs: The change catches an error and returns None"
        );
        assert!(r.applies_to("svc/api/src/a.rs"));
        assert!(!r.applies_to("svc/api/README.md"));
        assert!(!r.applies_to("svc/apiary/src/a.rs"));
        assert!(!r.applies_to("src/a.rs"));
        // A mistake's probability reads as compliance once flipped.
        assert!((r.claim.compliance(0.9) - 0.1).abs() < 1e-9);
        assert!((Claim::Statement("s".into()).compliance(0.9) - 0.9).abs() < 1e-9);
        assert_eq!(
            r.staleness().unwrap(),
            "never tested: run `gate rules test`"
        );
        assert_eq!(home_of("docs/review/rules.toml").as_deref(), Some(""));
        let root = parse(
            "[[rule]]\nid = \"g\"\nstatement = \"s\"\nfix = \"f\"\njudge = false\n",
            RULES_FILE,
        )
        .unwrap();
        assert_eq!(root[0].question(), "In the whole workspace: s");
        assert!(
            root[0].staleness().is_none(),
            "guide entries are never tested"
        );
    }

    #[test]
    fn the_hash_covers_wording_scope_and_cases_only() {
        let base = &parse(GOOD, RULES_FILE).unwrap()[0];
        // Canonical JSON: sorted keys, no spaces.
        assert_eq!(
            canonical_json(&json!({"b": [1, {"d": 1, "c": "x y"}], "a": null})),
            r#"{"a":null,"b":[1,{"c":"x y","d":1}]}"#
        );
        let edited = |from: &str, to: &str| {
            let text = GOOD.replace(from, to);
            parse(&text, RULES_FILE).unwrap()[0].hash()
        };
        assert_eq!(base.hash().len(), 64);
        // Comments, fix, reference and layout do not count.
        assert_eq!(edited("fix = \"Let", "# note\nfix = \"Let"), base.hash());
        assert_eq!(edited("Let the error", "Please let the error"), base.hash());
        assert_eq!(edited("src/retry.rs", "src/other.rs"), base.hash());
        for (from, to) in [
            ("returns None", "returns nothing"),
            ("mistake =", "statement ="),
            ("**/*.rs", "src/**"),
            ("return None,", "return None"),
            ("id = \"errors-bubble-up\"", "id = \"errors-propagate\""),
        ] {
            assert_ne!(edited(from, to), base.hash(), "{from} → {to}");
        }
    }
}
