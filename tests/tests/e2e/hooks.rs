//! The gate as a coding agent's Stop hook, through the real binary: the
//! answer for a failing, a fixed, an escalated and a broken workspace; the
//! run advisory and out of reach of the pipeline's key and ledger; the
//! installer merging once. The last test runs the real Claude Code CLI.

use std::path::Path;
use std::time::Duration;

use gate_tests::TestEnv;
use gate_tests::model_server::{ModelServer, Reply, Request};
use serde_json::{Value, json};

/// A workspace whose one criterion holds once `src/fixed.txt` exists.
fn workspace(policy: &str) -> TestEnv {
    let env = TestEnv::new();
    env.write(
        "gate.toml",
        &format!(
            r#"
[spec]
id = "hooked"
summary = "A file the agent must write"
[[task]]
id = "fix"
title = "Write the file"
paths = ["src/**"]
[[task.criterion]]
id = "file-written"
text = "src/fixed.txt exists"
run = "test -f src/fixed.txt"
{policy}
"#
        ),
    );
    env.write("src/main.txt", "the code\n");
    env
}

/// Runs the hook as the agent would: its JSON on stdin, in `home`.
fn hook(env: &TestEnv, home: &Path, agent: &str) -> Value {
    let input = json!({
        "session_id": "s-1", "transcript_path": null, "cwd": env.path(),
        "hook_event_name": "Stop", "stop_hook_active": true,
        "last_assistant_message": "done", "model": "m", "permission_mode": "default",
        "turn_id": "t-1", "an_unknown_field": 1,
    });
    let out = env
        .gate(&["hook", agent])
        .env("HOME", home)
        // The pipeline's settings, which an advisory run must never use.
        .env("GATE_SIGNING_KEY", "not a key at all")
        .env("GATE_LEDGER", "postgres://nobody@127.0.0.1:1/never")
        .env("GATE_BUNDLE_STORE", "s3://pipeline-bucket/bundles")
        .stdin(&input.to_string())
        .timeout(Duration::from_secs(120))
        .run();
    out.assert_exit(0);
    let answer: Value = serde_json::from_str(out.stdout.trim())
        .unwrap_or_else(|e| panic!("the hook printed no JSON ({e}): {}", out.stdout));
    let keys: Vec<&str> = answer
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    for key in &keys {
        assert!(
            [
                "decision",
                "reason",
                "continue",
                "stopReason",
                "systemMessage"
            ]
            .contains(key),
            "{key} is not in the Stop hook's output schema: {answer}"
        );
    }
    answer
}

