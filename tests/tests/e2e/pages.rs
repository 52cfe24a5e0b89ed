//! Pages through the real binary: a fixture site served by a service check,
//! captured in headless Chromium at both widths, asked of the design rules
//! with its screenshots, and failed when it does not load or is measurably
//! broken. Needs Debian's `chromium` and axe-core (`scripts/test` installs
//! both); without them these tests fail, saying what is missing.

use std::path::PathBuf;

use base64::Engine as _;
use gate_tests::model_server::{Matcher, ModelServer, Reply, routes_to};
use gate_tests::{TestEnv, free_port, item, repo_root};
use serde_json::{Value, json};

/// axe-core's `axe.min.js`, as `scripts/test` installs it.
pub(crate) fn axe() -> PathBuf {
    let path = std::env::var_os("GATE_TEST_AXE").map_or_else(
        || repo_root().join("target/axe-core/node_modules/axe-core/axe.min.js"),
        PathBuf::from,
    );
    assert!(
        path.is_file(),
        "axe-core is missing at {}: run `scripts/axe-core.sh target/axe-core` (scripts/test does) or set GATE_TEST_AXE",
        path.display()
    );
    path
}

pub(crate) fn chromium() -> PathBuf {
    let path = std::env::var_os("GATE_CHROMIUM")
        .map_or_else(|| PathBuf::from("/usr/bin/chromium"), PathBuf::from);
    assert!(
        path.is_file(),
        "Chromium is missing at {}: install Debian's `chromium` (scripts/test does) or set GATE_CHROMIUM",
        path.display()
    );
    path
}

/// The site: `/` is a tidy page, `/error` answers 500, `/hang` never
/// answers, `/wide` overflows a phone.
const SERVE_PY: &str = r#"import http.server, sys, time
PAGES = {
    "/": open("web/index.html", "rb").read(),
    "/wide": b"<!doctype html><meta name=viewport content='width=device-width'><body style='margin:0'><div id=grid style='width:700px'>wide</div>",
}
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path == "/hang":
            time.sleep(600)
            return
        body = PAGES.get(self.path)
        if self.path == "/error" or body is None:
            self.send_response(500 if self.path == "/error" else 404)
            self.end_headers()
            self.wfile.write(b"<h1>boom</h1>")
            return
        self.send_response(200)
        self.send_header("content-type", "text/html; charset=utf-8")
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
"#;

