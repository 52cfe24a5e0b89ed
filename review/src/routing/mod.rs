//! The model routing table: providers, model classes with failback chains
//! and prices, and which class each role uses on each tier.
//!
//! A commented default ships in the binary (`default.toml`); a user's file
//! replaces it as a whole. This table is the only place a model name appears.
//! A routing override ([`patch`], `GATE_ROUTING_URL`) may then disable rows
//! or reorder chains, never add to the table.

pub mod patch;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};

use gate_evidence::Digest;
use gate_specs::SpecError;
use serde::{Deserialize, Serialize};

use crate::provider::shape::{ContentShape, MaxTokensField, StructuredOutput, WireShape};
use crate::role::Role;
use crate::tier::Tier;

/// Which API-key variables hold a key. The caller answers (the gate from
/// its environment, read once at start): nothing here reads a variable.
pub trait KeyLookup {
    /// Whether the variable `name` holds an API key.
    fn key_is_set(&self, name: &str) -> bool;
}

/// The keys as the calls get them (variable → value): set when it holds
/// something besides whitespace.
impl KeyLookup for BTreeMap<String, Option<String>> {
    fn key_is_set(&self, name: &str) -> bool {
        self.get(name)
            .and_then(Option::as_deref)
            .is_some_and(|v| !v.trim().is_empty())
    }
}

/// The built-in table's text.
pub const DEFAULT_TABLE: &str = include_str!("default.toml");

/// Which API a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Api {
    /// OpenAI-compatible chat completions (OpenAI, OpenRouter, vLLM, Ollama, llama.cpp, Workers AI).
    Openai,
    /// Anthropic's Messages API.
    Anthropic,
}

/// `[provider.<name>]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProviderDef {
    /// The API it speaks.
    pub api: Api,
    /// Where it listens: an absolute `http://` or `https://` URL.
    #[serde(deserialize_with = "http_url")]
    #[schemars(url)]
    pub base_url: String,
    /// The environment variable holding the API key; none for a local server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    /// Set by a routing override: never call it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub disabled: bool,
    /// How the answer's JSON schema is asked for (default `json_schema`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_output: Option<StructuredOutput>,
    /// How the user message's content is sent (default `parts`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<ContentShape>,
    /// Which field carries the output-token limit (default `max_completion_tokens`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens_field: Option<MaxTokensField>,
    /// Whether a streamed request asks for usage with `stream_options` (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream_usage: Option<bool>,
    /// How many requests the gate sends to this provider at once (default: no limit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrency: Option<std::num::NonZeroU32>,
}

impl ProviderDef {
    /// The settings a request to it is shaped by, defaults filled in.
    pub fn shape(&self) -> WireShape {
        let default = WireShape::default();
        WireShape {
            structured_output: self.structured_output.unwrap_or(default.structured_output),
            content: self.content.unwrap_or(default.content),
            max_tokens_field: self.max_tokens_field.unwrap_or(default.max_tokens_field),
            stream_usage: self.stream_usage.unwrap_or(default.stream_usage),
        }
    }
}

/// A provider's `base_url` as written, refused where it is read (so with
/// its line and column) unless it is an absolute HTTP(S) URL with a host:
/// anything else could only fail later, at the first request.
fn http_url<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    use serde::de::Error as _;
    let url = String::deserialize(d)?;
    match reqwest::Url::parse(&url) {
        Ok(u) if matches!(u.scheme(), "http" | "https") && u.host_str().is_some() => Ok(url),
        Ok(u) => Err(D::Error::custom(format!(
            "`{url}`: a provider is reached over http:// or https://, not {}:",
            u.scheme()
        ))),
        Err(e) => Err(D::Error::custom(format!(
            "`{url}` is not a URL ({e}); write it as https://host/path"
        ))),
    }
}