/// The advisory state directory the hook used under `home`, and the
/// verdicts of the runs in its ledger, newest first.
fn advisory_runs(env: &TestEnv, home: &Path) -> (std::path::PathBuf, Vec<String>) {
    let advisory = home.join(".local/state/gate/advisory");
    let state = std::fs::read_dir(&advisory)
        .unwrap_or_else(|e| panic!("no advisory state in {}: {e}", advisory.display()))
        .next()
        .expect("one advisory state directory")
        .unwrap()
        .path();
    let runs = env
        .gate(&[
            "--state",
            state.to_str().unwrap(),
            "runs",
            "--format",
            "json",
        ])
        .run();
    runs.assert_exit(0);
    let verdicts = runs.json()["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["verdict"].as_str().unwrap().to_owned())
        .collect();
    (state, verdicts)
}

#[test]
fn the_stop_hook_blocks_a_failure_lets_a_fix_stop_and_keeps_its_own_records() {
    for agent in ["claude-code", "codex"] {
        let env = workspace("");
        let home = tempfile::tempdir().unwrap();
        let answer = hook(&env, home.path(), agent);
        assert_eq!(answer["decision"], "block", "{agent}: {answer}");
        let reason = answer["reason"].as_str().unwrap();
        assert!(
            reason.contains("criterion `file-written` (task `fix`): src/fixed.txt exists"),
            "{agent}: {reason}"
        );

        env.write("src/fixed.txt", "fixed\n");
        let answer = hook(&env, home.path(), agent);
        assert!(answer.get("decision").is_none(), "{agent}: {answer}");
        let note = answer["systemMessage"].as_str().unwrap();
        assert!(note.starts_with("gate (advisory): PASS"), "{agent}: {note}");

        // The records are the user's own, not the workspace's or the pipeline's.
        assert!(
            !env.path().join(".gate").exists(),
            "{agent}: wrote the workspace's state"
        );
        let (state, verdicts) = advisory_runs(&env, home.path());
        assert_eq!(verdicts, ["pass", "fail"], "{agent}: newest first");
        let bundle = note.rsplit("evidence ").next().unwrap();
        assert!(
            bundle.starts_with(state.to_str().unwrap()),
            "{agent}: {bundle}"
        );
        let statement = gate_tests::statement_of(Path::new(bundle));
        assert_eq!(statement["predicate"]["run"]["advisory"], true, "{agent}");
    }
}

#[test]
fn an_escalated_or_broken_run_stops_the_agent_for_a_person() {
    // The attempt budget is one: the second stop escalates.
    let env = workspace("[policy]\nmax_attempts = 1\n");
    let home = tempfile::tempdir().unwrap();
    assert_eq!(hook(&env, home.path(), "claude-code")["decision"], "block");
    let answer = hook(&env, home.path(), "claude-code");
    assert_eq!(answer["continue"], false, "{answer}");
    assert!(answer.get("decision").is_none(), "{answer}");
    let why = answer["stopReason"].as_str().unwrap();
    assert!(
        why.starts_with("gate stopped this series for a person"),
        "{why}"
    );

    // A spec that does not parse: never a silent allow.
    env.write("gate.toml", "[spec\nid = 1\n");
    let answer = hook(&env, home.path(), "codex");
    assert_eq!(answer["continue"], false, "{answer}");
    let why = answer["stopReason"].as_str().unwrap();
    assert!(why.contains("gate.toml"), "{why}");

    // No workspace at all.
    let nowhere = tempfile::tempdir().unwrap();
    let out = gate_tests::TestEnv::new()
        .gate(&["hook", "claude-code"])
        .env("HOME", home.path())
        .stdin(&json!({"cwd": nowhere.path()}).to_string())
        .run();
    out.assert_exit(0);
    let answer: Value = serde_json::from_str(out.stdout.trim()).unwrap();
    assert_eq!(answer["continue"], false, "{answer}");
}

#[test]
fn install_merges_the_hook_once_and_keeps_what_is_there() {
    let env = workspace("");
    env.write(
        ".claude/settings.json",
        r#"{"permissions": {"allow": ["Bash(ls)"]},
            "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify done"}]}]}}"#,
    );
    for _ in 0..2 {
        env.gate(&["hook", "install", "claude-code", "--base", "main"])
            .run()
            .assert_exit(0)
            .stdout_has("part of the workspace: the agent can edit or remove it");
    }
    let settings: Value = serde_json::from_str(&env.read(".claude/settings.json")).unwrap();
    assert_eq!(settings["permissions"]["allow"][0], "Bash(ls)");
    let stop = settings["hooks"]["Stop"].as_array().unwrap();
    assert_eq!(stop.len(), 2, "{settings}");
    assert_eq!(stop[0]["hooks"][0]["command"], "notify done");
    let ours = &stop[1]["hooks"][0];
    let command = ours["command"].as_str().unwrap();
    assert!(
        command.contains(" hook claude-code --timeout-s "),
        "{command}"
    );
    assert!(command.ends_with(" --base main"), "{command}");
    // The spec's one criterion (300 s by default), the review's 1500 s and a minute.
    assert_eq!(ours["timeout"], 300 + 1500 + 60);

    // Codex skips a hook nobody approved without a word: the installer
    // says what it needs, a project's trust only for a project file.
    let home = tempfile::tempdir().unwrap();
    for (args, project) in [(vec!["--user"], false), (vec![], true)] {
        let mut argv = vec!["hook", "install", "codex"];
        argv.extend(args);
        let out = env.gate(&argv).env("HOME", home.path()).run();
        out.assert_exit(0);
        for said in [
            "Codex runs the hook only once you approve it, and skips it silently until then",
            "review and trust the gate's Stop hook under /hooks",
            CODEX_EXEC,
        ] {
            assert!(out.stdout.contains(said), "{said:?}: {}", out.stdout);
        }
        assert_eq!(
            out.stdout.contains("trust this project when Codex asks"),
            project,
            "{}",
            out.stdout
        );
    }
    let codex: Value = serde_json::from_str(
        &std::fs::read_to_string(home.path().join(".codex/hooks.json")).unwrap(),
    )
    .unwrap();
    assert!(
        codex["hooks"]["Stop"][0]["hooks"][0]["command"]
            .as_str()
            .unwrap()
            .contains(" hook codex ")
    );
}

