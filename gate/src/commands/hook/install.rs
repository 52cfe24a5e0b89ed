//! `gate hook install claude-code | codex`: adds the gate as the agent's
//! Stop hook, merged into the settings already there.
//!
//! Claude Code reads hooks from `.claude/settings.json` (the project's) or
//! `~/.claude/settings.json` (the user's); Codex from `.codex/hooks.json`
//! or `$CODEX_HOME/hooks.json` (`~/.codex/`). Both take the same shape:
//! `{"hooks": {"Stop": [{"hooks": [{"type": "command", "command", "timeout"}]}]}}`.
//! A second install finds its own entry (a command running `hook <agent>`)
//! and updates it in place, so there is only ever one.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use crate::cli::{HookAgent, HookInstallArgs};
use crate::config::Context;
use crate::errors::GateError;
use crate::exit;
use crate::output;

/// The hook's timeout when the spec cannot be read, in seconds.
const DEFAULT_TIMEOUT_S: u64 = 900;
/// The longest hook timeout written, in seconds.
const MAX_TIMEOUT_S: u64 = 3600;
/// How much sooner than the agent's timeout the gate answers: an agent
/// kills a hook at its timeout, and a killed hook lets the agent stop.
const MARGIN_S: u64 = 30;

/// `gate hook install AGENT [--base REV] [--user]`.
pub(crate) fn install(ctx: &Context, args: &HookInstallArgs) -> Result<u8, GateError> {
    let file = settings_file(ctx, args.agent, args.user)?;
    let timeout = hook_timeout(ctx);
    let gate = std::env::current_exe()
        .map_err(|e| GateError::Usage(format!("cannot find the gate's own program: {e}")))?;
    let command = command_line(&gate, args.agent, args.base.as_deref(), timeout - MARGIN_S);
    let mut settings = read(&file)?;
    let what = merge(&mut settings, args.agent, &command, timeout)
        .map_err(|reason| GateError::Usage(format!("{}: {reason}", file.display())))?;
    if what != Merged::Unchanged {
        write(&file, &settings)?;
    }
    let mut out = String::new();
    let verb = match what {
        Merged::Added => "added the gate as the Stop hook in",
        Merged::Updated => "updated the gate's Stop hook in",
        Merged::Unchanged => "the gate is already the Stop hook in",
    };
    let _ = writeln!(out, "{verb} {}", file.display());
    let _ = writeln!(out, "  command: {command}");
    let _ = writeln!(
        out,
        "  timeout: {timeout} s (the gate answers {MARGIN_S} s sooner)"
    );
    if args.user {
        let _ = writeln!(
            out,
            "It applies to every session of this user; other hooks and settings were kept."
        );
    } else {
        let _ = writeln!(
            out,
            "This file is part of the workspace: the agent can edit or remove it (the change \
             then shows it). `gate hook install {} --user` puts the hook in the user's own \
             settings instead. Other hooks and settings were kept.",
            args.agent.name()
        );
    }
    if args.agent == HookAgent::Codex {
        out.push_str(&codex_needs(args.user, what));
    }
    let _ = writeln!(
        out,
        "Runs from the hook are advisory (a key and ledger of the user's own); the \
         pipeline's own `gate verify` stays the decision of record. They review only with \
         the routing table you choose for them (advisory-routing.toml in your gate \
         configuration folder, or --routing on the hook's command), never the agent's keys."
    );
    output::stdout(&out).map_err(GateError::stdout)?;
    Ok(exit::PASS)
}

/// What Codex needs before it runs the hook: it skips, without a word, a
/// hook in a project it does not trust and one nobody approved (trust is
/// kept for the hook's exact definition, so a changed hook needs it again).
fn codex_needs(user: bool, what: Merged) -> String {
    let project = if user {
        String::new()
    } else {
        "trust this project when Codex asks (it reads a project's .codex/ only then), and "
            .to_owned()
    };
    let again = if what == Merged::Updated {
        " The hook changed, so Codex treats it as new: approve it again."
    } else {
        ""
    };
    format!(
        "Codex runs the hook only once you approve it, and skips it silently until then: \
         open Codex here, {project}review and trust the gate's Stop hook under /hooks.{again} \
         Non-interactive: `codex exec --trust --dangerously-bypass-hook-trust …` (--trust for \
         the project, --dangerously-bypass-hook-trust runs hooks nobody approved, for that \
         invocation only).\n"
    )
}

