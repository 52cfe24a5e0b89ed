//! Review an auditor can trust, through the real binary against the
//! scripted model server: every finding's fate recorded, no silent veto by
//! the coordinator, coverage that counts reviewers that did not run, bad
//! replies that fail a model rather than the review, model text made safe
//! for every format, a token budget that holds, and no reviewer asked about
//! nothing.

use std::collections::BTreeSet;

use gate_tests::model_server::{Matcher, ModelServer, Reply, Request, routes_to};
use gate_tests::{TestEnv, peers};
use serde_json::{Value, json};

const PRIMARY: &str = "m-primary";
const FALLBACK: &str = "m-fallback";
/// Every role of every tier routed to the primary model, which falls back
/// to the fallback model; both on `server`.
fn routing(server: &ModelServer) -> String {
    let routes = routes_to("primary");
    format!(
        "[provider.local]\napi = \"openai\"\nbase_url = \"{url}/v1\"\n\n\
         [model.primary]\nprovider = \"local\"\nname = \"{PRIMARY}\"\nfallback = [\"fallback\"]\n\
         price = {{ input = 1.0, output = 2.0 }}\n\n\
         [model.fallback]\nprovider = \"local\"\nname = \"{FALLBACK}\"\n\
         price = {{ input = 1.0, output = 2.0 }}\n\n{routes}",
        url = server.url()
    )
}

/// The line of the login module the findings cite, and a marker on it.
const CITED: &str =
    "    query = \"SELECT * FROM users WHERE name = '\" + user + \"'\"  # CITED-LINE";

/// A full-tier workspace (the change touches a sensitive path): one task,
/// one plain criterion, the login module; `policy` goes under `[policy]`.
fn full_tier(server: &ModelServer, policy: &str) -> TestEnv {
    let env = TestEnv::new();
    env.write(
        "gate.toml",
        &format!(
            "[spec]\nid = \"audit\"\nsummary = \"Sign-in\"\n\
             [[task]]\nid = \"auth\"\ntitle = \"Sign-in\"\npaths = [\"src/**\"]\n\
             [[task.criterion]]\nid = \"exists\"\ntext = \"the login module exists\"\n\
             run = \"test -f src/auth/login.py\"\n[policy]\n{policy}\n"
        ),
    );
    env.write("routing.toml", &routing(server));
    env.write(
        "src/auth/login.py",
        &format!(
            "def login(db, user, password):\n{CITED}\n    row = db.execute(query).fetchone()\n    \
             return row is not None and row.password == password\n"
        ),
    );
    env
}

fn answer(findings: &Value) -> Value {
    json!({"findings": findings, "criteria": [], "rules": []})
}

fn finding(severity: &str, line: u32, title: &str, confidence: f64) -> Value {
    json!({"severity": severity, "file": "src/auth/login.py", "line": line, "title": title,
           "detail": "because", "confidence": confidence})
}

const CRITICAL: &str = "SQL built from user input";
const WARNING: &str = "Password compared in plain text";

/// The id the coordinator was shown for the finding titled `title`.
fn id_in(request: &Request, title: &str) -> String {
    let text = request.text();
    let at = text
        .find(&format!("\"title\": \"{title}\""))
        .unwrap_or_else(|| panic!("{title:?} not shown to the coordinator:\n{text}"));
    let key = "\"id\": \"";
    let start = text[..at].rfind(key).expect("an id before the title") + key.len();
    text[start..start + 12].to_owned()
}

fn specialist<'a>(doc: &'a Value, role: &str) -> &'a Value {
    doc["review"]["specialists"]
        .as_array()
        .and_then(|all| all.iter().find(|s| s["role"] == role))
        .unwrap_or_else(|| panic!("no {role} in {doc:#}"))
}

fn standing<'a>(doc: &'a Value, title: &str) -> Option<&'a Value> {
    doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["title"] == title)
}

fn dropped<'a>(doc: &'a Value, title: &str) -> Option<&'a Value> {
    doc["dropped_findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["title"] == title)
}

/// One way the coordinator may treat a critical finding.
struct Veto {
    name: &'static str,
    /// Whether quality raises the critical too (corroborated by two roles).
    corroborated: bool,
    policy: &'static str,
    /// The coordinator's answer, given the critical's id.
    answer: fn(&str) -> Value,
    exit: i32,
    /// The critical's severity as it stands (`None`: it does not).
    stands_as: Option<&'static str>,
    /// What `lineage.overruled` says, when the coordinator was overruled.
    overruled: Option<&'static str>,
}

