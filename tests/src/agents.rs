//! The coding agents whose Stop hooks the tests drive for real: Claude Code
//! and OpenAI's Codex CLI, from the npm registry (`scripts/agent-clis.sh`
//! installs them; `GATE_TEST_CLAUDE` and `GATE_TEST_CODEX` name their
//! programs). Without them the tests fail with the set-up to run, never
//! pass silently. They talk only to the scripted model server on loopback.

use std::path::{Path, PathBuf};
use std::process::Command;

fn program(var: &str) -> PathBuf {
    std::env::var_os(var).map_or_else(
        || {
            panic!(
                "{var} is not set: run `scripts/agent-clis.sh target/agent-clis` from the \
                 repository root and export GATE_TEST_CLAUDE=$PWD/target/agent-clis/node_modules/\
                 .bin/claude, GATE_TEST_CODEX=$PWD/target/agent-clis/node_modules/.bin/codex and \
                 GATE_TEST_AIDER=$PWD/target/agent-clis/aider/bin/aider (scripts/test does both)"
            )
        },
        PathBuf::from,
    )
}

/// `program` in `workspace` with nothing of the developer's environment
/// but `PATH`, `home` as its `HOME`, an empty stdin and no colour.
fn agent(program: PathBuf, workspace: &Path, home: &Path) -> Command {
    #[allow(clippy::disallowed_methods, reason = "the test runs the real agent")]
    let mut cmd = Command::new(program);
    cmd.current_dir(workspace)
        .stdin(std::process::Stdio::null())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("NO_COLOR", "1");
    cmd
}

/// Claude Code's `claude`.
pub fn claude() -> PathBuf {
    program("GATE_TEST_CLAUDE")
}

/// Codex's `codex`.
pub fn codex() -> PathBuf {
    program("GATE_TEST_CODEX")
}

/// Aider's `aider`.
pub fn aider() -> PathBuf {
    program("GATE_TEST_AIDER")
}

/// `claude -p PROMPT --output-format json` in `workspace`, its model at
/// `base_url`, with a fresh `home`, nothing of the developer's environment
/// and no traffic but to `base_url`. Bash is allowed by name (no bypass).
pub fn claude_print(workspace: &Path, home: &Path, base_url: &str, prompt: &str) -> Command {
    let mut cmd = agent(claude(), workspace, home);
    cmd.args([
        "-p",
        prompt,
        "--output-format",
        "json",
        "--allowedTools",
        "Bash",
    ])
    .env("ANTHROPIC_BASE_URL", base_url)
    .env("ANTHROPIC_API_KEY", "sk-ant-test")
    .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
    .env("DISABLE_TELEMETRY", "1")
    .env("DISABLE_AUTOUPDATER", "1")
    .env("DISABLE_ERROR_REPORTING", "1");
    cmd
}

/// `codex exec PROMPT` in `workspace`, its model (`model`) at `base_url`
/// over the Responses API, with a fresh `codex_home`: the project trusted
/// for this run, hooks run without a stored review, nothing reached but
/// `base_url`, and no sandbox of Codex's own (the test's temporary folders
/// are where Codex refuses to put its sandbox helper).
pub fn codex_exec(workspace: &Path, codex_home: &Path, base_url: &str, prompt: &str) -> Command {
    let config = format!(
        "model = \"gpt-test\"\nmodel_provider = \"scripted\"\n\n\
         [model_providers.scripted]\nname = \"scripted\"\nbase_url = \"{base_url}/v1\"\n\
         wire_api = \"responses\"\nenv_key = \"SCRIPTED_KEY\"\n"
    );
    std::fs::write(codex_home.join("config.toml"), config).expect("write Codex's config");
    let mut cmd = agent(codex(), workspace, codex_home);
    cmd.args([
        "exec",
        "--trust",
        "--dangerously-bypass-hook-trust",
        "--skip-git-repo-check",
    ])
    .args(["--sandbox", "danger-full-access"])
    .args([
        "--disable",
        "plugins",
        "--disable",
        "remote_plugin",
        "--disable",
        "plugin_sharing",
    ])
    .args([
        "-c",
        "analytics.enabled=false",
        "-c",
        "check_for_update_on_startup=false",
    ])
    .args(["-c", "feedback.enabled=false", prompt])
    .env("CODEX_HOME", codex_home)
    .env("SCRIPTED_KEY", "sk-test");
    cmd
}

/// `aider --message PROMPT` in `workspace` (a git repository), its model
/// `openai/gpt-test` at `base_url`, with `test_cmd` as its test command run
/// after every edit, a fresh `home`, and nothing reached but `base_url`
/// (LiteLLM's price list read from the package, no analytics, no update
/// check).
pub fn aider_message(
    workspace: &Path,
    home: &Path,
    base_url: &str,
    test_cmd: &str,
    prompt: &str,
) -> Command {
    let mut cmd = agent(aider(), workspace, home);
    cmd.args(["--model", "openai/gpt-test", "--openai-api-base"])
        .arg(format!("{base_url}/v1"))
        .args([
            "--openai-api-key",
            "sk-test",
            "--edit-format",
            "whole",
            "--no-stream",
        ])
        .args([
            "--yes-always",
            "--no-check-update",
            "--no-show-model-warnings",
        ])
        .args(["--no-auto-commits", "--analytics-disable", "--no-gitignore"])
        .args(["--test-cmd", test_cmd, "--auto-test", "--message", prompt])
        .env("LITELLM_LOCAL_MODEL_COST_MAP", "True");
    cmd
}
