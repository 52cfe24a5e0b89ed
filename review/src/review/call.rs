//! One reviewer's call: down its failback chain, with the one repair attempt
//! for a reply that fails the schema and the one retry with a doubled output
//! limit for a reply cut off at it.
//!
//! A reply still invalid after its repair is that model's failure, not the
//! call's end: the chain moves on to its next model (the breaker is not told
//! of an outage; the attempt is recorded as `malformed`). A quota, credit or
//! budget error is fatal for every model behind the same endpoint and key
//! (a gateway's budget covers all of them): they are not asked again in the
//! run, and the chain goes on only to models of another account. Every request
//! reserves its estimate from the run's [`Budget`] before it is sent; one
//! the budget cannot hold is not sent, and the call ends `over budget`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::provider::anthropic::AnthropicProvider;
use crate::provider::openai::OpenAiProvider;
use crate::provider::{
    Block, Class, Finish, ModelRequest, Price, Provider, ProviderError, Timeouts, Turn, Usage,
    cost, http_client,
};
use crate::record::{Attempt, AttemptOutcome, millis};
use crate::review::answer::{Answer, Expect};
use crate::review::breaker::{Admission, Breakers, Report};
use crate::review::budget::Budget;
pub use crate::review::result::CallResult;
use crate::review::slots::Slots;
use crate::review::watch::Live;
use crate::routing::{Api, ChainModel, Routing};

/// Output limit when the table sets none.
pub const DEFAULT_MAX_OUTPUT_TOKENS: u32 = 8192;

/// The clients of the configured providers, by provider name.
pub type Clients = BTreeMap<String, Arc<dyn Provider>>;

/// Clients for the configured providers (`keys`: provider name → API key,
/// `None` for a provider that needs none), sharing one HTTP client.
pub fn clients(
    routing: &Routing,
    keys: &BTreeMap<String, Option<String>>,
    connect: Duration,
) -> Result<Clients, ProviderError> {
    let http = http_client(connect)?;
    let mut out = Clients::new();
    for (name, key) in keys {
        let Some(def) = routing.table.providers.get(name) else {
            continue;
        };
        let client: Arc<dyn Provider> = match def.api {
            Api::Openai => Arc::new(
                OpenAiProvider::new(http.clone(), &def.base_url, key.clone())
                    .with_shape(def.shape()),
            ),
            Api::Anthropic => Arc::new(AnthropicProvider::new(
                http.clone(),
                &def.base_url,
                key.clone(),
            )),
        };
        out.insert(name.clone(), client);
    }
    Ok(out)
}

/// Everything one call needs besides its content.
#[derive(Clone)]
pub struct CallPlan {
    /// The role, sent as `X-Gate-Role`.
    pub role: String,
    /// The run, sent as `X-Gate-Run`.
    pub run_id: String,
    /// The failback chain, in order.
    pub chain: Vec<ChainModel>,
    /// Connect bound.
    pub connect: Duration,
    /// Stream-silence bound (a model class may lengthen it).
    pub inactivity: Duration,
    /// The call never runs past this.
    pub deadline: Instant,
    /// No attempt starts with less than this left.
    pub min_attempt: Duration,
    /// The answer it expects.
    pub expect: Expect,
    /// The run's input-token budget, shared by its calls.
    pub budget: Budget,
    /// The run's per-provider request limits.
    pub slots: Slots,
    /// The provider whose slot the call already holds (taken before its
    /// timeout started); a chain step at another limited provider takes
    /// one of that provider's for its attempt.
    pub held: Option<String>,
}

/// The breaker key of a chain step: `provider/name`.
pub fn breaker_key(step: &ChainModel) -> String {
    format!("{}/{}", step.provider_name, step.model.name)
}

/// The account a chain step bills: its endpoint's origin and the variable
/// holding its key. Two providers of the routing table on one gateway with
/// one key (its OpenAI and its Anthropic API, say) are one account.
pub fn account_key(step: &ChainModel) -> String {
    let origin = reqwest::Url::parse(&step.provider.base_url).map_or_else(
        |_| step.provider.base_url.clone(),
        |url| url.origin().ascii_serialization(),
    );
    format!(
        "{origin} {}",
        step.provider.api_key_env.as_deref().unwrap_or("(no key)")
    )
}

