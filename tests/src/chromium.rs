//! Headless Chromium driven over the DevTools protocol, for tests of pages
//! the gate writes: what the page's DOM holds, a screenshot, what it tried
//! to load, and what it logged as an error.
//!
//! The protocol runs over `--remote-debugging-pipe` (file descriptors 3 and
//! 4, wired to two named pipes by `sh`), so no port is opened and no
//! WebSocket library is needed. Every wait is bounded; the browser's whole
//! process group is killed when the [`Browser`] is dropped.

use std::fs::File;
use std::io::{BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{Value, json};

/// How long one protocol command may take.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(30);

/// The flags every test browser starts with: no sandbox (containers), no
/// GPU, nothing fetched in the background, a fresh profile.
pub const FLAGS: &[&str] = &[
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-default-apps",
    "--hide-scrollbars",
    "--remote-debugging-pipe",
];

/// The Chromium binary: `$CHROMIUM`, else the first of Debian's and other
/// usual names on `PATH`. Fails the test, saying how to install it, when
/// there is none: a missing browser must never pass silently.
pub fn binary() -> PathBuf {
    if let Some(p) = std::env::var_os("CHROMIUM") {
        return PathBuf::from(p);
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for name in ["chromium", "chromium-browser", "google-chrome", "chrome"] {
        for dir in std::env::split_paths(&path) {
            let candidate = dir.join(name);
            if candidate.is_file() {
                return candidate;
            }
        }
    }
    panic!(
        "Chromium is not installed, and the HTML report is tested in it: install Debian's \
         package (`sudo apt-get install chromium`; scripts/test does this) or point CHROMIUM \
         at a Chromium binary"
    );
}

/// What a page showed and did.
#[derive(Debug)]
pub struct PageReport {
    /// The value of the expression evaluated once the page had loaded.
    pub value: Value,
    /// A PNG screenshot of the viewport.
    pub screenshot: Vec<u8>,
    /// Console errors, uncaught exceptions and error log entries.
    pub errors: Vec<String>,
    /// Every URL the page requested, itself included.
    pub requests: Vec<String>,
}

/// A running headless Chromium.
pub struct Browser {
    child: Child,
    pipe_in: File,
    pipe_out: Receiver<Value>,
    next_id: u64,
    /// Events read while waiting for a reply, oldest first.
    events: Vec<Value>,
    _dir: tempfile::TempDir,
}

#[allow(clippy::disallowed_methods)] // tests drive real tools
fn mkfifo(path: &Path) {
    let ok = Command::new("mkfifo")
        .arg(path)
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "mkfifo {} failed", path.display());
}

/// Runs `open` on a thread and waits at most `timeout` for it (opening a
/// named pipe blocks until the other end opens it).
fn open_within(path: PathBuf, write: bool, timeout: Duration) -> Result<File, String> {
    let (tx, rx) = channel();
    let shown = path.display().to_string();
    std::thread::spawn(move || {
        let f = if write {
            std::fs::OpenOptions::new().write(true).open(&path)
        } else {
            File::open(&path)
        };
        let _ = tx.send(f);
    });
    match rx.recv_timeout(timeout) {
        Ok(Ok(f)) => Ok(f),
        Ok(Err(e)) => Err(format!("cannot open {shown}: {e}")),
        Err(_) => Err(format!("Chromium did not open {shown} within {timeout:?}")),
    }
}

impl Browser {
    /// Starts Chromium with [`FLAGS`] and a fresh `--user-data-dir`.
    pub fn launch() -> Result<Self, String> {
        let bin = binary();
        let dir = tempfile::Builder::new()
            .prefix("gate-chromium-")
            .tempdir()
            .map_err(|e| e.to_string())?;
        let (to_path, from_path) = (dir.path().join("in"), dir.path().join("out"));
        mkfifo(&to_path);
        mkfifo(&from_path);
        let profile = dir.path().join("profile");
        #[allow(clippy::disallowed_methods)] // tests drive real tools
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg(r#"exec "$0" "$@" 3<"$GATE_CDP_IN" 4>"$GATE_CDP_OUT""#)
            .arg(&bin)
            .args(FLAGS)
            .arg(format!("--user-data-dir={}", profile.display()))
            .arg("about:blank")
            .env("GATE_CDP_IN", &to_path)
            .env("GATE_CDP_OUT", &from_path)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0);
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", bin.display()))?;
        let opened = open_within(to_path, true, COMMAND_TIMEOUT)
            .and_then(|to| open_within(from_path, false, COMMAND_TIMEOUT).map(|from| (to, from)));
        let (pipe_in, from) = match opened {
            Ok(pair) => pair,
            Err(e) => {
                kill_group(&mut child);
                return Err(e);
            }
        };
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(from);
            let mut buf = Vec::new();
            let mut byte = vec![0u8; 1 << 16];
            loop {
                let n = match reader.read(&mut byte) {
                    Ok(0) | Err(_) => return,
                    Ok(n) => n,
                };
                buf.extend_from_slice(&byte[..n]);
                while let Some(end) = buf.iter().position(|&b| b == 0) {
                    let message: Vec<u8> = buf.drain(..=end).collect();
                    if let Ok(v) = serde_json::from_slice(&message[..message.len() - 1])
                        && tx.send(v).is_err()
                    {
                        return;
                    }
                }
            }
        });
        Ok(Self {
            child,
            pipe_in,
            pipe_out: rx,
            next_id: 1,
            events: Vec::new(),
            _dir: dir,
        })
    }

    /// Sends a command (to a page when `session` is given) and waits for its reply.
    pub fn call(
        &mut self,
        session: Option<&str>,
        method: &str,
        params: &Value,
    ) -> Result<Value, String> {
        let id = self.next_id;
        self.next_id += 1;
        let mut message = json!({"id": id, "method": method, "params": params});
        if let Some(s) = session {
            message["sessionId"] = json!(s);
        }
        let mut bytes = serde_json::to_vec(&message).map_err(|e| e.to_string())?;
        bytes.push(0);
        self.pipe_in
            .write_all(&bytes)
            .map_err(|e| format!("{method}: cannot write to Chromium: {e}"))?;
        let deadline = Instant::now() + COMMAND_TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.pipe_out.recv_timeout(left) {
                Ok(v) if v.get("id").and_then(Value::as_u64) == Some(id) => {
                    if let Some(err) = v.get("error") {
                        return Err(format!("{method}: {err}"));
                    }
                    return Ok(v.get("result").cloned().unwrap_or(Value::Null));
                }
                Ok(v) => {
                    if v.get("method").is_some() {
                        self.events.push(v);
                    }
                }
                Err(RecvTimeoutError::Timeout) => {
                    return Err(format!("{method}: no reply within {COMMAND_TIMEOUT:?}"));
                }
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(format!("{method}: Chromium closed the pipe"));
                }
            }
        }
    }

    /// Waits for an event of `method` in `session`.
    fn wait_event(&mut self, session: &str, method: &str) -> Result<(), String> {
        let matches = |v: &Value| {
            v.get("method").and_then(Value::as_str) == Some(method)
                && v.get("sessionId").and_then(Value::as_str) == Some(session)
        };
        if self.events.iter().any(matches) {
            return Ok(());
        }
        let deadline = Instant::now() + COMMAND_TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.pipe_out.recv_timeout(left) {
                Ok(v) => {
                    let hit = matches(&v);
                    self.events.push(v);
                    if hit {
                        return Ok(());
                    }
                }
                Err(_) => return Err(format!("no {method} within {COMMAND_TIMEOUT:?}")),
            }
        }
    }

    /// Opens `url` in a fresh tab of `width` × `height` CSS pixels (a phone
    /// when `mobile`), waits for it to load, evaluates `expression` (its
    /// value is returned, so it should produce JSON-able data), and takes a
    /// screenshot.
    pub fn inspect(
        &mut self,
        url: &str,
        (width, height): (u32, u32),
        mobile: bool,
        expression: &str,
    ) -> Result<PageReport, String> {
        let target = self.call(None, "Target.createTarget", &json!({"url": "about:blank"}))?;
        let target_id = target["targetId"].as_str().ok_or("no targetId")?.to_owned();
        let attached = self.call(
            None,
            "Target.attachToTarget",
            &json!({"targetId": target_id, "flatten": true}),
        )?;
        let session = attached["sessionId"]
            .as_str()
            .ok_or("no sessionId")?
            .to_owned();
        let s = Some(session.as_str());
        for domain in [
            "Page.enable",
            "Runtime.enable",
            "Log.enable",
            "Network.enable",
        ] {
            self.call(s, domain, &json!({}))?;
        }
        self.call(
            s,
            "Emulation.setDeviceMetricsOverride",
            &json!({"width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile}),
        )?;
        let first_event = self.events.len();
        let nav = self.call(s, "Page.navigate", &json!({"url": url}))?;
        if let Some(err) = nav.get("errorText").and_then(Value::as_str) {
            return Err(format!("cannot open {url}: {err}"));
        }
        self.wait_event(&session, "Page.loadEventFired")?;
        let evaluated = self.call(
            s,
            "Runtime.evaluate",
            &json!({"expression": expression, "returnByValue": true}),
        )?;
        if let Some(ex) = evaluated.get("exceptionDetails") {
            return Err(format!("the check's own expression failed: {ex}"));
        }
        let value = evaluated["result"]["value"].clone();
        let shot = self.call(s, "Page.captureScreenshot", &json!({"format": "png"}))?;
        let screenshot = base64::engine::general_purpose::STANDARD
            .decode(shot["data"].as_str().ok_or("no screenshot data")?)
            .map_err(|e| format!("screenshot is not base64: {e}"))?;
        let mut errors = Vec::new();
        let mut requests = Vec::new();
        for e in &self.events[first_event..] {
            if e.get("sessionId").and_then(Value::as_str) != Some(session.as_str()) {
                continue;
            }
            let p = &e["params"];
            match e["method"].as_str().unwrap_or_default() {
                "Runtime.consoleAPICalled"
                    if matches!(p["type"].as_str(), Some("error" | "assert")) =>
                {
                    errors.push(format!("console.{}: {}", p["type"], p["args"]));
                }
                "Runtime.exceptionThrown" => {
                    errors.push(format!("exception: {}", p["exceptionDetails"]));
                }
                "Log.entryAdded" if p["entry"]["level"] == "error" => {
                    errors.push(format!("log: {}", p["entry"]["text"]));
                }
                "Network.requestWillBeSent" => {
                    requests.push(p["request"]["url"].as_str().unwrap_or_default().to_owned());
                }
                "Network.loadingFailed" => errors.push(format!("load failed: {p}")),
                _ => {}
            }
        }
        self.call(None, "Target.closeTarget", &json!({"targetId": target_id}))?;
        Ok(PageReport {
            value,
            screenshot,
            errors,
            requests,
        })
    }
}

fn kill_group(child: &mut Child) {
    #[allow(clippy::disallowed_methods)] // the browser's helpers share its process group
    let _ = Command::new("kill")
        .args(["-9", "--", &format!("-{}", child.id())])
        .status();
    let _ = child.wait();
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.call(None, "Browser.close", &json!({}));
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        // Whatever is left of the group (renderers, the zygote) goes too.
        kill_group(&mut self.child);
    }
}

