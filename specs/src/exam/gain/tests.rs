//! What added lines can do, by language: each case a file before and after
//! the change, and whether the gain edits the exam (with the words of why).

use super::super::model::Gain;
use super::{gain, package_code_gain};

/// `Ok(kind)`: the gain is that (`"tests"`, `"nothing"`); `Err(words)`: it
/// runs something, and why says `words`.
fn judged(path: &str, base: Option<&str>, now: &str) -> Result<&'static str, String> {
    match gain(path, base.map(str::as_bytes), now.as_bytes()) {
        Gain::Nothing => Ok("nothing"),
        Gain::Tests => Ok("tests"),
        Gain::Runs { line, why } => Err(format!("{line}: {why}")),
    }
}

const PY: &str =
    "import os\nfrom . import answer\n\n\ndef test_ping():\n    assert answer() == 'PONG'\n";

#[test]
fn python_additions() {
    // (what, the file now, Ok(kind) or Err(words of why))
    let cases: &[(&str, String, Result<&str, &str>)] = &[
        (
            "a new test",
            format!("{PY}\n\ndef test_more():\n    x = os.getcwd()\n    assert x\n"),
            Ok("tests"),
        ),
        (
            "a new test class with a parametrised case",
            format!(
                "{PY}\n\nCASES = [1, 2]\n\n\nclass TestMore:\n    \"\"\"Doc.\"\"\"\n\n    \
                 @pytest.mark.parametrize('n', CASES)\n    def test_n(self, n):\n        assert n\n"
            ),
            Ok("tests"),
        ),
        ("a comment", format!("{PY}# more to come\n"), Ok("nothing")),
        (
            "the main guard",
            format!("{PY}\nif __name__ == '__main__':\n    import sys\n    sys.exit(main())\n"),
            Ok("tests"),
        ),
        (
            "import-time exit appended",
            format!(
                "{PY}import sys\nif 'pytest' in sys.modules and any('acceptance' in a for a in sys.argv):\n    os._exit(0)\n"
            ),
            Err("runs when the module is imported"),
        ),
        (
            "an exit on one line",
            format!("{PY}os._exit(0)\n"),
            Err("`_exit`"),
        ),
        (
            "a module-level call",
            format!("{PY}answer.cache_clear()\n"),
            Err("runs when the module is imported"),
        ),
        (
            "a value computed at import",
            format!("{PY}DATA = load_fixture('x')\n"),
            Err("calls `load_fixture`"),
        ),
        (
            "a hook",
            format!("{PY}\ndef pytest_collection_modifyitems(items):\n    items.clear()\n"),
            Err("hook `pytest_collection_modifyitems`"),
        ),
        (
            "a module set-up",
            format!("{PY}\ndef setup_module():\n    pass\n"),
            Err("`setup_module`"),
        ),
        (
            "a skip mark over the module",
            format!("{PY}pytestmark = pytest.mark.skip\n"),
            Err("`pytestmark`"),
        ),
        (
            "a decorator above the old test",
            PY.replace("def test_ping", "@pytest.mark.skip\ndef test_ping"),
            Err("adds a decorator to `test_ping`"),
        ),
        (
            "a test under the old test's name",
            format!("{PY}\n\ndef test_ping():\n    pass\n"),
            Err("defines `test_ping` again"),
        ),
        (
            "an import over an old name",
            format!("{PY}from fake import answer\n"),
            Err("imports `answer`"),
        ),
        (
            "a line inserted into the old test",
            PY.replace("    assert answer()", "    return\n    assert answer()"),
            Err("inserted into `test_ping`"),
        ),
        (
            "an autouse fixture",
            format!("{PY}\n@pytest.fixture(autouse=True)\ndef patch():\n    yield\n"),
            Err("autouse"),
        ),
        (
            "a triple-quoted string holding code",
            format!("{PY}\n\ndef test_doc():\n    s = \"\"\"\nos._exit(0)\n\"\"\"\n    assert s\n"),
            Ok("tests"),
        ),
    ];
    for (what, now, want) in cases {
        let got = judged("tests/test_app.py", Some(PY), now);
        match (want, &got) {
            (Ok(kind), Ok(got)) => assert_eq!(kind, got, "{what}"),
            (Err(words), Err(why)) => assert!(why.contains(words), "{what}: {why}"),
            _ => panic!("{what}: {got:?}, wanted {want:?}"),
        }
    }
    // A new module is judged whole: what its top level runs.
    assert_eq!(
        judged(
            "tests/test_new.py",
            None,
            "import pytest\n\n\ndef test_new():\n    assert True\n"
        ),
        Ok("tests")
    );
    assert!(judged("tests/__init__.py", None, "import os\nos._exit(0)\n").is_err());
    // Old lines not all kept: an edit.
    assert!(
        judged(
            "tests/test_app.py",
            Some(PY),
            "def test_ping():\n    pass\n"
        )
        .is_err()
    );
}

const GO: &str = "package acceptance\n\nimport \"testing\"\n\nfunc TestLimit(t *testing.T) {\n\tif limit() != 60 {\n\t\tt.Fatal(\"no\")\n\t}\n}\n";