/// No attempt starts with less than `min_attempt_time_s` left — or, when the
/// call's whole budget is small, less than two fifths of it (the defaults'
/// ratio, 120 s of 300 s), so a short budget still leaves a fallback room.
pub fn min_attempt(configured: Duration, budget: Duration) -> Duration {
    configured.min(budget * 2 / 5)
}

/// What a call does after a retryable failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AfterRetryable {
    /// Wait this long, then try the same model once more.
    Wait(Duration),
    /// Go on down the chain at once.
    MoveOn,
}

/// How `Retry-After` is honoured: a retryable failure that carries one, on a
/// model not yet waited for in this call, waits it out and tries the same
/// model once more — when the wait plus a minimum attempt still fits in the
/// time left (a rate limit that clears in seconds should not cost the
/// preferred model). A Retry-After longer than that, a second one from the
/// same model, or none at all moves down the chain at once. (The caller
/// also moves on when the model's breaker opened meanwhile.)
pub fn after_retryable(
    retry_after: Option<Duration>,
    left: Duration,
    min_attempt: Duration,
    waited_already: bool,
) -> AfterRetryable {
    match retry_after {
        Some(wait) if !waited_already && wait.saturating_add(min_attempt) <= left => {
            AfterRetryable::Wait(wait)
        }
        _ => AfterRetryable::MoveOn,
    }
}

/// Asks `blocks` of the chain until a model gives a valid answer, a fatal
/// error stops the chain, or the chain or the time runs out.
///
/// On the way: a model whose circuit breaker is open is skipped without a
/// request (a `breaker_open` attempt); a model an auth error marked
/// misconfigured earlier in the run stops the chain as that error would;
/// every outcome is reported to the model's breaker; `live` always holds
/// what the call has done so far.
pub async fn ask(
    plan: &CallPlan,
    clients: &Clients,
    blocks: &[Block],
    breakers: &Breakers,
    live: &Live,
) -> CallResult {
    let started = Instant::now();
    let mut result = CallResult::empty();
    result.model = plan
        .chain
        .first()
        .map(|m| m.model.name.clone())
        .unwrap_or_default();
    let min_attempt = min_attempt(
        plan.min_attempt,
        plan.deadline.saturating_duration_since(started),
    );
    let owner = format!("{}/{}", plan.run_id, plan.role);
    let mut next = 0;
    let mut waited = false;
    // The last failure a model itself sent: what the user needs to read,
    // whatever skips came after it.
    let mut last_reply: Option<String> = None;
    while let Some(step) = plan.chain.get(next) {
        let Some(client) = clients.get(&step.provider_name) else {
            next += 1;
            continue;
        };
        let key = breaker_key(step);
        let account = account_key(step);
        let name = &step.model.name;
        result.model.clone_from(name);
        let at = At {
            key: &key,
            account: &account,
            owner: &owner,
            name,
        };
        match before_attempt(
            &at,
            plan,
            min_attempt,
            breakers,
            live,
            &mut result,
            &mut last_reply,
        )
        .await
        {
            Some(Then::Next) => {
                next += 1;
                waited = false;
                continue;
            }
            Some(Then::Stop) => break,
            Some(Then::Again) | None => {}
        }
        let _slot = if plan.held.as_deref() == Some(step.provider_name.as_str()) {
            None
        } else {
            plan.slots.take(&step.provider_name).await
        };
        live.attempting(name);
        let attempt_started = Instant::now();
        let outcome = attempt(plan, step, client.as_ref(), blocks, &mut result).await;
        let latency_ms = millis(attempt_started.elapsed());
        let failure = match outcome {
            Ok(answer) => {
                push(&mut result, name, AttemptOutcome::Ok, latency_ms, None);
                result.answer = Ok(answer);
                live.publish(&result);
                breakers.report(&key, &owner, Report::Success).await;
                break;
            }
            Err(failure) => failure,
        };
        let Failure {
            kind,
            message,
            retry_after,
        } = failure;
        let outcome = match kind {
            Kind::Provider(Class::Retryable) => AttemptOutcome::Retryable,
            Kind::Provider(_) => AttemptOutcome::Fatal,
            Kind::Malformed => AttemptOutcome::Malformed,
            Kind::OverBudget => AttemptOutcome::OverBudget,
        };
        push(&mut result, name, outcome, latency_ms, Some(&message));
        if kind != Kind::OverBudget {
            last_reply = Some(message.clone());
        }
        result.answer = Err(message.clone());
        live.publish(&result);
        match after_failure(
            &at,
            kind,
            &message,
            retry_after,
            plan,
            min_attempt,
            waited,
            breakers,
            live,
        )
        .await
        {
            Then::Next => {
                next += 1;
                waited = false;
            }
            Then::Again => waited = true,
            Then::Stop => break,
        }
    }
    if next >= plan.chain.len()
        && !result.attempts.is_empty()
        && let Err(last) = &result.answer
    {
        // The provider's own words first: a one-line view cuts the end.
        let words = last_reply.as_deref().unwrap_or(last);
        result.answer = Err(format!("{words}; no model of its chain answered"));
    }
    result.latency = started.elapsed();
    live.publish(&result);
    live.finish();
    result
}

