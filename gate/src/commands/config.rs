//! `gate verify --print-config`: what a run would use, and where each value
//! came from (flag > `GATE_*` environment > file > default), without
//! running anything.

use std::path::Path;

use gate_review::routing::{Origin, Routing};
use gate_specs::{Locator, key_path};
use serde_json::{Value, json};

use crate::cli::{Format, VerifyArgs};
use crate::config::{Context, Source, Verbosity, VerifySettings};
use crate::environment::names;
use crate::errors::GateError;
use crate::output::settings::{self, Effective, Entry};
use crate::{attest, exit, output, verify};

/// Prints the effective configuration (JSON with `--format json`) and exits 0.
pub(crate) fn print(
    ctx: &Context,
    settings: &VerifySettings,
    args: &VerifyArgs,
) -> Result<u8, GateError> {
    let effective = effective(ctx, settings, args)?;
    let text = if settings.format == Format::Json {
        output::json_document(&settings::render_json(&effective))
    } else {
        settings::render_human(&effective)
    };
    output::stdout(&text).map_err(GateError::stdout)?;
    Ok(exit::PASS)
}

fn entry(name: &str, value: Value, source: &Source) -> Entry {
    Entry {
        name: name.to_owned(),
        value,
        source: source.to_string(),
    }
}

fn path_value(p: &Path) -> Value {
    Value::String(p.display().to_string())
}

/// Assembles the configuration; the spec and the routing table are read
/// (and must be valid) but nothing is run, fetched or written.
pub(crate) fn effective(
    ctx: &Context,
    settings: &VerifySettings,
    args: &VerifyArgs,
) -> Result<Effective, GateError> {
    let loaded = verify::load_spec(&settings.spec_path)?;
    let spec = &loaded.spec;
    let text = std::fs::read_to_string(&settings.spec_path).unwrap_or_default();
    let locator = Locator::new(&text, gate_specs::Format::from_path(&settings.spec_path));
    let spec_name = settings
        .spec_path
        .file_name()
        .map_or_else(|| "spec".to_owned(), |n| n.to_string_lossy().into_owned());
    let in_spec = |path: &[gate_specs::Seg]| {
        locator
            .key(path)
            .map(|p| Source::File(format!("{spec_name}:{}", p.line)))
    };

    let spec_dir = settings
        .spec_path
        .parent()
        .unwrap_or(&ctx.workspace)
        .to_path_buf();
    let routing = Routing::resolve(settings.routing.as_deref(), &spec_dir)?;
    let routing_source = match (&settings.routing, &routing.origin) {
        (Some(_), _) => Source::Flag("--routing"),
        (None, Origin::File(_)) => Source::Default("routing.toml beside the spec"),
        (None, Origin::Builtin) => Source::Default("built into the binary"),
    };
    let routing_value = match &routing.origin {
        Origin::Builtin => json!("built-in"),
        Origin::File(p) => path_value(p),
    };

    let (ledger, ledger_source) = match (ctx.env.ledger(), &spec.ledger.url) {
        (Some(url), _) => (json!(url), Source::Env(names::LEDGER)),
        (None, Some(url)) => (
            json!(url),
            in_spec(&key_path!["ledger", "url"]).unwrap_or(Source::File(spec_name.clone())),
        ),
        (None, None) => (
            path_value(&attest::ledger_path(ctx)),
            Source::Default("in the state directory"),
        ),
    };
    let (bundle_store, bundle_store_source) = bundle_store(ctx)?;
    let (key, key_source) = signing_key(ctx);
    let (base, base_source) = match (&args.base, &spec.spec.base) {
        (Some(b), _) => (json!(b), Source::Flag("--base")),
        (None, Some(b)) => (
            json!(b),
            in_spec(&key_path!["spec", "base"]).unwrap_or(Source::File(spec_name.clone())),
        ),
        (None, None) => (
            Value::Null,
            Source::Default("the tasks' paths are the change"),
        ),
    };
    // The floor, and what the spec makes of it.
    let sandbox_mode = crate::isolation::effective_mode(settings.sandbox, spec.sandbox.mode);
    let sandbox_source = match spec.sandbox.mode {
        Some(m) if m > settings.sandbox => {
            in_spec(&key_path!["sandbox", "mode"]).unwrap_or(Source::File(spec_name.clone()))
        }
        _ => settings.sandbox_source.clone(),
    };
    let network = spec.sandbox.network.unwrap_or_default();
    let network_source = if spec.sandbox.network.is_some() {
        in_spec(&key_path!["sandbox", "network"]).unwrap_or(Source::File(spec_name.clone()))
    } else {
        Source::Default("")
    };
    let routing_url = ctx.env.routing_url();
    let routing_url_source = match (&routing_url, settings.offline) {
        (Some(_), true) => Source::Default("set, but not fetched: offline"),
        (Some(_), false) => Source::Env(names::ROUTING_URL),
        (None, _) => Source::Default(""),
    };

    let mut entries = vec![
        entry(
            "workspace",
            path_value(&ctx.workspace),
            &ctx.workspace_source,
        ),
        entry("state_dir", path_value(&ctx.state_dir), &ctx.state_source),
        entry(
            "spec",
            path_value(&settings.spec_path),
            &settings.spec_source,
        ),
        entry("routing", routing_value, &routing_source),
        entry(
            "routing_url",
            // Without its query or credentials: a token may ride in them.
            routing_url.map_or(Value::Null, |u| {
                Value::String(gate_review::routing::patch::display_url(&u))
            }),
            &routing_url_source,
        ),
        entry("ledger", ledger, &ledger_source),
        entry("bundle_store", bundle_store, &bundle_store_source),
        entry("signing_key", key, &key_source),
        entry("base", base, &base_source),
        entry("sandbox", json!(sandbox_mode.as_str()), &sandbox_source),
        entry("sandbox_network", json!(network.as_str()), &network_source),
    ];
    entries.extend(output_entries(ctx, settings));

    let policy = match serde_json::to_value(&spec.policy) {
        Ok(Value::Object(map)) => map
            .into_iter()
            .map(|(key, value)| {
                let source =
                    in_spec(&key_path!["policy", key.as_str()]).unwrap_or(Source::Default(""));
                entry(&key, value, &source)
            })
            .collect(),
        _ => Vec::new(),
    };
    Ok(Effective { entries, policy })
}

