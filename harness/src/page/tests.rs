//! Page checks against a real browser and fixture pages served on loopback.
//!
//! These tests need Debian's `chromium` (or `GATE_CHROMIUM`) and axe-core's
//! `axe.min.js` (`GATE_TEST_AXE`, else `target/axe-core/` as
//! `scripts/axe-core.sh` installs it; `scripts/test` does both). Without them
//! they fail, saying so: they never pass without looking.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::*;
use crate::testutil::bounded;

/// The Chromium the tests drive.
fn chromium() -> PathBuf {
    let path = std::env::var_os("GATE_CHROMIUM")
        .map_or_else(|| PathBuf::from("/usr/bin/chromium"), PathBuf::from);
    assert!(
        path.is_file(),
        "Chromium is missing at {}: install Debian's `chromium` (scripts/test does) or set GATE_CHROMIUM",
        path.display()
    );
    path
}

/// Starts the browser once outside any check and waits for it, so the
/// cases time the browser and not a cold machine: a first start after an
/// install reads the whole program from disk and builds font caches, which
/// under a loaded test run has taken longer than a check's start-up bound.
#[allow(
    clippy::disallowed_methods,
    reason = "a plain wait for the browser, outside anything the harness runs"
)]
fn warm(browser: &Path) {
    let profile = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new(browser)
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--dump-dom"])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg("about:blank")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > Duration::from_secs(180) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("Chromium did not render about:blank within 180 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// axe-core's `axe.min.js`.
fn axe() -> PathBuf {
    let path = std::env::var_os("GATE_TEST_AXE").map_or_else(
        || {
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../target/axe-core/node_modules/axe-core/axe.min.js")
        },
        PathBuf::from,
    );
    assert!(
        path.is_file(),
        "axe-core is missing at {}: run `scripts/axe-core.sh target/axe-core` (scripts/test does) or set GATE_TEST_AXE",
        path.display()
    );
    path
}

const GOOD: &str = r#"<!doctype html><html><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1"><title>Shop</title>
<style>body{margin:0;font:16px sans-serif;color:#111;background:#fff} main{padding:16px;max-width:100%}
button{background:#0b5;color:#000;border:0;padding:8px}</style></head>
<body><main><h1>Checkout</h1><p>Your basket holds two items.</p><button>Pay</button></main></body></html>"#;

const WIDE: &str = r#"<!doctype html><html><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1"><title>Wide</title>
<style>body{margin:0;font:16px sans-serif;color:#111} .table{width:800px;background:#eee}</style></head>
<body><main><h1>Orders</h1><div id="orders" class="table">a table too wide for a phone</div></main></body></html>"#;

const FAINT: &str = r#"<!doctype html><html><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1"><title>Faint</title>
<style>body{margin:0;font:16px sans-serif;background:#fff} .hint{color:#bbb}</style></head>
<body><main><h1 style="color:#111">Sign in</h1><p class="hint">Forgot your password?</p></main></body></html>"#;

/// A page whose one image is missing, and answers last.
const LATE_IMAGE: &str = r#"<!doctype html><html><head><meta name="viewport" content="width=device-width">
<style>body{margin:0;font:16px sans-serif}</style></head>
<body><main><h1>Catalogue</h1><img src="/missing.png" alt="" width="10" height="10"></main></body></html>"#;

/// A loopback HTTP server for fixture pages: `/good`, `/wide`, `/faint`,
/// `/error` (500), `/hang` (never answers), `/private` (200 only with the
/// right header and cookie, else 401).
struct Fixtures {
    port: u16,
    stopping: Arc<AtomicBool>,
}

impl Fixtures {
    fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let stopping = Arc::new(AtomicBool::new(false));
        let stop = Arc::clone(&stopping);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stop.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let stop = Arc::clone(&stop);
                std::thread::spawn(move || serve(stream, &stop));
            }
        });
        Self { port, stopping }
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }
}

impl Drop for Fixtures {
    fn drop(&mut self) {
        self.stopping.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

fn serve(mut stream: TcpStream, stop: &AtomicBool) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut first = String::new();
    if reader.read_line(&mut first).is_err() {
        return;
    }
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line.trim().is_empty() {
            break;
        }
        headers.push(line.trim().to_ascii_lowercase());
    }
    let path = first.split_whitespace().nth(1).unwrap_or("/").to_owned();
    let (status, body) = match path.as_str() {
        "/good" => ("200 OK", GOOD),
        "/wide" => ("200 OK", WIDE),
        "/faint" => ("200 OK", FAINT),
        "/late-image" => ("200 OK", LATE_IMAGE),
        // Finishes after the document: a navigation's response must not
        // be taken from it.
        "/missing.png" => {
            std::thread::sleep(Duration::from_millis(300));
            ("404 Not Found", "")
        }
        "/error" => ("500 Internal Server Error", "<h1>boom</h1>"),
        "/hang" => {
            while !stop.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(50));
            }
            return;
        }
        "/private"
            if headers.iter().any(|h| h == "authorization: bearer t0k")
                && headers
                    .iter()
                    .any(|h| h.starts_with("cookie:") && h.contains("session=s3cr")) =>
        {
            ("200 OK", GOOD)
        }
        "/private" => ("401 Unauthorized", "<h1>sign in</h1>"),
        _ => ("404 Not Found", "<h1>no such page</h1>"),
    };
    let _ = write!(
        stream,
        "HTTP/1.1 {status}\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
}