/// True for `localhost` and loopback addresses, bracketed or not.
pub fn is_loopback(host: &str) -> bool {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    bare.eq_ignore_ascii_case("localhost")
        || bare
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// What may be wrong with a provider's `base_url` though it parses: plain
/// HTTP off this machine, and the version segment the two APIs place
/// differently (the OpenAI client appends `/chat/completions` to a URL
/// that ends in the version, the Anthropic one `/v1/messages` to the root).
fn url_warnings(p: &ProviderDef) -> Vec<String> {
    let Ok(url) = reqwest::Url::parse(&p.base_url) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if url.scheme() == "http" && !url.host_str().is_some_and(is_loopback) {
        out.push(
            "plain HTTP to another machine: prompts, code and any API key travel unencrypted"
                .to_owned(),
        );
    }
    let path = url.path().trim_end_matches('/');
    match p.api {
        Api::Anthropic if path.ends_with("/v1") => out.push(format!(
            "requests would go to {path}/v1/messages: give the API root \
             (https://api.anthropic.com), without /v1"
        )),
        Api::Openai if url.host_str() == Some("api.openai.com") && path != "/v1" => {
            out.push(format!(
                "requests would go to {path}/chat/completions: OpenAI's base_url is \
                 https://api.openai.com/v1"
            ));
        }
        _ => {}
    }
    out
}

/// `price = { … }`: USD per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PriceDef {
    /// Uncached input.
    pub input: f64,
    /// Cached input (defaults to `input`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_input: Option<f64>,
    /// Cache writes (defaults to `input`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write: Option<f64>,
    /// Output.
    pub output: f64,
}

/// `[model.<class>]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ModelClass {
    /// A key of `[provider]`.
    pub provider: String,
    /// The provider's name for the model.
    pub name: String,
    /// The failback chain: other classes, tried only on retryable errors.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fallback: Vec<String>,
    /// What it costs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub price: Option<PriceDef>,
    /// Output limit per reply (default 8192).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u32>,
    /// A longer silence allowance for reasoning models that stream nothing while they think.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inactivity_timeout_s: Option<u64>,
    /// Whether to stream replies (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<bool>,
    /// Set by a routing override: never call it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub disabled: bool,
}

/// A routing table as written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "gate routing table (routing.toml)")]
pub struct RoutingTable {
    /// `[provider.<name>]`.
    #[serde(default, rename = "provider")]
    pub providers: BTreeMap<String, ProviderDef>,
    /// `[model.<class>]`.
    #[serde(default, rename = "model")]
    pub models: BTreeMap<String, ModelClass>,
    /// `[route]`: `"role.tier" = "class"`.
    #[serde(default, rename = "route")]
    pub routes: BTreeMap<String, String>,
    /// `[prompts]`: `role = "path"` replacing a built-in prompt (relative to this file).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub prompts: BTreeMap<String, String>,
}

/// Where the table in effect came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// The default compiled into the binary.
    Builtin,
    /// A user's file.
    File(PathBuf),
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Builtin => f.write_str("built-in"),
            Self::File(p) => write!(f, "{}", p.display()),
        }
    }
}

/// The table in effect, with where it came from.
#[derive(Debug, Clone)]
pub struct Routing {
    /// The table.
    pub table: RoutingTable,
    /// Its origin.
    pub origin: Origin,
    /// Rows an override changed: (row, what it did).
    pub overridden: Vec<(String, String)>,
}

/// One step of a failback chain, resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct ChainModel {
    /// The class name.
    pub class: String,
    /// The class.
    pub model: ModelClass,
    /// Its provider's name.
    pub provider_name: String,
    /// Its provider.
    pub provider: ProviderDef,
}

/// A problem `gate routing check` reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The row it is about (`route.quality.full`, `model.cheap`, …).
    pub row: String,
    /// What is wrong.
    pub message: String,
    /// Whether it makes the table unusable (not merely unconfigured here).
    pub fatal: bool,
}

/// A routing file that cannot be read or parsed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RoutingError {
    /// The file cannot be read.
    #[error("cannot read routing table {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The file does not parse.
    #[error(transparent)]
    Parse(#[from] SpecError),
}

impl Routing {
    /// The built-in default.
    pub fn builtin() -> Self {
        let table = gate_specs::from_toml_str(DEFAULT_TABLE, Path::new("routing.toml (built-in)"))
            // The default is compiled in and covered by a test.
            .unwrap_or_default();
        Self {
            table,
            origin: Origin::Builtin,
            overridden: Vec::new(),
        }
    }

    /// A table with no provider: nothing can be asked.
    pub fn none() -> Self {
        Self {
            table: RoutingTable::default(),
            origin: Origin::Builtin,
            overridden: Vec::new(),
        }
    }

