use super::super::testutil::{Mem, configs, files};
use super::super::{LaunchChange, Runner, RunnerConfig, exam, launch_changes};

fn tree() -> Mem {
    Mem::new(&[
        (
            "package.json",
            r#"{"scripts": {
                "pretest": "node scripts/setup.js",
                "test": "vitest run",
                "precheck": "tsc",
                "check": "node tests/check.js && jest",
                "e2e": "mocha --require test/setup.js"
            }}"#,
        ),
        ("vitest.config.ts", "export default {}\n"),
        ("scripts/setup.js", "\n"),
        ("tests/acceptance.test.ts", "\n"),
        ("tests/check.js", "\n"),
        ("src/app.ts", "\n"),
        ("src/app.test.ts", "\n"),
        ("__tests__/c.js", "\n"),
        ("node_modules/x/a.test.js", "\n"),
        ("test/a.js", "\n"),
        ("test/setup.js", "\n"),
        ("test/sub/b.js", "\n"),
    ])
}

#[test]
fn what_a_package_script_runs() {
    let tree = tree();
    let p = "package.json#scripts.";
    let e = |names: &[&str]| names.iter().map(|n| format!("{p}{n}")).collect::<Vec<_>>();
    let cases: &[(&str, Vec<String>)] = &[
        (
            "npm test -- tests/acceptance.test.ts",
            [
                e(&["pretest"]),
                vec!["scripts/setup.js".into()],
                e(&["test"]),
                vec!["tests/acceptance.test.ts".into()],
                e(&["posttest"]),
            ]
            .concat(),
        ),
        (
            "npm run check",
            [
                e(&["precheck", "check"]),
                vec![
                    "tests/check.js".into(),
                    "__tests__/c.js".into(),
                    "src/app.test.ts".into(),
                    "tests/acceptance.test.ts".into(),
                ],
                e(&["postcheck"]),
            ]
            .concat(),
        ),
        (
            "npm run-script e2e",
            [
                e(&["pree2e", "e2e"]),
                vec!["test/setup.js".into(), "test/a.js".into()],
                e(&["poste2e"]),
            ]
            .concat(),
        ),
        (
            "pnpm test",
            [
                e(&["pretest"]),
                vec!["scripts/setup.js".into()],
                e(&["test"]),
                vec!["src/app.test.ts".into(), "tests/acceptance.test.ts".into()],
                e(&["posttest"]),
            ]
            .concat(),
        ),
        ("yarn vitest run src", vec!["src/app.test.ts".into()]),
        (
            "npx vitest acceptance",
            vec!["tests/acceptance.test.ts".into()],
        ),
        (
            "mocha --recursive",
            vec![
                "test/a.js".into(),
                "test/setup.js".into(),
                "test/sub/b.js".into(),
            ],
        ),
        ("jest 'src/*.test.ts'", vec!["src/app.test.ts".into()]),
        ("npm install", vec![]),
    ];
    for (run, want) in cases {
        assert_eq!(files(&exam(run, &tree)), *want, "{run}");
    }
}

#[test]
fn files_a_runner_configuration_names() {
    let tree = Mem::new(&[
        (
            "vitest.config.ts",
            "export default { test: { setupFiles: ['./tests/setup.ts'], include: ['tests/**/*.test.ts', 'e2e/**/*.e2e.ts'], coverage: { include: ['src/**'] } } }\n",
        ),
        (
            "package.json",
            r#"{"jest": {"setupFiles": ["<rootDir>/jest.setup.js"]}}"#,
        ),
        (
            ".mocharc.yml",
            "require: test/hooks.js\nspec: [test/x.js]\n",
        ),
        ("tests/setup.ts", "\n"),
        ("e2e/login.e2e.ts", "\n"),
        ("src/lib.ts", "\n"),
        (
            "tests/a.test.ts",
            "import { db } from './support/db.js';\nimport { app } from '../src/app';\nconst x = readFileSync('./fixtures/in.json');\n",
        ),
        ("tests/support/db.ts", "export * from './inner'\n"),
        ("tests/support/inner/index.ts", "\n"),
        ("tests/fixtures/in.json", "{}\n"),
        ("tests/__snapshots__/a.test.ts.snap", "x\n"),
        ("src/app.ts", "\n"),
        ("jest.setup.js", "\n"),
        ("test/hooks.js", "\n"),
        ("test/x.js", "\n"),
    ]);
    let cases: &[(&str, &[&str])] = &[
        (
            "vitest run",
            &[
                "tests/setup.ts",
                "tests/a.test.ts",
                // Its `include` names it; `coverage.include` names code.
                "e2e/login.e2e.ts",
                "tests/__snapshots__/a.test.ts.snap",
                "tests/support/db.ts",
                "tests/fixtures/in.json",
                "tests/support/inner/index.ts",
            ],
        ),
        (
            "jest",
            &[
                "jest.setup.js",
                "tests/a.test.ts",
                "tests/__snapshots__/a.test.ts.snap",
                "tests/support/db.ts",
                "tests/fixtures/in.json",
                "tests/support/inner/index.ts",
            ],
        ),
        ("mocha", &["test/hooks.js", "test/x.js"]),
    ];
    for (run, want) in cases {
        assert_eq!(files(&exam(run, &tree)), *want, "{run}");
    }
}