fn capture(url: String, out_dir: &Path) -> PageCapture {
    PageCapture {
        url,
        headers: Vec::new(),
        cookies: Vec::new(),
        browser: Ok(chromium()),
        out_dir: out_dir.to_path_buf(),
        load_timeout: Duration::from_secs(3),
        overflow: true,
        contrast: Contrast::Axe(axe()),
    }
}

fn credential(name: &str, env: &str, value: Option<&str>) -> Credential {
    Credential {
        name: name.into(),
        env: env.into(),
        value: value.map(str::to_owned),
    }
}

/// Browsers this test process started that still run: their command line
/// names a profile folder carrying our pid.
fn our_browsers() -> Vec<String> {
    let marker = format!("gate-chromium-{}-", std::process::id());
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(Result::ok)
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains(&marker))
        .collect()
}

/// Every fixture page: whether it passes, what its failure says, and which
/// screenshots it leaves.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_are_captured_measured_or_failed_with_the_browser_s_words() {
    warm(&chromium());
    let fixtures = Fixtures::start();
    let ws = tempfile::tempdir().unwrap();
    let refused = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        drop(l);
        format!("http://127.0.0.1:{port}/")
    };
    type Tweak = fn(&mut PageCapture);
    // (name, url, tweak, passes, text every problem must hold, shots written)
    type Case = (&'static str, String, Tweak, bool, Vec<&'static str>, usize);
    let cases: Vec<Case> = vec![
        (
            "a good page",
            fixtures.url("/good"),
            |_| {},
            true,
            vec![],
            2,
        ),
        (
            "a page whose image is missing",
            fixtures.url("/late-image"),
            |_| {},
            true,
            vec![],
            2,
        ),
        (
            "an HTTP error",
            fixtures.url("/error"),
            |_| {},
            false,
            vec!["answered HTTP 500 Internal Server Error at 1440×900"],
            0,
        ),
        (
            "a page that never answers",
            fixtures.url("/hang"),
            |_| {},
            false,
            vec!["did not load within 3 s at 1440×900"],
            0,
        ),
        (
            "nobody listening",
            refused.clone(),
            |_| {},
            false,
            vec!["did not load at 1440×900", "ERR_CONNECTION_REFUSED"],
            0,
        ),
        (
            "overflow at phone width",
            fixtures.url("/wide"),
            |_| {},
            false,
            vec![
                "horizontal overflow at 390×844: the page is 800 px wide in a 390 px viewport; 1 element reaches past its edge",
            ],
            2,
        ),
        (
            "overflow not checked",
            fixtures.url("/wide"),
            |c| c.overflow = false,
            true,
            vec![],
            2,
        ),
        (
            "text below AA contrast",
            fixtures.url("/faint"),
            |_| {},
            false,
            vec!["1 text element below the WCAG AA contrast ratio"],
            2,
        ),
        (
            "contrast not checked",
            fixtures.url("/faint"),
            |c| c.contrast = Contrast::Off,
            true,
            vec![],
            2,
        ),
        (
            "axe-core missing",
            fixtures.url("/good"),
            |c| c.contrast = Contrast::Missing("axe-core not found: set GATE_AXE_CORE".into()),
            false,
            vec!["axe-core not found: set GATE_AXE_CORE"],
            2,
        ),
        (
            "signed in with a header and a cookie",
            fixtures.url("/private"),
            |c| {
                c.headers = vec![credential("Authorization", "APP_AUTH", Some("Bearer t0k"))];
                c.cookies = vec![credential("session", "APP_SESSION", Some("s3cr"))];
            },
            true,
            vec![],
            2,
        ),
        (
            "not signed in",
            fixtures.url("/private"),
            |_| {},
            false,
            vec!["answered HTTP 401 Unauthorized"],
            0,
        ),
        (
            "a credential whose variable is not set",
            fixtures.url("/private"),
            |c| c.cookies = vec![credential("session", "APP_SESSION", None)],
            false,
            vec!["cookie `session` takes its value from $APP_SESSION, which is not set"],
            0,
        ),
        (
            "no browser",
            fixtures.url("/good"),
            |c| c.browser = Err("Chromium not found".into()),
            false,
            vec!["Chromium not found"],
            0,
        ),
    ];
    let mut failures = Vec::new();
    for (i, (name, url, tweak, passes, says, shots)) in cases.into_iter().enumerate() {
        let out = ws.path().join(format!("case{i}"));
        let mut c = capture(url, &out);
        tweak(&mut c);
        let outcome = bounded(Box::pin(check(
            "home",
            &c,
            ws.path(),
            64 * 1024,
            &crate::testutil::launcher(),
        )))
        .await;
        let reason = outcome.problems.join("; ");
        let written: Vec<(u32, u32)> = VIEWPORTS
            .iter()
            .filter_map(|v| std::fs::read(shot_path(&out, "home", *v)).ok())
            .filter_map(|b| png_size(&b))
            .collect();
        let want_sizes: Vec<(u32, u32)> = VIEWPORTS[..shots.min(2)]
            .iter()
            .map(|v| (v.width, v.height))
            .collect();
        if outcome.passed() != passes
            || !says.iter().all(|s| reason.contains(s))
            || written != want_sizes
            || outcome.shots.iter().map(|s| s.size).collect::<Vec<_>>() != want_sizes
        {
            failures.push(format!(
                "{name}: passed {} (want {passes}), reason `{reason}`, shots {written:?} (want {want_sizes:?})",
                outcome.passed()
            ));
        }
        if name == "overflow at phone width"
            && !outcome
                .locations
                .iter()
                .any(|l| l.message.contains("`div#orders` spans 0..800 px"))
        {
            failures.push(format!(
                "{name}: offending element not named: {:?}",
                outcome.locations
            ));
        }
        if name == "text below AA contrast"
            && !outcome.locations.iter().any(|l| {
                l.message.contains("needs 4.5:1") && l.message.contains("(#bbbbbb on #ffffff): `p`")
            })
        {
            failures.push(format!(
                "{name}: element not named: {:?}",
                outcome.locations
            ));
        }
        let left = our_browsers();
        if !left.is_empty() {
            failures.push(format!("{name}: browser processes left behind: {left:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn png_sizes_come_from_the_header() {
    let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
    png.extend(1440_u32.to_be_bytes());
    png.extend(900_u32.to_be_bytes());
    assert_eq!(png_size(&png), Some((1440, 900)));
    assert_eq!(png_size(&png[..20]), None);
    assert_eq!(png_size(b"GIF89a and more bytes than twenty-four"), None);
}

#[test]
fn credentials_never_show_their_value() {
    let c = credential("Authorization", "APP_AUTH", Some("Bearer sekrit"));
    let shown = format!("{c:?}");
    assert!(
        !shown.contains("sekrit") && shown.contains("APP_AUTH"),
        "{shown}"
    );
}
