//! `gate hook claude-code | codex`: the gate as the Stop hook of a coding
//! agent. The agent wants to finish; the hook runs the gate on the
//! workspace and answers in the hook's protocol: a failure blocks the stop
//! and sends the agent what to fix, a pass lets it stop, an escalation or
//! anything the gate cannot decide stops the agent for good with the
//! reason for a human.
//!
//! Inside an agent's session the agent runs its tools as the same user as
//! the hook, so the run is **advisory**: `gate verify` runs as a child with
//! a state directory of the user's own (its own key and ledger), and
//! without the pipeline's ledger, key and bundle-store settings in its
//! environment. The pipeline's own `gate verify`, where the agent cannot
//! reach, stays the decision of record.
//!
//! The hook never fails open: whatever goes wrong (the child crashes, runs
//! past the hook's time, prints no JSON) the answer is a stop with why.
//! Claude Code and Codex read the same answer (`decision`, `reason`,
//! `continue`, `stopReason`, `systemMessage`); they differ in where the
//! hook is installed ([`install`]).

pub(crate) mod install;

use std::ffi::OsString;
use std::fmt::Write as _;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::cli::HookRunArgs;
use crate::config::{self, Context};
use crate::environment::names;
use crate::errors::GateError;
use crate::exit;
use crate::output;
use crate::output::text::last_lines;

/// The longest block reason sent to the agent, in characters.
const REASON_MAX: usize = 12_000;
/// The most of a failed item's output shown in the reason, in lines.
const TAIL_LINES: usize = 20;
/// The most of the child's JSON the hook reads.
const OUTPUT_CAP: usize = 32 * 1024 * 1024;
/// Settings of the pipeline's own runs, never passed to an advisory run.
const PIPELINE_ONLY: &[&str] = &[
    names::LEDGER,
    names::SIGNING_KEY,
    names::BUNDLE_STORE,
    names::STATE_DIR,
    names::FORMAT,
    "CI",
    "GITHUB_ACTIONS",
    "GITLAB_CI",
];

/// Variables of the agent's own model account (its key, its endpoint):
/// never handed to an advisory run unless the advisory routing table names
/// them as a provider's `api_key_env`. A prefix ends in `_`; other entries
/// are whole names.
const AGENT_ACCOUNT: &[&str] = &[
    "ANTHROPIC_",
    "OPENAI_",
    "CODEX_",
    "CLAUDE_",
    "AZURE_OPENAI_",
    "OPENROUTER_",
    "GEMINI_",
    "GOOGLE_API_KEY",
    "GOOGLE_GENAI_",
    "VERTEX_",
    "MISTRAL_",
    "GROQ_",
    "DEEPSEEK_",
    "XAI_",
    "AWS_BEARER_TOKEN_BEDROCK",
];

/// The file advisory runs read their routing table from, in the user's
/// gate configuration folder, when no `--routing` names one.
pub(crate) const ADVISORY_ROUTING_FILE: &str = "advisory-routing.toml";

/// What the Stop hook's input says (Claude Code's and Codex's; unknown
/// fields are ignored, every field is optional).
#[derive(Debug, Default, Deserialize)]
struct HookInput {
    /// The agent's working directory.
    cwd: Option<PathBuf>,
    /// The agent's session.
    session_id: Option<String>,
    /// True when the agent is already continuing because of a stop hook.
    /// It never means allow: the gate's series and doom loop bound the loop.
    #[serde(default)]
    stop_hook_active: bool,
}

/// The hook's answer.
#[derive(Debug, Clone, PartialEq)]
enum Answer {
    /// Let the agent stop, with a one-line note.
    Allow(String),
    /// Keep the agent going, with what it must fix.
    Block(String),
    /// Stop the agent for good, with the reason for a human.
    Halt(String),
}

impl Answer {
    fn to_json(&self) -> Value {
        match self {
            Self::Allow(note) => json!({"systemMessage": note}),
            Self::Block(reason) => json!({"decision": "block", "reason": reason}),
            Self::Halt(why) => json!({"continue": false, "stopReason": why, "systemMessage": why}),
        }
    }
}

/// `gate hook claude-code | codex`: reads the hook's JSON on stdin, runs
/// the gate, prints the answer. Exits 0 whatever it decided: the answer is
/// in the JSON (a non-zero exit would be read as the hook's own failure,
/// and let the agent stop).
pub(crate) async fn run(ctx: &Context, args: &HookRunArgs) -> Result<u8, GateError> {
    let answer = match answer(ctx, args).await {
        Ok(answer) => answer,
        Err(why) => Answer::Halt(format!(
            "gate could not run as the stop hook, so this session stops for a person to \
             look: {why}"
        )),
    };
    output::stdout(&format!("{}\n", answer.to_json())).map_err(GateError::stdout)?;
    Ok(exit::PASS)
}

