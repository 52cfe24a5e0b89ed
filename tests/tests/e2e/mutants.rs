//! `gate mutants`: mutants of the change's own lines, each run only against
//! the criteria whose traced reads include its file. Each workspace is a
//! git repository the test makes: the base holds the spec, the criteria
//! and a file of another task's; the change adds `is_adult` (an adult is
//! 18 or older). A weak criterion checks 30 only, a boundary one 18 and
//! 17; an unrelated one checks the other task's file. Every criterion logs
//! each of its runs into a folder outside the workspace
//! (`[sandbox] writable`), so the test counts real executions.

use gate_tests::{TestEnv, peers};
use serde_json::Value;

/// A workspace at its base commit with the change on top, uncommitted.
struct Workspace {
    env: TestEnv,
    logs: tempfile::TempDir,
}

/// One language's version of the scenario: the files of the base, the
/// file the change writes, and the criteria's commands.
struct Scenario {
    /// (path, text) committed in the base.
    base: Vec<(&'static str, String)>,
    /// The rules file as the base has it, and as the change leaves it.
    rules: (&'static str, &'static str, &'static str),
    /// Each criterion's command: weak, boundary, unrelated.
    runs: [String; 3],
    /// Host folders the criteria read besides the toolchains (a compiler).
    readable: Vec<String>,
    /// The paths of the unrelated task.
    other_paths: &'static str,
    /// What the spec's `[policy]` table holds.
    policy: &'static str,
    /// Whether every criterion's trace is complete here: strace cannot
    /// always read what Go's runtime threads leave (`<detached ...>`), and
    /// a criterion whose trace is incomplete is scoped by its task instead.
    complete_traces: bool,
}

impl Workspace {
    fn new(s: &Scenario) -> Self {
        let env = TestEnv::new();
        let logs = tempfile::tempdir().unwrap();
        let log = logs.path().display().to_string();
        let logged = |id: &str, run: &str| format!("echo {id} >> {log}/runs && {run}");
        let criterion = |id: &str, run: &str| {
            format!(
                "[[task.criterion]]\nid = \"{id}\"\ntext = \"{id} holds\"\nrun = '''{}'''\n\n",
                logged(id, run)
            )
        };
        let readable: Vec<String> = s.readable.iter().map(|r| format!("{r:?}")).collect();
        env.write(
            "gate.toml",
            &format!(
                "[spec]\nid = \"ages\"\n\n\
                 [[task]]\nid = \"rules\"\npaths = [\"{rules}\"]\n\n{}{}\
                 [[task]]\nid = \"greeting\"\npaths = [\"{other}\"]\n\n{}\
                 [policy]\n{policy}\n\n\
                 [sandbox]\nwritable = [\"{log}\"]\nreadable = [{readable}]\n",
                criterion("weak", &s.runs[0]),
                criterion("boundary", &s.runs[1]),
                criterion("unrelated", &s.runs[2]),
                rules = s.rules.0,
                other = s.other_paths,
                readable = readable.join(", "),
                policy = s.policy,
            ),
        );
        env.write(
            ".gitignore",
            ".gate/\ntarget/\nnode_modules/\n__pycache__/\n",
        );
        for (path, text) in &s.base {
            env.write(path, text);
        }
        env.write(s.rules.0, s.rules.1);
        env.git(&["init", "-q", "-b", "main"]);
        env.git(&["add", "."]);
        env.git(&["commit", "-q", "-m", "base"]);
        env.write(s.rules.0, s.rules.2);
        // The change hides itself from `git diff` through the index: its
        // lines are mutated all the same.
        env.git(&["update-index", "--assume-unchanged", s.rules.0]);
        Self { env, logs }
    }

    /// How many times each criterion ran.
    fn runs(&self, id: &str) -> usize {
        std::fs::read_to_string(self.logs.path().join("runs"))
            .unwrap_or_default()
            .lines()
            .filter(|l| *l == id)
            .count()
    }
}

/// The "done when" of mutation scoring, for one language: the boundary
/// mutant at the changed line is killed by `boundary` and survived by
/// `weak`, which counts it; `unrelated` runs for no mutant; nothing
/// outside the change is mutated; the survivors are findings.
fn the_boundary_criterion_kills_what_the_weak_one_misses(s: &Scenario, boundary: (&str, &str)) {
    let ws = Workspace::new(s);
    let out = ws
        .env
        .gate(&["mutants", "--base", "main", "--format", "json"])
        .timeout(std::time::Duration::from_secs(600))
        .run();
    out.assert_exit(0);
    let doc = out.json();
    let errors = peers::schema_errors("mutants", std::slice::from_ref(&doc));
    assert!(errors.is_empty(), "{errors:?}");
    let mutants = doc["mutants"].as_array().unwrap();
    let changed_line = s
        .rules
        .2
        .lines()
        .position(|l| l.contains(boundary.0))
        .unwrap()
        + 1;
    let m = mutants
        .iter()
        .find(|m| m["original"] == boundary.0 && m["replacement"] == boundary.1)
        .unwrap_or_else(|| panic!("no `{}`→`{}` mutant: {doc:#}", boundary.0, boundary.1));
    assert_eq!(m["file"], s.rules.0);
    assert_eq!(m["line"], changed_line, "{m:#}");
    assert_eq!(m["status"], "killed", "{m:#}");
    assert_eq!(m["killed_by"], serde_json::json!(["boundary"]), "{m:#}");
    assert!(
        m["ran"].as_array().unwrap().contains(&Value::from("weak")),
        "{m:#}"
    );
    // Only the change's own lines of the change's files.
    let base_lines = s.rules.1.lines().count();
    for m in mutants {
        assert_eq!(m["file"], s.rules.0, "{m:#}");
        assert!(
            m["line"].as_u64().unwrap() > base_lines as u64,
            "a line the base had was mutated: {m:#}"
        );
    }
    // The weak criterion counts the boundary mutant against it.
    let weak = &doc["criteria"]["weak"];
    assert!(weak["survived"].as_u64().unwrap() >= 1, "{doc:#}");
    assert!(weak["score"].as_f64().unwrap() < 1.0, "{doc:#}");
    assert!(
        doc["criteria"]["boundary"]["killed"].as_u64().unwrap() > weak["killed"].as_u64().unwrap(),
        "{doc:#}"
    );
    // The unrelated criterion read no mutated file: it ran once, traced,
    // on the change itself, and against no mutant.
    assert_eq!(doc["criteria"]["unrelated"]["killed"], 0);
    assert_eq!(doc["criteria"]["unrelated"]["survived"], 0);
    assert!(doc["criteria"]["unrelated"]["score"].is_null());
    assert_eq!(ws.runs("unrelated"), 1);
    let run_against = mutants
        .iter()
        .filter(|m| !m["ran"].as_array().unwrap().is_empty())
        .count();
    assert_eq!(ws.runs("boundary"), 1 + run_against, "{doc:#}");
    let untraced = doc["untraced"].as_object().unwrap();
    if s.complete_traces {
        assert!(untraced.is_empty(), "{doc:#}");
    }
    // Each survivor is a finding naming the criteria that read the line.
    let survivors = mutants.iter().filter(|m| m["status"] == "survived").count();
    assert_eq!(doc["findings"].as_array().unwrap().len(), survivors);
    for f in doc["findings"].as_array().unwrap() {
        assert!(
            f["title"]
                .as_str()
                .unwrap()
                .starts_with("no criterion notices when `"),
            "{f:#}"
        );
        assert!(
            f["criteria"]
                .as_array()
                .unwrap()
                .contains(&Value::from("weak"))
        );
    }
    // The text says the same (once: a second run costs what the first did).
    if s.rules.0 == "src/rules.py" {
        text_says_the_same(&ws, survivors);
    }
}

fn text_says_the_same(ws: &Workspace, survivors: usize) {
    let text = ws
        .env
        .gate(&["mutants", "--base", "main"])
        .timeout(std::time::Duration::from_secs(600))
        .run();
    text.assert_exit(0);
    text.stdout_has("criterion weak: ");
    if survivors > 0 {
        text.stdout_has("warning: no criterion notices when `");
    }
}

/// The Python workspace; `boundary` is the boundary criterion's command.
fn python(boundary: &str, policy: &'static str) -> Scenario {
    let check = |body: &str| {
        format!("import sys\nsys.path.insert(0, '.')\nfrom src.rules import is_adult\n{body}\n")
    };
    Scenario {
        base: vec![
            ("checks/weak.py", check("assert is_adult(30)")),
            (
                "checks/boundary.py",
                check("assert is_adult(18)\nassert not is_adult(17)"),
            ),
            (
                "checks/greet.py",
                "import sys\nsys.path.insert(0, '.')\nfrom src.greet import greet\nassert greet('a') == 'hi a'\n"
                    .to_owned(),
            ),
            ("src/greet.py", "def greet(n):\n    return 'hi ' + n\n".to_owned()),
        ],
        rules: (
            "src/rules.py",
            "def older(a, b):\n    return a + 1 > b\n",
            "def older(a, b):\n    return a + 1 > b\n\n\ndef is_adult(age):\n    return age >= 18\n",
        ),
        runs: [
            "python3 checks/weak.py".to_owned(),
            boundary.to_owned(),
            "python3 checks/greet.py".to_owned(),
        ],
        readable: Vec::new(),
        other_paths: "src/greet.py",
        policy,
        complete_traces: true,
    }
}

#[test]
fn python_mutants_are_scored_by_the_criteria_that_read_them() {
    the_boundary_criterion_kills_what_the_weak_one_misses(
        &python("python3 checks/boundary.py", ""),
        ("return age >= 18", "return age > 18"),
    );
}

/// Without a tracer nothing says what a criterion read: each runs against
/// every mutant of its own task's files, and the report names it, so the
/// unrelated criterion (another task's file) still runs for no mutant.
#[test]
fn an_untraced_criterion_runs_for_every_mutant_of_its_tasks_files() {
    let ws = Workspace::new(&python("python3 checks/boundary.py", ""));
    let out = ws
        .env
        .gate(&["mutants", "--base", "main", "--format", "json"])
        .trace("off")
        .run();
    out.assert_exit(0);
    let doc = out.json();
    let untraced = doc["untraced"].as_object().unwrap();
    for id in ["weak", "boundary", "unrelated"] {
        assert!(untraced.contains_key(id), "{id}: {doc:#}");
    }
    let mutants = doc["mutants"].as_array().unwrap();
    let run: Vec<&Value> = mutants
        .iter()
        .filter(|m| m["status"] != "equivalent")
        .collect();
    assert!(!run.is_empty());
    for m in run {
        assert_eq!(m["ran"], serde_json::json!(["boundary", "weak"]), "{m:#}");
    }
    assert_eq!(ws.runs("unrelated"), 1);
    let text = ws
        .env
        .gate(&["mutants", "--base", "main"])
        .trace("off")
        .run();
    text.stdout_has("criterion weak ran against every mutant of its task's files: ");
}

/// `[policy] mutants` in `gate verify`: after the criteria pass, the
/// mutants run against them (reusing the run's traces); the scoring is in
/// the JSON and the signed bundle; a score below `min_score` with
/// `on_below = "fail"` fails the run, its survivors warnings at their lines.
#[test]
fn the_policy_fails_a_run_whose_criteria_score_below_it() {
    const POLICY: &str = "mutants = { min_score = 0.9, on_below = \"fail\" }";
    let verify = |ws: &Workspace| {
        ws.env
            .gate(&["verify", "--base", "main", "--offline", "--format", "json"])
            .timeout(std::time::Duration::from_secs(300))
            .run()
    };
    // Both criteria: every mutant is killed, the run passes.
    let strong = Workspace::new(&python("python3 checks/boundary.py", POLICY));
    let out = verify(&strong);
    out.assert_exit(0);
    let doc = out.json();
    assert_eq!(
        doc["mutants"]["total"]["score"], 1.0,
        "{:#}",
        doc["mutants"]
    );
    assert_eq!(strong.runs("unrelated"), 1, "the run's traces are reused");
    let shown = strong.env.shown(doc["run_id"].as_str().unwrap());
    assert_eq!(
        shown["run"]["mutants"], doc["mutants"],
        "the bundle keeps it"
    );
    assert!(
        shown["run"]["mutants"]["tools"]["tree-sitter-python"].is_string(),
        "{:#}",
        shown["run"]["mutants"]
    );

    // The "boundary" criterion only checks 30 too: the score falls below.
    let weak = Workspace::new(&python("python3 checks/weak.py", POLICY));
    let out = verify(&weak);
    out.assert_exit(1);
    let doc = out.json();
    let score = doc["mutants"]["total"]["score"].as_f64().unwrap();
    assert!(score < 0.9, "{:#}", doc["mutants"]);
    let findings = gate_tests::findings(&doc);
    assert!(
        findings.iter().any(|f| f["severity"] == "critical"
            && f["title"].as_str().unwrap().contains("mutants.min_score")),
        "{findings:#?}"
    );
    assert!(
        findings.iter().any(|f| f["severity"] == "warning"
            && f["file"] == "src/rules.py"
            && f["line"] == 6
            && f["title"].as_str().unwrap().starts_with(
                "no criterion notices when `return age >= 18` becomes `return age > 18`"
            )),
        "{findings:#?}"
    );
    // Each survivor is a finding of its own (a person dismisses one at a time).
    let survivors: Vec<&str> = findings
        .iter()
        .filter(|f| f["file"] == "src/rules.py")
        .map(|f| f["id"].as_str().unwrap())
        .collect();
    let distinct: std::collections::BTreeSet<&&str> = survivors.iter().collect();
    assert_eq!(distinct.len(), survivors.len(), "{findings:#?}");
    let errors = peers::schema_errors("verify", std::slice::from_ref(&doc));
    assert!(errors.is_empty(), "{errors:?}");
}

/// Real cargo: two packages, each criterion an integration test; the
/// unrelated one builds only the other package, a workspace of its own
/// (cargo probes every member's `src/lib.rs` of the workspace it loads,
/// which is a read). Each mutant's copy keeps the build, so only the
/// mutated package is compiled again.
#[test]
fn rust_mutants_are_scored_by_the_criteria_that_read_them() {
    let manifest = |name: &str| {
        format!("[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2021\"\n")
    };
    let test = |body: &str| format!("#[test]\nfn holds() {{\n    {body}\n}}\n");
    let scenario = Scenario {
        base: vec![
            (
                "Cargo.toml",
                "[workspace]\nmembers = [\"rules\"]\nexclude = [\"greet\"]\nresolver = \"2\"\n"
                    .to_owned(),
            ),
            ("rules/Cargo.toml", manifest("rules")),
            ("rules/tests/weak.rs", test("assert!(rules::is_adult(30));")),
            (
                "rules/tests/boundary.rs",
                test("assert!(rules::is_adult(18));\n    assert!(!rules::is_adult(17));"),
            ),
            ("greet/Cargo.toml", manifest("greet") + "\n[workspace]\n"),
            (
                "greet/src/lib.rs",
                "pub fn greet(n: &str) -> String {\n    format!(\"hi {n}\")\n}\n".to_owned(),
            ),
            (
                "greet/tests/greet.rs",
                test("assert_eq!(greet::greet(\"a\"), \"hi a\");"),
            ),
        ],
        rules: (
            "rules/src/lib.rs",
            "pub fn older(a: u32, b: u32) -> bool {\n    a + 1 > b\n}\n",
            "pub fn older(a: u32, b: u32) -> bool {\n    a + 1 > b\n}\n\n\
             pub fn is_adult(age: u32) -> bool {\n    age >= 18\n}\n",
        ),
        runs: [
            "cargo test --offline -q -p rules --test weak".to_owned(),
            "cargo test --offline -q -p rules --test boundary".to_owned(),
            "cd greet && cargo test --offline -q --test greet".to_owned(),
        ],
        readable: Vec::new(),
        other_paths: "greet/**",
        policy: "",
        complete_traces: true,
    };
    the_boundary_criterion_kills_what_the_weak_one_misses(&scenario, ("age >= 18", "age > 18"));
}

/// Real TypeScript: each criterion compiles the file it tests with `tsc`
/// and runs the result on Node.js.
#[test]
fn typescript_mutants_are_scored_by_the_criteria_that_read_them() {
    let tsc = peers::tsc();
    let package = tsc
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .display()
        .to_string();
    let check = |out: &str, body: &str| {
        format!(
            "const {{ isAdult }} = require(\"../{out}/rules.js\");\nconst assert = require(\"assert\");\n{body}\n"
        )
    };
    let compile = |out: &str, file: &str, then: &str| {
        format!(
            "node {} --outDir {out} --module commonjs --target es2020 --strict {file} && node {then}",
            tsc.display()
        )
    };
    let scenario = Scenario {
        base: vec![
            ("checks/weak.js", check("out-weak", "assert(isAdult(30));")),
            (
                "checks/boundary.js",
                check(
                    "out-boundary",
                    "assert(isAdult(18));\nassert(!isAdult(17));",
                ),
            ),
            (
                "checks/greet.js",
                "const { greet } = require(\"../out-greet/greet.js\");\n\
                 require(\"assert\").strictEqual(greet(\"a\"), \"hi a\");\n"
                    .to_owned(),
            ),
            (
                "src/greet.ts",
                "export function greet(n: string): string {\n  return \"hi \" + n;\n}\n".to_owned(),
            ),
        ],
        rules: (
            "src/rules.ts",
            "export function older(a: number, b: number): boolean {\n  return a + 1 > b;\n}\n",
            "export function older(a: number, b: number): boolean {\n  return a + 1 > b;\n}\n\n\
             export function isAdult(age: number): boolean {\n  return age >= 18;\n}\n",
        ),
        runs: [
            compile("out-weak", "src/rules.ts", "checks/weak.js"),
            compile("out-boundary", "src/rules.ts", "checks/boundary.js"),
            compile("out-greet", "src/greet.ts", "checks/greet.js"),
        ],
        readable: vec![package],
        other_paths: "src/greet.ts",
        policy: "",
        complete_traces: true,
    };
    the_boundary_criterion_kills_what_the_weak_one_misses(
        &scenario,
        ("return age >= 18;", "return age > 18;"),
    );
}

/// Real Go: each criterion a `go test` of one package (Debian's
/// `golang-go`, which the test command installs).
#[test]
fn go_mutants_are_scored_by_the_criteria_that_read_them() {
    let test = |name: &str, body: &str| {
        format!(
            "package rules\n\nimport \"testing\"\n\nfunc Test{name}(t *testing.T) {{\n{body}\n}}\n"
        )
    };
    let scenario = Scenario {
        base: vec![
            ("go.mod", "module ages\n\ngo 1.19\n".to_owned()),
            (
                "rules/weak_test.go",
                test("Weak", "\tif !IsAdult(30) {\n\t\tt.Fatal(30)\n\t}"),
            ),
            (
                "rules/boundary_test.go",
                test(
                    "Boundary",
                    "\tif !IsAdult(18) || IsAdult(17) {\n\t\tt.Fatal(18)\n\t}",
                ),
            ),
            (
                "greet/greet.go",
                "package greet\n\nfunc Greet(n string) string {\n\treturn \"hi \" + n\n}\n"
                    .to_owned(),
            ),
            (
                "greet/greet_test.go",
                "package greet\n\nimport \"testing\"\n\nfunc TestGreet(t *testing.T) {\n\
                 \tif Greet(\"a\") != \"hi a\" {\n\t\tt.Fatal(\"a\")\n\t}\n}\n"
                    .to_owned(),
            ),
        ],
        rules: (
            "rules/rules.go",
            "package rules\n\nfunc Older(a, b int) bool {\n\treturn a+1 > b\n}\n",
            "package rules\n\nfunc Older(a, b int) bool {\n\treturn a+1 > b\n}\n\n\
             func IsAdult(age int) bool {\n\treturn age >= 18\n}\n",
        ),
        runs: [
            "go test -count=1 -run TestWeak ./rules".to_owned(),
            "go test -count=1 -run TestBoundary ./rules".to_owned(),
            "go test -count=1 ./greet".to_owned(),
        ],
        readable: Vec::new(),
        other_paths: "greet/**",
        policy: "",
        complete_traces: false,
    };
    the_boundary_criterion_kills_what_the_weak_one_misses(
        &scenario,
        ("return age >= 18", "return age > 18"),
    );
}

#[test]
fn gate_mutants_needs_a_base() {
    let env = TestEnv::new();
    env.write(
        "gate.toml",
        "[spec]\nid = \"x\"\n[[task]]\nid = \"t\"\npaths = [\"src/**\"]\n",
    );
    env.git(&["init", "-q", "-b", "main"]);
    let out = env.gate(&["mutants"]).run();
    out.assert_exit(2);
    out.stderr_has("--base");
    env.gate(&["mutants", "--base", "main", "--task", "nope"])
        .run()
        .assert_exit(2)
        .stderr_has("no task `nope`");
}
