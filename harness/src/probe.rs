//! Readiness probes for service checks.
//!
//! A service is ready when every probe its `starts` names succeeds within
//! `within_s` (TCP connect, an HTTP GET answering 2xx, a text on its output);
//! with no probe, when it is still running after `within_s`. It is not ready
//! if it exits first. Every failure is one line saying what was last seen.
//!
//! The network probes reach the service where it listens: from the gate's
//! own process, or, when the run has a network namespace of its own, from a
//! [`Helper`] subprocess inside it that runs the same probes.

use std::path::Path;
use std::time::{Duration, Instant};

use gate_specs::Starts;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::process::{ProcessGroup, describe_status};
use crate::sandbox::{Helper, Launcher};

/// How often the probes are tried.
const POLL: Duration = Duration::from_millis(50);

/// The most one probe attempt may take (connect, request, answer).
const ATTEMPT: Duration = Duration::from_secs(2);

/// The most of an HTTP answer read to find its status line.
const STATUS_LINE_MAX: usize = 8 * 1024;

/// How long past its own deadline a helper may take to answer.
const HELPER_GRACE: Duration = Duration::from_secs(5);

/// Bytes of a helper's output kept (its answer is one line).
const HELPER_OUTPUT: usize = 4096;

/// One network readiness probe.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Probe {
    Tcp(String),
    Http(String),
}

/// Waits until the service in `group` is ready by the rules of `starts`;
/// the error is the one-line reason it is not. The network probes run as
/// the service's `launcher` says: inside the run's network namespace when
/// it has one (a helper started in `cwd`).
pub async fn await_ready(
    group: &mut ProcessGroup,
    starts: &Starts,
    launcher: &Launcher,
    cwd: &Path,
) -> Result<(), String> {
    let within = Duration::from_secs(starts.within_s());
    let deadline = Instant::now() + within;
    let probes = probes(starts)?;
    let not_ready = |why: String| format!("not ready within {} s: {why}", starts.within_s());
    if probes.is_empty() && starts.ready_log.is_none() {
        return tokio::select! {
            status = group.wait() => Err(exited_early(status)),
            () = tokio::time::sleep_until(deadline.into()) => Ok(()),
        };
    }
    if !probes.is_empty() {
        let reached = async {
            match launcher.helpers() {
                None => until_reachable(&probes, deadline).await,
                Some(helpers) => in_namespace(starts, &helpers, cwd, deadline).await,
            }
        };
        tokio::select! {
            status = group.wait() => return Err(exited_early(status)),
            reached = reached => reached.map_err(not_ready)?,
        }
    }
    if let Some(text) = &starts.ready_log {
        loop {
            if group.saw_text() {
                break;
            }
            if let Some(status) = group.try_status() {
                return Err(exited_early(Ok(status)));
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(not_ready(format!(
                    "`{text}` has not appeared on its output"
                )));
            }
            tokio::select! {
                status = group.wait() => return Err(exited_early(status)),
                () = tokio::time::sleep(POLL.min(deadline - now)) => {}
            }
        }
    }
    Ok(())
}

/// Tries `tcp` and `http` until both answer, at most until `deadline`: what
/// a [`Helper::Ready`] does inside the run's network namespace.
pub(crate) async fn reachable(
    tcp: Option<String>,
    http: Option<String>,
    deadline: Instant,
) -> Result<(), String> {
    let starts = Starts {
        ready_tcp: tcp,
        ready_http: http,
        ..Starts::default()
    };
    until_reachable(&probes(&starts)?, deadline).await
}

/// Tries every probe until all answer in one round; the error is the last
/// failure once `deadline` has passed.
async fn until_reachable(probes: &[Probe], deadline: Instant) -> Result<(), String> {
    loop {
        let mut failure = None;
        for probe in probes {
            if let Err(why) = attempt(probe, deadline).await {
                failure = Some(why);
                break;
            }
        }
        let Some(why) = failure else {
            return Ok(());
        };
        let now = Instant::now();
        if now >= deadline {
            return Err(why);
        }
        tokio::time::sleep(POLL.min(deadline - now)).await;
    }
}