#[test]
fn one_package_of_a_workspace() {
    let tree = Mem::new(&[
        ("package.json", r#"{"workspaces": ["packages/*"]}"#),
        (
            "packages/app/package.json",
            r#"{"name": "@x/app", "scripts": {"test": "vitest run"}}"#,
        ),
        ("packages/app/src/a.test.ts", "\n"),
        ("pnpm-workspace.yaml", "packages:\n  - 'libs/*'\n"),
        (
            "libs/core/package.json",
            r#"{"name": "core", "scripts": {"test": "jest"}}"#,
        ),
        ("libs/core/x.test.js", "\n"),
    ]);
    let app = [
        "packages/app/package.json#scripts.pretest",
        "packages/app/package.json#scripts.test",
        "packages/app/src/a.test.ts",
        "packages/app/package.json#scripts.posttest",
    ];
    let core = [
        "libs/core/package.json#scripts.pretest",
        "libs/core/package.json#scripts.test",
        "libs/core/x.test.js",
        "libs/core/package.json#scripts.posttest",
    ];
    let cases: &[(&str, &[&str])] = &[
        ("npm test -w @x/app", &app),
        ("npm run test --workspace=packages/app", &app),
        ("npm --workspace @x/app test", &app),
        ("yarn workspace @x/app test", &app),
        ("pnpm --filter core test", &core),
        ("pnpm test --filter=core", &core),
    ];
    for (run, want) in cases {
        let got = exam(run, &tree);
        assert_eq!(files(&got), *want, "{run}");
        assert!(got.unresolved.is_empty(), "{run}: {:?}", got.unresolved);
    }
    for run in ["npm test -w nope", "npm test --workspaces", "pnpm -r test"] {
        assert!(!exam(run, &tree).unresolved.is_empty(), "{run}");
    }
}

#[test]
fn what_node_cannot_resolve_and_its_configs() {
    let tree = tree();
    for run in [
        "npm run missing",
        "npx vitest",
        "npm test -ws",
        "yarn workspace app test",
        "npm test -- $FILES",
        "vitest run $FILES",
    ] {
        assert!(!exam(run, &tree).unresolved.is_empty(), "{run}");
    }
    assert!(
        exam("npm test -- tests/acceptance.test.ts", &tree)
            .unresolved
            .is_empty()
    );
    let got = exam("yarn test", &tree);
    let want = [".npmrc", ".yarnrc.yml", ".yarnrc", "package.json"];
    assert_eq!(configs(&got)[..4], want);
    assert!(configs(&got).contains(&"vitest.config.ts".to_owned()));
    let got = exam("jest", &tree);
    assert!(configs(&got).contains(&"package.json#jest".to_owned()));
}

fn changes(
    path: &str,
    runner: Runner,
    section: Option<&str>,
    base: &str,
    now: &str,
) -> Vec<String> {
    let config = RunnerConfig {
        path: path.to_owned(),
        runner,
        section: section.map(str::to_owned),
    };
    let bytes = |t: &str| (!t.is_empty()).then(|| t.as_bytes().to_vec());
    launch_changes(&config, bytes(base).as_deref(), bytes(now).as_deref())
        .into_iter()
        .map(|LaunchChange { key, .. }| key)
        .collect()
}

#[test]
fn launch_changes_of_node_files() {
    /// (file, runner, section, base ("" = absent), now, keys that count)
    type Case<'a> = (
        &'a str,
        Runner,
        Option<&'a str>,
        &'a str,
        &'a str,
        &'a [&'a str],
    );
    let pkg = r#"{"name": "a", "scripts": {"test": "vitest"}, "jest": {"roots": ["t"]}}"#;
    let cases: &[Case<'_>] = &[
        (
            ".npmrc",
            Runner::Npm,
            None,
            "",
            "script-shell=/bin/true\n",
            &["script-shell"],
        ),
        (
            ".npmrc",
            Runner::Npm,
            None,
            "registry=https://a/\n",
            "registry=https://b/\n@s:registry=https://c/\n//c/:_authToken=x\nsave-exact=true\nfund=false\n",
            &[],
        ),
        (
            ".npmrc",
            Runner::Npm,
            None,
            "",
            "node-options=--require ./x.js\n",
            &["node-options"],
        ),
        (
            ".yarnrc.yml",
            Runner::Npm,
            None,
            "npmRegistryServer: x\n",
            "yarnPath: .yarn/fake.cjs\n",
            &["npmRegistryServer", "yarnPath"][1..],
        ),
        (
            ".yarnrc",
            Runner::Npm,
            None,
            "",
            "yarn-path \"./fake.js\"\nregistry \"https://r\"\n",
            &["yarn-path"],
        ),
        (
            "pnpm-workspace.yaml",
            Runner::Npm,
            None,
            "packages:\n  - a\n",
            "packages:\n  - a\n  - b\n",
            &[],
        ),
        (
            "pnpm-workspace.yaml",
            Runner::Npm,
            None,
            "",
            "scriptShell: /bin/true\n",
            &["scriptShell"],
        ),
        (
            "package.json",
            Runner::Npm,
            None,
            pkg,
            r#"{"name": "a", "scripts": {"test": "vitest", "lint": "x"}, "dependencies": {"x": "1"}}"#,
            &[],
        ),
        (
            "package.json",
            Runner::Npm,
            None,
            pkg,
            r#"{"name": "a", "type": "module"}"#,
            &["type"],
        ),
        (
            "package.json",
            Runner::Jest,
            Some("jest"),
            pkg,
            r#"{"jest": {"roots": ["u"]}}"#,
            &["jest"],
        ),
        (
            "package.json",
            Runner::Jest,
            Some("jest"),
            pkg,
            r#"{"name": "b", "jest": {"roots": ["t"]}}"#,
            &[],
        ),
        (
            "vitest.config.ts",
            Runner::Vitest,
            None,
            "",
            "export default {}\n",
            &["the whole file"],
        ),
    ];
    for (path, runner, section, base, now, want) in cases {
        assert_eq!(
            changes(path, *runner, *section, base, now),
            *want,
            "{path}: {now}"
        );
    }
}
