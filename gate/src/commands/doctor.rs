//! `gate doctor`: what a run on this machine would use, checked without
//! spending tokens and without changing anything — the spec, the routing
//! table and its override, each provider's key and endpoint, the ledger,
//! the bundle store, the signing key, the browser and the sandbox.
//!
//! Nothing is created: no state directory, ledger, key or bundle. The
//! bundle store's writability is tried with a temporary file removed at
//! once; a provider is asked for its model list, which costs nothing.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use gate_evidence::keys::{PRIVATE_KEY_FILE, PUBLIC_KEY_FILE};
use gate_evidence::ledger::{self, LoadError, Location, SCHEMA_VERSION};
use gate_evidence::store::{BundleRef, BundleStore, StoreError, Target};
use gate_evidence::{Ledger, LedgerRow, PublicKey, SigningKey};
use gate_review::routing::{Api, ProviderDef, Routing, patch};
use gate_specs::{SandboxMode, SandboxNetwork, Spec};
use serde_json::json;

use crate::attest;
use crate::cli::{DoctorArgs, ShowFormat};
use crate::config::{self, Context};
use crate::environment::{Environment, names};
use crate::errors::GateError;
use crate::exit;
use crate::isolation::{self, Isolation};
use crate::output;

mod check;
mod probe;

use check::{Check, Level};

/// How long a provider's endpoint may take to answer the model list.
const ENDPOINT_TIMEOUT: Duration = Duration::from_secs(10);

/// `gate doctor`: one line per check; exit 0 when nothing is an error, 1
/// otherwise.
pub(crate) async fn doctor(ctx: &Context, args: &DoctorArgs) -> Result<u8, GateError> {
    let checks = diagnose(ctx, args).await;
    let errors = checks.iter().filter(|c| c.level == Level::Error).count();
    let warnings = checks.iter().filter(|c| c.level == Level::Warning).count();
    let text = match args.format {
        ShowFormat::Json => {
            let doc = json!({
                "ok": errors == 0,
                "errors": errors,
                "warnings": warnings,
                "offline": args.offline,
                "checks": checks,
            });
            output::json_document(&doc)
        }
        ShowFormat::Human => render(&checks, errors, warnings),
    };
    output::stdout(&text).map_err(GateError::stdout)?;
    Ok(if errors == 0 { exit::PASS } else { exit::FAIL })
}

/// The human lines: `level  check: message`, then the fix indented.
fn render(checks: &[Check], errors: usize, warnings: usize) -> String {
    let mut out = String::new();
    for c in checks {
        let _ = writeln!(out, "{:<8} {}: {}", c.level.as_str(), c.name, c.message);
        if let Some(fix) = &c.fix {
            let _ = writeln!(out, "         fix: {fix}");
        }
    }
    let _ = match (errors, warnings) {
        (0, 0) => writeln!(out, "\nno problems: a run here has what it needs"),
        (0, w) => writeln!(out, "\n{w} warning(s), no errors"),
        (e, w) => writeln!(out, "\n{e} error(s), {w} warning(s)"),
    };
    out
}

/// Every check, in the order a run meets what it checks.
async fn diagnose(ctx: &Context, args: &DoctorArgs) -> Vec<Check> {
    let mut checks = Vec::new();
    let (spec, spec_path) = check_spec(ctx, args.routing.spec.as_deref(), &mut checks);
    // A spec other than the workspace's gate.toml may name its own ledger.
    let ctx = &spec_path
        .as_deref()
        .map_or_else(|| ctx.clone(), |p| ctx.with_spec_ledger(p));
    let spec_dir = spec_path
        .as_deref()
        .and_then(Path::parent)
        .map_or_else(|| ctx.workspace.clone(), Path::to_path_buf);
    let routing = check_routing(
        args.routing.routing.as_deref(),
        &spec_dir,
        &ctx.env,
        args.offline,
        &mut checks,
    )
    .await;
    if let Some(routing) = &routing {
        check_providers(routing, &ctx.env, args.offline, &mut checks).await;
        if args.probe {
            probe::probe(routing, &ctx.env, &mut checks).await;
        } else {
            checks.push(Check::ok(
                "probe",
                "no model request was tried: a server can list its models and still refuse \
                 every review (`gate doctor --probe` sends one small request per model)",
            ));
        }
    }
    check_ledger(ctx, &mut checks);
    let store = check_store(ctx, args.offline, &mut checks);
    checks.push(check_key(ctx));
    checks.extend(check_browser(ctx, spec.as_ref()));
    checks.extend(check_sandbox(ctx, spec.as_ref(), routing.as_ref(), store.as_ref()).await);
    checks
}