#[test]
fn the_coordinator_cannot_erase_a_critical_in_silence() {
    let vetoes = [
        Veto {
            name: "answers []",
            corroborated: false,
            policy: "",
            answer: |_| json!({"findings": [], "dropped": []}),
            exit: 1,
            stands_as: Some("critical"),
            overruled: Some("left it out without a reason"),
        },
        Veto {
            name: "returns it as a suggestion without a reason",
            corroborated: false,
            policy: "",
            answer: |id| {
                json!({"findings": [{"id": id, "merges": [], "severity": "suggestion",
                    "title": CRITICAL, "detail": "", "why": ""}], "dropped": []})
            },
            exit: 1,
            stands_as: Some("critical"),
            overruled: Some("without a reason; a critical stands as raised"),
        },
        Veto {
            name: "downgrades it with a reason",
            corroborated: false,
            policy: "",
            answer: |id| {
                json!({"findings": [{"id": id, "merges": [], "severity": "warning",
                    "title": CRITICAL, "detail": "", "why": "only an admin can reach it"}],
                    "dropped": []})
            },
            exit: 0,
            stands_as: Some("warning"),
            overruled: None,
        },
        Veto {
            name: "drops it without a reason",
            corroborated: false,
            policy: "",
            answer: |id| json!({"findings": [], "dropped": [{"id": id, "why": ""}]}),
            exit: 1,
            stands_as: Some("critical"),
            overruled: Some("dropped it without a reason"),
        },
        Veto {
            name: "drops it with a reason",
            corroborated: false,
            policy: "",
            answer: |id| json!({"findings": [], "dropped": [{"id": id, "why": "the driver binds it"}]}),
            exit: 0,
            stands_as: None,
            overruled: None,
        },
        Veto {
            name: "drops, with a reason, a critical two roles raised",
            corroborated: true,
            policy: "",
            answer: |id| json!({"findings": [], "dropped": [{"id": id, "why": "the driver binds it"}]}),
            exit: 1,
            stands_as: Some("critical"),
            overruled: Some("coordinator_may_drop_critical = false"),
        },
        Veto {
            name: "the same, where the policy lets it",
            corroborated: true,
            policy: "coordinator_may_drop_critical = true",
            answer: |id| json!({"findings": [], "dropped": [{"id": id, "why": "the driver binds it"}]}),
            exit: 0,
            stands_as: None,
            overruled: None,
        },
    ];
    for v in vetoes {
        let server = ModelServer::start();
        server
            .script(
                Matcher::any().role("security"),
                vec![Reply::openai(&answer(&json!([finding(
                    "critical", 2, CRITICAL, 0.8
                )])))],
            )
            .script(
                Matcher::any().role("quality"),
                vec![Reply::openai(&answer(&if v.corroborated {
                    json!([
                        finding("critical", 2, "user input builds the SQL", 0.7),
                        finding("warning", 4, WARNING, 0.7)
                    ])
                } else {
                    json!([finding("warning", 4, WARNING, 0.7)])
                }))],
            )
            .script(
                Matcher::any().role("coordinator"),
                vec![Reply::computed(move |r| {
                    Reply::openai(&(v.answer)(&id_in(r, CRITICAL)))
                })],
            )
            .default_reply(Reply::openai(&answer(&json!([]))));
        let env = full_tier(&server, v.policy);
        let out = env
            .gate(&[
                "verify",
                "--format",
                "json",
                "--report",
                "human=.gate/human.txt",
            ])
            .run();
        out.assert_exit(v.exit);
        let doc = out.json();
        let name = v.name;
        assert_eq!(doc["tier"], "full", "{name}");

        // The coordinator saw the code the findings cite, numbered.
        let asked = server
            .requests()
            .into_iter()
            .find(|r| r.header("x-gate-role") == Some("coordinator"))
            .expect("the coordinator was asked");
        assert!(
            asked.text().contains(&format!("     2 | {CITED}")),
            "{name}: the cited line was not shown"
        );

        let stands = standing(&doc, CRITICAL);
        assert_eq!(
            stands.map(|f| f["severity"].as_str().unwrap()),
            v.stands_as,
            "{name}: {doc:#}"
        );
        match (stands, v.overruled) {
            (Some(f), Some(why)) => {
                let overruled = f["lineage"]["overruled"].as_str().unwrap_or_default();
                assert!(overruled.contains(why), "{name}: {overruled:?}");
                assert_eq!(f["lineage"]["raised_severity"], "critical");
            }
            (Some(f), None) => {
                assert_eq!(f["lineage"]["fate"], "downgraded", "{name}");
                assert_eq!(f["lineage"]["by"], "coordinator");
                assert_eq!(f["lineage"]["raised_severity"], "critical");
                assert_eq!(f["lineage"]["why"], "only an admin can reach it");
            }
            (None, _) => {
                // Dropped, recorded with who and why, in the JSON and the bundle.
                let d = dropped(&doc, CRITICAL).expect("the drop is recorded");
                assert_eq!(d["severity"], "critical");
                assert_eq!(d["lineage"]["fate"], "dropped");
                assert_eq!(d["lineage"]["by"], "coordinator");
                assert_eq!(d["lineage"]["why"], "the driver binds it");
                let shown = env.shown(doc["run_id"].as_str().unwrap());
                assert_eq!(
                    shown["run"]["dropped_findings"], doc["dropped_findings"],
                    "{name}: the bundle holds the same fates"
                );
                let human = env.read(".gate/human.txt");
                assert!(
                    human.contains(&format!(
                        "1 finding dropped by the coordinator: {CRITICAL} (the driver binds it)"
                    )),
                    "{name}:\n{human}"
                );
            }
        }
        if v.corroborated {
            let f = standing(&doc, CRITICAL)
                .or_else(|| dropped(&doc, CRITICAL))
                .unwrap();
            let by: BTreeSet<&str> = f["lineage"]["raised_by"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| r.as_str().unwrap())
                .collect();
            assert_eq!(by, BTreeSet::from(["quality", "security"]), "{name}");
            let merged = dropped(&doc, "user input builds the SQL").expect("the duplicate");
            assert_eq!(merged["lineage"]["fate"], "merged");
            assert_eq!(merged["lineage"]["by"], "dedupe");
        }
    }
}

