//! The routing override: `GATE_ROUTING_URL` names a small JSON patch, fetched
//! at start-up, that an operator uses to steer every runner at once — take a
//! provider or a model out during an outage, or reorder a failback chain.
//!
//! ```json
//! {
//!   "format_version": 1,
//!   "disable_providers": ["openai"],
//!   "disable_models": ["strong"],
//!   "chains": {"standard": ["standard-openai"], "strong": ["standard-openai", "standard"]}
//! }
//! ```
//!
//! Every key is optional; any other key refuses the patch. `disable_*` name
//! providers and model classes (the keys of `[provider.*]` and `[model.*]`);
//! `chains` replaces a class's `fallback` list with classes the local table
//! already has. A patch can only take away or reorder: it never adds a
//! provider, a base URL, a key variable or a model, and never re-enables
//! anything. A patch naming anything the local table lacks, or making a
//! fallback cycle, is refused whole.
//!
//! It is applied last, over `--routing`; fetched with a 2 s bound, over HTTPS
//! only (plain HTTP only to a loopback address), without following
//! redirects; skipped with `--offline`. When it cannot be fetched or
//! applied, the local table is used and the run says so.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{Routing, is_loopback};

/// What became of an override, for the run record and the bundle.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct OverrideStatus {
    /// Where it came from (without query or credentials).
    pub url: String,
    /// `applied`, `failed`, or `skipped` (`--offline`).
    pub status: String,
    /// Why it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The rows it changed, as `row: change`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changed: Vec<String>,
}

/// How long the fetch may take, all told.
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(2);
/// The largest patch read.
pub const MAX_BYTES: usize = 64 * 1024;
/// The patch format this gate reads.
pub const FORMAT_VERSION: u32 = 1;

/// A routing patch, as served.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Patch {
    /// [`FORMAT_VERSION`] when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format_version: Option<u32>,
    /// Providers never to call.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub disable_providers: Vec<String>,
    /// Model classes never to call.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub disable_models: Vec<String>,
    /// Class → its new failback chain (classes of the local table).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub chains: BTreeMap<String, Vec<String>>,
}

/// Why an override was not applied.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PatchError {
    /// Not a URL at all.
    #[error("GATE_ROUTING_URL is not a URL")]
    BadUrl,
    /// Plain HTTP to somewhere other than this machine, or another scheme.
    #[error("only https:// is fetched (plain http:// only from a loopback address), not {0}")]
    Insecure(String),
    /// The request failed (connection, timeout, TLS).
    #[error("fetching it failed: {0}")]
    Fetch(String),
    /// The server answered with something other than 2xx (redirects are not followed).
    #[error("the server answered HTTP {0}")]
    Status(u16),
    /// The body is over [`MAX_BYTES`].
    #[error("the patch is larger than {MAX_BYTES} bytes")]
    TooLarge,
    /// The body is not a patch.
    #[error("the patch does not parse: {0}")]
    Parse(String),
    /// The patch names what the local table lacks, or breaks it.
    #[error("the patch {0}")]
    Invalid(String),
}

impl Patch {
    /// Parses a patch (JSON; unknown keys refused).
    pub fn parse(bytes: &[u8]) -> Result<Self, PatchError> {
        serde_json::from_slice(bytes).map_err(|e| PatchError::Parse(e.to_string()))
    }

