//! Pages in a headless browser: the page check captures a page of the
//! workspace's own server at desktop and phone width, and measures what code
//! can measure (horizontal overflow at phone width, colour contrast below
//! WCAG AA) before any model looks at the screenshots.
//!
//! - [`browser`]: Debian's Chromium in its own process group with a fresh
//!   profile, driven over the DevTools protocol (`chromiumoxide`).
//! - [`dom`]: the scripts run in the page and what their answers mean.
//! - [`capture`]: what a capture is asked for and what it gives, which both
//!   of those use.
//!
//! A page that does not load (a navigation error, an HTTP error status, no
//! load within its bound) fails the check with the browser's words; so does a
//! missing browser or a missing axe-core. Nothing is skipped silently.

pub mod browser;
pub mod capture;
pub mod dom;

use std::path::Path;

pub use capture::{
    Contrast, Credential, DESKTOP, PHONE, PageCapture, PageOutcome, Shot, VIEWPORTS, Viewport,
    png_size, shot_path,
};

/// Runs the page check of page `id`: starts a browser, captures the page at
/// every viewport, measures, and stops the browser's whole process group.
pub async fn check(
    id: &str,
    capture: &PageCapture,
    workspace: &Path,
    cap: usize,
    launcher: &crate::Launcher,
) -> PageOutcome {
    let outcome = PageOutcome::default();
    let unset: Vec<String> = capture
        .headers
        .iter()
        .map(|c| ("header", c))
        .chain(capture.cookies.iter().map(|c| ("cookie", c)))
        .filter(|(_, c)| c.value.is_none())
        .map(|(what, c)| {
            format!(
                "{what} `{}` takes its value from ${}, which is not set",
                c.name, c.env
            )
        })
        .collect();
    if !unset.is_empty() {
        return outcome.fail(unset.join("; "));
    }
    let executable = match &capture.browser {
        Ok(path) => path.clone(),
        Err(why) => return outcome.fail(why.clone()),
    };
    if let Err(e) = std::fs::create_dir_all(&capture.out_dir) {
        return outcome.fail(format!("cannot create {}: {e}", capture.out_dir.display()));
    }
    let mut session =
        match browser::Session::start(&executable, workspace, cap, capture.load_timeout, launcher)
            .await
        {
            Ok(session) => session,
            Err(why) => return outcome.fail(why),
        };
    let outcome = session.capture_all(id, capture, outcome).await;
    session.stop().await;
    outcome
}

#[cfg(test)]
mod tests;