/// The confidence floor's drops are recorded too, and a reviewer's finding
/// that breaks the schema is left out with why while its valid ones stand.
#[test]
fn every_raised_finding_is_accounted_for() {
    let server = ModelServer::start();
    server
        .script(
            Matcher::any().role("quality"),
            vec![Reply::openai(&answer(&json!([
                finding("warning", 4, WARNING, 0.9),
                finding("blocker", 2, "Blocker severity", 0.9),
                finding("critical", 2, "Overconfident", 1.7),
                {"severity": "warning", "file": "src/auth/login.py", "line": 3,
                 "title": "Has an extra field", "detail": "", "confidence": 0.9, "cwe": "CWE-89"},
                finding("critical", 3, "Unsure", 0.2),
            ])))],
        )
        .script(
            Matcher::any().role("coordinator"),
            vec![Reply::computed(|r| {
                Reply::openai(&json!({"findings": [{"id": id_in(r, WARNING), "merges": [],
                    "severity": "warning", "title": WARNING, "detail": "", "why": ""}],
                    "dropped": []}))
            })],
        )
        .default_reply(Reply::openai(&answer(&json!([]))));
    let env = full_tier(&server, "");
    let out = env.gate(&["verify", "--format", "json"]).run();
    out.assert_exit(0);
    let doc = out.json();
    let titles: Vec<&str> = gate_tests::findings(&doc)
        .into_iter()
        .map(|f| f["title"].as_str().unwrap())
        .collect();
    assert_eq!(titles, [WARNING]);
    // The reply was not voided: one request to quality, no repair.
    let to_quality = server
        .requests()
        .iter()
        .filter(|r| r.header("x-gate-role") == Some("quality"))
        .count();
    assert_eq!(to_quality, 1);
    assert_eq!(specialist(&doc, "quality")["status"], "ok");
    for (title, by, why) in [
        ("Blocker severity", "validation", "severity \"blocker\""),
        (
            "Overconfident",
            "validation",
            "confidence 1.7 is not within 0..1",
        ),
        ("Has an extra field", "validation", "unknown field `cwe`"),
        (
            "Unsure",
            "confidence_floor",
            "confidence 0.20 below the floor 0.50",
        ),
    ] {
        let d = dropped(&doc, title).unwrap_or_else(|| panic!("{title} not recorded: {doc:#}"));
        assert_eq!(d["lineage"]["fate"], "dropped", "{title}");
        assert_eq!(d["lineage"]["by"], by, "{title}");
        assert_eq!(d["lineage"]["raised_by"], json!(["quality"]), "{title}");
        let got = d["lineage"]["why"].as_str().unwrap();
        assert!(got.contains(why), "{title}: {got}");
    }
    assert_eq!(doc["dropped_findings"].as_array().unwrap().len(), 4);
}