/// Runs the network probes of `starts` in a helper inside the run's network
/// namespace; the error is the helper's last failure.
async fn in_namespace(
    starts: &Starts,
    helpers: &Launcher,
    cwd: &Path,
    deadline: Instant,
) -> Result<(), String> {
    let Some(namespace) = helpers.namespace() else {
        return Err("no network namespace to probe in".to_owned());
    };
    let helper = Helper::Ready {
        tcp: starts.ready_tcp.clone(),
        http: starts.ready_http.clone(),
        within: deadline.saturating_duration_since(Instant::now()),
    };
    let argv = helper.argv(namespace);
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let mut probe = ProcessGroup::spawn_argv(&argv, cwd, HELPER_OUTPUT, None, helpers)
        .map_err(|e| format!("the readiness probe could not start: {e}"))?;
    let limit = deadline.saturating_duration_since(Instant::now()) + ATTEMPT + HELPER_GRACE;
    let status = tokio::select! {
        status = probe.wait() => status.ok(),
        () = tokio::time::sleep(limit) => None,
    };
    let Some(status) = status else {
        probe.stop().await;
        return Err("the readiness probe did not answer".to_owned());
    };
    let output = probe.finish().await;
    let said = String::from_utf8_lossy(&output.bytes);
    let said = said
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .map(str::trim);
    match (status.success(), said) {
        (true, _) => Ok(()),
        (false, Some(why)) => Err(why.to_owned()),
        (false, None) => Err(format!("the readiness probe {}", describe_status(status))),
    }
}

fn exited_early(status: std::io::Result<std::process::ExitStatus>) -> String {
    match status {
        Ok(status) => format!("{} before becoming ready", describe_status(status)),
        Err(e) => format!("cannot wait for the service: {e}"),
    }
}

/// The network probes `starts` names; an unsupported one is an error at once.
fn probes(starts: &Starts) -> Result<Vec<Probe>, String> {
    let mut probes = Vec::new();
    if let Some(addr) = &starts.ready_tcp {
        probes.push(Probe::Tcp(addr.clone()));
    }
    if let Some(url) = &starts.ready_http {
        if url.starts_with("https://") {
            return Err(format!("https readiness probes are not supported: {url}"));
        }
        if !url.starts_with("http://") {
            return Err(format!("ready_http needs an http:// URL: {url}"));
        }
        probes.push(Probe::Http(url.clone()));
    }
    Ok(probes)
}

/// Tries one probe once, giving up at `deadline` (but trying at least briefly).
async fn attempt(probe: &Probe, deadline: Instant) -> Result<(), String> {
    let limit = deadline
        .saturating_duration_since(Instant::now())
        .clamp(Duration::from_millis(100), ATTEMPT);
    let timed_out = |what: &str| format!("{what} did not answer within {} ms", limit.as_millis());
    match probe {
        Probe::Tcp(addr) => tokio::time::timeout(limit, tcp(addr))
            .await
            .unwrap_or_else(|_| Err(timed_out(addr))),
        Probe::Http(url) => tokio::time::timeout(limit, http(url))
            .await
            .unwrap_or_else(|_| Err(timed_out(url))),
    }
}

/// Connects to `addr` (`host:port`).
async fn tcp(addr: &str) -> Result<(), String> {
    TcpStream::connect(addr)
        .await
        .map(drop)
        .map_err(|e| connect_error(addr, &e))
}

fn connect_error(target: &str, e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::ConnectionRefused => format!("{target} refused connection"),
        _ => format!("{target}: {e}"),
    }
}