/// What the scripted model answers Claude Code: it stops at once; told by
/// the gate's block what fails, it writes the file with the Bash tool; once
/// the tool ran, it stops again.
fn scripted_agent(r: &Request) -> Reply {
    let body = &r.raw_body;
    if body.contains("\"tool_result\"") {
        return Reply::anthropic_text("The file is written; done.");
    }
    if body.contains("file-written") {
        return Reply::anthropic_tool_use(
            "Bash",
            &json!({"command": "mkdir -p src && echo fixed > src/fixed.txt",
                    "description": "Write the file the gate asks for"}),
        );
    }
    Reply::anthropic_text("All done.")
}

/// Installs the gate as Claude Code's Stop hook in `env`, then runs
/// Claude Code there, its model `server`, in a fresh home (returned, with
/// what Claude Code printed).
fn claude_session(
    env: &TestEnv,
    server: &ModelServer,
) -> (std::process::Output, tempfile::TempDir) {
    env.gate(&["hook", "install", "claude-code"])
        .run()
        .assert_exit(0);
    let home = tempfile::tempdir().unwrap();
    let out =
        gate_tests::agents::claude_print(env.path(), home.path(), &server.url(), "Write the file.")
            .output()
            .expect("run claude");
    (out, home)
}

#[test]
fn claude_code_is_blocked_until_its_change_passes() {
    let server = ModelServer::start();
    server.default_reply(Reply::computed(scripted_agent));
    let env = workspace("");
    let (out, _home) = claude_session(&env, &server);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "claude failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let result: Value = serde_json::from_str(stdout.trim()).expect("claude's JSON result");
    assert_eq!(result["result"], "The file is written; done.", "{result}");
    assert_eq!(env.read("src/fixed.txt"), "fixed\n");
    // The block reached the model as the next turn, in the gate's words.
    let requests = server.requests();
    let told = requests
        .iter()
        .find(|r| r.raw_body.contains("file-written"))
        .expect("no request carried the gate's block");
    assert!(
        told.raw_body.contains("src/fixed.txt exists"),
        "{}",
        told.raw_body
    );
    // The second stop passed: the session ended after the tool's turn.
    let last = requests
        .iter()
        .rev()
        .find(|r| r.path.starts_with("/v1/messages") && r.body["stream"] == true)
        .unwrap();
    assert!(last.raw_body.contains("\"tool_result\""));
}

/// The same agent over the Responses API, as Codex calls its model.
fn scripted_codex(r: &Request) -> Reply {
    if r.method == "GET" {
        return Reply::json(
            200,
            json!({"object": "list", "data": [{"id": "gpt-test", "object": "model"}]}),
        );
    }
    let body = &r.raw_body;
    if body.contains("\"function_call_output\"") {
        return Reply::responses_text("The file is written; done.");
    }
    if body.contains("file-written") {
        return Reply::responses_call(
            "exec_command",
            &json!({"cmd": "mkdir -p src && echo fixed > src/fixed.txt"}),
        );
    }
    Reply::responses_text("All done.")
}

