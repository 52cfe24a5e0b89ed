//! One headless Chromium for one page check: started through
//! [`crate::process`] in its own process group with a fresh profile, driven
//! over the DevTools protocol, and stopped as a group (or SIGKILLed as its
//! handle drops, when the check is cut short).
//!
//! In a run with a network namespace of its own the browser runs inside it,
//! where the workspace's server is, and its DevTools endpoint listens there:
//! a `Bridge` carries the gate's connection in, through a Unix socket
//! (the file system crosses namespaces) and a forwarder inside.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use chromiumoxide::cdp::browser_protocol::emulation::SetDeviceMetricsOverrideParams;
use chromiumoxide::cdp::browser_protocol::network::{
    CookieParam, EventResponseReceived, Headers, ResourceType, SetCookiesParams,
    SetExtraHttpHeadersParams,
};
use chromiumoxide::cdp::browser_protocol::page::{
    CaptureScreenshotFormat, EventLifecycleEvent, FrameId,
};
use chromiumoxide::handler::HandlerConfig;
use chromiumoxide::listeners::EventStream;
use chromiumoxide::page::ScreenshotParams;
use chromiumoxide::{Browser, Page};
use futures::StreamExt;
use tokio::net::{TcpListener, TcpStream, UnixListener, UnixStream};
use tokio::task::JoinHandle;

use crate::page::capture::{
    Contrast, PHONE, PageCapture, PageOutcome, Shot, VIEWPORTS, Viewport, png_size, shot_path,
};
use crate::page::dom;
use crate::process::ProcessGroup;
use crate::sandbox::Helper;

/// The flags every browser starts with: headless, no sandbox (containers and
/// CI runners rarely allow one), no GPU, nothing fetched in the background,
/// nothing synced, no first-run UI, no QUIC.
pub const FLAGS: [&str; 14] = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
    "--no-default-browser-check",
    "--disable-extensions",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
    "--mute-audio",
    "--remote-debugging-port=0",
];

/// What Chromium prints once its DevTools endpoint is up.
const LISTENING: &str = "DevTools listening on ";

/// How long Chromium may take to start.
const STARTUP: Duration = Duration::from_secs(30);

/// How long a loaded page may take to go network-idle before it is taken as settled.
const SETTLE_MAX: Duration = Duration::from_secs(5);

/// The quiet period after a page that never went network-idle.
const QUIET: Duration = Duration::from_millis(500);

/// Bound on each DevTools command that is not a page load.
const COMMAND: Duration = Duration::from_secs(30);

/// How long a completed navigation's response may take to be found among
/// the events already received.
const DOCUMENT_RESPONSE: Duration = Duration::from_secs(2);