/// Where bundles go, and why there.
fn bundle_store(ctx: &Context) -> Result<(Value, Source), GateError> {
    let store = attest::bundle_store(ctx)?;
    let source = if ctx.env.bundle_store().is_some() {
        Source::Env(names::BUNDLE_STORE)
    } else if matches!(store.target(), gate_evidence::store::Target::Ledger) {
        Source::Default("the PostgreSQL ledger keeps each bundle with its row")
    } else {
        Source::Default("in the state directory")
    };
    Ok((json!(store.target().to_string()), source))
}

/// Where the signing key comes from: never the key itself.
fn signing_key(ctx: &Context) -> (Value, Source) {
    match ctx.env.signing_key() {
        Some(v) if v.trim_start().starts_with("-----BEGIN") => {
            (json!("(PEM text)"), Source::Env(names::SIGNING_KEY))
        }
        Some(v) => (json!(v), Source::Env(names::SIGNING_KEY)),
        None => {
            let path = attest::keys_dir(ctx).join(gate_evidence::keys::PRIVATE_KEY_FILE);
            let how = if path.exists() {
                "in the state directory"
            } else if ctx.env.in_ci() {
                "missing; CI is set, so the run will refuse to start"
            } else {
                "created on the first run"
            };
            (path_value(&path), Source::Default(how))
        }
    }
}

/// How the run reports: format, reports, colour, offline, verbosity, CI.
fn output_entries(ctx: &Context, settings: &VerifySettings) -> Vec<Entry> {
    let reports: Vec<Value> = settings
        .reports
        .iter()
        .map(|(f, p)| json!(format!("{}={}", f.as_str(), p.display())))
        .collect();
    let verbosity = match ctx.verbosity {
        Verbosity::Quiet => ("quiet", Source::Flag("-q")),
        Verbosity::Normal => ("normal", Source::Default("")),
        Verbosity::Verbose => ("verbose", Source::Flag("-v")),
        Verbosity::Debug => ("debug", Source::Flag("-vv")),
    };
    let color = json!(format!(
        "stdout {}, stderr {}",
        on_off(ctx.colors.stdout),
        on_off(ctx.colors.stderr)
    ));
    vec![
        entry(
            "format",
            json!(settings.format.as_str()),
            &settings.format_source,
        ),
        entry(
            "reports",
            Value::Array(reports),
            &if settings.reports.is_empty() {
                Source::Default("")
            } else {
                Source::Flag("--report")
            },
        ),
        entry("color", color, &ctx.color_source),
        entry("offline", json!(settings.offline), &settings.offline_source),
        entry("verbosity", json!(verbosity.0), &verbosity.1),
        entry(
            "ci",
            json!(ctx.env.in_ci()),
            &if ctx.env.in_ci() {
                Source::Env("CI")
            } else {
                Source::Default("")
            },
        ),
        entry(
            "github_step_summary",
            ctx.env
                .github_step_summary()
                .map_or(Value::Null, |p| path_value(&p)),
            &if ctx.env.github_step_summary().is_some() {
                Source::Env("GITHUB_STEP_SUMMARY")
            } else {
                Source::Default("")
            },
        ),
    ]
}

fn on_off(b: bool) -> &'static str {
    if b { "on" } else { "off" }
}
