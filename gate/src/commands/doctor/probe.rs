//! `gate doctor --probe`: one small request per distinct provider and
//! model of the routing table, shaped as reviews shape theirs, to find out
//! what the server takes before a run finds out the hard way.
//!
//! A request the server refuses is sent again with the setting its error
//! names changed (or, when it names none, each other setting in turn), so
//! the check can say which capability the server lacks and which
//! `[provider.X]` setting fixes it. Each request asks for at most
//! [`PROBE_TOKENS`] output tokens; a reply longer than that means the server
//! ignored the limit's field.

use std::collections::BTreeSet;
use std::time::Duration;

use gate_review::provider::shape::Refused;
use gate_review::provider::{
    Block, ModelRequest, OpenAiProvider, Provider, ProviderError, Timeouts, WireShape,
    unpooled_http_client,
};
use gate_review::routing::{Api, ChainModel, Routing};
use serde_json::json;
use tokio::time::Instant;

use super::check::Check;
use crate::environment::Environment;

/// The output-token limit of a probe request.
const PROBE_TOKENS: u32 = 16;
/// A probe request's whole time: a CPU-only server loading its model is slow.
const PROBE_DEADLINE: Duration = Duration::from_secs(120);
/// At most this many requests per model.
const MAX_TRIES: usize = 6;

/// How one probe request came out.
enum Tried {
    /// The server took it (the reply may still be cut or malformed: the
    /// shape was accepted). Output tokens as reported, and the text's length.
    Took {
        output_tokens: Option<u64>,
        text_chars: usize,
        input_tokens: Option<u64>,
    },
    /// The server refused it, naming (or not) what it refused.
    Refused {
        error: String,
        refused: Option<Refused>,
    },
    /// Not a question of shape: unreachable, a bad key, no quota.
    Stopped(String),
}

/// Probes every distinct provider and model routed to, pushing one check each.
pub(super) async fn probe(routing: &Routing, env: &Environment, checks: &mut Vec<Check>) {
    let configured = routing.configured_providers(env);
    let mut seen = BTreeSet::new();
    let steps: Vec<ChainModel> = routing
        .table
        .models
        .keys()
        .filter_map(|class| {
            let model = routing.table.models.get(class)?;
            let provider = routing.table.providers.get(&model.provider)?;
            (!model.disabled && !provider.disabled && configured.contains(&model.provider)).then(
                || ChainModel {
                    class: class.clone(),
                    model: model.clone(),
                    provider_name: model.provider.clone(),
                    provider: provider.clone(),
                },
            )
        })
        .filter(|s| seen.insert((s.provider_name.clone(), s.model.name.clone())))
        .collect();
    if steps.is_empty() {
        checks.push(Check::ok(
            "probe",
            "no provider is configured here: nothing to probe",
        ));
        return;
    }
    let Ok(client) = unpooled_http_client(Duration::from_secs(10)) else {
        checks.push(Check::error(
            "probe",
            "cannot build an HTTP client",
            "check the system's TLS set-up",
        ));
        return;
    };
    for step in &steps {
        let key = step
            .provider
            .api_key_env
            .as_deref()
            .and_then(|v| env.var(v))
            .map(|k| k.trim().to_owned());
        checks.push(probe_one(&client, step, key).await);
    }
}

/// Probes one model: its configured shape first, then variants.
async fn probe_one(client: &reqwest::Client, step: &ChainModel, key: Option<String>) -> Check {
    let check = format!("probe.{}/{}", step.provider_name, step.model.name);
    if step.provider.api == Api::Anthropic {
        // The Messages API has one request shape: a refusal is no setting's.
        return match send(client, step, key.clone(), step.provider.shape()).await {
            Tried::Took { .. } => Check::ok(check, "took a review-shaped request"),
            Tried::Refused { error, .. } | Tried::Stopped(error) => Check::error(
                check,
                format!("the request failed: {error}"),
                "check the provider's base_url, key and the model's name",
            ),
        };
    }
    let configured = step.provider.shape();
    let mut shape = configured;
    let mut refusals: Vec<(Refused, String)> = Vec::new();
    let mut tried = vec![shape];
    let mut first_error: Option<String> = None;
    let mut sent = 0;
    let took = loop {
        if sent == MAX_TRIES {
            break None;
        }
        sent += 1;
        match send(client, step, key.clone(), shape).await {
            Tried::Took {
                output_tokens,
                text_chars,
                input_tokens,
            } => break Some((output_tokens, text_chars, input_tokens)),
            Tried::Stopped(error) => {
                return Check::error(
                    check,
                    format!("the request failed: {error}"),
                    "check the provider's base_url and key, and that the server is up",
                );
            }
            Tried::Refused { error, refused } => {
                tracing::debug!(?shape, %error, ?refused, "the probe request was refused");
                first_error.get_or_insert_with(|| error.clone());
                let next = refused
                    .as_ref()
                    .and_then(|r| shape.avoiding(r))
                    .filter(|s| !tried.contains(s))
                    .or_else(|| untried(configured, &tried));
                if let Some(r) = refused.filter(|r| shape.avoiding(r).is_some()) {
                    refusals.push((r, error));
                }
                match next {
                    Some(next) => {
                        shape = next;
                        tried.push(shape);
                    }
                    None => break None,
                }
            }
        }
    };
    let Some(took) = took else {
        return Check::error(
            check,
            format!(
                "the server refused every request shape tried ({sent}); first: {}",
                first_error.unwrap_or_default()
            ),
            "check the model's name and the server's log",
        );
    };
    verdict(check, step, configured, shape, &refusals, took)
}