/// A reply still invalid after its repair is that model's failure: the
/// chain moves on to its fallback (for a reviewer, and for the judge that
/// answers one criterion twice).
#[test]
fn a_reply_invalid_twice_is_answered_by_the_fallback() {
    let twice = json!({"findings": [], "rules": [], "criteria": [
        {"id": "safe", "met": 0.9, "why": "yes"}, {"id": "safe", "met": 0.1, "why": "no"}]});
    let broken = json!({"verdict": "looks fine"});
    for (role, bad) in [("quality", broken), ("judge", twice)] {
        let server = ModelServer::start();
        server
            .script(
                Matcher::any().role(role).model(PRIMARY),
                vec![Reply::openai(&bad)],
            )
            .default_reply(Reply::openai(&json!({"findings": [], "rules": [],
                "criteria": [{"id": "safe", "met": 0.95, "why": "parameterised"}]})));
        let env = TestEnv::new();
        env.write(
            "gate.toml",
            "[spec]\nid = \"bad-replies\"\n[[task]]\nid = \"t\"\npaths = [\"src/**\"]\n\
             [[task.criterion]]\nid = \"safe\"\ntext = \"queries are parameterised\"\n\
             judge = \"model\"\n",
        );
        env.write("routing.toml", &routing(&server));
        env.write("src/app.py", "def f():\n    return 1\n");
        let out = env.gate(&["verify", "--format", "json"]).run();
        out.assert_exit(0);
        let doc = out.json();
        let s = specialist(&doc, role);
        assert_eq!(s["status"], "ok", "{role}: {s}");
        let attempts: Vec<(&str, &str)> = s["attempts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| (a["model"].as_str().unwrap(), a["outcome"].as_str().unwrap()))
            .collect();
        assert_eq!(
            attempts,
            [(PRIMARY, "malformed"), (FALLBACK, "ok")],
            "{role}"
        );
        let to = |model: &str| {
            server
                .requests()
                .iter()
                .filter(|r| r.header("x-gate-role") == Some(role) && r.body["model"] == model)
                .count()
        };
        // The request and its one repair, then the fallback.
        assert_eq!((to(PRIMARY), to(FALLBACK)), (2, 1), "{role}");
        if role == "judge" {
            assert!(
                s["attempts"][0]["error"]
                    .as_str()
                    .unwrap()
                    .contains("criterion `safe` is answered more than once")
            );
        }
    }
}

/// A reviewer that did not run saw none of its remit: `min_coverage`
/// counts it, and its record says so.
#[test]
fn min_coverage_counts_a_reviewer_that_did_not_run() {
    for (min, exit) in [("1.0", 4), ("0.0", 0)] {
        let server = ModelServer::start();
        server
            .script(
                Matcher::any().role("security"),
                vec![Reply::openai_error(
                    500,
                    "server_error",
                    "",
                    "The server had an error",
                )],
            )
            .default_reply(Reply::openai(&answer(&json!([]))));
        let env = full_tier(&server, &format!("min_coverage = {min}"));
        // No fallback: the security reviewer does not run.
        let table = env
            .read("routing.toml")
            .replace("fallback = [\"fallback\"]\n", "");
        env.write("routing.toml", &table);
        let out = env.gate(&["verify", "--format", "json"]).run();
        out.assert_exit(exit);
        let doc = out.json();
        let security = specialist(&doc, "security");
        assert_eq!(security["status"], "did_not_run");
        assert_eq!(security["coverage"]["bytes_shown"], 0, "{security}");
        assert_eq!(security["coverage"]["files"], json!([]));
        assert!(security["coverage"]["bytes_total"].as_u64().unwrap() > 0);
        assert_eq!(
            specialist(&doc, "quality")["coverage"]["files"],
            json!(["src/auth/login.py"])
        );
        if exit == 4 {
            assert_eq!(doc["verdict"], "incomplete");
            let shown = env.shown(doc["run_id"].as_str().unwrap());
            let reasons = shown["run"]["verdict_reasons"].to_string();
            assert!(
                reasons.contains("the security review did not run, so saw 0% of its remit, below min_coverage 100%"),
                "{reasons}"
            );
        }
    }
}

/// The hostile title and reason every format is fed.
const HOSTILE: &str = "\u{1b}[31mRED\u{1b}[0m\u{7} bell\rCR\n::error::injected <script>alert(1)</script> [click](https://evil.example) **bold** @team";

/// Model text reaches no output raw: stripped of escapes and control
/// characters at the source, then escaped for each format.
#[test]
fn a_hostile_title_is_data_in_every_format() {
    let server = ModelServer::start();
    server
        .script(
            Matcher::any().role("quality"),
            vec![Reply::openai(&json!({"findings": [{"severity": "critical",
                "file": "src/app.py", "line": 1, "title": HOSTILE, "detail": HOSTILE,
                "confidence": 0.9}], "criteria": [], "rules": []}))],
        )
        .script(
            Matcher::any().role("judge"),
            vec![Reply::openai(&json!({"findings": [], "rules": [],
                "criteria": [{"id": "safe", "met": 0.1, "why": HOSTILE}]}))],
        );
    let env = TestEnv::new();
    env.write(
        "gate.toml",
        "[spec]\nid = \"hostile-text\"\n[[task]]\nid = \"t\"\npaths = [\"src/**\"]\n\
         [[task.criterion]]\nid = \"safe\"\ntext = \"queries are parameterised\"\n\
         judge = \"model\"\n",
    );
    env.write("routing.toml", &routing(&server));
    env.write("src/app.py", "def f():\n    return 1\n");
    let formats = [
        "human", "json", "jsonl", "sarif", "junit", "github", "gitlab", "markdown",
    ];
    let mut args = vec!["verify", "--format", "human", "--color", "never"];
    let reports: Vec<String> = formats
        .iter()
        .map(|f| format!("{f}=.gate/reports/{f}.out"))
        .collect();
    for r in &reports {
        args.extend(["--report", r.as_str()]);
    }
    let out = env.gate(&args).run();
    out.assert_exit(1);
    let mut outputs = vec![("stdout".to_owned(), out.stdout.clone())];
    for f in formats {
        outputs.push((f.to_owned(), env.read(&format!(".gate/reports/{f}.out"))));
    }
    for (name, text) in &outputs {
        for bad in ['\u{1b}', '\u{7}', '\r'] {
            assert!(!text.contains(bad), "{name} holds {bad:?}:\n{text}");
        }
        // JSON keeps control characters as escapes: none may be left.
        for escaped in ["\\u001b", "\\u0007", "\\r"] {
            assert!(!text.contains(escaped), "{name} holds {escaped}:\n{text}");
        }
        for line in text.lines() {
            assert!(
                !line.trim_start().starts_with("::error::injected"),
                "{name}: a model's text starts a workflow command: {line}"
            );
        }
    }
    let human = &outputs[0].1;
    assert!(
        human.contains("RED bell CR ::error::injected <script>"),
        "{human}"
    );
    // Markdown: no HTML, links or emphasis from a model.
    let md = env.read(".gate/reports/markdown.out");
    assert!(!md.contains("<script>") && !md.contains("[click]("), "{md}");
    for escaped in [
        "\\<script\\>",
        "\\[click\\](",
        "\\*\\*bold\\*\\*",
        "\\@team",
    ] {
        assert!(md.contains(escaped), "{escaped} missing from\n{md}");
    }
    // GitHub: in an annotation the text is escaped data.
    let gh = env.read(".gate/reports/github.out");
    assert!(
        gh.lines().any(|l| l.starts_with(
            "::error file=src/app.py,line=1,title=RED bell CR %3A%3Aerror%3A%3Ainjected"
        )),
        "{gh}"
    );
    // The readers of the structured formats take them as they are.
    let sarif = env.path().join(".gate/reports/sarif.out");
    let errors = peers::sarif_errors(&sarif);
    assert!(errors.is_empty(), "{}", errors.join("\n"));
    let junit = peers::junit_read(&env.path().join(".gate/reports/junit.out"));
    assert!(
        junit
            .to_string()
            .contains("RED bell CR ::error::injected <script>")
    );
    let doc: Value = serde_json::from_str(&env.read(".gate/reports/json.out")).unwrap();
    let plain = "RED bell CR ::error::injected <script>alert(1)</script> \
                 [click](https://evil.example) **bold** @team";
    assert_eq!(doc["findings"][0]["title"], plain);
    assert_eq!(doc["findings"][0]["detail"], plain);
    // The verdict's reasons echo the title and the judge's why, as plain.
    assert!(
        human.contains(&format!("critical finding in src/app.py: {plain}")),
        "{human}"
    );
    assert!(
        human.contains(&format!("criterion `safe` failed: {plain}")),
        "{human}"
    );
    let shown = env.shown(doc["run_id"].as_str().unwrap());
    assert_eq!(shown["run"]["findings"][0]["title"], plain);
}

/// A budget that holds: with `max_input_tokens = 8900`, the total the
/// scripted server counts never passes it, whatever the run meets — the
/// full tier (whose estimate, repairs and coordinator counted, is refused
/// before anything is sent), or a smaller panel whose models fail over
/// (each fallback resends its request) or reply badly (each repair
/// resends it too), which the running total stops.
#[test]
fn a_budget_of_8900_tokens_is_never_exceeded() {
    const BUDGET: u64 = 8900;
    let ok = || Reply::openai(&answer(&json!([finding("warning", 4, WARNING, 0.9)])));
    let judged = "[[task.criterion]]\nid = \"safe\"\ntext = \"queries are parameterised\"\njudge = \"model\"\n";
    // (name, full tier?, the primary's reply, the fallback's reply,
    //  whether anything is sent, whether the running total must stop a call)
    let cases: Vec<(&str, bool, Reply, Reply, bool, bool)> = vec![
        ("the full tier", true, ok(), ok(), false, false),
        (
            "every primary fails over",
            false,
            Reply::openai_error(500, "server_error", "", "The server had an error"),
            ok(),
            true,
            false,
        ),
        (
            "every model's reply needs its repair, and fails it",
            false,
            Reply::openai_text("Looks fine to me."),
            Reply::openai_text("Still fine."),
            true,
            true,
        ),
    ];
    for (name, full, primary, fallback, sends, stopped) in cases {
        let server = ModelServer::start();
        server.count_usage();
        // The third model of the chain answers as the second.
        server
            .script(Matcher::any().model(PRIMARY), vec![primary])
            .default_reply(fallback);
        let env = if full {
            full_tier(&server, &format!("max_input_tokens = {BUDGET}"))
        } else {
            let env = TestEnv::new();
            env.write(
                "gate.toml",
                &format!(
                    "[spec]\nid = \"budget\"\n[[task]]\nid = \"t\"\npaths = [\"src/**\"]\n{judged}\
                     [policy]\nmax_input_tokens = {BUDGET}\n"
                ),
            );
            // A chain of three models: up to six requests per reviewer.
            let table = routing(&server).replace(
                "fallback = [\"fallback\"]",
                "fallback = [\"fallback\", \"third\"]",
            );
            env.write(
                "routing.toml",
                &format!(
                    "{table}\n[model.third]\nprovider = \"local\"\nname = \"m-third\"\n\
                     price = {{ input = 1.0, output = 2.0 }}\n"
                ),
            );
            env.write("src/auth.py", "def login(user):\n    return user\n");
            env
        };
        let out = env.gate(&["verify", "--format", "json"]).run();
        let doc = out.json();
        let sent = server.tokens_received();
        assert!(sent <= BUDGET, "{name}: {sent} tokens sent, over {BUDGET}");
        let budget = &doc["review"]["budget"];
        assert_eq!(budget["max_input_tokens"], BUDGET, "{name}");
        // What the gate counts as sent is never less than what arrived.
        assert!(budget["sent"].as_u64().unwrap() >= sent, "{name}: {budget}");
        let requests = server.requests().len();
        let over: Vec<&Value> = doc["review"]["specialists"]
            .as_array()
            .unwrap()
            .iter()
            // A first request refused reads "over budget: …"; a repair or
            // fallback refused after a bad reply keeps that reply's words
            // first: which one the running total stops depends on how the
            // concurrent reviewers interleave.
            .filter(|s| {
                s["reason"]
                    .as_str()
                    .is_some_and(|r| r.contains("over budget"))
            })
            .collect();
        if sends {
            assert!(requests >= 2, "{name}: {requests} requests");
            assert!(
                budget["estimated"].as_u64().unwrap() <= BUDGET,
                "{name}: {budget}"
            );
            // The running total stops calls the estimate did not foresee.
            assert_eq!(!over.is_empty(), stopped, "{name}: {doc:#}");
            for s in &over {
                assert_eq!(s["status"], "did_not_run", "{name}");
            }
        } else {
            assert_eq!(requests, 0, "{name}");
            assert!(
                budget["estimated"].as_u64().unwrap() > BUDGET,
                "{name}: {budget}"
            );
            assert_eq!(doc["review"]["status"], "did_not_run");
            assert_eq!(doc["verdict"], "incomplete");
            out.assert_exit(4);
            // Every reviewer planned is in the record, as not run.
            for role in ["quality", "security", "performance", "integration"] {
                let s = specialist(&doc, role);
                assert_eq!(s["status"], "did_not_run", "{role}");
                assert!(s["reason"].as_str().unwrap().starts_with("over budget"));
            }
        }
    }
}

/// A reviewer with nothing in its remit is not asked, costs nothing and is
/// recorded as skipped with why; the judge is still asked on its inputs.
#[test]
fn reviewers_with_nothing_to_review_are_not_asked() {
    // (the change, a judged criterion?, roles asked, roles skipped with why)
    type Case<'a> = (
        &'a [(&'a str, &'a str)],
        bool,
        &'a [&'a str],
        &'a [(&'a str, &'a str)],
    );
    let cases: [Case<'_>; 4] = [
        (
            &[("src/app.py", "def f():\n    return 2\n")],
            false,
            &["integration", "performance", "quality", "security"],
            &[],
        ),
        (
            &[("docs/api.md", "# API\n\nPOST /orders creates an order.\n")],
            false,
            &["docs"],
            &[
                ("quality", "no code in the change"),
                ("security", "no code or configuration in the change"),
                ("performance", "no code in the change"),
                ("integration", "no code in the change"),
            ],
        ),
        (
            &[],
            false,
            &[],
            &[
                ("quality", "the change is empty"),
                ("security", "the change is empty"),
                ("performance", "the change is empty"),
                ("integration", "the change is empty"),
            ],
        ),
        (&[], true, &["judge"], &[("quality", "the change is empty")]),
    ];
    for (change, judged, asked, skipped) in cases {
        let server = ModelServer::start();
        server.default_reply(Reply::openai(&json!({"findings": [], "rules": [],
            "criteria": [{"id": "documented", "met": 0.9, "why": "it is"}]})));
        let env = TestEnv::new();
        let criterion = if judged {
            "[[task.criterion]]\nid = \"documented\"\ntext = \"the API is documented\"\n\
             judge = \"model\"\ninputs = [\"docs/**\"]\n"
        } else {
            "[[task.criterion]]\nid = \"exists\"\ntext = \"the guide exists\"\n\
             run = \"test -f docs/guide.md\"\n"
        };
        // Every tier bound at 0: one task and one criterion are the full tier.
        env.write(
            "gate.toml",
            &format!(
                "[spec]\nid = \"nothing\"\n[[task]]\nid = \"t\"\npaths = [\"src/**\", \"docs/**\"]\n\
                 {criterion}[policy]\ntrivial_max_tasks = 0\ntrivial_max_criteria = 0\n\
                 light_max_tasks = 0\nlight_max_criteria = 0\n"
            ),
        );
        env.write("routing.toml", &routing(&server));
        env.write("src/app.py", "def f():\n    return 1\n");
        env.write("docs/guide.md", "# Guide\n");
        env.write(".gitignore", ".gate/\n");
        env.git(&["init", "-q", "-b", "main"]);
        env.git(&["add", "."]);
        env.git(&["commit", "-qm", "base"]);
        for (path, text) in change {
            env.write(path, text);
        }
        let out = env
            .gate(&["verify", "--base", "main", "--format", "json"])
            .run();
        out.assert_exit(0);
        let doc = out.json();
        assert_eq!(doc["tier"], "full");
        let mut roles: Vec<String> = server
            .requests()
            .iter()
            .map(|r| r.header("x-gate-role").unwrap().to_owned())
            .collect();
        roles.sort();
        assert_eq!(roles, *asked, "{change:?}: requests the server received");
        // The docs reviewer sits on the panel only when docs changed.
        let docs_seated = doc["review"]["specialists"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["role"] == "docs");
        let docs_changed = change.iter().any(|(path, _)| path.starts_with("docs/"));
        assert_eq!(docs_seated, docs_changed, "{change:?}: {doc:#}");
        for (role, why) in skipped {
            let s = specialist(&doc, role);
            assert_eq!(s["status"], "skipped", "{role}");
            assert_eq!(s["reason"], *why, "{role}");
            assert_eq!(s["input_tokens"], 0, "{role}");
            assert_eq!(s["cost_usd"], 0.0, "{role}");
            assert_eq!(s["attempts"], json!([]), "{role}");
        }
    }
}