const INDEX: &str = r#"<!doctype html><html><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1"><title>Shop</title>
<style>body{margin:0;font:16px sans-serif;color:#111;background:#fff} main{padding:16px}</style></head>
<body><main><h1>Checkout</h1><button>Pay</button> <button>Save</button> <button>Share</button></main></body></html>"#;

const RULES: &str = r#"
[[rule]]
id = "one-primary-button"
applies = ["web/**"]
mistake = "The page shows more than one primary button side by side"
fix = "Keep one primary action; make the others secondary or links"
severity = "critical"
[[rule.cases.violating]]
images = ["docs/review/cases/three-primary.desktop.png", "docs/review/cases/three-primary.phone.png"]
[[rule.cases.compliant]]
images = ["docs/review/cases/one-primary.desktop.png", "docs/review/cases/one-primary.phone.png"]

[[rule]]
id = "errors-bubble-up"
applies = ["**/*.rs"]
mistake = "The change swallows an error"
fix = "Let it propagate"
[[rule.cases.violating]]
file = "src/a.rs"
diff = "+ Err(_) => None,"
[[rule.cases.compliant]]
file = "src/a.rs"
diff = "+ Err(e) => return Err(e),"
"#;

fn site() -> (TestEnv, u16) {
    let env = TestEnv::new();
    let port = free_port();
    env.write("serve.py", SERVE_PY);
    env.write("web/index.html", INDEX);
    env.write("docs/review/rules.toml", RULES);
    for name in [
        "three-primary.desktop.png",
        "three-primary.phone.png",
        "one-primary.desktop.png",
        "one-primary.phone.png",
    ] {
        let bytes = std::fs::read(repo_root().join("tests/fixtures/pages").join(name)).unwrap();
        let path = env.path().join("docs/review/cases").join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }
    (env, port)
}

fn spec(port: u16, pages: &str) -> String {
    format!(
        r#"
[spec]
id = "pages"
[[check]]
id = "serve"
run = "python3 serve.py {port}"
starts = {{ within_s = 20, ready_tcp = "127.0.0.1:{port}" }}
[[task]]
id = "web"
paths = ["web/**"]
{pages}
[policy]
builtin_secrets = false
"#
    )
}

fn routing(server: &ModelServer) -> String {
    format!(
        "[provider.local]\napi = \"openai\"\nbase_url = \"{}/v1\"\n\n\
         [model.m]\nprovider = \"local\"\nname = \"vision-model\"\nstream = false\n\n{}",
        server.url(),
        routes_to("m")
    )
}

fn answer(rules: &[(&str, f64)]) -> Reply {
    Reply::openai(&json!({
        "findings": [], "criteria": [],
        "rules": rules.iter().map(|(id, p)| json!({"id": id, "p": p, "why": "scripted"})).collect::<Vec<_>>(),
    }))
}

/// The PNGs a request carries, decoded from their data URLs, as (width, height).
fn images_of(body: &Value) -> Vec<(u32, u32)> {
    let mut out = Vec::new();
    for message in body["messages"].as_array().unwrap() {
        let Some(parts) = message["content"].as_array() else {
            continue;
        };
        for part in parts.iter().filter(|p| p["type"] == "image_url") {
            let url = part["image_url"]["url"].as_str().unwrap();
            let b64 = url.strip_prefix("data:image/png;base64,").unwrap();
            let png = base64::engine::general_purpose::STANDARD
                .decode(b64)
                .unwrap();
            assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");
            let word = |at: usize| u32::from_be_bytes(png[at..at + 4].try_into().unwrap());
            out.push((word(16), word(20)));
        }
    }
    out
}

#[test]
fn a_touched_page_is_captured_at_both_widths_and_asked_of_the_design_rules() {
    let (env, port) = site();
    let server = ModelServer::start();
    env.write("routing.toml", &routing(&server));
    env.write(
        "gate.toml",
        &spec(
            port,
            &format!(
                "[[page]]\nid = \"home\"\nurl = \"http://127.0.0.1:{port}/\"\nfiles = [\"web/**\"]\nafter = [\"serve\"]\n"
            ),
        ),
    );
    server.script(
        Matcher::any().role("rules"),
        vec![answer(&[("one-primary-button", 0.9)])],
    );
    server.script(Matcher::any(), vec![answer(&[])]);
    let out = env
        .gate(&["verify", "--format", "json"])
        .env("GATE_CHROMIUM", chromium())
        .env("GATE_AXE_CORE", axe())
        .run();
    out.assert_exit(1);
    let doc = out.json();
    let home = item(&doc, "home").expect("the page check");
    assert_eq!(home["kind"], "page", "{home}");
    assert_eq!(home["status"], "passed", "{home}");

    // One rules request for the page, with both screenshots and the design
    // rule's question; the code rule is not asked (no Rust file changed).
    let rules: Vec<_> = server
        .requests()
        .into_iter()
        .filter(|r| r.header("x-gate-role") == Some("rules"))
        .collect();
    assert_eq!(rules.len(), 1);
    assert_eq!(images_of(&rules[0].body), [(1440, 900), (390, 844)]);
    let text = rules[0].text();
    assert!(text.contains(
        "- id `one-primary-button`: In web/**: The page shows more than one primary button side by side"
    ), "{text}");
    assert!(text.contains(&format!("url: http://127.0.0.1:{port}/")));
    assert!(!text.contains("errors-bubble-up"));

    // The answer maps to a finding as for code rules.
    let finding = &doc["findings"][0];
    assert_eq!(finding["severity"], "critical");
    assert_eq!(finding["role"], "rules");
    assert_eq!(finding["file"], "web/index.html");
    assert_eq!(
        finding["title"],
        "on page `home`, design rule `one-primary-button`: The page shows more than one primary button side by side"
    );
    let detail = finding["detail"].as_str().unwrap();
    assert!(
        detail.contains("compliance 0.10, below the rule threshold 0.80"),
        "{detail}"
    );
    assert!(detail.contains("fix: Keep one primary action"), "{detail}");

    // The screenshots' digests are in the bundle; the files are kept.
    let shown = env.shown(doc["run_id"].as_str().unwrap());
    let pages = shown["run"]["pages"].clone();
    assert_eq!(pages[0]["id"], "home");
    let shots = pages[0]["shots"].as_array().unwrap();
    let sizes: Vec<(u64, u64)> = shots
        .iter()
        .map(|s| (s["width"].as_u64().unwrap(), s["height"].as_u64().unwrap()))
        .collect();
    assert_eq!(sizes, [(1440, 900), (390, 844)]);
    for s in shots {
        assert_eq!(s["digest"]["sha256"].as_str().unwrap().len(), 64);
        assert_eq!(s["digest"]["blake3"].as_str().unwrap().len(), 64);
        let kept = std::fs::read(s["file"].as_str().unwrap()).expect("the screenshot is kept");
        assert_eq!(kept.len() as u64, s["bytes"].as_u64().unwrap());
    }

    // A retry with nothing changed looks at the page again (its server
    // started again for it) and asks the design rules again: a design
    // finding cannot pass by being carried.
    let again = env
        .gate(&["verify", "--format", "json"])
        .env("GATE_CHROMIUM", chromium())
        .env("GATE_AXE_CORE", axe())
        .run();
    again.assert_exit(1);
    let doc = again.json();
    let status = |id: &str| item(&doc, id).map(|c| c["status"].clone());
    assert_eq!(status("home"), Some(json!("passed")));
    assert_eq!(status("serve"), Some(json!("passed")));
    let asked = server
        .requests()
        .iter()
        .filter(|r| r.header("x-gate-role") == Some("rules"))
        .count();
    assert_eq!(asked, 2);
    assert_eq!(doc["findings"][0]["title"], finding["title"]);
}

#[test]
fn pages_that_do_not_load_or_overflow_fail_their_checks_before_any_model() {
    let (env, port) = site();
    let server = ModelServer::start();
    env.write("routing.toml", &routing(&server));
    let pages = format!(
        "[[page]]\nid = \"error\"\nurl = \"http://127.0.0.1:{port}/error\"\nfiles = [\"web/**\"]\nafter = [\"serve\"]\n\
         [[page]]\nid = \"hang\"\nurl = \"http://127.0.0.1:{port}/hang\"\nfiles = [\"web/**\"]\nafter = [\"serve\"]\ntimeout_s = 2\n\
         [[page]]\nid = \"wide\"\nurl = \"http://127.0.0.1:{port}/wide\"\nfiles = [\"web/**\"]\nafter = [\"serve\"]\n\
         [[page]]\nid = \"untouched\"\nurl = \"http://127.0.0.1:{port}/\"\nfiles = [\"docs/**/*.md\"]\nafter = [\"serve\"]\n"
    );
    env.write("gate.toml", &spec(port, &pages));
    env.write("docs/guide.md", "# Guide\n");
    server.default_reply(answer(&[]));
    let out = env
        .gate(&["verify", "--format", "json"])
        .env("GATE_CHROMIUM", chromium())
        .env("GATE_AXE_CORE", axe())
        .run();
    out.assert_exit(1);
    let doc = out.json();
    let check = |id: &str| item(&doc, id).cloned();
    for (id, says) in [
        ("error", "answered HTTP 500"),
        ("hang", "did not load within 2 s at 1440×900"),
        (
            "wide",
            "horizontal overflow at 390×844: the page is 700 px wide in a 390 px viewport",
        ),
    ] {
        let c = check(id).unwrap_or_else(|| panic!("no check `{id}`"));
        assert_eq!(c["status"], "failed", "{c}");
        let reason = c["reason"].as_str().unwrap();
        assert!(reason.contains(says), "{id}: {reason}");
    }
    // The offending element is in the record (the bundle's predicate).
    let shown = env.shown(doc["run_id"].as_str().unwrap());
    let run = shown["run"].clone();
    let wide = item(&run, "wide").cloned().unwrap();
    let located = wide["locations"][0]["message"].as_str().unwrap();
    assert!(located.contains("`div#grid` spans 0..700 px"), "{located}");
    // A page the change does not touch is not looked at, and says so.
    let untouched = check("untouched").expect("a line for the untouched page");
    assert_eq!(untouched["status"], "skipped");
    let why = untouched["reason"].as_str().unwrap();
    assert!(why.starts_with("not looked at: without a base"), "{why}");
    assert!(
        server.requests().is_empty(),
        "no model is asked when a page check fails"
    );
}

#[test]
fn rules_test_scores_image_cases_and_writes_the_margin_back() {
    let (env, _) = site();
    let server = ModelServer::start();
    env.write("routing.toml", &routing(&server));
    server.script(
        Matcher::any()
            .role("rules")
            .body_contains("three-primary.desktop.png"),
        vec![answer(&[("one-primary-button", 0.9)])],
    );
    server.script(
        Matcher::any()
            .role("rules")
            .body_contains("one-primary.desktop.png"),
        vec![answer(&[("one-primary-button", 0.05)])],
    );
    server.script(
        Matcher::any().role("rules").body_contains("Err(_) => None"),
        vec![answer(&[("errors-bubble-up", 0.9)])],
    );
    server.script(
        Matcher::any().role("rules"),
        vec![answer(&[("errors-bubble-up", 0.1)])],
    );
    env.gate(&["rules", "test"])
        .run()
        .assert_exit(0)
        .stdout_has("one-primary-button (docs/review/rules.toml): pass  margin 0.85")
        .stdout_has("violating 0.10  docs/review/cases/three-primary.desktop.png + docs/review/cases/three-primary.phone.png");
    let image_requests: Vec<_> = server
        .requests()
        .into_iter()
        .filter(|r| r.text().contains("three-primary.desktop.png"))
        .collect();
    assert_eq!(image_requests.len(), 1);
    assert_eq!(images_of(&image_requests[0].body), [(144, 90), (39, 84)]);
    let rules = env.read("docs/review/rules.toml");
    assert!(
        rules.contains("tested = { margin = 0.85, model = \"vision-model\""),
        "{rules}"
    );
    env.gate(&["rules", "check"]).run().assert_exit(0);

    // A case image changed since the test: the rule must be tested again.
    std::fs::copy(
        env.path().join("docs/review/cases/one-primary.phone.png"),
        env.path().join("docs/review/cases/three-primary.phone.png"),
    )
    .unwrap();
    env.gate(&["rules", "check"])
        .run()
        .assert_exit(1)
        .stdout_has(
            "rule `one-primary-button` its wording or cases changed since it was last tested",
        );
}