/// The check once a shape was taken: which settings it took changing,
/// whether the output limit held, whether usage came.
fn verdict(
    check: String,
    step: &ChainModel,
    configured: WireShape,
    shape: WireShape,
    refusals: &[(Refused, String)],
    (output_tokens, text_chars, input_tokens): (Option<u64>, usize, Option<u64>),
) -> Check {
    let mut needed = settings_changed(configured, shape);
    // A reply longer than the limit: the field was ignored.
    let over_limit = output_tokens.map_or(text_chars / 4 > 2 * PROBE_TOKENS as usize, |t| {
        t > u64::from(2 * PROBE_TOKENS)
    });
    let mut said = Vec::new();
    if over_limit {
        let other = shape.max_tokens_field.other().name();
        said.push(format!(
            "it ignored the output limit ({} tokens asked, {} given): the server does not \
             read that field",
            PROBE_TOKENS,
            output_tokens.map_or_else(|| "more".to_owned(), |t| t.to_string())
        ));
        needed.push(format!("max_tokens_field = \"{other}\""));
    }
    let stream = step.model.stream.unwrap_or(true);
    let usage_note = if input_tokens.is_none() && output_tokens.is_none() {
        if stream {
            " It reported no usage on a stream: set `stream = false` on the model class to \
             record tokens."
        } else {
            " It reported no usage."
        }
    } else {
        ""
    };
    let mut refused_said = Vec::new();
    for refused in changed(configured, shape) {
        // The server's own words when it named what it refused.
        let words = refusals
            .iter()
            .find(|(r, _)| *r == refused)
            .map(|(_, e)| format!(" ({})", short(e)))
            .unwrap_or_default();
        refused_said.push(format!(
            "{}{words}",
            refused.hint(&step.provider_name, configured)
        ));
    }
    refused_said.append(&mut said);
    let said = refused_said;
    if needed.is_empty() {
        return Check::ok(
            check,
            format!(
                "took a review-shaped request ({}){usage_note}",
                describe(shape, stream)
            ),
        );
    }
    Check::error(
        check,
        format!("{}.{usage_note}", said.join("; ")),
        format!(
            "under [provider.{}] set {}",
            step.provider_name,
            needed.join(", ")
        ),
    )
}

/// Sends one probe request shaped as `shape`.
async fn send(
    client: &reqwest::Client,
    step: &ChainModel,
    key: Option<String>,
    shape: WireShape,
) -> Tried {
    let req = ModelRequest {
        role: "probe".to_owned(),
        run_id: "doctor-probe".to_owned(),
        model: step.model.name.clone(),
        blocks: vec![
            Block::cached("This request checks that the server takes the gate's review requests."),
            Block::new(
                "List the first twenty words of a well-known poem, one string each, in \
                 the `words` array.",
            ),
        ],
        schema_name: "probe".to_owned(),
        schema: json!({
            "type": "object",
            "properties": {"words": {"type": "array", "items": {"type": "string"}}},
            "required": ["words"],
            "additionalProperties": false,
        }),
        max_output_tokens: PROBE_TOKENS,
        stream: step.model.stream.unwrap_or(true),
        followups: Vec::new(),
        timeouts: Timeouts {
            connect: Duration::from_secs(10),
            inactivity: Duration::from_secs(60),
            deadline: Instant::now() + PROBE_DEADLINE,
        },
    };
    let reply = match step.provider.api {
        Api::Openai => {
            OpenAiProvider::new(client.clone(), &step.provider.base_url, key)
                .with_shape(shape)
                .complete(&req)
                .await
        }
        Api::Anthropic => {
            gate_review::provider::AnthropicProvider::new(
                client.clone(),
                &step.provider.base_url,
                key,
            )
            .complete(&req)
            .await
        }
    };
    match reply {
        Ok(reply) => Tried::Took {
            output_tokens: reply.usage.output_tokens,
            text_chars: reply.raw.chars().count(),
            input_tokens: reply.usage.input_tokens,
        },
        Err(e) => judge(&e),
    }
}

