//! `gate mcp` driven by the official MCP Python SDK's client (`mcp` on PyPI,
//! in the peer venv) over stdio: every tool listed and called, the runs
//! advisory, an agent's dismissal recorded but never quieting a warning.

use gate_tests::TestEnv;
use gate_tests::model_server::{ModelServer, Reply, routes_to};
use serde_json::{Value, json};

/// The client: lists the tools, then makes the calls given as JSON
/// `[[tool, arguments], …]` (`"$RUN"` in an argument is the run id the
/// first `verify` answered, `"$FINDING"` its first reviewer's warning), printing
/// one JSON line per answer.
const CLIENT: &str = r#"
import asyncio, json, sys
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

gate, workspace, home, calls = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])

async def main():
    params = StdioServerParameters(
        command=gate, args=["mcp"], cwd=workspace,
        env={"HOME": home, "PATH": "/usr/local/bin:/usr/bin:/bin", "NO_COLOR": "1"})
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = await session.list_tools()
            print(json.dumps({"tools": {t.name: t.input_schema for t in tools.tools}}))
            run = finding = None
            for name, args in calls:
                args = json.loads(json.dumps(args).replace("$RUN", run or "").replace("$FINDING", finding or ""))
                result = await session.call_tool(name, args)
                doc = result.structured_content
                if name == "verify" and doc and run is None:
                    run = doc["run_id"]
                    finding = next(f["id"] for f in doc["findings"] if f["severity"] == "warning" and f["role"] != "gate")
                print(json.dumps({"tool": name, "error": bool(result.is_error),
                                  "text": "\n".join(c.text for c in result.content if c.type == "text"),
                                  "structured": doc}))

asyncio.run(main())
"#;

#[test]
fn the_python_sdk_lists_and_calls_every_tool() {
    let env = TestEnv::new();
    env.write(
        "gate.toml",
        "[spec]\nid = \"mcp\"\n[[task]]\nid = \"t\"\npaths = [\"src/**\"]\n\
         [[task.criterion]]\nid = \"written\"\ntext = \"src/fixed.txt exists\"\n\
         run = \"test -f src/fixed.txt\"\n",
    );
    env.write("src/lib.rs", "pub fn f() {}\n");
    env.write("src/fixed.txt", "here\n");
    env.write(
        "docs/review/rules.toml",
        "[[rule]]\nid = \"no-unwrap\"\napplies = [\"**/*.rs\"]\njudge = false\n\
         statement = \"Library code does not unwrap\"\nfix = \"Return the error\"\n",
    );
    // The reviewer raises one warning on the change.
    let server = ModelServer::start();
    server.default_reply(Reply::openai(&json!({"findings": [{"severity": "warning",
        "file": "src/lib.rs", "line": 1, "title": "f has no documentation",
        "detail": "public items are documented", "confidence": 0.9}],
        "criteria": [], "rules": []})));
    // The MCP server's runs are advisory: they review only with the table
    // the user keeps for advisory runs.
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join(".config/gate");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("advisory-routing.toml"),
        format!(
            "[provider.local]\napi = \"openai\"\nbase_url = \"{}/v1\"\n\n\
             [model.m]\nprovider = \"local\"\nname = \"m\"\n\n{}",
            server.url(),
            routes_to("m")
        ),
    )
    .unwrap();
    let calls = serde_json::json!([
        ["rules", {"files": ["src/lib.rs"]}],
        ["verify", {}],
        ["show_run", {"run": "$RUN", "format": "markdown"}],
        ["dismiss", {"run": "$RUN", "finding": "$FINDING", "reason": "the model is wrong"}],
        ["verify", {}],
        ["show_run", {"run": "no-such-run"}],
    ]);
    #[allow(
        clippy::disallowed_methods,
        reason = "the test runs the real SDK client"
    )]
    let out = std::process::Command::new(gate_tests::peers::python())
        .args(["-c", CLIENT])
        .arg(gate_tests::gate_bin())
        .arg(env.path())
        .arg(home.path())
        .arg(calls.to_string())
        .output()
        .expect("run the MCP client");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the client failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON answer per line"))
        .collect();
    let tools = lines[0]["tools"].as_object().unwrap();
    let mut names: Vec<&str> = tools.keys().map(String::as_str).collect();
    names.sort_unstable();
    assert_eq!(names, ["dismiss", "rules", "show_run", "verify"]);
    assert_eq!(tools["rules"]["required"][0], "files");
    assert_eq!(
        tools["dismiss"]["required"],
        serde_json::json!(["run", "finding", "reason"])
    );

    let [rules, verify, shown, dismissed, again, missing] = &lines[1..] else {
        panic!("expected six answers: {lines:#?}");
    };
    assert_eq!(rules["error"], false, "{rules}");
    assert_eq!(
        rules["structured"]["rules"][0]["id"], "no-unwrap",
        "{rules}"
    );

    assert_eq!(verify["error"], false, "{verify}");
    let doc = &verify["structured"];
    assert_eq!(doc["verdict"], "pass", "{doc}");
    assert_eq!(doc["advisory"], true);
    let run = doc["run_id"].as_str().unwrap();
    assert_eq!(verify["text"], format!("PASS (run {run}, advisory)"));
    // Advisory: nothing in the workspace's own state.
    assert!(!env.path().join(".gate").exists());

    assert_eq!(shown["error"], false, "{shown}");
    assert!(
        shown["text"]
            .as_str()
            .unwrap()
            .contains("f has no documentation"),
        "{shown}"
    );

    assert_eq!(dismissed["error"], false, "{dismissed}");
    assert!(
        dismissed["text"]
            .as_str()
            .unwrap()
            .contains("recorded as the agent's"),
        "{dismissed}"
    );
    // The warning is still raised, the agent's dismissal shown beside it.
    let warning = again["structured"]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["severity"] == "warning" && f["role"] != "gate")
        .expect("the dismissed warning is still raised");
    assert!(
        warning["detail"]
            .as_str()
            .unwrap()
            .contains("The agent dismissed this on run"),
        "{warning}"
    );

    assert_eq!(missing["error"], true, "{missing}");
}
