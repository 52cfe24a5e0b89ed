//! `gate routing show | check [--qualify]`.

use std::fmt::Write;

use gate_review::role::Role;
use gate_review::routing::{ProviderDef, Routing, patch};
use gate_review::rules::model::PASS_MARGIN;
use gate_review::tier::Tier;

use crate::cli::{RoutingCheckArgs, RoutingShowArgs};
use crate::config::Context;
use crate::environment::Environment;
use crate::errors::GateError;
use crate::exit;
use crate::output;

/// `gate routing show`: the table in effect, `GATE_ROUTING_URL`'s patch
/// applied (unless `--offline`), overridden rows marked.
pub(crate) async fn show(ctx: &Context, args: &RoutingShowArgs) -> Result<u8, GateError> {
    let mut routing = super::routing_table(ctx, &args.routing)?;
    let mut text = String::new();
    if let Some(url) = ctx.env.routing_url() {
        let status = patch::apply_override(&mut routing, &url, args.offline).await;
        let _ = match &status.error {
            Some(why) => writeln!(
                text,
                "routing override: {} {} ({why}); the local table is in effect\n",
                status.url, status.status
            ),
            None => writeln!(text, "routing override: {} applied\n", status.url),
        };
    }
    text.push_str(&render(&routing, &ctx.env));
    output::stdout(&text).map_err(GateError::stdout)?;
    Ok(exit::PASS)
}

/// `gate routing check [--qualify]`: exit 1 when the table is unusable or
/// (with `--qualify`) a model the rules reviewer can use does not separate
/// the house rules' cases; 4 when a model could not be asked.
pub(crate) async fn check(ctx: &Context, args: &RoutingCheckArgs) -> Result<u8, GateError> {
    let routing = super::routing_table(ctx, &args.routing)?;
    let problems = routing.check(&ctx.env);
    let mut out = String::new();
    let _ = writeln!(out, "routing table: {}", routing.origin);
    for p in &problems {
        let level = if p.fatal { "error" } else { "note" };
        let _ = writeln!(out, "  {level}: {}: {}", p.row, p.message);
    }
    let mut errors = problems.iter().filter(|p| p.fatal).count();
    let mut unavailable = 0;
    if args.qualify {
        let (models, rules) = super::rules::qualify(ctx, &routing, &args.routing).await?;
        if rules == 0 {
            let _ = writeln!(
                out,
                "  note: qualify: no judged house rules to test models with"
            );
        } else {
            let _ = writeln!(
                out,
                "rules reviewer models, qualified on {rules} house rule(s) (margin ≥ {PASS_MARGIN}):"
            );
        }
        for q in &models {
            let classes = q.classes.join(", ");
            if let Some(why) = &q.unavailable {
                unavailable += 1;
                let _ = writeln!(out, "  note: {} ({classes}): not qualified: {why}", q.model);
            } else if q.below.is_empty() {
                let lowest = q
                    .lowest
                    .as_ref()
                    .map(|(id, m)| format!("lowest margin {m:.2} on `{id}`"))
                    .unwrap_or_default();
                let _ = writeln!(out, "  ok: {} ({classes}): {lowest}", q.model);
            } else {
                errors += 1;
                let below: Vec<String> = q
                    .below
                    .iter()
                    .map(|(id, m)| format!("`{id}` {m:.2}"))
                    .collect();
                let _ = writeln!(
                    out,
                    "  error: {} ({classes}): does not separate the cases: below the margin on {}",
                    q.model,
                    below.join(", ")
                );
            }
        }
    }
    if errors == 0 && unavailable == 0 {
        let _ = writeln!(out, "ok");
    } else if errors > 0 {
        let _ = writeln!(out, "{errors} error(s)");
    }
    output::stdout(&out).map_err(GateError::stdout)?;
    Ok(if errors > 0 {
        exit::FAIL
    } else if unavailable > 0 {
        exit::INCOMPLETE
    } else {
        exit::PASS
    })
}