/// Checks that `bytes` is a whole PNG: signature, chunks with correct
/// CRCs, an IHDR first and an IEND last. Returns (width, height).
pub fn png_size(bytes: &[u8]) -> Result<(u32, u32), String> {
    const SIGNATURE: &[u8] = b"\x89PNG\r\n\x1a\n";
    if !bytes.starts_with(SIGNATURE) {
        return Err("no PNG signature".into());
    }
    let mut at = SIGNATURE.len();
    let mut size = None;
    let mut ended = false;
    while at < bytes.len() {
        let header = bytes.get(at..at + 8).ok_or("truncated chunk header")?;
        let len = u32::from_be_bytes([header[0], header[1], header[2], header[3]]) as usize;
        let kind = &header[4..8];
        let body = bytes
            .get(at + 8..at + 8 + len)
            .ok_or("truncated chunk body")?;
        let crc = bytes
            .get(at + 8 + len..at + 12 + len)
            .ok_or("truncated chunk CRC")?;
        let want = u32::from_be_bytes([crc[0], crc[1], crc[2], crc[3]]);
        if crc32(&[kind, body]) != want {
            return Err(format!(
                "bad CRC in chunk {}",
                String::from_utf8_lossy(kind)
            ));
        }
        if size.is_none() {
            if kind != b"IHDR" || len != 13 {
                return Err("first chunk is not IHDR".into());
            }
            size = Some((
                u32::from_be_bytes([body[0], body[1], body[2], body[3]]),
                u32::from_be_bytes([body[4], body[5], body[6], body[7]]),
            ));
        }
        at += 12 + len;
        if kind == b"IEND" {
            ended = true;
            break;
        }
    }
    if !ended || at != bytes.len() {
        return Err("no IEND at the end".into());
    }
    size.ok_or_else(|| "no IHDR".into())
}

/// CRC-32 (ISO-HDLC, as PNG uses) over the concatenated parts.
fn crc32(parts: &[&[u8]]) -> u32 {
    let mut crc = 0xFFFF_FFFFu32;
    for part in parts {
        for &b in *part {
            crc ^= u32::from(b);
            for _ in 0..8 {
                crc = if crc & 1 == 1 {
                    (crc >> 1) ^ 0xEDB8_8320
                } else {
                    crc >> 1
                };
            }
        }
    }
    !crc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc_matches_the_check_value() {
        assert_eq!(crc32(&[b"1234", b"56789"]), 0xCBF4_3926);
    }
}