async fn answer(ctx: &Context, args: &HookRunArgs) -> Result<Answer, String> {
    let input = read_input()?;
    tracing::debug!(
        session = input.session_id.as_deref().unwrap_or("?"),
        again = input.stop_hook_active,
        "stop hook"
    );
    let start = input.cwd.clone().unwrap_or_else(|| ctx.workspace.clone());
    answer_in(ctx, args, &start).await
}

/// `gate hook aider`: the gate as Aider's test command (`--test-cmd`). Aider
/// feeds a failing command's output back to its model, so the output is
/// what to fix, and the exit code says whether to: 0 on a pass, 1 on a
/// failure, 3 when the series escalated and 4 when the gate could not
/// decide (each with the reason for a person; Aider's own limit on
/// reflections ends its loop).
pub(crate) async fn test_command(ctx: &Context, args: &HookRunArgs) -> Result<u8, GateError> {
    let (text, code) = match answer_in(ctx, args, &ctx.workspace.clone()).await {
        Ok(Answer::Allow(note)) => (note, exit::PASS),
        Ok(Answer::Block(reason)) => (reason, exit::FAIL),
        Ok(Answer::Halt(why)) if why.starts_with("gate stopped this series") => (
            format!("STOP: do not change the code again; a person must look. {why}"),
            exit::ESCALATE,
        ),
        Ok(Answer::Halt(why)) => (
            format!("STOP: do not change the code for this; a person must look. {why}"),
            exit::INCOMPLETE,
        ),
        Err(why) => (
            format!("STOP: gate could not run, so nothing was decided: {why}"),
            exit::INCOMPLETE,
        ),
    };
    output::stdout(&format!("{text}\n")).map_err(GateError::stdout)?;
    Ok(code)
}

async fn answer_in(ctx: &Context, args: &HookRunArgs, start: &Path) -> Result<Answer, String> {
    let start = start.to_path_buf();
    let workspace = match config::discover_workspace(&start) {
        config::Found::At(dir) => dir,
        config::Found::Nowhere { .. } => {
            return Err(format!(
                "no gate.toml in {} or a folder above it",
                start.display()
            ));
        }
    };
    let state = advisory_state(ctx, &workspace)?;
    let ran = verify(ctx, args, &workspace, &state).await?;
    Ok(decide(&ran))
}

fn read_input() -> Result<HookInput, String> {
    let mut text = String::new();
    std::io::stdin()
        .take(1024 * 1024)
        .read_to_string(&mut text)
        .map_err(|e| format!("cannot read the hook's input: {e}"))?;
    if text.trim().is_empty() {
        return Ok(HookInput::default());
    }
    serde_json::from_str(&text).map_err(|e| format!("the hook's input is not JSON: {e}"))
}

/// The advisory runs' state directory for `workspace`: the user's state
/// folder (`$XDG_STATE_HOME`, else `~/.local/state`), `gate/advisory/`,
/// one folder per workspace. Never the workspace's `.gate/` (the agent
/// could plant a ledger there), never the pipeline's.
pub(crate) fn advisory_state(ctx: &Context, workspace: &Path) -> Result<PathBuf, String> {
    let root = ctx
        .env
        .absolute_path("XDG_STATE_HOME")
        .or_else(|| ctx.env.absolute_path("HOME").map(|h| h.join(".local/state")))
        .ok_or("neither XDG_STATE_HOME nor HOME is an absolute path: nowhere to keep the advisory runs' key and ledger")?;
    let id = blake3::hash(workspace.as_os_str().as_encoded_bytes()).to_hex();
    Ok(root.join("gate/advisory").join(&id.as_str()[..16]))
}

/// The routing table advisory runs review with: `flag` (the hook's
/// `--routing`), else [`ADVISORY_ROUTING_FILE`] in the user's gate
/// configuration folder (`$XDG_CONFIG_HOME/gate`, else `~/.config/gate`)
/// when it exists. Never the workspace's `routing.toml` (the agent writes
/// the workspace) and never the built-in table (it would spend the agent's
/// own keys): with neither, review does not run.
pub(crate) fn advisory_routing(ctx: &Context, flag: Option<&Path>) -> Option<PathBuf> {
    if let Some(path) = flag {
        return Some(config::from_cwd(path));
    }
    let root = ctx
        .env
        .absolute_path("XDG_CONFIG_HOME")
        .or_else(|| ctx.env.absolute_path("HOME").map(|h| h.join(".config")))?;
    let file = root.join("gate").join(ADVISORY_ROUTING_FILE);
    file.is_file().then_some(file)
}

