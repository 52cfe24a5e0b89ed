//! A workspace with house rules (a root rules file and one for a
//! service) and a scripted model that answers the rules reviewer: what the
//! rules reviewer's tests and `gate rules test`'s share.

use std::path::Path;

use serde_json::json;

use crate::model_server::{ModelServer, Reply, Request};

/// A routing table whose models `good` (falling back on `bad`) and `bad`
/// are served by `server`.
pub fn routing_toml(server: &ModelServer) -> String {
    format!(
        r#"
[provider.local]
api = "openai"
base_url = "{}/v1"

[model.good]
provider = "local"
name = "good-model"
fallback = ["bad"]
stream = false

[model.bad]
provider = "local"
name = "bad-model"
stream = false

{}"#,
        server.url(),
        crate::model_server::routes_to("good")
    )
}

/// Writes `text` at `rel` in `ws`, making the folders.
pub fn write(ws: &Path, rel: &str, text: &str) {
    let p = ws.join(rel);
    if let Some(parent) = p.parent() {
        std::fs::create_dir_all(parent).expect("the folders of a fixture file");
    }
    std::fs::write(p, text).expect("a fixture file");
}

/// A reviewer's answer judging `rules` as `(id, p, why)`.
pub fn answer(rules: &[(&str, f64, &str)]) -> Reply {
    Reply::openai(&json!({
        "findings": [],
        "criteria": [],
        "rules": rules.iter().map(|(id, p, why)| json!({"id": id, "p": p, "why": why})).collect::<Vec<_>>(),
    }))
}

/// The root rules file.
pub const ROOT_RULES: &str = r#"
[[rule]]
id = "errors-bubble-up"
applies = ["**/*.rs"]
mistake = "The change catches an error and returns None instead of letting it propagate"
fix = "Let the error propagate"
reference = "src/retry.rs"
[[rule.cases.violating]]
file = "src/lookup.rs"
diff = "+    Err(_) => return None,"
[[rule.cases.compliant]]
file = "src/lookup.rs"
diff = "+    Err(e) => return Err(LookupError::from(e)),"

[[rule]]
id = "guide-only"
judge = false
statement = "Modules are named for what they hold"
fix = "Rename it"

[[rule]]
id = "docs-current"
applies = ["**/*.md"]
statement = "The docs describe the commands as they are"
fix = "Update the docs"
cases.violating = [{ file = "README.md", diff = "+ run make old" }]
cases.compliant = [{ file = "README.md", diff = "+ run make new" }]

[[rule]]
id = "no-unwrap"
mistake = "The change calls unwrap on a value from outside"
fix = "Return the error"
cases.violating = [{ file = "src/a.rs", diff = "+ x.unwrap()" }]
cases.compliant = [{ file = "src/a.rs", diff = "+ x?" }]

[[rule]]
id = "at-threshold"
statement = "Every public function has a doc comment"
fix = "Document it"
cases.violating = [{ file = "src/a.rs", diff = "+pub fn a() {}" }]
cases.compliant = [{ file = "src/a.rs", diff = "+/// A.\n+pub fn a() {}" }]

[[rule]]
id = "just-below"
statement = "Logs go through tracing"
fix = "Use tracing::info!"
severity = "suggestion"
cases.violating = [{ file = "src/a.rs", diff = "+println!(\"x\")" }]
cases.compliant = [{ file = "src/a.rs", diff = "+tracing::info!(\"x\")" }]
"#;

/// The rules file of `services/api`.
pub const API_RULES: &str = r#"
[[rule]]
id = "no-product-branch"
statement = "Shared code has no branch on a product name"
fix = "Move the product-specific part behind a trait"
reference = "services/api/src/good.rs"
severity = "critical"
[[rule.cases.violating]]
file = "services/api/src/a.rs"
diff = "+ if product == \"acme\" {"
[[rule.cases.compliant]]
file = "services/api/src/a.rs"
diff = "+ let plugin = registry.get(product);"
"#;

/// A workspace with the rules files and the files they name.
pub fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("a temporary workspace");
    let ws = dir.path();
    write(ws, "docs/review/rules.toml", ROOT_RULES);
    write(ws, "services/api/docs/review/rules.toml", API_RULES);
    write(
        ws,
        "src/retry.rs",
        "fn retry() -> Result<(), E> { op()? }\n",
    );
    write(ws, "services/api/src/good.rs", "trait Plugin {}\n");
    write(ws, "src/lookup.rs", "fn find() -> Option<X> { None }\n");
    write(
        ws,
        "services/api/src/handler.rs",
        "fn h() { if product == \"acme\" {} }\n",
    );
    dir
}

/// What `server` was asked by the rules seat.
pub fn rules_request(server: &ModelServer) -> Vec<Request> {
    server
        .requests()
        .into_iter()
        .filter(|r| r.header("x-gate-role") == Some("rules"))
        .collect()
}