    /// Applies the patch to `routing`, or leaves it untouched and says why.
    /// The changed rows are added to `routing.overridden`.
    pub fn apply(&self, routing: &mut Routing) -> Result<(), PatchError> {
        let invalid = |m: String| Err(PatchError::Invalid(m));
        if let Some(v) = self.format_version
            && v != FORMAT_VERSION
        {
            return invalid(format!(
                "has format_version {v}; this gate reads {FORMAT_VERSION}"
            ));
        }
        let mut table = routing.table.clone();
        let mut changes: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for name in &self.disable_providers {
            let Some(p) = table.providers.get_mut(name) else {
                return invalid(format!(
                    "disables provider `{name}`, which the local table does not have"
                ));
            };
            p.disabled = true;
            changes
                .entry(format!("provider.{name}"))
                .or_default()
                .push("disabled".to_owned());
        }
        for class in &self.disable_models {
            let Some(m) = table.models.get_mut(class) else {
                return invalid(format!(
                    "disables model `{class}`, which the local table does not have"
                ));
            };
            m.disabled = true;
            changes
                .entry(format!("model.{class}"))
                .or_default()
                .push("disabled".to_owned());
        }
        for (class, chain) in &self.chains {
            if !table.models.contains_key(class) {
                return invalid(format!(
                    "sets the chain of model `{class}`, which the local table does not have"
                ));
            }
            let mut seen = BTreeSet::new();
            for next in chain {
                if !table.models.contains_key(next) {
                    return invalid(format!(
                        "puts `{next}` in the chain of `{class}`; the local table has no such model"
                    ));
                }
                if next == class || !seen.insert(next) {
                    return invalid(format!("names `{next}` twice in the chain of `{class}`"));
                }
            }
            if let Some(m) = table.models.get_mut(class) {
                m.fallback.clone_from(chain);
            }
            changes
                .entry(format!("model.{class}"))
                .or_default()
                .push(format!("fallback = [{}]", chain.join(", ")));
        }
        let patched = Routing {
            table,
            origin: routing.origin.clone(),
            overridden: Vec::new(),
        };
        for class in self.chains.keys() {
            if let Some(cycle) = patched.fallback_cycle(class) {
                return invalid(format!("makes a fallback cycle: {}", cycle.join(" -> ")));
            }
        }
        routing.table = patched.table;
        for (row, what) in changes {
            routing.overridden.push((row, what.join("; ")));
        }
        Ok(())
    }
}

/// The URL as shown in output and records: no query, fragment or credentials.
pub fn display_url(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(mut u) => {
            u.set_query(None);
            u.set_fragment(None);
            let _ = u.set_username("");
            let _ = u.set_password(None);
            u.to_string()
        }
        Err(_) => "(not a URL)".to_owned(),
    }
}

/// `url` if the gate may fetch it: HTTPS, or plain HTTP to a loopback address.
pub fn check_url(url: &str) -> Result<reqwest::Url, PatchError> {
    let parsed = reqwest::Url::parse(url).map_err(|_| PatchError::BadUrl)?;
    let loopback = parsed.host_str().is_some_and(is_loopback);
    match parsed.scheme() {
        "https" => Ok(parsed),
        "http" if loopback => Ok(parsed),
        _ => Err(PatchError::Insecure(display_url(url))),
    }
}