/// How `gate hook install codex` says to run `codex exec` with the hook:
/// what [`gate_tests::agents::codex_exec`] runs.
const CODEX_EXEC: &str = "`codex exec --trust --dangerously-bypass-hook-trust …`";

#[test]
fn codex_is_blocked_until_its_change_passes() {
    let server = ModelServer::start();
    server.default_reply(Reply::computed(scripted_codex));
    let env = workspace("");
    let installed = env.gate(&["hook", "install", "codex"]).run();
    installed.assert_exit(0);
    // Run the way the installer says (`codex_exec` passes those flags).
    assert!(
        installed.stdout.contains(CODEX_EXEC),
        "{}",
        installed.stdout
    );
    let home = tempfile::tempdir().unwrap();
    let out =
        gate_tests::agents::codex_exec(env.path(), home.path(), &server.url(), "Write the file.")
            .output()
            .expect("run codex");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "codex failed: {stdout}\n{stderr}");
    assert_eq!(stdout.trim(), "The file is written; done.", "{stderr}");
    assert_eq!(env.read("src/fixed.txt"), "fixed\n");
    let posts: Vec<Request> = server
        .requests()
        .into_iter()
        .filter(|r| r.path == "/v1/responses")
        .collect();
    // Stopped, blocked with the criterion inside Codex's hook prompt, the
    // command run, then stopped again: the gate passed the second time.
    let told = posts
        .iter()
        .find(|r| r.raw_body.contains("file-written"))
        .expect("no request carried the gate's block");
    assert!(told.raw_body.contains("hook_prompt"), "{}", told.raw_body);
    assert_eq!(posts.len(), 3, "{posts:#?}");
    assert!(stderr.contains("hook: Stop Blocked"), "{stderr}");
}

#[test]
fn an_escalated_series_ends_the_claude_code_session_with_the_hand_off() {
    let server = ModelServer::start();
    // A model that never fixes anything.
    server.default_reply(Reply::anthropic_text("All done."));
    let env = workspace("[policy]\nmax_attempts = 1\n");
    let (out, home) = claude_session(&env, &server);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let turns = server
        .requests()
        .iter()
        .filter(|r| r.path.starts_with("/v1/messages") && r.body["stream"] == true)
        .count();
    // Stopped and blocked once; stopped again, the series escalated: the
    // session ended there, with no third turn.
    assert_eq!(turns, 2, "{stdout}");
    let result: Value = serde_json::from_str(stdout.trim()).expect("claude's JSON result");
    assert_eq!(result["terminal_reason"], "stop_hook_prevented", "{result}");
    // The gate's own record of it, in the user's advisory ledger.
    let (_, verdicts) = advisory_runs(&env, home.path());
    assert_eq!(verdicts, ["escalate", "fail"], "newest first");
}

/// What the scripted model answers Aider, in its `whole` edit format: a
/// note first (the gate still fails), the file once the gate's output —
/// fed back by Aider — names the criterion.
fn scripted_aider(r: &Request) -> Reply {
    if r.method == "GET" {
        return Reply::json(
            200,
            json!({"object": "list", "data": [{"id": "gpt-test", "object": "model"}]}),
        );
    }
    let last = r.body["messages"]
        .as_array()
        .and_then(|m| m.last())
        .map(ToString::to_string)
        .unwrap_or_default();
    if last.contains("file-written") {
        Reply::openai_text("I will write the file.\n\nsrc/fixed.txt\n```\nfixed\n```\n")
    } else {
        Reply::openai_text("I will write a note first.\n\nsrc/note.txt\n```\na note\n```\n")
    }
}