/// GETs an `http://` URL and checks for a 2xx status.
async fn http(url: &str) -> Result<(), String> {
    let (authority, path) = split_url(url)?;
    let addr = if has_port(authority) {
        authority.to_owned()
    } else {
        format!("{authority}:80")
    };
    let mut stream = TcpStream::connect(&addr)
        .await
        .map_err(|e| connect_error(url, &e))?;
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: {authority}\r\nUser-Agent: gate-readiness\r\nAccept: */*\r\nConnection: close\r\n\r\n"
    );
    stream
        .write_all(request.as_bytes())
        .await
        .map_err(|e| format!("{url}: {e}"))?;
    let mut answer = Vec::new();
    let mut buf = [0_u8; 1024];
    while !answer.windows(2).any(|w| w == b"\r\n") && answer.len() < STATUS_LINE_MAX {
        let n = stream
            .read(&mut buf)
            .await
            .map_err(|e| format!("{url}: {e}"))?;
        if n == 0 {
            break;
        }
        answer.extend_from_slice(&buf[..n]);
    }
    match status_code(&answer) {
        Some(code) if (200..300).contains(&code) => Ok(()),
        Some(code) => Err(format!("{url} answered {code}")),
        None if answer.is_empty() => Err(format!("{url} closed the connection without answering")),
        None => Err(format!("{url} did not answer HTTP")),
    }
}

/// `http://host:port/path?q` → (`host:port`, `/path?q`).
fn split_url(url: &str) -> Result<(&str, String), String> {
    let rest = url
        .strip_prefix("http://")
        .ok_or_else(|| format!("not an http:// URL: {url}"))?;
    let rest = rest.split('#').next().unwrap_or(rest);
    let split = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(split);
    // Credentials in a readiness URL are not sent.
    let authority = authority.rsplit('@').next().unwrap_or(authority);
    if authority.is_empty() {
        return Err(format!("no host in {url}"));
    }
    let path = if path.starts_with('/') {
        path.to_owned()
    } else {
        format!("/{path}")
    };
    Ok((authority, path))
}

fn has_port(authority: &str) -> bool {
    match authority.rfind(']') {
        // `[::1]:8080`
        Some(end) => authority[end..].contains(':'),
        None => authority.contains(':'),
    }
}

/// The status code of an `HTTP/1.x NNN reason` status line.
fn status_code(answer: &[u8]) -> Option<u16> {
    let line = answer.split(|&b| b == b'\r' || b == b'\n').next()?;
    let line = std::str::from_utf8(line).ok()?;
    let mut parts = line.split_whitespace();
    if !parts.next()?.starts_with("HTTP/") {
        return None;
    }
    let code = parts.next()?;
    (code.len() == 3).then(|| code.parse().ok()).flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_urls() {
        let cases = [
            (
                "http://127.0.0.1:8080/health",
                Some(("127.0.0.1:8080", "/health")),
            ),
            ("http://localhost", Some(("localhost", "/"))),
            ("http://localhost?x=1", Some(("localhost", "/?x=1"))),
            ("http://localhost/a?b=c#frag", Some(("localhost", "/a?b=c"))),
            ("http://user:pw@[::1]:9000/x", Some(("[::1]:9000", "/x"))),
            ("http:///x", None),
        ];
        for (url, want) in cases {
            let got = split_url(url).ok();
            assert_eq!(got.as_ref().map(|(a, p)| (*a, p.as_str())), want, "{url}");
        }
        assert!(has_port("[::1]:80"));
        assert!(!has_port("[::1]"));
        assert!(!has_port("example.com"));
    }

    #[test]
    fn reads_status_lines() {
        let cases: [(&[u8], Option<u16>); 5] = [
            (b"HTTP/1.1 200 OK\r\n", Some(200)),
            (b"HTTP/1.0 503 Service Unavailable\r\n", Some(503)),
            (b"HTTP/1.1 204\r\n", Some(204)),
            (b"SSH-2.0-OpenSSH\r\n", None),
            (b"", None),
        ];
        for (answer, want) in cases {
            assert_eq!(status_code(answer), want);
        }
    }
}