    /// Reads a user's table.
    pub fn load(path: &Path) -> Result<Self, RoutingError> {
        let bytes =
            gate_specs::read_bounded(path, gate_specs::TEXT_MAX_BYTES).map_err(|source| {
                RoutingError::Read {
                    path: path.to_path_buf(),
                    source,
                }
            })?;
        Ok(Self {
            table: gate_specs::from_toml_str(gate_specs::text_of(&bytes, path)?, path)?,
            origin: Origin::File(path.to_path_buf()),
            overridden: Vec::new(),
        })
    }

    /// `--routing FILE`, else `routing.toml` beside the spec, else the built-in table.
    pub fn resolve(flag: Option<&Path>, spec_dir: &Path) -> Result<Self, RoutingError> {
        if let Some(path) = flag {
            return Self::load(path);
        }
        let beside = spec_dir.join("routing.toml");
        if beside.is_file() {
            return Self::load(&beside);
        }
        Ok(Self::builtin())
    }

    /// blake3 over the effective table's canonical JSON.
    pub fn digest(&self) -> Digest {
        Digest::of(&serde_json::to_vec(&self.table).unwrap_or_default())
    }

    /// The class routed for `role` on `tier`.
    pub fn route(&self, role: Role, tier: Tier) -> Option<&str> {
        self.route_key(role, tier)
            .and_then(|key| self.table.routes.get(&key))
            .map(String::as_str)
    }

    /// The `[route]` key that routes `role` on `tier`, the most specific
    /// first: `role.tier`, `role.*`, `*.tier`, `*`. A wildcard routes only
    /// roles the tier uses (the coordinator is deterministic below `full`).
    pub fn route_key(&self, role: Role, tier: Tier) -> Option<String> {
        let exact = format!("{role}.{tier}");
        if self.table.routes.contains_key(&exact) {
            return Some(exact);
        }
        if !Role::for_tier(tier).contains(&role) {
            return None;
        }
        [format!("{role}.*"), format!("*.{tier}"), "*".to_owned()]
            .into_iter()
            .find(|key| self.table.routes.contains_key(key))
    }

    /// The failback chain for `role` on `tier`: the routed class, then its
    /// fallbacks depth-first (each class once), skipping classes or
    /// providers that do not exist or are disabled.
    pub fn chain(&self, role: Role, tier: Tier) -> Vec<ChainModel> {
        let Some(first) = self.route(role, tier) else {
            return Vec::new();
        };
        let mut seen = BTreeSet::new();
        let mut out = Vec::new();
        self.walk(first, &mut seen, &mut out);
        out
    }

    fn walk(&self, class: &str, seen: &mut BTreeSet<String>, out: &mut Vec<ChainModel>) {
        if !seen.insert(class.to_owned()) {
            return;
        }
        let Some(model) = self.table.models.get(class) else {
            return;
        };
        if let Some(provider) = self.table.providers.get(&model.provider)
            && !model.disabled
            && !provider.disabled
        {
            out.push(ChainModel {
                class: class.to_owned(),
                model: model.clone(),
                provider_name: model.provider.clone(),
                provider: provider.clone(),
            });
        }
        for next in &model.fallback {
            self.walk(next, seen, out);
        }
    }

    /// The environment variables the table names for API keys (their values
    /// are redacted from everything captured).
    pub fn key_variables(&self) -> Vec<String> {
        self.table
            .providers
            .values()
            .filter_map(|p| p.api_key_env.clone())
            .collect()
    }

    /// Providers that can be called here: not disabled, and their key
    /// variable set in `env` (or none needed).
    pub fn configured_providers(&self, env: &dyn KeyLookup) -> BTreeSet<String> {
        self.table
            .providers
            .iter()
            .filter(|(_, p)| {
                !p.disabled && p.api_key_env.as_deref().is_none_or(|k| env.key_is_set(k))
            })
            .map(|(name, _)| name.clone())
            .collect()
    }