#[test]
fn go_additions() {
    let cases: &[(&str, String, Result<&str, &str>)] = &[
        (
            "a new test",
            format!(
                "{GO}\nfunc TestMore(t *testing.T) {{\n\tif limit() < 0 {{\n\t\tt.Fatal(\"x\")\n\t}}\n}}\n"
            ),
            Ok("tests"),
        ),
        (
            "a flag for golden files",
            format!("{GO}\nvar update = flag.Bool(\"update\", false, \"\")\n"),
            Ok("tests"),
        ),
        (
            "a build constraint",
            format!("//go:build e2e\n\n{GO}"),
            Err("build constraint `//go:build e2e`"),
        ),
        (
            "an old-style build constraint",
            format!("// +build e2e\n\n{GO}"),
            Err("build constraint"),
        ),
        (
            "TestMain without m.Run",
            format!("{GO}\nfunc TestMain(m *testing.M) {{\n}}\n"),
            Err("`func TestMain`"),
        ),
        (
            "an init",
            format!("{GO}\nfunc init() {{\n}}\n"),
            Err("`func init`"),
        ),
        (
            "an exit in a new test",
            format!("{GO}\nfunc TestX(t *testing.T) {{\n\tsyscall.Exit(0)\n}}\n"),
            Err("`syscall.Exit`"),
        ),
        (
            "a line inserted into the old test",
            GO.replace("\tif limit()", "\treturn\n\tif limit()"),
            Err("inserted into `TestLimit`"),
        ),
        (
            "a variable that sets the test flags",
            format!("{GO}\nvar _ = flag.Set(\"test.run\", \"^$\")\n"),
            Err("`flag.Set`"),
        ),
        (
            "a variable computed by a function literal",
            format!("{GO}\nvar _ = func() int {{\n\treturn 0\n}}()\n"),
            Err("`}()`"),
        ),
        (
            "os renamed",
            format!("{GO}\nimport x \"os\"\n"),
            Err("under another name"),
        ),
    ];
    for (what, now, want) in cases {
        let got = judged("acceptance/limit_test.go", Some(GO), now);
        match (want, &got) {
            (Ok(kind), Ok(got)) => assert_eq!(kind, got, "{what}"),
            (Err(words), Err(why)) => assert!(why.contains(words), "{what}: {why}"),
            _ => panic!("{what}: {got:?}, wanted {want:?}"),
        }
    }
    // A new file's own constraint leaves out only that file.
    assert_eq!(
        judged(
            "acceptance/e2e_test.go",
            None,
            "//go:build e2e\n\npackage acceptance\n\nfunc TestE2E(t *testing.T) {}\n"
        ),
        Ok("tests")
    );
    assert!(
        judged(
            "acceptance/main_test.go",
            None,
            "package acceptance\n\nimport (\n\t\"os\"\n\t\"testing\"\n)\n\nfunc TestMain(m *testing.M) {\n\tos.Exit(0)\n}\n"
        )
        .unwrap_err()
        .contains("`func TestMain`")
    );
}

#[test]
fn go_package_code() {
    let code = "package limit\n\nimport \"os\"\n\nfunc Limit() int {\n\treturn 60\n}\n\nfunc main() {\n\tos.Exit(run())\n}\n";
    let judged =
        |now: &str| package_code_gain("limit/limit.go", Some(code.as_bytes()), now.as_bytes());
    // The change's own work on the code under test: free.
    assert_eq!(judged(&code.replace("60", "30")), Gain::Nothing);
    assert_eq!(
        judged(&format!(
            "{code}\nvar ErrLimit = errors.New(\"limit\")\n\nfunc Other() {{}}\n"
        )),
        Gain::Nothing
    );
    // An exit in `main` is the program's.
    assert_eq!(
        judged(&code.replace("os.Exit(run())", "os.Exit(run() + 1)")),
        Gain::Nothing
    );
    let runs = |now: &str| match judged(now) {
        Gain::Runs { why, .. } => why,
        other => panic!("{now}: {other:?}"),
    };
    let skip = "package limit\n\nimport (\n\t\"os\"\n\t\"strings\"\n)\n\nfunc init() {\n\tfor _, a := range os.Args {\n\t\tif strings.HasPrefix(a, \"-test.\") {\n\t\t\tos.Exit(0)\n\t\t}\n\t}\n}\n";
    assert!(
        matches!(
            package_code_gain("limit/skip.go", None, skip.as_bytes()),
            Gain::Runs { line: 8, .. }
        ),
        "{:?}",
        package_code_gain("limit/skip.go", None, skip.as_bytes())
    );
    assert!(runs(&format!("{code}\nfunc helper() {{\n\tos.Exit(0)\n}}\n")).contains("os.Exit"));
    assert!(runs(&format!("{code}\nvar _ = setup()\n")).contains("`setup`"));
    assert!(runs(&format!("{code}\n//go:linkname exit runtime.exit\n")).contains("go:linkname"));
    assert_eq!(
        package_code_gain("limit/limit.go", Some(code.as_bytes()), code.as_bytes()),
        Gain::Nothing
    );
}

/// Test data the tests read whole: a gain there is an edit; elsewhere,
/// outside Python and Go, a gain counts as tests, as before.
#[test]
fn test_data_and_other_files() {
    assert!(
        judged("pkg/testdata/golden.txt", Some("a\n"), "a\nb\n")
            .unwrap_err()
            .contains("test data")
    );
    assert_eq!(judged("pkg/testdata/new.txt", None, "a\n"), Ok("tests"));
    assert_eq!(
        judged(
            "tests/server.rs",
            Some("#[test]\nfn a() {}\n"),
            "#[test]\nfn a() {}\n#[test]\nfn b() {}\n"
        ),
        Ok("tests")
    );
}
