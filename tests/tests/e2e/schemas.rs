//! The published schemas: `gate schema` prints what `docs/schemas/` holds,
//! and the files users write lint clean against them in taplo, the TOML
//! tooling editors use (so an editor completes and checks `gate.toml`).

use std::path::Path;

use gate_tests::{TestEnv, peers};

#[test]
fn gate_schema_prints_the_published_schemas() {
    let env = TestEnv::new();
    for name in [
        "spec",
        "routing",
        "rules",
        "verify",
        "events",
        "predicate",
        "mutants",
        "replay",
        "replay-plan",
    ] {
        let out = env.gate(&["schema", name]).run();
        out.assert_exit(0);
        let published = std::fs::read_to_string(peers::published_schema(name)).unwrap();
        assert_eq!(out.stdout, published, "{name}");
    }
    env.gate(&["schema", "nothing"]).run().assert_exit(2);
}

#[test]
fn the_files_users_write_lint_clean_in_an_editor() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let env = TestEnv::new();
    env.write(
        "docs/review/rules.toml",
        r#"[[rule]]
id = "errors-bubble-up"
applies = ["src/**/*.rs"]
mistake = "The change swallows an error"
fix = "Let the error propagate"
severity = "warning"

[[rule.cases.violating]]
file = "src/lookup.rs"
diff = "+    Err(_) => return None,"

[[rule]]
id = "modules-named-for-contents"
judge = false
statement = "Modules are named for what they hold"
fix = "Name the module after what it holds"
"#,
    );
    let good = [
        ("spec", root.join("examples/shop/gate.toml")),
        // What `gate init` writes.
        ("spec", root.join("gate/src/init/gate.toml")),
        ("routing", root.join("review/src/routing/default.toml")),
        ("rules", env.path().join("docs/review/rules.toml")),
    ];
    for (schema, file) in &good {
        if let Err(said) = peers::taplo_lint(schema, file) {
            panic!("{} against the {schema} schema: {said}", file.display());
        }
    }
    // A misspelt key and a mistyped value are flagged where they are.
    env.write(
        "bad.toml",
        "[spec]\nid = \"x\"\n[[task]]\nid = \"t\"\npath = [\"src/**\"]\n[policy]\ntrivial_max_tasks = \"one\"\n",
    );
    let said = peers::taplo_lint("spec", &env.path().join("bad.toml")).unwrap_err();
    assert!(said.contains("'path' was unexpected"), "{said}");
    assert!(
        said.contains("\"one\" is not of type \"integer\""),
        "{said}"
    );
}