/// A task aborted when its handle drops.
struct AbortOnDrop(JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// A running browser and the connection to it. Fields drop in order: the
/// connection, then the bridge into the run's network namespace, then the
/// process group (killed), then the profile folder.
pub struct Session {
    browser: Browser,
    _handler: AbortOnDrop,
    bridge: Option<Bridge>,
    group: ProcessGroup,
    _profile: tempfile::TempDir,
}

impl Session {
    /// Starts `executable` with [`FLAGS`] and a fresh profile, and connects.
    pub async fn start(
        executable: &Path,
        workspace: &Path,
        cap: usize,
        load_timeout: Duration,
        launcher: &crate::Launcher,
    ) -> Result<Self, String> {
        // The profile is in the run's private /tmp when the browser is
        // sandboxed, so the browser can write it and nothing else sees it.
        let (profile, inside) = launcher
            .temp_dir(&format!("gate-chromium-{}-", std::process::id()))
            .map_err(|e| format!("cannot create a browser profile folder: {e}"))?;
        let exe = executable.to_string_lossy();
        let data_dir = format!("--user-data-dir={}", inside.display());
        let mut argv: Vec<&str> = vec![&exe];
        argv.extend(FLAGS);
        argv.push(&data_dir);
        argv.push("about:blank");
        let mut group = ProcessGroup::spawn_argv(&argv, workspace, cap, Some(LISTENING), launcher)
            .map_err(|e| format!("cannot start the browser: {e}"))?;
        let started = Instant::now();
        while !group.saw_text() {
            if let Some(status) = group.try_status() {
                return Err(format!(
                    "the browser {} before it was ready: {}",
                    crate::process::describe_status(status),
                    tail(&group)
                ));
            }
            if started.elapsed() > STARTUP {
                group.stop().await;
                return Err(format!(
                    "the browser was not ready within {} s: {}",
                    STARTUP.as_secs(),
                    tail(&group)
                ));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let Some(ws) = websocket_url(&String::from_utf8_lossy(&group.output().bytes)) else {
            group.stop().await;
            return Err("the browser's DevTools address could not be read".to_owned());
        };
        // Inside the run's network namespace, the endpoint is reached
        // through a bridge.
        let (ws, bridge) = match launcher.helpers() {
            None => (ws, None),
            Some(helpers) => match Bridge::start(&ws, &helpers, workspace, cap).await {
                Ok(bridge) => (bridge.url.clone(), Some(bridge)),
                Err(why) => {
                    group.stop().await;
                    return Err(why);
                }
            },
        };
        let config = HandlerConfig {
            viewport: None,
            // Our own bounds decide; the handler's must not cut in first.
            request_timeout: load_timeout.max(COMMAND) + Duration::from_secs(5),
            ..HandlerConfig::default()
        };
        let (browser, mut handler) = match Browser::connect_with_config(ws, config).await {
            Ok(connected) => connected,
            Err(e) => {
                if let Some(bridge) = bridge {
                    bridge.stop().await;
                }
                group.stop().await;
                return Err(format!("cannot connect to the browser: {e}"));
            }
        };
        let handler = tokio::spawn(async move {
            while let Some(event) = handler.next().await {
                if let Err(e) = event {
                    tracing::debug!(error = %e, "devtools connection");
                }
            }
        });
        tracing::debug!(pid = group.pid(), "browser ready");
        Ok(Self {
            browser,
            _handler: AbortOnDrop(handler),
            bridge,
            group,
            _profile: profile,
        })
    }

    /// Captures the page at every viewport and runs the measurements.
    pub async fn capture_all(
        &mut self,
        id: &str,
        capture: &PageCapture,
        mut outcome: PageOutcome,
    ) -> PageOutcome {
        let axe = match &capture.contrast {
            Contrast::Off => None,
            Contrast::Missing(why) => {
                outcome.problems.push(why.clone());
                None
            }
            Contrast::Axe(path) => match std::fs::read_to_string(path) {
                Ok(source) => Some(source),
                Err(e) => {
                    outcome.problems.push(format!(
                        "axe-core cannot be read from {}: {e}",
                        path.display()
                    ));
                    None
                }
            },
        };
        let mut contrast = Vec::new();
        for viewport in VIEWPORTS {
            let loaded = match self.load(capture, viewport).await {
                Ok(loaded) => loaded,
                Err(why) => {
                    outcome.problems.push(why);
                    return outcome;
                }
            };
            outcome.notes.push(format!(
                "{} at {}×{}: {}",
                capture.url, viewport.width, viewport.height, loaded.settled
            ));
            let page = &loaded.page;
            match self.shoot(page, id, capture, viewport).await {
                Ok(shot) => outcome.shots.push(shot),
                Err(why) => {
                    outcome.problems.push(why);
                    return outcome;
                }
            }
            if capture.overflow && viewport == PHONE {
                match dom::overflow(page).await {
                    Ok(found) => found.report(&capture.url, viewport, &mut outcome),
                    Err(why) => outcome
                        .problems
                        .push(format!("the overflow check could not run: {why}")),
                }
            }
            if let Some(source) = &axe {
                match dom::contrast(page, source).await {
                    Ok(found) => contrast.extend(found),
                    Err(why) => outcome
                        .problems
                        .push(format!("the contrast check could not run: {why}")),
                }
            }
            let _ = bounded(page.clone().close()).await;
        }
        dom::report_contrast(&capture.url, contrast, &mut outcome);
        outcome
    }

    /// Opens a tab at `viewport` with the page's headers and cookies, loads
    /// the page, and waits for it to settle.
    async fn load(&self, capture: &PageCapture, viewport: Viewport) -> Result<Loaded, String> {
        let url = &capture.url;
        let size = format!("{}×{}", viewport.width, viewport.height);
        let page = bounded(self.browser.new_page("about:blank"))
            .await
            .map_err(|e| format!("the browser could not open a tab: {e}"))?;
        let setup = async {
            page.execute(SetDeviceMetricsOverrideParams::new(
                viewport.width,
                viewport.height,
                1.0,
                viewport.mobile,
            ))
            .await?;
            if !capture.headers.is_empty() {
                let headers: serde_json::Map<String, serde_json::Value> = capture
                    .headers
                    .iter()
                    .map(|h| (h.name.clone(), h.value.clone().unwrap_or_default().into()))
                    .collect();
                page.execute(SetExtraHttpHeadersParams::new(Headers::new(headers)))
                    .await?;
            }
            if !capture.cookies.is_empty() {
                let cookies: Vec<CookieParam> = capture
                    .cookies
                    .iter()
                    .map(|c| {
                        let mut cookie =
                            CookieParam::new(c.name.clone(), c.value.clone().unwrap_or_default());
                        cookie.url = Some(url.clone());
                        cookie
                    })
                    .collect();
                // Straight to the protocol: the library refuses cookies on a blank tab.
                page.execute(SetCookiesParams::new(cookies)).await?;
            }
            let lifecycle = page.event_listener::<EventLifecycleEvent>().await?;
            let responses = page.event_listener::<EventResponseReceived>().await?;
            Ok((lifecycle, responses))
        };
        let (mut lifecycle, mut responses) = bounded(setup)
            .await
            .map_err(|e| format!("the browser could not prepare the tab: {e}"))?;
        match tokio::time::timeout(capture.load_timeout, page.goto(url.as_str())).await {
            Err(_) => {
                return Err(format!(
                    "{url} did not load within {} s at {size}",
                    capture.load_timeout.as_secs()
                ));
            }
            Ok(Err(e)) => return Err(format!("{url} did not load at {size}: {e}")),
            Ok(Ok(_)) => {}
        }
        // The main frame, whose events both the response and the settling
        // are read from (`None`: take any frame's).
        let main = bounded(page.mainframe()).await.ok().flatten();
        match document_response(main.as_ref(), &mut responses).await {
            Some(r) if r.status >= 400 => {
                return Err(format!(
                    "{url} answered HTTP {} {} at {size}",
                    r.status,
                    r.status_text.trim()
                ));
            }
            Some(_) => {}
            None => {
                // No response at all: the navigation failed on the way.
                let request = bounded(page.wait_for_navigation_response())
                    .await
                    .ok()
                    .flatten();
                if let Some(failure) = request.and_then(|r| r.failure_text.clone()) {
                    return Err(format!("{url} did not load at {size}: {failure}"));
                }
            }
        }
        let settled = settle(main.as_ref(), &mut lifecycle).await;
        Ok(Loaded { page, settled })
    }

    /// The viewport's screenshot, written to its file.
    async fn shoot(
        &self,
        page: &Page,
        id: &str,
        capture: &PageCapture,
        viewport: Viewport,
    ) -> Result<Shot, String> {
        let params = ScreenshotParams::builder()
            .format(CaptureScreenshotFormat::Png)
            .build();
        let bytes = bounded(page.screenshot(params))
            .await
            .map_err(|e| format!("the screenshot at {} failed: {e}", viewport.name))?;
        let size = png_size(&bytes)
            .ok_or_else(|| format!("the screenshot at {} is not a PNG", viewport.name))?;
        let path = shot_path(&capture.out_dir, id, viewport);
        std::fs::write(&path, &bytes)
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        Ok(Shot {
            viewport,
            path,
            size,
        })
    }

    /// Closes the connection and stops the browser's whole process group.
    pub async fn stop(mut self) {
        let _ = tokio::time::timeout(Duration::from_secs(2), self.browser.close()).await;
        if let Some(bridge) = self.bridge.take() {
            bridge.stop().await;
        }
        self.group.stop().await;
    }
}

/// What the forwarder prints once its socket listens.
const FORWARDING: &str = "forwarding";

/// The way from the gate's process to a DevTools endpoint inside the run's
/// network namespace: a loopback port of the gate's whose connections go
/// to a Unix socket, on which a forwarder inside the namespace (a
/// [`Helper::Forward`]) listens and connects on to the endpoint. Dropping
/// it stops both ends.
struct Bridge {
    /// The endpoint's address as the gate reaches it.
    url: String,
    _accept: AbortOnDrop,
    forwarder: ProcessGroup,
    /// Holds the socket, out of the sandbox's reach: the browser's
    /// neighbours in the namespace cannot replace it.
    _dir: tempfile::TempDir,
}

impl Bridge {
    /// Starts the forwarder to `ws`'s host and port with `helpers`, and the
    /// gate's end of the bridge.
    async fn start(
        ws: &str,
        helpers: &crate::Launcher,
        cwd: &Path,
        cap: usize,
    ) -> Result<Self, String> {
        let Some((authority, path)) = ws
            .strip_prefix("ws://")
            .and_then(|rest| rest.split_once('/'))
        else {
            return Err(format!("the browser's DevTools address is not ws://: {ws}"));
        };
        let Some(namespace) = helpers.namespace() else {
            return Err("no network namespace to bridge into".to_owned());
        };
        let cannot = |e: std::io::Error| format!("cannot bridge to the browser's DevTools: {e}");
        let dir = tempfile::Builder::new()
            .prefix("gate-devtools-")
            .tempdir()
            .map_err(cannot)?;
        let socket = dir.path().join("s");
        let helper = Helper::Forward {
            socket: socket.clone(),
            to: authority.to_owned(),
        };
        let argv = helper.argv(namespace);
        let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
        let mut forwarder = ProcessGroup::spawn_argv(&argv, cwd, cap, Some(FORWARDING), helpers)
            .map_err(|e| format!("cannot start the bridge to the browser: {e}"))?;
        let started = Instant::now();
        while !forwarder.saw_text() {
            if let Some(status) = forwarder.try_status() {
                return Err(format!(
                    "the bridge to the browser {}: {}",
                    crate::process::describe_status(status),
                    tail(&forwarder)
                ));
            }
            if started.elapsed() > STARTUP {
                forwarder.stop().await;
                return Err("the bridge to the browser did not start".to_owned());
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let listener = TcpListener::bind("127.0.0.1:0").await.map_err(cannot)?;
        let port = listener.local_addr().map_err(cannot)?.port();
        let accept = tokio::spawn(bridge_accept(listener, socket));
        Ok(Self {
            url: format!("ws://127.0.0.1:{port}/{path}"),
            _accept: AbortOnDrop(accept),
            forwarder,
            _dir: dir,
        })
    }

    /// Stops the forwarder's group.
    async fn stop(mut self) {
        self.forwarder.stop().await;
    }
}

/// The gate's end of a [`Bridge`]: each connection to `listener` is carried
/// to `socket`.
async fn bridge_accept(listener: TcpListener, socket: PathBuf) {
    let mut links = tokio::task::JoinSet::new();
    while let Ok((mut tcp, _)) = listener.accept().await {
        let socket = socket.clone();
        links.spawn(async move {
            if let Ok(mut unix) = UnixStream::connect(&socket).await {
                let _ = tokio::io::copy_bidirectional(&mut tcp, &mut unix).await;
            }
        });
        while links.try_join_next().is_some() {}
    }
}

/// The forwarder's end of a [`Bridge`], run inside the namespace by a
/// [`Helper::Forward`]: listens on `socket`, says [`FORWARDING`], and
/// carries each connection to `to`, until it is stopped.
pub(crate) async fn forward_inside(
    socket: &Path,
    to: &str,
    say: impl Fn(&str),
) -> Result<(), String> {
    let listener = UnixListener::bind(socket)
        .map_err(|e| format!("cannot listen on {}: {e}", socket.display()))?;
    say(FORWARDING);
    let mut links = tokio::task::JoinSet::new();
    loop {
        let (mut unix, _) = listener
            .accept()
            .await
            .map_err(|e| format!("cannot accept on {}: {e}", socket.display()))?;
        let to = to.to_owned();
        links.spawn(async move {
            if let Ok(mut tcp) = TcpStream::connect(&to).await {
                let _ = tokio::io::copy_bidirectional(&mut unix, &mut tcp).await;
            }
        });
        // Finished links are let go of as new ones come.
        while links.try_join_next().is_some() {}
    }
}

/// A loaded tab.
struct Loaded {
    page: Page,
    /// How it settled, for the check's output.
    settled: String,
}

/// `future`, bounded by [`COMMAND`].
async fn bounded<T>(future: impl Future<Output = chromiumoxide::Result<T>>) -> Result<T, String> {
    match tokio::time::timeout(COMMAND, future).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err(format!("no answer within {} s", COMMAND.as_secs())),
    }
}

/// The response the main frame's document came with, from the responses
/// seen since before the navigation. chromiumoxide's own
/// `wait_for_navigation_response` answers with whichever of the frame's
/// requests finished last, so a missing favicon's 404 could fail a page
/// that loaded fine.
async fn document_response(
    main: Option<&FrameId>,
    responses: &mut EventStream<EventResponseReceived>,
) -> Option<chromiumoxide::cdp::browser_protocol::network::Response> {
    // The navigation has completed, so its response is already queued.
    tokio::time::timeout(DOCUMENT_RESPONSE, async {
        while let Some(event) = responses.next().await {
            let main_frame = main.is_none_or(|m| event.frame_id.as_ref() == Some(m));
            if event.r#type == ResourceType::Document && main_frame {
                return Some(event.response.clone());
            }
        }
        None
    })
    .await
    .ok()
    .flatten()
}

/// Waits until the main frame's new document went network-idle, at most
/// [`SETTLE_MAX`]; a page that keeps the network busy gets a [`QUIET`]
/// period instead.
async fn settle(main: Option<&FrameId>, events: &mut EventStream<EventLifecycleEvent>) -> String {
    let started = Instant::now();
    let idle = tokio::time::timeout(SETTLE_MAX, async {
        let mut loader = None;
        while let Some(event) = events.next().await {
            let event: Arc<EventLifecycleEvent> = event;
            if main.is_some_and(|m| *m != event.frame_id) {
                continue;
            }
            match event.name.as_str() {
                "init" => loader = Some(event.loader_id.clone()),
                "networkIdle" if loader.as_ref() == Some(&event.loader_id) => return,
                _ => {}
            }
        }
    })
    .await;
    if idle.is_ok() {
        format!(
            "loaded, network idle after {} ms",
            started.elapsed().as_millis()
        )
    } else {
        tokio::time::sleep(QUIET).await;
        format!(
            "loaded; the network was still busy after {} s, captured after a quiet {} ms",
            SETTLE_MAX.as_secs(),
            QUIET.as_millis()
        )
    }
}

/// The `ws://` address Chromium printed.
fn websocket_url(output: &str) -> Option<String> {
    let at = output.find(LISTENING)? + LISTENING.len();
    let url = output[at..].split_whitespace().next()?;
    url.starts_with("ws://").then(|| url.to_owned())
}

/// The end of what the browser printed, on one line.
fn tail(group: &ProcessGroup) -> String {
    let text = String::from_utf8_lossy(&group.output().bytes).into_owned();
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let start = text.len().saturating_sub(400);
    let start = (start..text.len())
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(text.len());
    if text.is_empty() {
        "it printed nothing".to_owned()
    } else {
        text[start..].to_owned()
    }
}

#[cfg(test)]
mod unit {
    use super::websocket_url;

    #[test]
    fn the_devtools_address_is_read_from_the_banner() {
        let out = "[0101/000000.1:WARNING:x] noise\n\nDevTools listening on ws://127.0.0.1:41237/devtools/browser/ab-cd\n";
        assert_eq!(
            websocket_url(out).as_deref(),
            Some("ws://127.0.0.1:41237/devtools/browser/ab-cd")
        );
        assert_eq!(websocket_url("DevTools listening on http://x"), None);
        assert_eq!(websocket_url("nothing"), None);
    }
}
