//! `gate mcp`: the gate as a Model Context Protocol server on stdio, with
//! the tools an agent calls before and after it writes code: `rules` (the
//! house rules for the files it is about to change; no model call),
//! `verify` (the gate on the workspace, advisory), `show_run` (a past run,
//! in any format, no attempt counted) and `dismiss` (a finding, with the
//! reason, recorded as made by the agent).
//!
//! Every tool runs the gate itself as a child ([`hook::run_advisory`]): its
//! output is captured, so stdout carries nothing but the protocol; the runs
//! are advisory, kept in the user's own state ([`hook::advisory_state`]),
//! never in the pipeline's ledger.

use std::path::PathBuf;
use std::time::Duration;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock, ServerCapabilities, ServerConfig};
use rmcp::{ErrorData, ServerHandler, ServiceExt, tool, tool_handler, tool_router};
use serde::Deserialize;
use serde_json::Value;

use crate::commands::hook;
use crate::config::Context;
use crate::errors::GateError;
use crate::exit;
use crate::output::text::last_lines;

/// How long a `verify` call may run.
const VERIFY_TIMEOUT: Duration = Duration::from_secs(3600);
/// How long the other tools may run.
const QUICK_TIMEOUT: Duration = Duration::from_secs(120);

/// `rules`' input.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub(crate) struct RulesInput {
    /// Workspace-relative paths of the files about to change (they need not exist yet).
    pub files: Vec<String>,
}

/// `verify`'s input.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
pub(crate) struct VerifyInput {
    /// Measure the change from this revision (default: the spec's `[spec] base`).
    #[serde(default)]
    pub base: Option<String>,
}

/// The formats `show_run` prints a run in.
#[derive(Debug, Clone, Copy, Default, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum RunFormat {
    /// Readable text.
    #[default]
    Human,
    /// The `gate verify --format json` document.
    Json,
    /// One Markdown comment.
    Markdown,
    /// SARIF 2.1.0.
    Sarif,
    /// JUnit XML.
    Junit,
}

/// `show_run`'s input.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub(crate) struct ShowRunInput {
    /// A run id (or unique prefix) from `verify`'s answers.
    pub run: String,
    /// How to print it (default: human).
    #[serde(default)]
    pub format: RunFormat,
}

/// `dismiss`'s input.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub(crate) struct DismissInput {
    /// The run that raised the finding (id or unique prefix).
    pub run: String,
    /// The finding's id (or unique prefix).
    pub finding: String,
    /// Why it is not worth acting on.
    pub reason: String,
}