/// The model a chain is at, as its breaker and its account know it.
struct At<'a> {
    key: &'a str,
    account: &'a str,
    owner: &'a str,
    name: &'a str,
}

/// What the chain does after a failed attempt.
enum Then {
    /// Go on to the next model.
    Next,
    /// Ask the same model again (its `Retry-After` was waited out).
    Again,
    /// Stop: no other model would do better.
    Stop,
}

/// Whether the chain may ask the model it is at: not one an auth error
/// marked misconfigured earlier in the run (the chain stops), not one whose
/// account's quota ran out or whose breaker is open (the chain moves on),
/// and not with too little time left for an attempt (it stops). `None`
/// lets the attempt go ahead.
async fn before_attempt(
    at: &At<'_>,
    plan: &CallPlan,
    min_attempt: Duration,
    breakers: &Breakers,
    live: &Live,
    result: &mut CallResult,
    last_reply: &mut Option<String>,
) -> Option<Then> {
    let name = at.name;
    if let Some(why) = breakers.misconfigured(at.key) {
        let message = format!("misconfigured earlier in this run: {why}");
        push(result, name, AttemptOutcome::Fatal, 0, Some(&message));
        result.answer = Err(message);
        return Some(Then::Stop);
    }
    if let Some(why) = breakers.unfit(at.key) {
        let message = format!("not asked: it refused this run's request earlier: {why}");
        push(result, name, AttemptOutcome::Fatal, 0, Some(&message));
        last_reply.get_or_insert(why);
        result.answer = Err(message);
        live.publish(result);
        return Some(Then::Next);
    }
    if let Some(why) = breakers.exhausted(at.account) {
        // Not asked: its provider account's quota or budget is spent.
        let message = format!(
            "not asked: the quota or budget of its provider's endpoint and key ran out \
             earlier in this run: {why}"
        );
        push(result, name, AttemptOutcome::Fatal, 0, Some(&message));
        last_reply.get_or_insert(why);
        result.answer = Err(message);
        live.publish(result);
        return Some(Then::Next);
    }
    let left = plan.deadline.saturating_duration_since(Instant::now());
    if left < min_attempt {
        result.answer = Err(format!(
            "out of time: {:.1} s left is less than an attempt needs ({:.1} s)",
            left.as_secs_f64(),
            min_attempt.as_secs_f64()
        ));
        return Some(Then::Stop);
    }
    let probe_until = chrono::Utc::now()
        + chrono::Duration::from_std(left).unwrap_or_else(|_| chrono::Duration::days(1));
    if let Admission::Skip { why, .. } = breakers.admit(at.key, at.owner, probe_until).await {
        push(result, name, AttemptOutcome::BreakerOpen, 0, Some(&why));
        result.answer = Err(why);
        live.publish(result);
        return Some(Then::Next);
    }
    None
}