/// The spec parses. Returns it and its path.
fn check_spec(
    ctx: &Context,
    flag: Option<&Path>,
    checks: &mut Vec<Check>,
) -> (Option<Spec>, Option<PathBuf>) {
    let path = match ctx.spec_path(flag) {
        Ok(path) => path,
        Err(e) => {
            checks.push(Check::error(
                "spec",
                e.to_string(),
                "write one with `gate init`, or name it with --spec FILE",
            ));
            return (None, None);
        }
    };
    let shown = attest::display_path(ctx, &path);
    match gate_specs::load(&path) {
        Ok(spec) => {
            checks.push(Check::ok(
                "spec",
                format!(
                    "{shown} parses: {} check(s), {} task(s), {} page(s)",
                    spec.checks.len(),
                    spec.tasks.len(),
                    spec.pages.len()
                ),
            ));
            (Some(spec), Some(path))
        }
        Err(errors) => {
            let first = errors.to_string();
            let count = first.lines().filter(|l| !l.trim().is_empty()).count();
            let head = first.lines().next().unwrap_or("does not parse").to_owned();
            let more = if count > 1 {
                format!(" (and {} more line(s))", count - 1)
            } else {
                String::new()
            };
            checks.push(Check::error(
                "spec",
                format!("{head}{more}"),
                format!("fix the spec; `gate verify --spec {shown}` prints every problem"),
            ));
            (None, Some(path))
        }
    }
}

/// The routing table loads and is usable; `GATE_ROUTING_URL`'s patch
/// loads and applies (unless offline). Returns the table in effect.
async fn check_routing(
    flag: Option<&Path>,
    spec_dir: &Path,
    env: &Environment,
    offline: bool,
    checks: &mut Vec<Check>,
) -> Option<Routing> {
    let flag = flag.map(config::from_cwd);
    let mut routing = match Routing::resolve(flag.as_deref(), spec_dir) {
        Ok(r) => r,
        Err(e) => {
            checks.push(Check::error(
                "routing",
                e.to_string(),
                "fix the table; `gate routing check` validates it",
            ));
            return None;
        }
    };
    let fatal: Vec<String> = routing
        .check(env)
        .into_iter()
        .filter(|p| p.fatal)
        .map(|p| format!("{}: {}", p.row, p.message))
        .collect();
    if fatal.is_empty() {
        checks.push(Check::ok(
            "routing",
            format!("table {} loads", routing.origin),
        ));
    } else {
        checks.push(Check::error(
            "routing",
            format!("table {}: {}", routing.origin, fatal.join("; ")),
            "fix those rows; `gate routing check` lists every problem",
        ));
    }
    if let Some(url) = env.routing_url() {
        let name = names::ROUTING_URL;
        if offline {
            checks.push(Check::ok(
                "routing.override",
                format!(
                    "{name} = {}: not fetched (--offline)",
                    patch::display_url(&url)
                ),
            ));
        } else {
            let status = patch::apply_override(&mut routing, &url, false).await;
            match status.error {
                None => checks.push(Check::ok(
                    "routing.override",
                    format!(
                        "{name} = {}: loads and applies ({} row(s) changed)",
                        status.url,
                        status.changed.len()
                    ),
                )),
                Some(why) => checks.push(Check::error(
                    "routing.override",
                    format!(
                        "{name} = {}: {why}; a run would go on with the local table",
                        status.url
                    ),
                    format!("serve a valid patch there over HTTPS, or unset {name}"),
                )),
            }
        }
    }
    Some(routing)
}

