//! What a page capture is asked for and what it gives: the viewports, the
//! capture's settings and its outcome, shared by the check and the browser
//! that carries it out.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::Location;

/// A width and height a page is looked at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Viewport {
    /// `desktop` or `phone`: names the screenshot file.
    pub name: &'static str,
    /// CSS pixels (device scale factor 1, so also image pixels).
    pub width: u32,
    /// CSS pixels.
    pub height: u32,
    /// Emulate a mobile device (meta viewport, overlay scrollbars).
    pub mobile: bool,
}

/// A laptop screen.
pub const DESKTOP: Viewport = Viewport {
    name: "desktop",
    width: 1440,
    height: 900,
    mobile: false,
};

/// A current phone, portrait.
pub const PHONE: Viewport = Viewport {
    name: "phone",
    width: 390,
    height: 844,
    mobile: true,
};

/// Every viewport a page is captured at, in order.
pub const VIEWPORTS: [Viewport; 2] = [DESKTOP, PHONE];

/// Where a page's screenshot at `viewport` is written.
pub fn shot_path(out_dir: &Path, page: &str, viewport: Viewport) -> PathBuf {
    out_dir.join(format!("{page}.{}.png", viewport.name))
}

/// A request header or cookie whose value comes from an environment variable.
#[derive(Clone, PartialEq, Eq)]
pub struct Credential {
    /// The header or cookie name.
    pub name: String,
    /// The variable the value was read from.
    pub env: String,
    /// The value; `None` when the variable is not set.
    pub value: Option<String>,
}

impl fmt::Debug for Credential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The value is a secret: never in a log line.
        f.debug_struct("Credential")
            .field("name", &self.name)
            .field("env", &self.env)
            .field("value", &self.value.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

/// Whether, and with what, colour contrast is checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Contrast {
    /// Not checked (`[policy] builtin_contrast = false`).
    Off,
    /// Checked with axe-core's `color-contrast` rule from this `axe.min.js`.
    Axe(PathBuf),
    /// Asked for, but axe-core cannot be found: the check fails with this.
    Missing(String),
}

/// What a page check does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageCapture {
    /// The page's URL on the workspace's own server.
    pub url: String,
    /// Request headers sent with every request the page makes.
    pub headers: Vec<Credential>,
    /// Cookies set for the page's URL before it loads.
    pub cookies: Vec<Credential>,
    /// The Chromium executable, or why there is none.
    pub browser: Result<PathBuf, String>,
    /// Folder the screenshots are written to ([`shot_path`]).
    pub out_dir: PathBuf,
    /// Bound on each load (navigation to the load event).
    pub load_timeout: Duration,
    /// Report horizontal overflow at phone width.
    pub overflow: bool,
    /// Report colour contrast below WCAG AA.
    pub contrast: Contrast,
}

/// A screenshot written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shot {
    /// The viewport it shows.
    pub viewport: Viewport,
    /// The PNG file.
    pub path: PathBuf,
    /// Its width and height in pixels, from the PNG header.
    pub size: (u32, u32),
}

/// What a page check found.
#[derive(Debug, Clone, Default)]
pub struct PageOutcome {
    /// Screenshots written, in [`VIEWPORTS`] order.
    pub shots: Vec<Shot>,
    /// Why the check fails, one clause per problem; empty when it passes.
    pub problems: Vec<String>,
    /// Elements the overflow and contrast checks pointed at.
    pub locations: Vec<Location>,
    /// Notes for the check's output (what was captured, how it settled).
    pub notes: Vec<String>,
}

impl PageOutcome {
    /// Whether the page passed.
    pub fn passed(&self) -> bool {
        self.problems.is_empty()
    }

    /// The outcome with `problem` added: the page fails.
    pub(crate) fn fail(mut self, problem: impl Into<String>) -> Self {
        self.problems.push(problem.into());
        self
    }
}

/// The width and height of a PNG, from its header.
pub fn png_size(bytes: &[u8]) -> Option<(u32, u32)> {
    const SIGNATURE: &[u8] = b"\x89PNG\r\n\x1a\n";
    if bytes.len() < 24 || !bytes.starts_with(SIGNATURE) || &bytes[12..16] != b"IHDR" {
        return None;
    }
    let word =
        |at: usize| u32::from_be_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
    Some((word(16), word(20)))
}
