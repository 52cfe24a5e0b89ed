//! What is measured in the page itself: horizontal overflow from the DOM,
//! and colour contrast with axe-core's `color-contrast` rule.

use chromiumoxide::Page;
use chromiumoxide::cdp::js_protocol::runtime::EvaluateParams;
use serde::Deserialize;

use crate::Location;
use crate::page::capture::{PageOutcome, Viewport};

/// Elements listed at most per check.
const MAX_LISTED: usize = 20;

/// Finds what reaches past the viewport's right edge (or left of its left
/// one): the outermost such elements, each with a selector.
const OVERFLOW_JS: &str = r"(() => {
  const root = document.documentElement;
  const viewport = root.clientWidth;
  const scroll = Math.max(root.scrollWidth, document.body ? document.body.scrollWidth : 0);
  const name = (el) => {
    const parts = [];
    for (let e = el; e && e.nodeType === 1 && parts.length < 4; e = e.parentElement) {
      let part = e.localName;
      if (e.id) { parts.unshift(part + '#' + e.id); break; }
      const classes = [...e.classList].slice(0, 2);
      if (classes.length) part += '.' + classes.join('.');
      const parent = e.parentElement;
      if (parent) {
        const same = [...parent.children].filter((c) => c.localName === e.localName);
        if (same.length > 1) part += ':nth-of-type(' + (same.indexOf(e) + 1) + ')';
      }
      parts.unshift(part);
    }
    return parts.join(' > ');
  };
  const offenders = [];
  if (scroll > viewport && document.body) {
    const outside = (el) => {
      const r = el.getBoundingClientRect();
      return r.width > 0 && (r.right > viewport + 1 || r.left < -1);
    };
    for (const el of document.body.querySelectorAll('*')) {
      if (!outside(el)) continue;
      const parent = el.parentElement;
      if (parent && parent !== document.body && outside(parent)) continue;
      const r = el.getBoundingClientRect();
      offenders.push({ selector: name(el), left: Math.round(r.left), right: Math.round(r.right) });
    }
  }
  return JSON.stringify({ viewport, scroll, offenders });
})()";

/// Runs axe-core's `color-contrast` rule alone and returns its violations.
const CONTRAST_JS: &str = r"(async () => {
  const result = await axe.run(document, { runOnly: { type: 'rule', values: ['color-contrast'] }, resultTypes: ['violations'] });
  return JSON.stringify(result.violations.flatMap((v) => v.nodes.map((n) => {
    const data = (n.any[0] && n.any[0].data) || {};
    return { selector: n.target.join(' '), html: n.html, ratio: data.contrastRatio || null,
             expected: parseFloat(data.expectedContrastRatio) || null,
             fg: data.fgColor || null, bg: data.bgColor || null };
  })));
})()";

/// What the overflow script found.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Overflow {
    /// The layout viewport's width.
    pub viewport: u32,
    /// The document's scroll width.
    pub scroll: u32,
    /// The outermost elements past an edge.
    pub offenders: Vec<Offender>,
}

/// An element past the viewport's edge.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Offender {
    /// A CSS selector naming it.
    pub selector: String,
    /// Its left edge, in CSS pixels.
    pub left: i64,
    /// Its right edge.
    pub right: i64,
}

impl Overflow {
    /// Adds the problem and the offending elements to `outcome`, if any.
    pub fn report(&self, url: &str, viewport: Viewport, outcome: &mut PageOutcome) {
        if self.scroll <= self.viewport {
            return;
        }
        let n = self.offenders.len();
        outcome.problems.push(format!(
            "horizontal overflow at {}×{}: the page is {} px wide in a {} px viewport{}",
            viewport.width,
            viewport.height,
            self.scroll,
            self.viewport,
            match n {
                0 => String::new(),
                1 => "; 1 element reaches past its edge".to_owned(),
                n => format!("; {n} elements reach past its edge"),
            }
        ));
        for o in self.offenders.iter().take(MAX_LISTED) {
            outcome.locations.push(Location {
                file: url.to_owned(),
                line: None,
                message: format!(
                    "overflow at {} px: `{}` spans {}..{} px",
                    viewport.width, o.selector, o.left, o.right
                ),
            });
        }
    }
}

/// One text element below its WCAG AA contrast ratio.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct LowContrast {
    /// axe's selector for it.
    pub selector: String,
    /// Its markup, as axe shows it.
    pub html: String,
    /// The ratio it has.
    pub ratio: Option<f64>,
    /// The ratio it needs (4.5, or 3 for large text).
    pub expected: Option<f64>,
    /// Text colour.
    pub fg: Option<String>,
    /// Background colour.
    pub bg: Option<String>,
}

/// Measures horizontal overflow in a loaded page.
pub async fn overflow(page: &Page) -> Result<Overflow, String> {
    let json = evaluate(page, OVERFLOW_JS).await?;
    serde_json::from_str(&json).map_err(|e| format!("unexpected answer ({e}): {json}"))
}

/// Injects axe-core (`source`: `axe.min.js`) and runs its `color-contrast` rule.
pub async fn contrast(page: &Page, source: &str) -> Result<Vec<LowContrast>, String> {
    evaluate(page, &format!("{source}\n;'axe loaded'"))
        .await
        .map_err(|e| format!("axe-core did not load in the page: {e}"))?;
    let json = evaluate(page, CONTRAST_JS).await?;
    serde_json::from_str(&json).map_err(|e| format!("unexpected answer ({e}): {json}"))
}

/// Adds the contrast problem and elements (found at any viewport, each once).
pub fn report_contrast(url: &str, mut found: Vec<LowContrast>, outcome: &mut PageOutcome) {
    let mut seen = std::collections::BTreeSet::new();
    found.retain(|c| seen.insert(c.selector.clone()));
    if found.is_empty() {
        return;
    }
    let n = found.len();
    outcome.problems.push(format!(
        "{n} text element{} below the WCAG AA contrast ratio",
        if n == 1 { "" } else { "s" }
    ));
    for c in found.iter().take(MAX_LISTED) {
        let ratio = match (c.ratio, c.expected) {
            (Some(r), Some(e)) => format!("contrast {r:.2}:1, needs {e}:1"),
            (Some(r), None) => format!("contrast {r:.2}:1"),
            _ => "low contrast".to_owned(),
        };
        let colours = match (&c.fg, &c.bg) {
            (Some(fg), Some(bg)) => format!(" ({fg} on {bg})"),
            _ => String::new(),
        };
        outcome.locations.push(Location {
            file: url.to_owned(),
            line: None,
            message: format!("{ratio}{colours}: `{}`", c.selector),
        });
    }
}

/// Evaluates `expression` (awaiting a promise) and returns its string value.
async fn evaluate(page: &Page, expression: &str) -> Result<String, String> {
    let params = EvaluateParams::builder()
        .expression(expression)
        .await_promise(true)
        .return_by_value(true)
        .build()?;
    let answer = tokio::time::timeout(std::time::Duration::from_secs(30), page.execute(params))
        .await
        .map_err(|_| "no answer within 30 s".to_owned())?
        .map_err(|e| e.to_string())?;
    if let Some(ex) = &answer.result.exception_details {
        let what = ex
            .exception
            .as_ref()
            .and_then(|e| e.description.clone())
            .unwrap_or_else(|| ex.text.clone());
        return Err(what.lines().next().unwrap_or_default().to_owned());
    }
    match &answer.result.result.value {
        Some(serde_json::Value::String(s)) => Ok(s.clone()),
        other => Err(format!("expected a string, got {other:?}")),
    }
}