/// Each provider's key is set and its endpoint answers.
async fn check_providers(
    routing: &Routing,
    env: &Environment,
    offline: bool,
    checks: &mut Vec<Check>,
) {
    let client = gate_review::provider::http_client(ENDPOINT_TIMEOUT).ok();
    for (name, provider) in &routing.table.providers {
        let check = format!("provider.{name}");
        if provider.disabled {
            checks.push(Check::ok(check, "disabled by the routing override"));
            continue;
        }
        let key = match &provider.api_key_env {
            Some(var) if !env.key_is_set(var) => {
                checks.push(Check::warning(
                    check,
                    format!("{var} is not set: review will not use this provider"),
                    format!("export {var} with the provider's API key to review with it"),
                ));
                continue;
            }
            Some(var) => env.var(var).map(|k| (var.clone(), k.trim().to_owned())),
            None => None,
        };
        let key_said = key.as_ref().map_or_else(
            || "no key needed".to_owned(),
            |(var, _)| format!("{var} set"),
        );
        if offline {
            checks.push(Check::ok(
                check,
                format!("{key_said}; {} not reached (--offline)", provider.base_url),
            ));
            continue;
        }
        let Some(client) = &client else {
            checks.push(Check::error(
                check,
                "cannot build an HTTP client",
                "check the system's TLS set-up",
            ));
            continue;
        };
        checks.push(
            endpoint(
                client,
                check,
                provider,
                key.as_ref().map(|(v, k)| (v.as_str(), k.as_str())),
                &key_said,
                &routing
                    .table
                    .models
                    .values()
                    .filter(|m| &m.provider == name && !m.disabled)
                    .map(|m| m.name.clone())
                    .collect::<Vec<_>>(),
            )
            .await,
        );
    }
}

/// The model-list request of a provider's API: nothing is generated, so
/// nothing is spent. OpenAI-compatible: `GET {base_url}/models` with the
/// key as a bearer token; Anthropic: `GET {base_url}/v1/models` with
/// `x-api-key` and `anthropic-version`.
fn models_request(
    client: &reqwest::Client,
    provider: &ProviderDef,
    key: Option<&str>,
) -> (String, reqwest::RequestBuilder) {
    let base = provider.base_url.trim_end_matches('/');
    match provider.api {
        Api::Openai => {
            let url = format!("{base}/models");
            let mut req = client.get(&url);
            if let Some(key) = key {
                req = req.bearer_auth(key);
            }
            (url, req)
        }
        Api::Anthropic => {
            // Its list is paged (20 by default); 1000 is the most a page holds.
            let url = format!("{base}/v1/models?limit=1000");
            let mut req = client.get(&url).header(
                "anthropic-version",
                gate_review::provider::anthropic::ANTHROPIC_VERSION,
            );
            if let Some(key) = key {
                req = req.header("x-api-key", key);
            }
            (url, req)
        }
    }
}