/// Fetches the patch at `url` within [`FETCH_TIMEOUT`].
pub async fn fetch(url: &str) -> Result<Patch, PatchError> {
    let url = check_url(url)?;
    let client = reqwest::Client::builder()
        .use_rustls_tls()
        .timeout(FETCH_TIMEOUT)
        .connect_timeout(FETCH_TIMEOUT)
        .redirect(reqwest::redirect::Policy::none())
        .user_agent(concat!("gate/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| PatchError::Fetch(e.to_string()))?;
    let read = async {
        let mut response = client
            .get(url)
            .header(reqwest::header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(|e| PatchError::Fetch(without_url(e)))?;
        if !response.status().is_success() {
            return Err(PatchError::Status(response.status().as_u16()));
        }
        let mut body = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| PatchError::Fetch(without_url(e)))?
        {
            body.extend_from_slice(&chunk);
            if body.len() > MAX_BYTES {
                return Err(PatchError::TooLarge);
            }
        }
        Patch::parse(&body)
    };
    // The client's timeout bounds each request; this bounds the whole read.
    tokio::time::timeout(FETCH_TIMEOUT, read)
        .await
        .unwrap_or_else(|_| {
            Err(PatchError::Fetch(format!(
                "no patch within {FETCH_TIMEOUT:?}"
            )))
        })
}

/// A client error without the URL (it may carry a token in its query).
fn without_url(e: reqwest::Error) -> String {
    use std::error::Error as _;
    let e = e.without_url();
    let mut text = e.to_string();
    let mut next = e.source();
    while let Some(cause) = next {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        next = cause.source();
    }
    text
}

/// Fetches and applies the override at `url` to `routing`, unless
/// `offline`. Whatever happens, says what happened; on any failure
/// `routing` is the local table, untouched.
pub async fn apply_override(routing: &mut Routing, url: &str, offline: bool) -> OverrideStatus {
    let shown = display_url(url);
    let status = |status: &str, error: Option<String>, changed: Vec<String>| OverrideStatus {
        url: shown.clone(),
        status: status.to_owned(),
        error,
        changed,
    };
    if offline {
        return status(
            "skipped",
            Some("offline (--offline)".to_owned()),
            Vec::new(),
        );
    }
    let applied = match fetch(url).await {
        Ok(patch) => patch.apply(routing),
        Err(e) => Err(e),
    };
    match applied {
        Ok(()) => {
            let changed = routing
                .overridden
                .iter()
                .map(|(row, what)| format!("{row}: {what}"))
                .collect();
            status("applied", None, changed)
        }
        Err(e) => status("failed", Some(e.to_string()), Vec::new()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::role::Role;
    use crate::tier::Tier;

    fn chain(r: &Routing, role: Role, tier: Tier) -> Vec<String> {
        r.chain(role, tier).into_iter().map(|m| m.class).collect()
    }

    #[test]
    fn patches_disable_and_reorder_or_are_refused_whole() {
        // patch, then: Ok(quality.full chain, rows changed) or Err(part of the message)
        type Want = Result<(&'static [&'static str], &'static [&'static str]), &'static str>;
        let cases: &[(&str, Want)] = &[
            ("{}", Ok((&["strong", "standard", "standard-openai"], &[]))),
            (
                r#"{"disable_models": ["strong"]}"#,
                Ok((
                    &["standard", "standard-openai"],
                    &["model.strong: disabled"],
                )),
            ),
            (
                r#"{"disable_providers": ["anthropic"]}"#,
                Ok((&["standard-openai"], &["provider.anthropic: disabled"])),
            ),
            (
                r#"{"format_version": 1, "chains": {"strong": ["standard-openai", "standard"]}}"#,
                Ok((
                    &["strong", "standard-openai", "standard"],
                    &["model.strong: fallback = [standard-openai, standard]"],
                )),
            ),
            (
                r#"{"disable_models": ["strong"], "chains": {"strong": []}}"#,
                Ok((&[], &["model.strong: disabled; fallback = []"])),
            ),
            (r#"{"disable_models": ["ghost"]}"#, Err("does not have")),
            (r#"{"disable_providers": ["azure"]}"#, Err("does not have")),
            (r#"{"chains": {"strong": ["gpt-9"]}}"#, Err("no such model")),
            (r#"{"chains": {"ghost": []}}"#, Err("does not have")),
            (r#"{"chains": {"strong": ["strong"]}}"#, Err("twice")),
            (
                r#"{"chains": {"standard": ["strong"]}}"#,
                Err("fallback cycle"),
            ),
            (r#"{"format_version": 2}"#, Err("format_version 2")),
            (
                r#"{"providers": {"evil": {"base_url": "https://evil.example"}}}"#,
                Err("unknown field"),
            ),
            (
                r#"{"disable_models": ["strong"], "base_url": "https://evil.example"}"#,
                Err("unknown field"),
            ),
            ("not json", Err("does not parse")),
        ];
        for (text, want) in cases {
            let mut routing = Routing::builtin();
            let before = routing.digest();
            let got = Patch::parse(text.as_bytes()).and_then(|p| p.apply(&mut routing));
            match (got, want) {
                (Ok(()), Ok((chain_want, rows))) => {
                    assert_eq!(
                        chain(&routing, Role::Quality, Tier::Full),
                        *chain_want,
                        "{text}"
                    );
                    let got_rows: Vec<String> = routing
                        .overridden
                        .iter()
                        .map(|(r, w)| format!("{r}: {w}"))
                        .collect();
                    assert_eq!(got_rows, *rows, "{text}");
                    assert_eq!(routing.digest() == before, rows.is_empty(), "{text}");
                }
                (Err(e), Err(needle)) => {
                    assert!(e.to_string().contains(needle), "{text}: {e}");
                    assert_eq!(
                        routing.digest(),
                        before,
                        "{text}: a refused patch changed the table"
                    );
                    assert!(routing.overridden.is_empty());
                }
                (got, want) => panic!("{text}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn only_https_or_loopback_http_is_fetched() {
        let cases = [
            ("https://routing.example/patch.json", true),
            ("http://127.0.0.1:8080/patch", true),
            ("http://127.8.9.1/patch", true),
            ("http://[::1]:9/patch", true),
            ("http://localhost:9/patch", true),
            ("http://routing.example/patch.json", false),
            ("http://10.0.0.1/patch", false),
            ("http://127.0.0.1.evil.example/patch", false),
            ("ftp://127.0.0.1/patch", false),
            ("file:///etc/passwd", false),
        ];
        for (url, ok) in cases {
            assert_eq!(check_url(url).is_ok(), ok, "{url}");
        }
        assert!(matches!(check_url("not a url"), Err(PatchError::BadUrl)));
        assert_eq!(
            display_url("https://user:pw@routing.example/p.json?token=s3cret#x"),
            "https://routing.example/p.json"
        );
    }

    #[tokio::test]
    async fn overrides_are_fetched_from_loopback_and_failures_leave_the_local_table() {
        use gate_tests::model_server::{Matcher, ModelServer, Reply};
        let server = ModelServer::start();
        server
            .script(
                Matcher::any().path("/patch"),
                vec![Reply::json(
                    200,
                    serde_json::json!({"disable_models": ["strong"]}),
                )],
            )
            .script(Matcher::any().path("/slow"), vec![Reply::hang()])
            .script(
                Matcher::any().path("/bad"),
                vec![Reply::json(200, serde_json::json!({"add_models": ["x"]}))],
            );
        let cases = [
            ("/patch", "applied", None),
            ("/missing", "failed", Some("HTTP 404")),
            ("/bad", "failed", Some("unknown field")),
            ("/slow", "failed", Some("fetching it failed")),
        ];
        for (path, want, error) in cases {
            let mut routing = Routing::builtin();
            let started = std::time::Instant::now();
            let url = format!("{}{path}?token=abc", server.url());
            let status = apply_override(&mut routing, &url, false).await;
            assert!(started.elapsed() < Duration::from_secs(4), "{path}");
            assert_eq!(status.status, want, "{path}: {status:?}");
            assert!(!status.url.contains("token"), "{status:?}");
            match error {
                Some(needle) => {
                    let e = status.error.unwrap_or_default();
                    assert!(e.contains(needle), "{path}: {e}");
                    assert!(routing.overridden.is_empty());
                }
                None => assert_eq!(status.changed, ["model.strong: disabled"]),
            }
        }
        let mut routing = Routing::builtin();
        let status = apply_override(&mut routing, "http://192.0.2.1/patch", false).await;
        assert_eq!(status.status, "failed");
        assert!(status.error.unwrap().contains("only https://"));
        let requests_before = server.requests().len();
        let status = apply_override(&mut routing, &format!("{}/patch", server.url()), true).await;
        assert_eq!(status.status, "skipped");
        assert_eq!(
            server.requests().len(),
            requests_before,
            "offline fetched anyway"
        );
    }
}