/// Whether `name` is a variable of the agent's own model account.
fn agent_account(name: &str) -> bool {
    AGENT_ACCOUNT.iter().any(|p| {
        if p.ends_with('_') {
            name.starts_with(p)
        } else {
            name == *p
        }
    })
}

/// What the child `gate verify` did.
struct Ran {
    /// Its exit code, when it exited.
    code: Option<i32>,
    /// Its JSON document, when it printed one.
    doc: Option<Value>,
    /// The end of its stderr.
    stderr: String,
    /// Whether the hook's time ran out.
    timed_out: bool,
    /// The hook's time, for the message.
    timeout: Duration,
    /// How a person at the workspace reaches the advisory runs' records.
    lift: Lift,
}

/// The commands a hand-off names, as a person runs them from the
/// workspace: the gate's own path and the advisory state, with
/// `GATE_ADVISORY=1`, so they act on the advisory runs' ledger (the
/// workspace's own state or the pipeline's would not hold them).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Lift {
    /// `GATE_ADVISORY=1 '/path/to/gate' --state '/…/advisory/…'`.
    prefix: String,
}

impl Lift {
    /// The commands for the advisory runs kept in `state`.
    pub(crate) fn new(state: &Path) -> Self {
        let gate =
            std::env::current_exe().map_or_else(|_| "gate".to_owned(), |p| p.display().to_string());
        Self {
            prefix: format!(
                "{}=1 {} --state {}",
                names::ADVISORY,
                install::quoted(&gate),
                install::quoted(&state.display().to_string())
            ),
        }
    }

    /// The command for `args`.
    fn command(&self, args: &str) -> String {
        format!("{} {args}", self.prefix)
    }

    /// What lifts an escalation of `run`, as commands to run as printed.
    pub(crate) fn escalation(&self, run: &str) -> String {
        let run = install::quoted(run);
        format!(
            "To go on, from the workspace (these act on the advisory runs): start a new series \
             with `{}`, or lift the escalation with `{}`; `{}` shows the run.",
            self.command("verify --new-series"),
            self.command(&format!(
                "override {run} --reason \"why it may pass\" --by \"your name\""
            )),
            self.command(&format!("evidence show {run}"))
        )
    }
}

async fn verify(
    ctx: &Context,
    args: &HookRunArgs,
    workspace: &Path,
    state: &Path,
) -> Result<Ran, String> {
    let mut argv: Vec<String> = vec!["verify".into(), "--format".into(), "json".into()];
    if let Some(base) = &args.base {
        argv.extend(["--base".to_owned(), base.clone()]);
    }
    let timeout = Duration::from_secs(args.timeout_s);
    let out = run_advisory(
        ctx,
        workspace,
        state,
        &argv,
        args.routing.as_deref(),
        timeout,
    )
    .await?;
    Ok(Ran {
        code: out.exit_code,
        doc: serde_json::from_slice(&out.stdout).ok(),
        stderr: last_lines(&String::from_utf8_lossy(&out.stderr), 15),
        timed_out: out.timed_out,
        timeout,
        lift: Lift::new(state),
    })
}

/// Runs the gate itself (`gate --workspace W --state STATE ARGS…`) as an
/// advisory child: without the pipeline's ledger, key and bundle-store
/// settings, with `GATE_ADVISORY` set. A `verify` reviews only with the
/// advisory routing table ([`advisory_routing`], `routing` the hook's
/// flag), and the agent's own account variables reach the child only where
/// that table names them. Its stdout is captured whole.
pub(crate) async fn run_advisory(
    ctx: &Context,
    workspace: &Path,
    state: &Path,
    args: &[String],
    routing: Option<&Path>,
    timeout: Duration,
) -> Result<gate_harness::process::ProcessOutput, String> {
    let gate =
        std::env::current_exe().map_err(|e| format!("cannot find the gate's own program: {e}"))?;
    let mut argv: Vec<String> = vec![
        gate.display().to_string(),
        "--workspace".to_owned(),
        workspace.display().to_string(),
        "--state".to_owned(),
        state.display().to_string(),
    ];
    argv.extend(args.iter().cloned());
    let routing = advisory_routing(ctx, routing);
    // The table's own key variables, read here only to let them through:
    // the child reads (and refuses) the table itself.
    let named: Vec<String> = routing
        .as_deref()
        .and_then(|p| gate_review::routing::Routing::load(p).ok())
        .map(|r| r.key_variables())
        .unwrap_or_default();
    if let (Some(path), Some("verify")) = (&routing, args.first().map(String::as_str)) {
        argv.extend(["--routing".to_owned(), path.display().to_string()]);
    }
    let mut env: Vec<(OsString, OsString)> = ctx
        .env
        .pairs()
        .iter()
        .filter(|(name, _)| !PIPELINE_ONLY.iter().any(|p| name == p))
        .filter(|(name, _)| {
            let name = name.to_string_lossy();
            !agent_account(&name) || named.iter().any(|n| n.as_str() == name.as_ref())
        })
        .cloned()
        .collect();
    env.push((names::ADVISORY.into(), "1".into()));
    env.push(("NO_COLOR".into(), "1".into()));
    let launcher = gate_harness::Launcher::new(env);
    let argv_ref: Vec<&str> = argv.iter().map(String::as_str).collect();
    gate_harness::process::run_argv(&argv_ref, workspace, timeout, OUTPUT_CAP, &launcher)
        .await
        .map_err(|e| format!("cannot start the gate: {e}"))
}