/// Asks the provider for its model list and says what came back.
async fn endpoint(
    client: &reqwest::Client,
    check: String,
    provider: &ProviderDef,
    key: Option<(&str, &str)>,
    key_said: &str,
    wanted: &[String],
) -> Check {
    let (url, req) = models_request(client, provider, key.map(|(_, k)| k));
    let sent = tokio::time::timeout(ENDPOINT_TIMEOUT, async {
        let response = req.send().await?;
        let status = response.status();
        let body = response.text().await.unwrap_or_default();
        Ok::<_, reqwest::Error>((status, body))
    })
    .await;
    let (status, body) = match sent {
        Err(_) => {
            return Check::error(
                check,
                format!(
                    "{url} did not answer within {} s",
                    ENDPOINT_TIMEOUT.as_secs()
                ),
                "check the provider's base_url and this machine's network (proxy, firewall)",
            );
        }
        Ok(Err(e)) => {
            return Check::error(
                check,
                format!("{url} is unreachable: {}", transport(&e)),
                "check the provider's base_url in the routing table and this machine's network",
            );
        }
        Ok(Ok(answer)) => answer,
    };
    let said = provider_message(&body);
    match status.as_u16() {
        200..=299 => {
            let ids: Option<Vec<String>> = serde_json::from_str::<serde_json::Value>(&body)
                .ok()
                .and_then(|v| {
                    v.get("data").and_then(|d| d.as_array()).map(|models| {
                        models
                            .iter()
                            .filter_map(|m| m.get("id").and_then(|i| i.as_str()))
                            .map(str::to_owned)
                            .collect()
                    })
                });
            let listed = ids.as_ref().map_or_else(String::new, |ids| {
                format!(", {} model(s) listed", ids.len())
            });
            let missing: Vec<&str> = match &ids {
                Some(ids) if !ids.is_empty() => wanted
                    .iter()
                    .map(String::as_str)
                    .filter(|name| !is_listed(name, ids))
                    .collect(),
                _ => Vec::new(),
            };
            if missing.is_empty() {
                Check::ok(check, format!("{key_said}; {url} answers{listed}"))
            } else {
                Check::warning(
                    check,
                    format!(
                        "{key_said}; {url} answers{listed}, but not {}: requests naming it \
                         will likely fail",
                        missing
                            .iter()
                            .map(|m| format!("`{m}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                    "use a model `name` the server lists (`gate doctor --probe` tries one)",
                )
            }
        }
        401 | 403 => {
            let var = key.map_or("the key", |(v, _)| v);
            Check::error(
                check,
                format!(
                    "authentication failed: {url} refused {var} (HTTP {}){said}",
                    status.as_u16()
                ),
                match key {
                    Some((var, _)) => format!("set {var} to a valid key for this provider"),
                    None => "give the provider an api_key_env in the routing table".to_owned(),
                },
            )
        }
        code => Check::error(
            check,
            format!("{url} answered HTTP {code}{said}"),
            "check the provider's base_url (OpenAI-compatible: up to the version, e.g. \
             https://api.openai.com/v1; Anthropic: the API root)",
        ),
    }
}

/// Whether the server's model list holds `name`: as listed, or (Ollama)
/// with the `:latest` tag a bare name means.
fn is_listed(name: &str, ids: &[String]) -> bool {
    ids.iter()
        .any(|id| id == name || id.strip_suffix(":latest") == Some(name))
}

/// A provider's own words from an error body (`error.message` or
/// `message`), short, after a colon; empty when it gave none.
fn provider_message(body: &str) -> String {
    let value: Option<serde_json::Value> = serde_json::from_str(body).ok();
    let message = value.as_ref().and_then(|v| {
        v.pointer("/error/message")
            .or_else(|| v.get("message"))
            .and_then(|m| m.as_str())
            .map(str::to_owned)
    });
    match message {
        Some(m) if !m.trim().is_empty() => {
            let m: String = m.trim().chars().take(200).collect();
            format!(": {m}")
        }
        _ => String::new(),
    }
}

/// A transport error and its causes, without the URL (already said).
fn transport(e: &reqwest::Error) -> String {
    use std::error::Error as _;
    let mut text = String::new();
    let mut next = e.source();
    while let Some(cause) = next {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            if !text.is_empty() {
                text.push_str(": ");
            }
            text.push_str(&cause_text);
        }
        next = cause.source();
    }
    if text.is_empty() { e.to_string() } else { text }
}

/// The ledger opens as it is and its tip verifies; nothing is created or
/// migrated.
fn check_ledger(ctx: &Context, checks: &mut Vec<Check>) {
    const CHECK: &str = "ledger";
    let location = match attest::ledger_location(ctx) {
        Ok(l) => l,
        Err(e) => {
            checks.push(Check::error(
                CHECK,
                e.to_string(),
                format!(
                    "give {} or [ledger] url a path, sqlite://PATH or postgres://…",
                    names::LEDGER
                ),
            ));
            return;
        }
    };
    if let Location::Sqlite(path) = &location
        && !path.exists()
    {
        checks.push(Check::ok(
            CHECK,
            format!(
                "{} does not exist yet: created on first verify",
                attest::display_path(ctx, path)
            ),
        ));
        return;
    }
    let shown = location.to_string();
    let ledger = match Ledger::open_as_is(location) {
        Ok(l) => l,
        Err(e) => {
            checks.push(Check::error(CHECK, e.to_string(), ledger_fix(&e)));
            return;
        }
    };
    let found = match ledger.schema_version_as_is() {
        Ok(v) => v,
        Err(e) => {
            checks.push(Check::error(CHECK, e.to_string(), ledger_fix(&e)));
            return;
        }
    };
    if found == 0 {
        checks.push(Check::ok(
            CHECK,
            format!("{shown} has no ledger yet: its tables are created on first verify"),
        ));
        return;
    }
    if found > SCHEMA_VERSION {
        checks.push(Check::error(
            CHECK,
            format!(
                "{shown} has schema version {found}, written by a newer gate; this one reads \
                 up to {SCHEMA_VERSION}"
            ),
            "upgrade this gate to the version the other runners use",
        ));
        return;
    }
    if found < SCHEMA_VERSION {
        checks.push(Check::warning(
            CHECK,
            format!(
                "{shown} has schema version {found}; this gate migrates it to {SCHEMA_VERSION} \
                 when it next opens it"
            ),
            "run `gate ledger verify`: it applies the migration and checks every row",
        ));
        return;
    }
    checks.push(match tip(ctx, &ledger) {
        Ok(message) => Check::ok(CHECK, format!("{shown}: {message}")),
        Err((message, fix)) => Check::error(CHECK, format!("{shown}: {message}"), fix),
    });
}

/// What to do about a ledger that does not open.
fn ledger_fix(e: &gate_evidence::ledger::LedgerError) -> String {
    if e.is_unavailable() {
        "check that the ledger's server is up and reachable from here, and its URL".to_owned()
    } else {
        "check the ledger's location and permissions; `gate ledger verify` says more".to_owned()
    }
}

/// Verifies the ledger's last row: its bundle, signature and chain link.
fn tip(ctx: &Context, ledger: &Ledger) -> Result<String, (String, String)> {
    let unavailable = |e: gate_evidence::ledger::LedgerError| {
        (
            e.to_string(),
            "check the ledger is reachable; `gate ledger verify` says more".to_owned(),
        )
    };
    let last = ledger.max_seq().map_err(unavailable)?;
    if last == 0 {
        return Ok("empty, schema current".to_owned());
    }
    let Some(row) = ledger.row_at(last).map_err(unavailable)? else {
        return Err((
            format!("row {last} cannot be read"),
            "run `gate ledger verify`".to_owned(),
        ));
    };
    let previous = if last > 1 {
        ledger.row_at(last - 1).map_err(unavailable)?
    } else {
        None
    };
    let trusted = match attest::trusted_keys(ctx, &[]) {
        Ok(keys) => keys,
        Err(e) => {
            return Err((
                format!("{last} run(s); the tip cannot be verified: {e}"),
                "keep the signer's signing.pub in the state directory's keys/, or set \
                 GATE_SIGNING_KEY"
                    .to_owned(),
            ));
        }
    };
    let store = attest::bundle_store(ctx)
        .map_err(|e| (e.to_string(), format!("fix {}", names::BUNDLE_STORE)))?;
    let problems = ledger::verify_tip(&row, previous.as_ref(), |r| load(&store, r), &trusted);
    if problems.is_empty() {
        Ok(format!(
            "{last} run(s); the tip (row {last}) verifies: bundle, signature, chain link"
        ))
    } else {
        let said: Vec<String> = problems.iter().map(ToString::to_string).collect();
        Err((
            said.join("; "),
            "run `gate ledger verify` to check every row, and find out what changed the ledger \
             or its bundles"
                .to_owned(),
        ))
    }
}

/// A row's bundle bytes as stored, for the tip check.
fn load(store: &BundleStore, row: &LedgerRow) -> Result<Vec<u8>, LoadError> {
    let at =
        BundleRef::parse(&row.entry.bundle_path).map_err(|e| LoadError::Missing(e.to_string()))?;
    store.fetch(&at).map_err(|e| match e {
        StoreError::Missing { .. } => LoadError::Missing("not found in the store".to_owned()),
        other => LoadError::Unavailable(other.to_string()),
    })
}

/// The bundle store is writable (a directory: a temporary file created
/// and removed in it, or in the nearest folder above it that exists) or
/// reachable (a bucket, unless offline). Returns the store.
fn check_store(ctx: &Context, offline: bool, checks: &mut Vec<Check>) -> Option<BundleStore> {
    const CHECK: &str = "bundle-store";
    let store = match attest::bundle_store(ctx) {
        Ok(s) => s,
        Err(e) => {
            checks.push(Check::error(
                CHECK,
                e.to_string(),
                format!(
                    "set {} to s3://bucket/prefix or a directory",
                    names::BUNDLE_STORE
                ),
            ));
            return None;
        }
    };
    checks.push(match store.target() {
        Target::Dir(dir) => writable_dir(ctx, CHECK, dir),
        Target::Ledger => Check::ok(CHECK, "bundles are kept in the ledger with their rows"),
        Target::S3 { .. } if offline => Check::ok(
            CHECK,
            format!("{}: not reached (--offline)", store.target()),
        ),
        Target::S3 { bucket, prefix } => {
            // A name no bundle has (bundles are named by their sha256): a
            // store that answers "missing" is reachable and lets us read.
            let key = if prefix.is_empty() {
                "gate-doctor-probe".to_owned()
            } else {
                format!("{prefix}/gate-doctor-probe")
            };
            let at = BundleRef::Object {
                bucket: bucket.clone(),
                key,
            };
            match store.fetch(&at) {
                Ok(_) | Err(StoreError::Missing { .. }) => Check::ok(
                    CHECK,
                    format!(
                        "{} answers (writes are not tried: the store keeps whatever is written)",
                        store.target()
                    ),
                ),
                Err(e) => Check::error(
                    CHECK,
                    format!("{}: {e}", store.target()),
                    "check the bucket, the AWS_* credentials and endpoint, and the network",
                ),
            }
        }
    });
    Some(store)
}

/// Whether a bundle directory can be written: a temporary file in it (or
/// in its nearest existing ancestor, where the gate would create it),
/// removed at once.
fn writable_dir(ctx: &Context, check: &str, dir: &Path) -> Check {
    let shown = attest::display_path(ctx, dir);
    let Some(existing) = dir.ancestors().find(|d| d.exists()) else {
        return Check::error(
            check,
            format!("{shown}: no folder above it exists"),
            "give the state directory (or GATE_BUNDLE_STORE) a path on this machine",
        );
    };
    if !existing.is_dir() {
        return Check::error(
            check,
            format!(
                "{shown}: {} is not a directory",
                attest::display_path(ctx, existing)
            ),
            "move the file aside, or choose another state directory",
        );
    }
    match tempfile::Builder::new()
        .prefix(".gate-doctor-")
        .tempfile_in(existing)
    {
        Ok(file) => {
            drop(file);
            if existing == dir {
                Check::ok(check, format!("{shown} is writable"))
            } else {
                Check::ok(
                    check,
                    format!(
                        "{shown} does not exist yet: created on first verify ({} is writable)",
                        if existing == ctx.workspace {
                            "the workspace".to_owned()
                        } else {
                            attest::display_path(ctx, existing)
                        }
                    ),
                )
            }
        }
        Err(e) => Check::error(
            check,
            format!(
                "{shown}: cannot write in {}: {e}",
                attest::display_path(ctx, existing)
            ),
            "give this user write access there, or choose another state directory (--state, \
             GATE_STATE_DIR)",
        ),
    }
}

/// The signing key: readable by its owner only, and the state directory's
/// public key its own.
fn check_key(ctx: &Context) -> Check {
    const CHECK: &str = "signing-key";
    let dir = attest::keys_dir(ctx);
    let public_path = dir.join(PUBLIC_KEY_FILE);
    let (key, from) = if let Some(value) = ctx.env.signing_key() {
        match SigningKey::from_pem_or_path(&value) {
            Ok(key) if value.contains("-----BEGIN") => {
                (key, format!("{} (PEM text)", names::SIGNING_KEY))
            }
            Ok(key) => (key, format!("{} = {}", names::SIGNING_KEY, value.trim())),
            Err(e) => {
                return Check::error(
                    CHECK,
                    format!("{}: {e}", names::SIGNING_KEY),
                    "set it to the private key's PEM text or the path of a file only its \
                     owner can read (chmod 600)",
                );
            }
        }
    } else {
        let private = dir.join(PRIVATE_KEY_FILE);
        let shown = attest::display_path(ctx, &private);
        if !private.exists() {
            return if ctx.env.in_ci() {
                Check::error(
                    CHECK,
                    format!("CI is set and there is no signing key ({shown} does not exist)"),
                    format!(
                        "set {} to the private key's PEM (a CI secret), made once with `gate \
                         keys generate`",
                        names::SIGNING_KEY
                    ),
                )
            } else {
                Check::ok(
                    CHECK,
                    format!("{shown} does not exist yet: created on first verify"),
                )
            };
        }
        match SigningKey::load(&private) {
            Ok(key) => (key, shown),
            Err(e) => {
                return Check::error(
                    CHECK,
                    e.to_string(),
                    format!("make it readable by its owner only: chmod 600 {shown}"),
                );
            }
        }
    };
    if public_path.exists() {
        match PublicKey::load(&public_path) {
            Ok(public) if public == *key.public_key() => {}
            Ok(public) => {
                return Check::error(
                    CHECK,
                    format!(
                        "{from} (key id {}) does not match {} (key id {}): bundles it signs \
                         would not verify against that public key",
                        key.keyid(),
                        attest::display_path(ctx, &public_path),
                        public.keyid()
                    ),
                    "put the matching signing.pub beside the key, or use the key it belongs to",
                );
            }
            Err(e) => {
                return Check::error(
                    CHECK,
                    e.to_string(),
                    "replace it with the signer's public key (`gate keys show` prints the key id)",
                );
            }
        }
    }
    let mode = if from.contains("PEM text") {
        ""
    } else {
        ", readable by its owner only"
    };
    Check::ok(CHECK, format!("{from}: key id {}{mode}", key.keyid()))
}

/// Chromium and axe-core, where the spec has `[[page]]`s.
fn check_browser(ctx: &Context, spec: Option<&Spec>) -> Vec<Check> {
    let Some(spec) = spec.filter(|s| !s.pages.is_empty()) else {
        return vec![Check::ok("browser", "not needed: the spec has no [[page]]")];
    };
    let mut out = vec![match config::chromium(&ctx.env) {
        Ok(path) => Check::ok("browser", format!("Chromium at {}", path.display())),
        Err(why) => Check::error(
            "browser",
            why,
            "install Chromium: the spec's [[page]]s are looked at in it",
        ),
    }];
    if spec.policy.builtin_contrast {
        out.push(match config::axe_core(&ctx.workspace, &ctx.env) {
            Ok(path) => Check::ok("axe-core", format!("{}", path.display())),
            Err(why) => Check::error(
                "axe-core",
                why,
                "the page check's contrast rule runs axe-core",
            ),
        });
    }
    out
}

/// The sandbox starts here as a run's would (bubblewrap probed, and the
/// run's own network where the spec asks for it); its scratch folder is
/// removed when the probe ends.
async fn check_sandbox(
    ctx: &Context,
    spec: Option<&Spec>,
    routing: Option<&Routing>,
    store: Option<&BundleStore>,
) -> Vec<Check> {
    const CHECK: &str = "sandbox";
    let floor = match config::sandbox_floor(None, &ctx.env) {
        Ok(floor) => floor,
        Err(e) => {
            return vec![Check::error(
                CHECK,
                e.to_string(),
                "set GATE_SANDBOX to auto, required or off",
            )];
        }
    };
    let default_section = gate_specs::SandboxSection::default();
    let section = spec.map_or(&default_section, |s| &s.sandbox);
    let mode = isolation::effective_mode(floor.0, section.mode);
    let wants_loopback = section.network == Some(SandboxNetwork::Loopback);
    let secret_paths = store.map_or_else(
        || vec![ctx.state_dir.clone()],
        |s| attest::secret_paths(ctx, s),
    );
    let never_env = match (spec, routing, store) {
        (Some(spec), Some(routing), Some(store)) => {
            crate::verify::never_env(ctx, spec, routing, store)
        }
        _ => std::collections::BTreeSet::new(),
    };
    let prepared = Isolation::prepare(isolation::Setup {
        floor: floor.clone(),
        section,
        workspace: &ctx.workspace,
        secret_paths,
        never_env,
        host_env: ctx.env.pairs(),
    })
    .await;
    let (record, tracing) = match prepared {
        Ok(isolation) => (isolation.record(), tracing_check(&isolation)),
        Err(e) => {
            return vec![Check::error(
                CHECK,
                e.to_string(),
                "install bubblewrap (`apt-get install bubblewrap`) and allow unprivileged user \
                 namespaces, or lower the floor (--sandbox, GATE_SANDBOX, [sandbox] mode)",
            )];
        }
    };
    let mut out = vec![tracing];
    if record.kind == "none" {
        let why = record.reason.unwrap_or_default();
        out.push(if mode == SandboxMode::Off {
            Check::warning(
                CHECK,
                format!("runs are not isolated: {why}"),
                "remove mode = \"off\" (or GATE_SANDBOX=off) to isolate what the gate runs",
            )
        } else {
            Check::warning(
                CHECK,
                format!("runs would not be isolated: {why}"),
                "install bubblewrap (`apt-get install bubblewrap`) and allow unprivileged user \
                 namespaces (`sysctl kernel.unprivileged_userns_clone=1`; on Ubuntu also \
                 `kernel.apparmor_restrict_unprivileged_userns=0`)",
            )
        });
        return out;
    }
    out.push(Check::ok(CHECK, "bubblewrap starts a sandbox here"));
    if wants_loopback {
        out.push(if record.network == SandboxNetwork::Loopback.as_str() {
            Check::ok(
                "sandbox.network",
                "[sandbox] network = \"loopback\": a run gets a private network here",
            )
        } else {
            Check::warning(
                "sandbox.network",
                record.reason.unwrap_or_else(|| {
                    "a run would use the host's network, not a private one".to_owned()
                }),
                "install util-linux (`nsenter`) and allow unprivileged user namespaces, or \
                 remove network = \"loopback\"",
            )
        });
    }
    out
}

/// Whether what a run's commands read is traced, as a run would find it:
/// without it a retry carries no command's result.
fn tracing_check(isolation: &Isolation) -> Check {
    const CHECK: &str = "tracing";
    if let Some(fallback) = isolation
        .warnings
        .iter()
        .find(|w| w.contains("eBPF tracer"))
    {
        return Check::warning(
            CHECK,
            fallback.clone(),
            "run the gate as root with clang installed (`apt-get install clang`) on a kernel \
             with BTF (/sys/kernel/btf/vmlinux), or leave GATE_TRACE=ebpf unset",
        );
    }
    if isolation.traced_from_the_kernel() {
        return Check::ok(
            CHECK,
            "the eBPF tracer traces what each sandboxed command reads, strace the \
             rest: a retry carries what nothing it read changed",
        );
    }
    if isolation.traced() {
        return Check::ok(
            CHECK,
            "strace traces what each command reads: a retry carries what nothing it read changed",
        );
    }
    let why = isolation
        .warnings
        .iter()
        .find(|w| w.contains("not traced"))
        .cloned()
        .unwrap_or_else(|| "what the items read is not traced".to_owned());
    Check::warning(
        CHECK,
        why,
        "install strace (`apt-get install strace`) where the workspace's code cannot write, and \
         allow ptrace; unset GATE_TRACE=off",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_providers_own_words_are_kept_short_after_a_colon() {
        let long = "x".repeat(300);
        // (body, what is appended to the message)
        let cases = [
            (
                r#"{"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}}"#,
                ": Incorrect API key provided".to_owned(),
            ),
            (
                r#"{"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}}"#,
                ": invalid x-api-key".to_owned(),
            ),
            (
                r#"{"message": "Unauthorized"}"#,
                ": Unauthorized".to_owned(),
            ),
            (r#"{"error": {"message": "  "}}"#, String::new()),
            ("<html>502 Bad Gateway</html>", String::new()),
            ("", String::new()),
            (
                &format!(r#"{{"message": "{long}"}}"#),
                format!(": {}", "x".repeat(200)),
            ),
        ];
        for (body, want) in cases {
            assert_eq!(provider_message(body), want, "{body}");
        }
    }

    #[test]
    fn each_api_is_asked_at_its_own_model_list_with_its_own_headers() {
        let client = reqwest::Client::new();
        // (api, base_url, url asked, headers sent)
        let cases = [
            (
                Api::Openai,
                "https://api.openai.com/v1",
                "https://api.openai.com/v1/models",
                vec![("authorization", "Bearer k")],
            ),
            (
                Api::Openai,
                "http://127.0.0.1:4000/v1/",
                "http://127.0.0.1:4000/v1/models",
                vec![("authorization", "Bearer k")],
            ),
            (
                Api::Anthropic,
                "https://api.anthropic.com",
                "https://api.anthropic.com/v1/models?limit=1000",
                vec![("x-api-key", "k"), ("anthropic-version", "2023-06-01")],
            ),
        ];
        for (api, base_url, want_url, headers) in cases {
            let provider = ProviderDef {
                api,
                base_url: base_url.to_owned(),
                api_key_env: Some("K".to_owned()),
                disabled: false,
                structured_output: None,
                content: None,
                max_tokens_field: None,
                stream_usage: None,
                concurrency: None,
            };
            let (url, req) = models_request(&client, &provider, Some("k"));
            assert_eq!(url, want_url);
            let req = req.build().unwrap();
            assert_eq!(req.method(), reqwest::Method::GET);
            assert_eq!(req.url().as_str(), want_url);
            for (name, value) in headers {
                assert_eq!(req.headers()[name], value, "{base_url}: {name}");
            }
        }
    }

    #[test]
    fn the_summary_line_counts_errors_and_warnings() {
        let ok = Check::ok("spec", "parses");
        let warning = Check::warning("provider.x", "X is not set", "export X");
        let error = Check::error("ledger", "unreachable", "start it");
        // (checks, the last line)
        let cases = [
            (
                vec![ok.clone()],
                "no problems: a run here has what it needs",
            ),
            (vec![ok.clone(), warning.clone()], "1 warning(s), no errors"),
            (vec![ok, warning, error], "1 error(s), 1 warning(s)"),
        ];
        for (checks, last) in cases {
            let errors = checks.iter().filter(|c| c.level == Level::Error).count();
            let warnings = checks.iter().filter(|c| c.level == Level::Warning).count();
            let text = render(&checks, errors, warnings);
            assert_eq!(text.lines().last(), Some(last), "{text}");
            for c in &checks {
                assert!(
                    text.contains(&format!("{}: {}", c.name, c.message)),
                    "{text}"
                );
                if let Some(fix) = &c.fix {
                    assert!(text.contains(&format!("fix: {fix}")), "{text}");
                }
            }
        }
    }
}
