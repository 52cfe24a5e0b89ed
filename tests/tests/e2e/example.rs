//! The example workspace a new user runs first passes offline, and leaves
//! nothing running.

use gate_tests::TestEnv;

#[test]
fn example_workspace_passes_offline() {
    let env = TestEnv::copy_of("examples/shop");
    let out = env.gate(&["verify", "--format", "json"]).run();
    out.assert_exit(0);
    let doc = out.json();
    assert_eq!(doc["verdict"], "pass");
    assert_eq!(doc["tier"], "light");
    for item in doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .chain(doc["criteria"].as_array().unwrap())
    {
        assert_eq!(item["status"], "passed", "{item}");
    }
    assert_eq!(doc["review"]["status"], "did_not_run");
    assert!(
        std::net::TcpStream::connect(("127.0.0.1", 8765)).is_err(),
        "the example's server outlived the run"
    );
}