/// The answer for what the run decided.
fn decide(ran: &Ran) -> Answer {
    if ran.timed_out {
        return Answer::Halt(format!(
            "gate did not decide within the hook's {} s: a person should run `gate verify` \
             and see why it takes so long",
            ran.timeout.as_secs()
        ));
    }
    let Some(doc) = &ran.doc else {
        let code = ran
            .code
            .map_or_else(|| "killed".to_owned(), |c| c.to_string());
        return Answer::Halt(format!(
            "gate verify printed no result (exit {code}); a person should look:\n{}",
            ran.stderr
        ));
    };
    let line = doc["verdict_line"].as_str().unwrap_or("?");
    let bundle = doc["bundle"].as_str().unwrap_or("no bundle");
    match doc["verdict"].as_str() {
        Some("pass") => Answer::Allow(format!("gate (advisory): {line}; evidence {bundle}")),
        Some("fail") => Answer::Block(block_reason(doc, &ran.lift)),
        Some("escalate") => Answer::Halt(format!(
            "gate stopped this series for a person (advisory run): {line}. {}\n\n{}",
            reasons(doc).join(" "),
            ran.lift.escalation(&text(&doc["run_id"]))
        )),
        _ => Answer::Halt(format!(
            "gate could not decide (advisory run): {line}. {}",
            reasons(doc).join(" ")
        )),
    }
}

fn reasons(doc: &Value) -> Vec<String> {
    doc["verdict_reasons"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r["why"].as_str().map(str::to_owned))
        .collect()
}