#[test]
fn aider_retries_on_the_gates_failure_until_it_passes() {
    let server = ModelServer::start();
    server.default_reply(Reply::computed(scripted_aider));
    let env = workspace("");
    env.git(&["init", "-q"]);
    env.git(&["add", "-A"]);
    env.git(&[
        "-c",
        "user.email=t@t",
        "-c",
        "user.name=t",
        "commit",
        "-qm",
        "init",
    ]);
    let home = tempfile::tempdir().unwrap();
    let test_cmd = format!("{} hook aider", gate_tests::gate_bin().display());
    let out = gate_tests::agents::aider_message(
        env.path(),
        home.path(),
        &server.url(),
        &test_cmd,
        "Write the file the gate wants.",
    )
    // No reviewer is reached from the test: the gate decides by code alone.
    .env("GATE_OFFLINE", "1")
    .output()
    .expect("run aider");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "aider failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(env.read("src/fixed.txt"), "fixed\n");
    let chats: Vec<Request> = server
        .requests()
        .into_iter()
        .filter(|r| r.path.ends_with("/chat/completions"))
        .collect();
    assert_eq!(chats.len(), 2, "{stdout}");
    // The gate's failure, fed back by Aider as the next user message.
    let fed = chats[1].raw_body.as_str();
    assert!(
        fed.contains("criterion `file-written` (task `fix`): src/fixed.txt exists"),
        "{fed}"
    );
    assert!(stdout.contains("gate (advisory): PASS"), "{stdout}");
}

/// A routing table to the scripted server whose provider's key is the
/// variable `key_env`.
fn table_to(server: &ModelServer, key_env: &str) -> String {
    format!(
        "[provider.p]\napi = \"openai\"\nbase_url = \"{}/v1\"\napi_key_env = \"{key_env}\"\n\n\
         [model.m]\nprovider = \"p\"\nname = \"m\"\n\n[route]\n\"*\" = \"m\"\n",
        server.url()
    )
}

/// Inside an agent's session the gate reviews only with the table the
/// user chose for advisory runs: the agent's key, even with the
/// workspace's table naming it and the agent's base URL set, sends
/// nothing, and the run says review did not run; the user's table is read
/// from their configuration folder or the hook's `--routing`, and its own
/// key goes to its own endpoint, the agent's to none.
#[test]
fn an_advisory_run_spends_only_what_the_user_routed_to_it() {
    // (where the advisory table is, the variable it names, what is sent)
    let cases = [
        (None, "", None),
        (Some("config"), "REVIEW_KEY", Some("rk-user")),
        (Some("flag"), "REVIEW_KEY", Some("rk-user")),
        // The user chose the agent's key for review: then it is used.
        (Some("config"), "ANTHROPIC_API_KEY", Some("sk-agent")),
    ];
    for (table, key_env, sent) in cases {
        let server = ModelServer::start();
        server.default_reply(Reply::openai(
            &json!({"findings": [], "criteria": [], "rules": []}),
        ));
        let env = workspace("");
        env.write("src/fixed.txt", "fixed\n");
        // The agent could write this: an advisory run never reads it.
        env.write("routing.toml", &table_to(&server, "ANTHROPIC_API_KEY"));
        let home = tempfile::tempdir().unwrap();
        let config = home.path().join("config");
        let mut args = vec!["hook".to_owned(), "claude-code".to_owned()];
        match table {
            Some("config") => {
                std::fs::create_dir_all(config.join("gate")).unwrap();
                std::fs::write(
                    config.join("gate/advisory-routing.toml"),
                    table_to(&server, key_env),
                )
                .unwrap();
            }
            Some(_) => {
                let file = home.path().join("review.toml");
                std::fs::write(&file, table_to(&server, key_env)).unwrap();
                args.extend(["--routing".to_owned(), file.display().to_string()]);
            }
            None => {}
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = env
            .gate(&args)
            .env("HOME", home.path())
            .env("XDG_CONFIG_HOME", &config)
            .env("ANTHROPIC_API_KEY", "sk-agent")
            .env("ANTHROPIC_BASE_URL", server.url())
            .env("OPENAI_API_KEY", "sk-agent-openai")
            .env("REVIEW_KEY", "rk-user")
            .stdin(&json!({"cwd": env.path(), "hook_event_name": "Stop"}).to_string())
            .timeout(Duration::from_secs(120))
            .run();
        out.assert_exit(0);
        let answer: Value = serde_json::from_str(out.stdout.trim()).unwrap();
        let note = answer["systemMessage"].as_str().unwrap_or_default();
        let requests = server.requests();
        match sent {
            None => {
                assert!(
                    requests.is_empty(),
                    "{table:?}: {} requests",
                    requests.len()
                );
                assert!(
                    note.starts_with("gate (advisory): PASS (unreviewed: advisory run with no routing table for advisory runs"),
                    "{note}"
                );
            }
            Some(key) => {
                assert!(!requests.is_empty(), "{table:?}: nothing sent: {note}");
                for r in &requests {
                    assert_eq!(
                        r.header("authorization"),
                        Some(format!("Bearer {key}").as_str()),
                        "{table:?}"
                    );
                }
                assert!(
                    note.starts_with("gate (advisory): PASS;"),
                    "{table:?}: {note}"
                );
            }
        }
    }
}

/// The commands a hand-off names, in backticks, that start with `GATE_ADVISORY=1`.
fn printed_commands(text: &str) -> Vec<String> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .filter(|c| c.starts_with("GATE_ADVISORY=1 "))
        .map(str::to_owned)
        .collect()
}