/// Reports a failed attempt to the model's breaker (or marks its key or
/// account) and says where the chain goes from here.
#[allow(clippy::too_many_arguments)] // the attempt's facts and the chain's state
async fn after_failure(
    at: &At<'_>,
    kind: Kind,
    message: &str,
    retry_after: Option<Duration>,
    plan: &CallPlan,
    min_attempt: Duration,
    waited: bool,
    breakers: &Breakers,
    live: &Live,
) -> Then {
    let (key, owner) = (at.key, at.owner);
    match kind {
        Kind::Provider(Class::Retryable) => {
            breakers
                .report(
                    key,
                    owner,
                    Report::Failure {
                        retry_after,
                        error: message.to_owned(),
                    },
                )
                .await;
            let left = plan.deadline.saturating_duration_since(Instant::now());
            match after_retryable(retry_after, left, min_attempt, waited) {
                AfterRetryable::Wait(wait) if !breakers.is_open(key).await => {
                    tracing::debug!(model = %at.name, ?wait, "honouring Retry-After");
                    live.pausing(at.name, wait);
                    tokio::time::sleep(wait).await;
                    Then::Again
                }
                _ => Then::Next,
            }
        }
        // Another model may answer well; this one's health is not in question.
        Kind::Malformed => {
            breakers.report(key, owner, Report::Neutral).await;
            Then::Next
        }
        // Every model on this endpoint and key would answer the same;
        // one of another account may not. Nobody's health is in question.
        Kind::Provider(Class::Quota) => {
            breakers.mark_exhausted(at.account, message);
            breakers.report(key, owner, Report::Neutral).await;
            Then::Next
        }
        // The request's shape is wrong for this server: it will refuse it
        // every time (so not again in this run), whatever its health; a
        // model on another server may take it.
        Kind::Provider(Class::Unsupported) => {
            breakers.mark_unfit(key, message);
            breakers.report(key, owner, Report::Neutral).await;
            Then::Next
        }
        // A different model does not fix a bad key or a bad request.
        Kind::Provider(Class::Auth) => {
            breakers.mark_misconfigured(key, message);
            breakers.report(key, owner, Report::Neutral).await;
            Then::Stop
        }
        // Nor does it fit a request the budget cannot hold.
        Kind::Provider(Class::Fatal) | Kind::OverBudget => {
            breakers.report(key, owner, Report::Neutral).await;
            Then::Stop
        }
    }
}

fn push(
    result: &mut CallResult,
    model: &str,
    outcome: AttemptOutcome,
    latency_ms: u64,
    error: Option<&str>,
) {
    result.attempts.push(Attempt {
        model: model.to_owned(),
        outcome,
        latency_ms,
        error: error.map(str::to_owned),
    });
}

/// How an attempt failed, as the chain treats it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// As the provider's error is classified.
    Provider(Class),
    /// The reply was still invalid after its repair.
    Malformed,
    /// The budget could not hold the attempt's first request: nothing was sent.
    OverBudget,
}

/// Why an attempt on one model failed.
struct Failure {
    kind: Kind,
    message: String,
    retry_after: Option<Duration>,
}

impl Failure {
    fn of(kind: Kind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            retry_after: None,
        }
    }
}