    /// Everything wrong with the table, without calling any model; `env`
    /// says which key variables are set.
    pub fn check(&self, env: &dyn KeyLookup) -> Vec<Problem> {
        let t = &self.table;
        let mut problems = Vec::new();
        let mut fatal = |row: String, message: String| {
            problems.push(Problem {
                row,
                message,
                fatal: true,
            });
        };
        for (key, class) in &t.routes {
            let row = format!("route.{key}");
            match key.split_once('.') {
                Some(("*", "*")) => {
                    fatal(row.clone(), "write `*` for every role and tier".to_owned());
                }
                Some((role, tier)) => {
                    if role != "*" && role.parse::<Role>().is_err() {
                        fatal(row.clone(), format!("unknown role `{role}`"));
                    }
                    if tier != "*" && tier.parse::<Tier>().is_err() {
                        fatal(row.clone(), format!("unknown tier `{tier}`"));
                    }
                }
                None if key == "*" => {}
                None => fatal(
                    row.clone(),
                    "a route key is `role.tier`, `role.*`, `*.tier` or `*`".to_owned(),
                ),
            }
            if !t.models.contains_key(class) {
                fatal(row, format!("unknown model class `{class}`"));
            }
        }
        for (name, model) in &t.models {
            let row = format!("model.{name}");
            if !t.providers.contains_key(&model.provider) {
                fatal(
                    row.clone(),
                    format!("unknown provider `{}`", model.provider),
                );
            }
            for next in &model.fallback {
                if !t.models.contains_key(next) {
                    fatal(
                        row.clone(),
                        format!("fallback names unknown class `{next}`"),
                    );
                }
            }
            if let Some(cycle) = self.fallback_cycle(name) {
                fatal(row, format!("fallback cycle: {}", cycle.join(" -> ")));
            }
        }
        for role in t.prompts.keys() {
            if role.parse::<Role>().is_err() {
                fatal(format!("prompts.{role}"), format!("unknown role `{role}`"));
            }
        }
        for tier in [Tier::Trivial, Tier::Light, Tier::Full] {
            for role in Role::for_tier(tier) {
                // The coordinator is deterministic below the full tier.
                if self.route(*role, tier).is_none() {
                    fatal(
                        format!("route.{role}.{tier}"),
                        format!("missing: the {tier} tier can use the {role} role"),
                    );
                }
            }
        }
        for (name, p) in &t.providers {
            if p.api == Api::Anthropic {
                for (set, setting) in [
                    (p.structured_output.is_some(), "structured_output"),
                    (p.content.is_some(), "content"),
                    (p.max_tokens_field.is_some(), "max_tokens_field"),
                    (p.stream_usage.is_some(), "stream_usage"),
                ] {
                    if set {
                        problems.push(Problem {
                            row: format!("provider.{name}"),
                            message: format!(
                                "`{setting}` shapes OpenAI-compatible requests: the Messages API \
                                 has one shape (remove it, or use api = \"openai\")"
                            ),
                            fatal: true,
                        });
                    }
                }
            }
            for message in url_warnings(p) {
                problems.push(Problem {
                    row: format!("provider.{name}"),
                    message,
                    fatal: false,
                });
            }
            if let Some(var) = &p.api_key_env
                && !env.key_is_set(var)
            {
                problems.push(Problem {
                    row: format!("provider.{name}"),
                    message: format!("{var} is not set: this provider will not be called here"),
                    fatal: false,
                });
            }
        }
        problems.dedup();
        problems
    }

