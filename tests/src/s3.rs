//! A local S3 API for the object-storage tests: moto's server (from
//! `moto[server]` in `scripts/peer-requirements.txt`), one per test on a
//! loopback port, stopped when dropped; and boto3 (which moto brings) to
//! look into and tamper with its bucket as an outsider would.
//!
//! Without moto in `GATE_TEST_PYTHON`'s venv these helpers fail the test
//! with the set-up to run, never pass silently.

use std::net::TcpStream;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::peers::python;
use crate::{GateCommand, free_port};

/// The bucket every test uses.
pub const BUCKET: &str = "gate-bundles";
/// The key prefix the gate is told to write under.
pub const PREFIX: &str = "fleet/ci";

/// A running moto server; killed (its whole process group) when dropped.
pub struct Moto {
    child: Child,
    port: u16,
}

impl Moto {
    /// Starts moto on a free loopback port and creates [`BUCKET`].
    pub fn start() -> Self {
        Self::start_on(free_port())
    }

    /// Starts moto on `port` (to bring a store back where a run found it
    /// down) and creates [`BUCKET`].
    pub fn start_on(port: u16) -> Self {
        let python = python();
        let probe = run_python(&python, "import moto.server, boto3", &[]);
        assert!(
            probe.status.success(),
            "moto is not installed in GATE_TEST_PYTHON's venv ({python}): run \
             `scripts/peer-venv.sh target/peer-venv` (moto[server] is in \
             scripts/peer-requirements.txt; scripts/test does it)\n{}",
            String::from_utf8_lossy(&probe.stderr)
        );
        #[allow(clippy::disallowed_methods)] // tests run the S3 API server for real
        let child = Command::new(&python)
            .args(["-m", "moto.server", "-H", "127.0.0.1", "-p"])
            .arg(port.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start moto with {python}: {e}"));
        let mut moto = Self { child, port };
        let deadline = Instant::now() + Duration::from_secs(30);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Ok(Some(status)) = moto.child.try_wait() {
                panic!("moto exited before it listened on port {port}: {status}");
            }
            assert!(
                Instant::now() < deadline,
                "moto did not listen on port {port} within 30 s"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        moto.boto("s3.create_bucket(Bucket=bucket)", &[]);
        moto
    }

    /// Its port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Its endpoint URL.
    pub fn endpoint(&self) -> String {
        endpoint(self.port)
    }

    /// Every key in [`BUCKET`].
    pub fn keys(&self) -> Vec<String> {
        let out = self.boto(
            "print('\\n'.join(o['Key'] for o in s3.list_objects_v2(Bucket=bucket).get('Contents', [])))",
            &[],
        );
        out.lines().map(str::to_owned).collect()
    }

    /// The bytes of an object.
    pub fn get(&self, key: &str) -> Vec<u8> {
        let out = self.boto(
            "import base64; print(base64.b64encode(s3.get_object(Bucket=bucket, Key=sys.argv[1])['Body'].read()).decode())",
            &[key],
        );
        base64::Engine::decode(&base64::engine::general_purpose::STANDARD, out.trim())
            .expect("boto3 printed base64")
    }

    /// Overwrites an object with the bytes of `file`, straight through the
    /// S3 API (no condition: what an attacker with write access does).
    pub fn overwrite(&self, key: &str, file: &Path) {
        self.boto(
            "s3.put_object(Bucket=bucket, Key=sys.argv[1], Body=open(sys.argv[2], 'rb').read())",
            &[key, file.to_str().expect("a UTF-8 path")],
        );
    }

    /// Deletes an object.
    pub fn delete(&self, key: &str) {
        self.boto("s3.delete_object(Bucket=bucket, Key=sys.argv[1])", &[key]);
    }

    /// Runs `code` with `s3` (a boto3 client on this server), `bucket` and
    /// `sys` in scope; returns its stdout.
    fn boto(&self, code: &str, args: &[&str]) -> String {
        let script = format!(
            "import sys, boto3\ns3 = boto3.client('s3', endpoint_url={:?}, aws_access_key_id='test', \
             aws_secret_access_key='test', region_name='us-east-1')\nbucket = {BUCKET:?}\n{code}\n",
            self.endpoint()
        );
        let out = run_python(&python(), &script, args);
        assert!(
            out.status.success(),
            "boto3 against moto failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        if let Ok(pid) = i32::try_from(self.child.id()) {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        let _ = self.child.wait();
    }
}

/// The endpoint URL of a server on `port` (running or not).
pub fn endpoint(port: u16) -> String {
    format!("http://127.0.0.1:{port}")
}

/// `cmd` told to keep bundles in [`BUCKET`] under [`PREFIX`] on the S3 API
/// at `port`, with moto's test credentials.
pub fn with_store(cmd: GateCommand, port: u16) -> GateCommand {
    cmd.env("GATE_BUNDLE_STORE", format!("s3://{BUCKET}/{PREFIX}"))
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .env("AWS_REGION", "us-east-1")
        .env("AWS_ENDPOINT_URL", endpoint(port))
        .env("AWS_ALLOW_HTTP", "true")
}

/// Runs a Python snippet under a 60 s limit.
fn run_python(python: &str, code: &str, args: &[&str]) -> std::process::Output {
    #[allow(clippy::disallowed_methods)] // tests drive boto3 for real
    Command::new("timeout")
        .args(["60", python, "-c", code])
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {python}: {e}"))
}