/// Where `agent` reads hooks: the project's file, or the user's.
fn settings_file(ctx: &Context, agent: HookAgent, user: bool) -> Result<PathBuf, GateError> {
    let home = || {
        ctx.env
            .absolute_path("HOME")
            .ok_or_else(|| GateError::Usage("--user: HOME is not an absolute path".to_owned()))
    };
    Ok(match (agent, user) {
        (HookAgent::ClaudeCode, false) => ctx.workspace.join(".claude/settings.json"),
        (HookAgent::ClaudeCode, true) => home()?.join(".claude/settings.json"),
        (HookAgent::Codex, false) => ctx.workspace.join(".codex/hooks.json"),
        (HookAgent::Codex, true) => match ctx.env.absolute_path("CODEX_HOME") {
            Some(dir) => dir.join("hooks.json"),
            None => home()?.join(".codex/hooks.json"),
        },
    })
}

/// A timeout that fits the spec's own: every item's and page's timeout, the
/// review's, and a minute for the rest, within [`MAX_TIMEOUT_S`].
fn hook_timeout(ctx: &Context) -> u64 {
    let Ok(spec) = ctx
        .spec_path(None)
        .map_err(|e| e.to_string())
        .and_then(|p| gate_specs::load(&p).map_err(|e| e.to_string()))
    else {
        return DEFAULT_TIMEOUT_S;
    };
    let policy = &spec.policy;
    let item = |t: Option<u64>| t.unwrap_or(policy.check_timeout_s);
    let items: u64 = spec.checks.iter().map(|c| item(c.timeout_s)).sum::<u64>()
        + spec
            .tasks
            .iter()
            .flat_map(|t| &t.criteria)
            .map(|c| item(c.timeout_s))
            .sum::<u64>()
        + spec
            .tasks
            .iter()
            .filter_map(|t| t.tests.as_ref())
            .map(|t| item(t.timeout_s))
            .sum::<u64>()
        + spec
            .pages
            .iter()
            .map(gate_specs::Page::timeout_s)
            .sum::<u64>();
    (items + policy.review_timeout_s + 60).clamp(2 * MARGIN_S, MAX_TIMEOUT_S)
}

/// The hook's command line, its program quoted for the shell.
fn command_line(gate: &Path, agent: HookAgent, base: Option<&str>, answer_within: u64) -> String {
    let mut line = format!(
        "{} hook {} --timeout-s {answer_within}",
        quoted(&gate.display().to_string()),
        agent.name()
    );
    if let Some(base) = base {
        let _ = write!(line, " --base {}", quoted(base));
    }
    line
}

/// `s` as one shell word.
pub(crate) fn quoted(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+:@=".contains(&b))
    {
        return s.to_owned();
    }
    format!("'{}'", s.replace('\'', r"'\''"))
}

fn read(file: &Path) -> Result<Value, GateError> {
    match std::fs::read_to_string(file) {
        Ok(text) if text.trim().is_empty() => Ok(json!({})),
        Ok(text) => serde_json::from_str(&text).map_err(|e| {
            GateError::Usage(format!(
                "{}:{}:{}: not JSON ({e}): fix it or move it aside",
                file.display(),
                e.line(),
                e.column()
            ))
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(json!({})),
        Err(e) => Err(GateError::Usage(format!(
            "cannot read {}: {e}",
            file.display()
        ))),
    }
}

fn write(file: &Path, settings: &Value) -> Result<(), GateError> {
    let err = |source: std::io::Error| GateError::Write {
        path: file.to_path_buf(),
        source,
    };
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir).map_err(err)?;
    }
    let text = serde_json::to_string_pretty(settings).unwrap_or_default() + "\n";
    let tmp = file.with_extension("json.gate-tmp");
    std::fs::write(&tmp, text).map_err(err)?;
    std::fs::rename(&tmp, file).map_err(err)
}