/// The line at the end of a large changed file that a reviewer flags when
/// it is shown it.
const BACKDOOR: &str = "if request.args.get('k') == 'letmein': grant_admin()  # BACKDOOR";

/// A changed file of 600,000 bytes (a data table) under the sensitive
/// path, with [`BACKDOOR`] after it: far past one request's 256 KiB.
fn large_table(env: &TestEnv) -> usize {
    let mut text = String::from("TABLE = [\n");
    while text.len() < 600_000 - BACKDOOR.len() - 4 {
        text.push_str("    (1, 'row', 0.5),\n");
    }
    text.push_str("]\n");
    text.push_str(BACKDOOR);
    text.push('\n');
    env.write("src/auth/table.py", &text);
    text.len()
}

/// A model that reads what it is sent: the security reviewer flags the
/// backdoor when its request shows it; the coordinator changes nothing.
fn reading_model() -> Reply {
    Reply::computed(|request| {
        let role = request.header("x-gate-role").unwrap_or_default();
        if role == "coordinator" {
            return Reply::openai(&json!({"findings": [], "dropped": []}));
        }
        let findings = if role == "security" && request.text().contains(BACKDOOR) {
            json!([{"severity": "critical", "file": "src/auth/table.py", "line": 1,
                "title": "Hidden backdoor", "detail": "grants admin on a fixed key",
                "confidence": 0.95}])
        } else {
            json!([])
        };
        Reply::openai(&answer(&findings))
    })
}