/// The server: the workspace it serves and where its advisory runs go.
#[derive(Clone)]
pub(crate) struct GateMcp {
    ctx: Context,
    state: PathBuf,
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl GateMcp {
    /// The house rules that apply to the files about to change, as JSON; no model is asked.
    #[tool(
        description = "The house rules that apply to the files you are about to change (avoid / do / see), before you write code. No model is asked."
    )]
    async fn rules(
        &self,
        Parameters(input): Parameters<RulesInput>,
    ) -> Result<CallToolResult, ErrorData> {
        if input.files.is_empty() {
            return Ok(CallToolResult::error(vec![ContentBlock::text(
                "name at least one file in `files`",
            )]));
        }
        let mut args = vec!["rules".to_owned(), "--format".to_owned(), "json".to_owned()];
        args.push("--files".to_owned());
        args.extend(input.files);
        let out = self.gate(&args, QUICK_TIMEOUT).await?;
        Ok(structured_or_error(&out, |doc| {
            let n = doc["rules"].as_array().map_or(0, Vec::len);
            format!("{n} house rule(s) apply to these files")
        }))
    }

    /// Runs the gate on the workspace (advisory) and answers its JSON document.
    #[tool(
        description = "Run the integration gate on the workspace, as the pipeline will (advisory: the pipeline's own run decides). Answers the verdict, what failed and the findings."
    )]
    async fn verify(
        &self,
        Parameters(input): Parameters<VerifyInput>,
    ) -> Result<CallToolResult, ErrorData> {
        let mut args = vec![
            "verify".to_owned(),
            "--format".to_owned(),
            "json".to_owned(),
        ];
        if let Some(base) = input.base {
            args.extend(["--base".to_owned(), base]);
        }
        let out = self.gate(&args, VERIFY_TIMEOUT).await?;
        let lift = hook::Lift::new(&self.state);
        Ok(structured_or_error(&out, |doc| {
            let run = doc["run_id"].as_str().unwrap_or("?");
            let line = format!(
                "{} (run {run}, advisory)",
                doc["verdict_line"].as_str().unwrap_or("?"),
            );
            // An escalation is lifted by a person, from the workspace, on
            // the advisory runs' records: say how, as it runs.
            if doc["verdict"] == "escalate" {
                format!("{line}. {}", lift.escalation(run))
            } else {
                line
            }
        }))
    }

    /// A past run, in any format; no attempt is counted.
    #[tool(
        description = "Show a past run of `verify` in a format (human, json, markdown, sarif, junit). Counts no attempt."
    )]
    async fn show_run(
        &self,
        Parameters(input): Parameters<ShowRunInput>,
    ) -> Result<CallToolResult, ErrorData> {
        let format = match input.format {
            RunFormat::Human => "human",
            RunFormat::Json => "json",
            RunFormat::Markdown => "markdown",
            RunFormat::Sarif => "sarif",
            RunFormat::Junit => "junit",
        };
        let args = [
            "evidence".to_owned(),
            "show".to_owned(),
            input.run,
            "--format".to_owned(),
            format.to_owned(),
        ];
        let out = self.gate(&args, QUICK_TIMEOUT).await?;
        if out.exit_code != Some(0) {
            return Ok(failed(&out));
        }
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        Ok(match format {
            "json" => structured_or_error(&out, |_| "the run's JSON document".to_owned()),
            _ => CallToolResult::success(vec![ContentBlock::text(text)]),
        })
    }

    /// Dismisses a finding, recorded as the agent's.
    #[tool(
        description = "Dismiss a finding of a run, with the reason. Recorded as made by the agent; it quiets a suggestion in later runs, never a critical or warning finding (those stay raised, the dismissal shown beside them)."
    )]
    async fn dismiss(
        &self,
        Parameters(input): Parameters<DismissInput>,
    ) -> Result<CallToolResult, ErrorData> {
        let args = [
            "dismiss".to_owned(),
            input.run,
            input.finding,
            "--reason".to_owned(),
            input.reason,
        ];
        let out = self.gate(&args, QUICK_TIMEOUT).await?;
        if out.exit_code != Some(0) {
            return Ok(failed(&out));
        }
        Ok(CallToolResult::success(vec![ContentBlock::text(
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )]))
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for GateMcp {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build()).with_instructions(
            "The integration gate of this workspace. Call `rules` before you change files, \
             `verify` when you think you are done, and fix what it reports. Runs from here are \
             advisory; the pipeline's own run is the decision of record.",
        )
    }
}

impl GateMcp {
    async fn gate(
        &self,
        args: &[String],
        timeout: Duration,
    ) -> Result<gate_harness::process::ProcessOutput, ErrorData> {
        hook::run_advisory(
            &self.ctx,
            &self.ctx.workspace,
            &self.state,
            args,
            None,
            timeout,
        )
        .await
        .map_err(|why| ErrorData::internal_error(why, None))
    }
}

/// The child's JSON as structured content with a short text, or its error.
fn structured_or_error(
    out: &gate_harness::process::ProcessOutput,
    summary: impl Fn(&Value) -> String,
) -> CallToolResult {
    match serde_json::from_slice::<Value>(&out.stdout) {
        Ok(doc) if doc.is_object() => {
            let mut result = CallToolResult::structured(doc.clone());
            result.content = vec![ContentBlock::text(summary(&doc))];
            result
        }
        _ => failed(out),
    }
}

fn failed(out: &gate_harness::process::ProcessOutput) -> CallToolResult {
    let code = out
        .exit_code
        .map_or_else(|| "killed".to_owned(), |c| c.to_string());
    CallToolResult::error(vec![ContentBlock::text(format!(
        "the gate exited {code}{}:\n{}",
        if out.timed_out { " (timed out)" } else { "" },
        last_lines(&String::from_utf8_lossy(&out.stderr), 20)
    ))])
}

/// `gate mcp`: serves until the client closes stdin.
pub(crate) async fn serve(ctx: &Context) -> Result<u8, GateError> {
    let state = hook::advisory_state(ctx, &ctx.workspace).map_err(GateError::Usage)?;
    let server = GateMcp {
        ctx: ctx.clone(),
        state,
        tool_router: GateMcp::tool_router(),
    };
    let running = server
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| GateError::Unavailable(format!("the MCP session did not start: {e}")))?;
    running
        .waiting()
        .await
        .map_err(|e| GateError::Unavailable(format!("the MCP session failed: {e}")))?;
    Ok(exit::PASS)
}