    /// A fallback cycle starting at `class`, as the path closing on itself.
    fn fallback_cycle(&self, class: &str) -> Option<Vec<String>> {
        fn dfs(
            t: &RoutingTable,
            at: &str,
            start: &str,
            path: &mut Vec<String>,
            seen: &mut BTreeSet<String>,
        ) -> bool {
            let Some(model) = t.models.get(at) else {
                return false;
            };
            for next in &model.fallback {
                if next == start {
                    path.push(next.clone());
                    return true;
                }
                if seen.insert(next.clone()) {
                    path.push(next.clone());
                    if dfs(t, next, start, path, seen) {
                        return true;
                    }
                    path.pop();
                }
            }
            false
        }
        let mut path = vec![class.to_owned()];
        let mut seen = BTreeSet::new();
        dfs(&self.table, class, class, &mut path, &mut seen).then_some(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_keys() -> BTreeMap<String, Option<String>> {
        BTreeMap::new()
    }

    fn table(text: &str) -> Routing {
        Routing {
            table: gate_specs::from_toml_str(text, Path::new("routing.toml")).unwrap(),
            origin: Origin::File("routing.toml".into()),
            overridden: Vec::new(),
        }
    }

    #[test]
    fn builtin_table_is_complete() {
        let r = Routing::builtin();
        assert!(!r.table.models.is_empty());
        let keys: BTreeMap<String, Option<String>> = r
            .key_variables()
            .into_iter()
            .map(|k| (k, Some("sk-set".to_owned())))
            .collect();
        let fatal: Vec<_> = r.check(&keys).into_iter().filter(|p| p.fatal).collect();
        assert!(fatal.is_empty(), "{fatal:?}");
        // With no keys set, nothing is configured: review cannot run.
        assert!(r.configured_providers(&no_keys()).is_empty());
    }

    #[test]
    fn tier_panel_model_table_over_the_default() {
        let r = Routing::builtin();
        // role, tier → routed class and its chain of classes.
        let cases: &[(Role, Tier, &[&str])] = &[
            (Role::Quality, Tier::Trivial, &["cheap", "cheap-openai"]),
            (Role::Quality, Tier::Light, &["standard", "standard-openai"]),
            (
                Role::Quality,
                Tier::Full,
                &["strong", "standard", "standard-openai"],
            ),
            (
                Role::Security,
                Tier::Light,
                &["standard", "standard-openai"],
            ),
            (
                Role::Integration,
                Tier::Full,
                &["strongest", "standard-openai"],
            ),
            (
                Role::Coordinator,
                Tier::Full,
                &["strongest", "standard-openai"],
            ),
            (Role::Judge, Tier::Trivial, &["cheap", "cheap-openai"]),
            (Role::Coordinator, Tier::Light, &[]),
            (Role::Integration, Tier::Trivial, &[]),
        ];
        for (role, tier, want) in cases {
            let chain: Vec<String> = r.chain(*role, *tier).into_iter().map(|m| m.class).collect();
            assert_eq!(chain, *want, "{role}.{tier}");
        }
    }

    #[test]
    fn check_reports_each_problem() {
        let r = table(
            r#"
[provider.local]
api = "openai"
base_url = "http://127.0.0.1:1/v1"
[provider.keyed]
api = "anthropic"
base_url = "https://example.invalid"
api_key_env = "NO_SUCH_KEY_VAR"
[provider.lan]
api = "openai"
base_url = "http://10.0.0.7:8000/v1"
[provider.claude]
api = "anthropic"
base_url = "https://api.anthropic.com/v1/"
[provider.gpt]
api = "openai"
base_url = "https://api.openai.com"
[model.a]
provider = "local"
name = "m-a"
fallback = ["b"]
[model.b]
provider = "local"
name = "m-b"
fallback = ["a", "ghost"]
[model.c]
provider = "nowhere"
name = "m-c"
[route]
"quality.trivial" = "a"
"judge.trivial" = "zzz"
"wizard.full" = "a"
"quality.huge" = "a"
"#,
        );
        let problems = r.check(&no_keys());
        let text: Vec<String> = problems
            .iter()
            .map(|p| format!("{}: {}", p.row, p.message))
            .collect();
        for want in [
            "route.judge.trivial: unknown model class `zzz`",
            "route.wizard.full: unknown role `wizard`",
            "route.quality.huge: unknown tier `huge`",
            "model.b: fallback names unknown class `ghost`",
            "model.a: fallback cycle: a -> b -> a",
            "model.c: unknown provider `nowhere`",
            "route.rules.trivial: missing: the trivial tier can use the rules role",
            "route.coordinator.full: missing: the full tier can use the coordinator role",
            "provider.keyed: NO_SUCH_KEY_VAR is not set: this provider will not be called here",
            "provider.lan: plain HTTP to another machine: prompts, code and any API key travel unencrypted",
            "provider.claude: requests would go to /v1/v1/messages: give the API root (https://api.anthropic.com), without /v1",
            "provider.gpt: requests would go to /chat/completions: OpenAI's base_url is https://api.openai.com/v1",
        ] {
            assert!(
                text.iter().any(|t| t == want),
                "missing {want:?} in {text:#?}"
            );
        }
        assert!(!problems.iter().any(|p| p.row == "provider.local"));
    }

    #[test]
    fn a_base_url_that_is_no_http_url_is_refused_where_written() {
        let cases = [
            ("not a url", "is not a URL"),
            ("/v1", "is not a URL"),
            ("ftp://models.internal/v1", "not ftp:"),
            ("unix:/run/llm.sock", "not unix:"),
        ];
        for (url, says) in cases {
            let text = format!("[provider.x]\napi = \"openai\"\nbase_url = \"{url}\"\n");
            let err = gate_specs::from_toml_str::<RoutingTable>(&text, Path::new("routing.toml"))
                .unwrap_err();
            assert_eq!((err.line, err.column), (3, 12), "{url}: {err}");
            assert!(err.to_string().contains(says), "{url}: {err}");
        }
    }

    #[test]
    fn unknown_keys_are_located() {
        let err = gate_specs::from_toml_str::<RoutingTable>(
            "[model.a]\nprovider = \"p\"\nname = \"n\"\ncolour = 1\n",
            Path::new("routing.toml"),
        )
        .unwrap_err();
        assert_eq!((err.line, err.column), (4, 1), "{err}");
    }

    #[test]
    fn wildcard_routes_resolve_most_specific_first() {
        let r = table(
            r#"
[provider.local]
api = "openai"
base_url = "http://127.0.0.1:1/v1"
[model.any]
provider = "local"
name = "m-any"
[model.q]
provider = "local"
name = "m-q"
[model.full]
provider = "local"
name = "m-full"
[model.exact]
provider = "local"
name = "m-exact"
[route]
"*" = "any"
"quality.*" = "q"
"*.full" = "full"
"quality.full" = "exact"
"#,
        );
        let cases = [
            (
                Role::Quality,
                Tier::Full,
                Some("quality.full"),
                Some("exact"),
            ),
            (Role::Quality, Tier::Light, Some("quality.*"), Some("q")),
            (Role::Security, Tier::Full, Some("*.full"), Some("full")),
            (Role::Security, Tier::Light, Some("*"), Some("any")),
            (Role::Judge, Tier::Trivial, Some("*"), Some("any")),
            // A wildcard routes only the roles a tier uses.
            (Role::Coordinator, Tier::Light, None, None),
            (Role::Integration, Tier::Trivial, None, None),
            (Role::Coordinator, Tier::Full, Some("*.full"), Some("full")),
        ];
        for (role, tier, key, class) in cases {
            assert_eq!(r.route_key(role, tier).as_deref(), key, "{role}.{tier}");
            assert_eq!(r.route(role, tier), class, "{role}.{tier}");
        }
        // One line routes every role: nothing is missing.
        assert!(r.check(&no_keys()).iter().all(|p| !p.fatal));
    }

    #[test]
    fn route_keys_and_request_settings_are_checked() {
        let r = table(
            r#"
[provider.claude]
api = "anthropic"
base_url = "https://api.anthropic.com"
content = "text"
concurrency = 2
[model.a]
provider = "claude"
name = "m"
[route]
"*" = "a"
"*.*" = "a"
"wizard.*" = "a"
"*.huge" = "a"
"quality" = "a"
"#,
        );
        let text: Vec<String> = r
            .check(&no_keys())
            .iter()
            .filter(|p| p.fatal)
            .map(|p| format!("{}: {}", p.row, p.message))
            .collect();
        for want in [
            "route.*.*: write `*` for every role and tier",
            "route.wizard.*: unknown role `wizard`",
            "route.*.huge: unknown tier `huge`",
            "route.quality: a route key is `role.tier`, `role.*`, `*.tier` or `*`",
            "provider.claude: `content` shapes OpenAI-compatible requests: the Messages API \
             has one shape (remove it, or use api = \"openai\")",
        ] {
            assert!(
                text.iter().any(|t| t == want),
                "missing {want:?} in {text:#?}"
            );
        }
        assert_eq!(text.len(), 5, "{text:#?}");
        // A concurrency of 0 is refused where it is written.
        let err = gate_specs::from_toml_str::<RoutingTable>(
            "[provider.x]\napi = \"openai\"\nbase_url = \"http://h/v1\"\nconcurrency = 0\n",
            Path::new("routing.toml"),
        )
        .unwrap_err();
        assert_eq!((err.line, err.column), (4, 15), "{err}");
    }

    #[test]
    fn disabled_models_leave_the_chain() {
        let mut r = Routing::builtin();
        r.table.models.get_mut("standard").unwrap().disabled = true;
        let chain: Vec<String> = r
            .chain(Role::Quality, Tier::Light)
            .into_iter()
            .map(|m| m.class)
            .collect();
        assert_eq!(chain, ["standard-openai"]);
        r.table.providers.get_mut("openai").unwrap().disabled = true;
        assert!(r.chain(Role::Quality, Tier::Light).is_empty());
    }
}