/// What the agent must fix, in the gate's words and the failures' own:
/// the verdict's reasons, each failed item with its task, text, places and
/// output tail, then the critical and warning findings; bounded.
fn block_reason(doc: &Value, lift: &Lift) -> String {
    let mut out = format!(
        "The gate ran on your change and it does not pass yet ({}). Fix what follows, \
         then stop again.\n",
        doc["verdict_line"].as_str().unwrap_or("FAIL")
    );
    for why in reasons(doc) {
        let _ = writeln!(out, "- {why}");
    }
    for item in ["checks", "criteria"]
        .iter()
        .flat_map(|k| doc[*k].as_array().cloned().unwrap_or_default())
        .filter(|i| i["status"] == "failed")
    {
        // `task_tests` reads as "task tests".
        let kind = item["kind"]
            .as_str()
            .unwrap_or("criterion")
            .replace('_', " ");
        let _ = write!(out, "\n{kind} `{}`", text(&item["id"]));
        if let Some(task) = item["task"].as_str() {
            let _ = write!(out, " (task `{task}`)");
        }
        if let Some(what) = item["text"].as_str() {
            let _ = write!(out, ": {what}");
        }
        out.push('\n');
        if let Some(reason) = item["reason"].as_str() {
            let _ = writeln!(out, "  why: {reason}");
        }
        for place in item["locations"].as_array().into_iter().flatten() {
            let _ = writeln!(
                out,
                "  at {}:{}",
                text(&place["file"]),
                place["line"].as_u64().unwrap_or(0)
            );
        }
        if let Some(tail) = item["output_tail"].as_str() {
            let lines: Vec<&str> = tail.lines().collect();
            let from = lines.len().saturating_sub(TAIL_LINES);
            let _ = writeln!(out, "  output (last lines):");
            for line in &lines[from..] {
                let _ = writeln!(out, "    {line}");
            }
        }
    }
    let findings: Vec<&Value> = doc["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|f| matches!(f["severity"].as_str(), Some("critical" | "warning")))
        .collect();
    if !findings.is_empty() {
        out.push_str("\nfindings:\n");
        for f in findings {
            let _ = writeln!(
                out,
                "- {} {}{}: {}",
                text(&f["severity"]),
                text(&f["file"]),
                f["line"]
                    .as_u64()
                    .map(|l| format!(":{l}"))
                    .unwrap_or_default(),
                text(&f["title"])
            );
        }
    }
    let show = lift.command(&format!(
        "evidence show {}",
        install::quoted(&text(&doc["run_id"]))
    ));
    let _ = write!(
        out,
        "\n(advisory run {}; `{show}` shows all of it)",
        text(&doc["run_id"]),
    );
    bounded(&out, &show)
}

fn text(v: &Value) -> String {
    v.as_str().map_or_else(|| v.to_string(), str::to_owned)
}

fn bounded(reason: &str, show: &str) -> String {
    if reason.chars().count() <= REASON_MAX {
        return reason.to_owned();
    }
    let cut: String = reason.chars().take(REASON_MAX).collect();
    format!("{cut}\n… (cut; `{show}` has the rest)")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ran(doc: Value) -> Ran {
        Ran {
            code: Some(1),
            doc: Some(doc),
            stderr: String::new(),
            timed_out: false,
            timeout: Duration::from_secs(60),
            lift: Lift {
                prefix: "GATE_ADVISORY=1 gate --state /s".to_owned(),
            },
        }
    }

    #[test]
    fn each_outcome_has_its_answer_and_none_fails_open() {
        let failed = json!({
            "verdict": "fail", "verdict_line": "FAIL", "run_id": "r1", "bundle": "b",
            "verdict_reasons": [{"why": "criterion `total` failed"}],
            "checks": [],
            "criteria": [{"kind": "criterion", "id": "total", "task": "cart", "status": "failed",
                          "text": "the total is in cents", "reason": "exited with status 1",
                          "locations": [{"file": "src/cart.py", "line": 3}],
                          "output_tail": "AssertionError: 1.5 != 150"}],
            "findings": [{"severity": "critical", "file": "tests/t.py", "line": 2,
                          "title": "an assertion was removed"},
                         {"severity": "info", "file": "x", "title": "noise"}],
        });
        let Answer::Block(reason) = decide(&ran(failed)) else {
            panic!("a failure must block");
        };
        for part in [
            "criterion `total` failed",
            "criterion `total` (task `cart`): the total is in cents",
            "why: exited with status 1",
            "at src/cart.py:3",
            "AssertionError: 1.5 != 150",
            "- critical tests/t.py:2: an assertion was removed",
        ] {
            assert!(reason.contains(part), "{part:?} missing in {reason}");
        }
        assert!(!reason.contains("noise"));

        let pass = json!({"verdict": "pass", "verdict_line": "PASS", "bundle": "b.json"});
        assert_eq!(
            decide(&ran(pass)),
            Answer::Allow("gate (advisory): PASS; evidence b.json".to_owned())
        );
        for verdict in ["escalate", "incomplete"] {
            let doc = json!({"verdict": verdict, "verdict_line": "X"});
            assert!(matches!(decide(&ran(doc)), Answer::Halt(_)), "{verdict}");
        }
        let crashed = Ran {
            doc: None,
            code: None,
            ..ran(Value::Null)
        };
        assert!(matches!(decide(&crashed), Answer::Halt(_)));
        let slow = Ran {
            timed_out: true,
            ..ran(json!({"verdict": "pass"}))
        };
        assert!(matches!(decide(&slow), Answer::Halt(_)));
    }

    #[test]
    fn answers_are_the_hook_protocols_fields_only() {
        let allowed = [
            "decision",
            "reason",
            "continue",
            "stopReason",
            "systemMessage",
        ];
        for answer in [
            Answer::Allow("a".into()),
            Answer::Block("b".into()),
            Answer::Halt("c".into()),
        ] {
            let v = answer.to_json();
            for key in v.as_object().unwrap().keys() {
                assert!(allowed.contains(&key.as_str()), "{key}");
            }
        }
        assert_eq!(
            Answer::Halt("why".into()).to_json()["continue"],
            json!(false)
        );
    }

    #[test]
    fn a_long_reason_is_cut() {
        let long = "x".repeat(REASON_MAX * 2);
        let cut = bounded(&long, "gate evidence show r");
        assert!(cut.chars().count() < REASON_MAX + 100);
        assert!(cut.ends_with("has the rest)"));
    }
}