/// The table as rows, each with where it came from.
pub(crate) fn render(routing: &Routing, env: &Environment) -> String {
    let t = &routing.table;
    let origin = routing.origin.to_string();
    let from = |row: &str| {
        routing
            .overridden
            .iter()
            .find(|(r, _)| r == row)
            .map_or_else(
                || origin.clone(),
                |(_, what)| format!("{origin}; override: {what}"),
            )
    };
    let mut out = String::new();
    let _ = writeln!(
        out,
        "routing table: {origin} (blake3 {})",
        &routing.digest().to_hex()[..16]
    );
    let _ = writeln!(out, "\nproviders");
    for (name, p) in &t.providers {
        let key = match &p.api_key_env {
            Some(var) if env.key_is_set(var) => format!("key {var}"),
            Some(var) => format!("key {var} (not set)"),
            None => "no key".to_owned(),
        };
        let off = if p.disabled { " disabled" } else { "" };
        let _ = writeln!(
            out,
            "  {name:<16} {:<9} {:<36} {key}{off}{}  [{}]",
            format!("{:?}", p.api).to_lowercase(),
            p.base_url,
            settings(p),
            from(&format!("provider.{name}"))
        );
    }
    let _ = writeln!(out, "\nmodels");
    for (class, m) in &t.models {
        let chain = if m.fallback.is_empty() {
            String::new()
        } else {
            format!(" → {}", m.fallback.join(", "))
        };
        let price = m.price.map_or_else(
            || "no price".to_owned(),
            |p| {
                format!(
                    "${} in / ${} cached / ${} out per Mtok",
                    p.input,
                    p.cached_input.unwrap_or(p.input),
                    p.output
                )
            },
        );
        let off = if m.disabled { " disabled" } else { "" };
        let _ = writeln!(
            out,
            "  {class:<16} {}/{}{chain}  {price}{off}  [{}]",
            m.provider,
            m.name,
            from(&format!("model.{class}"))
        );
    }
    let _ = writeln!(out, "\nroutes");
    for (key, class) in &t.routes {
        let _ = writeln!(
            out,
            "  {key:<24} {class}  [{}]",
            from(&format!("route.{key}"))
        );
    }
    out.push_str(&resolved(routing));
    out
}

/// A provider's request settings that differ from the defaults, as written.
fn settings(p: &ProviderDef) -> String {
    let value = serde_json::to_value(p).unwrap_or_default();
    let mut out = String::new();
    for key in [
        "structured_output",
        "content",
        "max_tokens_field",
        "stream_usage",
        "concurrency",
    ] {
        if let Some(v) = value.get(key) {
            let _ = write!(
                out,
                " {key}={}",
                v.as_str().map_or_else(|| v.to_string(), str::to_owned)
            );
        }
    }
    out
}

/// What each role of each tier resolves to: the route key that gives it
/// its class (a wildcard or its own), then its failback chain as called.
fn resolved(routing: &Routing) -> String {
    let mut out = String::from("\nresolved (role.tier ← route: chain)\n");
    for tier in [Tier::Trivial, Tier::Light, Tier::Full] {
        for role in Role::for_tier(tier) {
            let Some(key) = routing.route_key(*role, tier) else {
                // The coordinator is deterministic below the full tier.
                if !(*role == Role::Coordinator && tier != Tier::Full) {
                    let _ = writeln!(out, "  {role}.{tier:<16} not routed: review cannot run it");
                }
                continue;
            };
            let chain: Vec<String> = routing
                .chain(*role, tier)
                .iter()
                .map(|m| format!("{} ({}/{})", m.class, m.provider_name, m.model.name))
                .collect();
            let chain = if chain.is_empty() {
                "no usable model".to_owned()
            } else {
                chain.join(" → ")
            };
            let _ = writeln!(out, "  {:<24} ← {key}: {chain}", format!("{role}.{tier}"));
        }
    }
    out
}