/// A changed file larger than one request's share is sent in full across
/// requests; when the budget leaves its end unsent, the end is named, as
/// a byte range, on the verdict line and in every format, and the full
/// tier's run is incomplete unless `on_review_cut` says otherwise. A
/// plain PASS never rests on the cut.
#[test]
fn every_changed_byte_is_reviewed_or_said() {
    // (policy, exit, verdict, whether the backdoor was sent)
    let cases = [
        ("", 1, "fail", true),
        ("max_input_tokens = 600000", 4, "incomplete", false),
        (
            "max_input_tokens = 600000\non_review_cut = \"pass\"",
            0,
            "pass",
            false,
        ),
    ];
    for (policy, exit, verdict, sent) in cases {
        let server = ModelServer::start();
        server.default_reply(reading_model());
        let env = full_tier(&server, policy);
        let size = large_table(&env);
        let out = env
            .gate(&[
                "verify",
                "--format",
                "json",
                "--report",
                "sarif=reports/gate.sarif",
                "--report",
                "markdown=reports/comment.md",
                "--report",
                "junit=reports/gate.junit.xml",
            ])
            .run();
        out.assert_exit(exit);
        let doc = out.json();
        assert_eq!(doc["verdict"], verdict, "{policy}: {doc:#}");
        let requests = server.requests();
        let tail_sent = requests.iter().any(|r| r.text().contains(BACKDOOR));
        assert_eq!(tail_sent, sent, "{policy}");
        // The reviewers were asked more than once each when the file went
        // in parts: every byte of the file was in some request.
        let quality = requests
            .iter()
            .filter(|r| r.header("x-gate-role") == Some("quality"))
            .count();
        assert_eq!(quality, if sent { 3 } else { 1 }, "{policy}");
        let range = format!("src/auth/table.py bytes 262144-{}", size - 1);
        let security = specialist(&doc, "security");
        if sent {
            assert!(standing(&doc, "Hidden backdoor").is_some(), "{doc:#}");
            assert_eq!(
                security["coverage"]["bytes_shown"],
                security["coverage"]["bytes_total"]
            );
            assert!(
                security["coverage"].get("cut_ranges").is_none(),
                "{security}"
            );
            continue;
        }
        assert_eq!(
            security["coverage"]["cut_ranges"],
            json!([{"file": "src/auth/table.py", "start": 262_144, "end": size}])
        );
        let sarif = env.read("reports/gate.sarif");
        let markdown = env.read("reports/comment.md");
        let junit = env.read("reports/gate.junit.xml");
        for (format, text) in [
            ("sarif", &sarif),
            ("markdown", &markdown),
            ("junit", &junit),
        ] {
            assert!(
                text.contains(&range),
                "{format} does not name {range}:\n{text}"
            );
        }
        let sarif: Value = serde_json::from_str(&sarif).unwrap();
        let unseen = sarif["runs"][0]["results"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["ruleId"] == "review.unseen")
            .unwrap_or_else(|| panic!("no review.unseen result: {sarif:#}"));
        assert_eq!(unseen["level"], "warning");
        assert_eq!(
            unseen["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
            "src/auth/table.py"
        );
        if verdict == "pass" {
            let line = doc["verdict_line"].as_str().unwrap_or_default().to_owned();
            assert_eq!(doc["qualifier"]["kind"], "under_reviewed", "{doc:#}");
            let why = doc["qualifier"]["why"].as_str().unwrap();
            assert!(
                why.starts_with(&format!("not reviewed: {range} (")),
                "{why} / {line}"
            );
        } else {
            let shown = env.shown(doc["run_id"].as_str().unwrap());
            let reasons = shown["run"]["verdict_reasons"].to_string();
            assert!(
                reasons.contains(&range) && reasons.contains("on_review_cut = \\\"incomplete\\\""),
                "{reasons}"
            );
        }
    }
}

/// With a base, a large file's changed lines go first: when the budget
/// leaves room for one request per reviewer, the backdoor added at the end
/// of a 600,000-byte table is what the reviewers are shown, and the
/// unchanged start is what is named as not reviewed.
#[test]
fn a_large_files_changed_lines_are_sent_first() {
    let server = ModelServer::start();
    server.default_reply(reading_model());
    let env = full_tier(&server, "max_input_tokens = 250000");
    let size = large_table(&env);
    let text = env.read("src/auth/table.py");
    // The base holds the table without the backdoor; the change adds it.
    env.write(
        "src/auth/table.py",
        &text.replace(&format!("{BACKDOOR}\n"), ""),
    );
    env.write(".gitignore", ".gate/\n");
    env.git(&["init", "-q", "-b", "main"]);
    env.git(&["add", "-A"]);
    env.git(&["commit", "-q", "-m", "base"]);
    env.write("src/auth/table.py", &text);
    let out = env
        .gate(&["verify", "--base", "main", "--format", "json"])
        .run();
    out.assert_exit(1);
    let doc = out.json();
    assert!(standing(&doc, "Hidden backdoor").is_some(), "{doc:#}");
    let quality = server
        .requests()
        .into_iter()
        .filter(|r| r.header("x-gate-role") == Some("quality"))
        .count();
    assert_eq!(
        quality, 1,
        "one request per reviewer within the budget: {:#}",
        doc["review"]
    );
    // The last piece (with the change) was shown; the start was not.
    let security = specialist(&doc, "security");
    assert_eq!(
        security["coverage"]["cut_ranges"],
        json!([{"file": "src/auth/table.py", "start": 0, "end": 524_288}]),
        "{security}"
    );
    assert!(size > 524_288);
}