async fn attempt(
    plan: &CallPlan,
    step: &ChainModel,
    client: &dyn Provider,
    blocks: &[Block],
    result: &mut CallResult,
) -> Result<Answer, Failure> {
    let price = step.model.price.map(|p| Price {
        input: p.input,
        cached_input: p.cached_input.unwrap_or(p.input),
        cache_write: p.cache_write.unwrap_or(p.input),
        output: p.output,
    });
    let mut req = ModelRequest {
        role: plan.role.clone(),
        run_id: plan.run_id.clone(),
        model: step.model.name.clone(),
        blocks: blocks.to_vec(),
        schema_name: plan.expect.name().to_owned(),
        schema: plan.expect.schema(),
        max_output_tokens: step
            .model
            .max_output_tokens
            .unwrap_or(DEFAULT_MAX_OUTPUT_TOKENS),
        stream: step.model.stream.unwrap_or(true),
        followups: Vec::new(),
        timeouts: Timeouts {
            connect: plan.connect,
            inactivity: step
                .model
                .inactivity_timeout_s
                .map_or(plan.inactivity, Duration::from_secs),
            deadline: plan.deadline,
        },
    };
    let mut repaired = false;
    let mut doubled = false;
    // Why the request about to be sent is a follow-up: what to report when
    // the budget cannot hold it.
    let mut pending: Option<Failure> = None;
    loop {
        let reservation = match plan.budget.reserve(req.estimated_tokens()) {
            Ok(r) => r,
            Err(why) => {
                return Err(match pending {
                    None => Failure::of(Kind::OverBudget, why),
                    Some(f) => Failure::of(f.kind, format!("{}; not sent again: {why}", f.message)),
                });
            }
        };
        let reply = client.complete(&req).await;
        let reply = match reply {
            Ok(reply) => {
                reservation.settle(reply.usage.input_tokens);
                account(result, &reply.usage, price.as_ref());
                reply
            }
            Err(e) => {
                match e.bad_reply() {
                    Some(bad) => {
                        reservation.settle(bad.usage.input_tokens);
                        account(result, &bad.usage, price.as_ref());
                    }
                    None => reservation.settle(None),
                }
                match &e {
                    // Cut off at the output limit: once more with double the room.
                    ProviderError::Truncated(_) if !doubled => {
                        doubled = true;
                        req.max_output_tokens = req.max_output_tokens.saturating_mul(2);
                        pending = Some(Failure::of(Kind::Provider(e.classify()), e.to_string()));
                        continue;
                    }
                    // Not JSON at all: one repair, with the error fed back.
                    ProviderError::Malformed(bad) if !repaired => {
                        repaired = true;
                        req.followups.push(repair_turn(&bad.raw, &bad.detail));
                        pending = Some(Failure::of(
                            Kind::Malformed,
                            format!("malformed output: {}", bad.detail),
                        ));
                        continue;
                    }
                    ProviderError::Malformed(bad) => {
                        return Err(Failure::of(Kind::Malformed, still_malformed(&bad.detail)));
                    }
                    _ => {}
                }
                // A refused parameter: which setting avoids it comes first
                // (a one-line view cuts the end), the server's words after.
                let message = match e.refused() {
                    Some(refused) => format!(
                        "{} ({e})",
                        refused.hint(&step.provider_name, step.provider.shape())
                    ),
                    None => e.to_string(),
                };
                return Err(Failure {
                    kind: Kind::Provider(e.classify()),
                    message,
                    retry_after: e.retry_after(),
                });
            }
        };
        if reply.finish == Finish::Length && !doubled {
            doubled = true;
            req.max_output_tokens = req.max_output_tokens.saturating_mul(2);
            pending = Some(Failure::of(
                Kind::Provider(Class::Fatal),
                "the reply was cut off at the output limit",
            ));
            continue;
        }
        match plan.expect.validate(&reply.answer) {
            Ok(answer) => return Ok(answer),
            Err(why) if !repaired => {
                repaired = true;
                req.followups.push(repair_turn(&reply.raw, &why));
                pending = Some(Failure::of(
                    Kind::Malformed,
                    format!("malformed output: {why}"),
                ));
            }
            Err(why) => {
                return Err(Failure::of(Kind::Malformed, still_malformed(&why)));
            }
        }
    }
}

/// A reply still invalid after its repair: what was wrong first, since that
/// is what a reader needs (and what a one-line view keeps).
fn still_malformed(why: &str) -> String {
    format!("malformed output: {why} (still, after one repair)")
}

fn repair_turn(raw: &str, why: &str) -> Turn {
    Turn {
        assistant: raw.to_owned(),
        user: format!(
            "That reply cannot be used: {why}. Answer again with exactly one JSON object \
             that follows the schema, and nothing else."
        ),
    }
}

fn account(result: &mut CallResult, usage: &Usage, price: Option<&Price>) {
    fn add(a: &mut Option<u64>, b: Option<u64>) {
        if let Some(b) = b {
            *a = Some(a.unwrap_or(0) + b);
        }
    }
    add(&mut result.usage.input_tokens, usage.input_tokens);
    add(
        &mut result.usage.cached_input_tokens,
        usage.cached_input_tokens,
    );
    add(
        &mut result.usage.cache_write_tokens,
        usage.cache_write_tokens,
    );
    add(&mut result.usage.output_tokens, usage.output_tokens);
    let this = match price {
        Some(p) => cost(usage, p),
        None => usage.cost_usd,
    };
    result.cost_usd = match (result.cost_usd, this) {
        (Some(a), Some(b)) => Some(a + b),
        _ => None,
    };
}

#[cfg(test)]
mod tests;