/// What a failed probe request says about the shape it was sent in.
fn judge(e: &ProviderError) -> Tried {
    if let Some(bad) = e.bad_reply() {
        // A reply came: the shape was taken, whatever the answer.
        return Tried::Took {
            output_tokens: bad.usage.output_tokens,
            text_chars: bad.raw.chars().count(),
            input_tokens: bad.usage.input_tokens,
        };
    }
    let refused = |refused| Tried::Refused {
        error: e.to_string(),
        refused,
    };
    match e {
        ProviderError::Http { status, error, .. }
            if !matches!(status, 401 | 402 | 403 | 404 | 429) && !e.is_quota() =>
        {
            refused(error.refused())
        }
        // A server that runs past the limit may not finish in time.
        ProviderError::Deadline { .. } | ProviderError::Silent { .. } => {
            refused(Some(Refused::MaxTokensField))
        }
        // A server that fails while it renders the prompt after the
        // stream's head (llama-cpp-python's chat template given parts)
        // ends the stream or the connection without saying why.
        ProviderError::StreamEnded | ProviderError::StreamCut | ProviderError::Protocol { .. } => {
            refused(None)
        }
        ProviderError::Transport { source } if !source.is_connect() && !source.is_timeout() => {
            refused(None)
        }
        _ => Tried::Stopped(e.to_string()),
    }
}

/// The next shape to try when an error names nothing: each single change
/// of the configured shape, then the two that servers most often need together.
fn untried(configured: WireShape, tried: &[WireShape]) -> Option<WireShape> {
    let singles = [
        Refused::StructuredOutput,
        Refused::Content,
        Refused::MaxTokensField,
        Refused::StreamUsage,
    ]
    .iter()
    .filter_map(|r| configured.avoiding(r))
    .collect::<Vec<_>>();
    let pair = configured
        .avoiding(&Refused::StructuredOutput)
        .and_then(|s| s.avoiding(&Refused::Content));
    singles.into_iter().chain(pair).find(|s| !tried.contains(s))
}

/// What the server refused of `from`, as the settings `to` changed.
fn changed(from: WireShape, to: WireShape) -> Vec<Refused> {
    let mut out = Vec::new();
    if from.structured_output != to.structured_output {
        out.push(Refused::StructuredOutput);
    }
    if from.content != to.content {
        out.push(Refused::Content);
    }
    if from.max_tokens_field != to.max_tokens_field {
        out.push(Refused::MaxTokensField);
    }
    if from.stream_usage != to.stream_usage {
        out.push(Refused::StreamUsage);
    }
    out
}

/// The settings that differ between `from` and `to`, as lines of the table.
fn settings_changed(from: WireShape, to: WireShape) -> Vec<String> {
    changed(from, to)
        .iter()
        .filter_map(|part| to.setting(part))
        .collect()
}

/// The shape as the check's message states it.
fn describe(shape: WireShape, stream: bool) -> String {
    format!(
        "structured_output = {}, content = {}, {}{}",
        shape.structured_output.name(),
        shape.content.name(),
        shape.max_tokens_field.name(),
        if stream { ", streamed" } else { "" }
    )
}

/// An error on one line, short: the check names it, the server's log has
/// the rest.
fn short(error: &str) -> String {
    let line = error.split_whitespace().collect::<Vec<_>>().join(" ");
    let cut: String = line.chars().take(200).collect();
    if cut.len() < line.len() {
        format!("{cut}…")
    } else {
        cut
    }
}

#[cfg(test)]
mod tests {
    use gate_review::provider::{ContentShape, StructuredOutput};

    use super::*;

    #[test]
    fn each_refusal_changes_its_own_setting_once() {
        let base = WireShape::default();
        let cases = [
            (
                Refused::StructuredOutput,
                "structured_output = \"json_object\"",
            ),
            (Refused::Content, "content = \"text\""),
            (Refused::MaxTokensField, "max_tokens_field = \"max_tokens\""),
            (Refused::StreamUsage, "stream_usage = false"),
        ];
        for (refused, setting) in cases {
            let next = base.avoiding(&refused).unwrap();
            assert_eq!(settings_changed(base, next), [setting], "{refused:?}");
        }
        // Nothing further to change once text is sent or usage not asked.
        let text = WireShape {
            content: ContentShape::Text,
            stream_usage: false,
            structured_output: StructuredOutput::None,
            ..base
        };
        assert_eq!(text.avoiding(&Refused::Content), None);
        assert_eq!(text.avoiding(&Refused::StreamUsage), None);
        assert_eq!(text.avoiding(&Refused::StructuredOutput), None);
        assert_eq!(base.avoiding(&Refused::Parameter("seed".into())), None);
    }

    #[test]
    fn an_unnamed_refusal_tries_each_setting_then_the_common_pair() {
        let base = WireShape::default();
        let mut tried = vec![base];
        while let Some(next) = untried(base, &tried) {
            tried.push(next);
        }
        let changed: Vec<Vec<String>> = tried[1..]
            .iter()
            .map(|s| settings_changed(base, *s))
            .collect();
        assert_eq!(
            changed,
            [
                vec!["structured_output = \"json_object\"".to_owned()],
                vec!["content = \"text\"".to_owned()],
                vec!["max_tokens_field = \"max_tokens\"".to_owned()],
                vec!["stream_usage = false".to_owned()],
                vec![
                    "structured_output = \"json_object\"".to_owned(),
                    "content = \"text\"".to_owned()
                ],
            ]
        );
    }
}