/// Runs `command` as printed, with `sh`, from the workspace, as the user.
fn run_printed(env: &TestEnv, home: &Path, command: &str) -> std::process::Output {
    #[allow(clippy::disallowed_methods)] // the test runs what a person would paste
    let mut sh = std::process::Command::new("sh");
    gate_tests::hermetic(&mut sh);
    sh.args(["-c", command])
        .current_dir(env.path())
        .env("HOME", home)
        .output()
        .expect("sh runs")
}

/// The commands a block reason and an escalation name work as printed,
/// from the workspace: the run is shown, and a new series or an override
/// of the escalated run lets the next session go on.
#[test]
fn the_hand_off_commands_work_as_printed_from_the_workspace() {
    for lift in ["new series", "override"] {
        let env = workspace("[policy]\nmax_attempts = 2\n");
        let home = tempfile::tempdir().unwrap();
        assert_eq!(hook(&env, home.path(), "claude-code")["decision"], "block");
        let answer = hook(&env, home.path(), "claude-code");
        let reason = answer["reason"].as_str().unwrap();
        let [show] = printed_commands(reason)
            .try_into()
            .unwrap_or_else(|c| panic!("one command in the block reason, not {c:?}: {reason}"));
        assert!(show.contains(" evidence show "), "{show}");
        let out = run_printed(&env, home.path(), &show);
        assert!(out.status.success(), "{show}: {out:?}");
        assert!(String::from_utf8_lossy(&out.stdout).contains("file-written"));

        let answer = hook(&env, home.path(), "claude-code");
        assert_eq!(answer["continue"], false, "{answer}");
        let why = answer["stopReason"].as_str().unwrap();
        let commands = printed_commands(why);
        assert_eq!(commands.len(), 3, "{why}");
        let find = |what: &str| {
            commands
                .iter()
                .find(|c| c.contains(what))
                .unwrap_or_else(|| panic!("no {what} in {why}"))
                .clone()
        };
        let out = run_printed(&env, home.path(), &find(" evidence show "));
        assert!(out.status.success(), "{out:?}");
        // Still escalated until a person acts.
        assert_eq!(hook(&env, home.path(), "claude-code")["continue"], false);
        if lift == "new series" {
            let command = find(" verify --new-series");
            let out = run_printed(&env, home.path(), &command);
            // The new series' first attempt fails as the change does; the
            // session's next stop is its second, not an escalation.
            assert_eq!(out.status.code(), Some(1), "{command}: {out:?}");
            let answer = hook(&env, home.path(), "claude-code");
            assert_eq!(answer["decision"], "block", "{lift}: {answer}");
        } else {
            let command = find(" override ");
            let out = run_printed(&env, home.path(), &command);
            assert!(out.status.success(), "{command}: {out:?}");
            // The escalation is lifted: the session goes on with what fails.
            let answer = hook(&env, home.path(), "claude-code");
            assert_eq!(answer["decision"], "block", "{lift}: {answer}");
        }
    }
}