/// What [`merge`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Merged {
    Added,
    Updated,
    Unchanged,
}

/// Puts the hook into `settings`: the gate's own entry updated where it is,
/// else a new Stop group; everything else kept as it was.
fn merge(
    settings: &mut Value,
    agent: HookAgent,
    command: &str,
    timeout: u64,
) -> Result<Merged, String> {
    let root = settings
        .as_object_mut()
        .ok_or("the settings are not a JSON object")?;
    let hooks = root
        .entry("hooks")
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
        .ok_or("`hooks` is not an object")?;
    let stop = hooks
        .entry("Stop")
        .or_insert_with(|| Value::Array(Vec::new()))
        .as_array_mut()
        .ok_or("`hooks.Stop` is not a list")?;
    let wanted = json!({"type": "command", "command": command, "timeout": timeout});
    let ours = format!(" hook {} ", agent.name());
    for group in stop.iter_mut() {
        let Some(list) = group.get_mut("hooks").and_then(Value::as_array_mut) else {
            continue;
        };
        for hook in list.iter_mut() {
            let is_ours = hook
                .get("command")
                .and_then(Value::as_str)
                .is_some_and(|c| format!("{c} ").contains(&ours));
            if is_ours {
                if *hook == wanted {
                    return Ok(Merged::Unchanged);
                }
                *hook = wanted;
                return Ok(Merged::Updated);
            }
        }
    }
    stop.push(json!({"hooks": [wanted]}));
    Ok(Merged::Added)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hook_is_merged_once_and_nothing_else_changes() {
        let mut settings = json!({
            "model": "opus",
            "hooks": {
                "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}],
                "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "audit"}]}],
            },
        });
        let before = settings.clone();
        let cmd = "/usr/bin/gate hook claude-code --timeout-s 300";
        assert_eq!(
            merge(&mut settings, HookAgent::ClaudeCode, cmd, 330),
            Ok(Merged::Added)
        );
        assert_eq!(
            merge(&mut settings, HookAgent::ClaudeCode, cmd, 330),
            Ok(Merged::Unchanged)
        );
        let newer = "/usr/bin/gate hook claude-code --timeout-s 500 --base main";
        assert_eq!(
            merge(&mut settings, HookAgent::ClaudeCode, newer, 530),
            Ok(Merged::Updated)
        );
        let stop = settings["hooks"]["Stop"].as_array().unwrap();
        assert_eq!(stop.len(), 2, "{settings}");
        assert_eq!(stop[0], before["hooks"]["Stop"][0]);
        assert_eq!(stop[1]["hooks"][0]["command"], newer);
        assert_eq!(stop[1]["hooks"][0]["timeout"], 530);
        assert_eq!(
            settings["hooks"]["PreToolUse"],
            before["hooks"]["PreToolUse"]
        );
        assert_eq!(settings["model"], "opus");
        // Codex's entry is its own.
        let codex = "/usr/bin/gate hook codex --timeout-s 300";
        assert_eq!(
            merge(&mut settings, HookAgent::Codex, codex, 330),
            Ok(Merged::Added)
        );
        assert_eq!(
            merge(&mut json!([]), HookAgent::Codex, codex, 1),
            Err("the settings are not a JSON object".to_owned())
        );
    }

    #[test]
    fn the_program_and_base_are_quoted_for_the_shell() {
        let line = command_line(
            Path::new("/opt/my tools/gate"),
            HookAgent::Codex,
            Some("it's"),
            60,
        );
        assert_eq!(
            line,
            "'/opt/my tools/gate' hook codex --timeout-s 60 --base 'it'\\''s'"
        );
        assert_eq!(quoted("origin/main"), "origin/main");
    }
}
