//! Inline SVG line charts over weeks, drawn here so the report page needs
//! no script and no network: a line per series, an optional band (the
//! Wilson interval), gaps where a week has no data, a tooltip per point.

use std::fmt::Write;

// A small canvas, so its 12px labels stay legible when a phone shrinks it.
const WIDTH: f64 = 480.0;
const HEIGHT: f64 = 210.0;
const LEFT: f64 = 46.0;
const RIGHT: f64 = 10.0;
const TOP: f64 = 12.0;
const BOTTOM: f64 = 30.0;
/// At most this many week labels under the x axis.
const MAX_X_LABELS: usize = 4;
/// Above this many weeks, points are drawn smaller.
const DENSE: usize = 40;

/// One line of a chart.
pub(super) struct Series {
    /// Shown in the legend.
    pub(super) name: String,
    /// One value per week, `None` where there is nothing to show.
    pub(super) values: Vec<Option<f64>>,
    /// A band around the line (low, high), per week.
    pub(super) band: Option<Vec<Option<(f64, f64)>>>,
    /// Tooltip text per week.
    pub(super) tips: Vec<String>,
}

/// A chart: weeks along x, values along y from 0.
pub(super) struct Chart<'a> {
    /// Accessible title.
    pub(super) title: &'a str,
    /// The x categories (ISO weeks).
    pub(super) weeks: &'a [String],
    /// The lines.
    pub(super) series: Vec<Series>,
    /// How a y value is labelled.
    pub(super) format: fn(f64) -> String,
    /// The highest y the axis may need to reach (1 for rates).
    pub(super) cap: Option<f64>,
    /// Shown when no series has a value.
    pub(super) empty: &'a str,
}

/// Text for SVG or HTML content and attributes.
pub(super) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The smallest "nice" number (1, 2, 2.5 or 5 × 10ⁿ) at or above `v`.
fn nice_ceiling(v: f64) -> f64 {
    if v <= 0.0 || !v.is_finite() {
        return 1.0;
    }
    let magnitude = 10f64.powf(v.log10().floor());
    for step in [1.0, 2.0, 2.5, 5.0, 10.0] {
        let candidate = step * magnitude;
        if candidate >= v * (1.0 - 1e-9) {
            return candidate;
        }
    }
    10.0 * magnitude
}

impl Chart<'_> {
    fn y_max(&self) -> f64 {
        let highest = self
            .series
            .iter()
            .flat_map(|s| {
                let band = s
                    .band
                    .iter()
                    .flatten()
                    .filter_map(|b| b.map(|(_, high)| high));
                s.values.iter().filter_map(|v| *v).chain(band)
            })
            .fold(0.0f64, f64::max);
        let top = nice_ceiling(highest);
        self.cap.map_or(top, |cap| top.min(cap))
    }

    /// The chart as an `<svg>` element.
    pub(super) fn render(&self) -> String {
        let count = self.weeks.len().max(1);
        let plot_w = WIDTH - LEFT - RIGHT;
        let plot_h = HEIGHT - TOP - BOTTOM;
        let y_max = self.y_max();
        let x_at = |i: usize| LEFT + (i as f64 + 0.5) * plot_w / count as f64;
        let y_at = |v: f64| TOP + plot_h * (1.0 - (v / y_max).clamp(0.0, 1.0));
        let mut svg = String::new();
        let _ = write!(
            svg,
            r#"<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" preserveAspectRatio="xMidYMid meet"><title>{}</title>"#,
            escape(self.title)
        );
        // Grid and y labels.
        for k in 0..=4 {
            let v = y_max * f64::from(k) / 4.0;
            let yy = y_at(v);
            let _ = write!(
                svg,
                r#"<line class="grid" x1="{LEFT}" x2="{:.1}" y1="{yy:.1}" y2="{yy:.1}"/><text class="axis" x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"#,
                WIDTH - RIGHT,
                LEFT - 6.0,
                yy + 4.0,
                escape(&(self.format)(v))
            );
        }
        // X labels, thinned to fit.
        let step = count.div_ceil(MAX_X_LABELS).max(1);
        for (i, week) in self.weeks.iter().enumerate() {
            let last = i + 1 == self.weeks.len();
            if i % step == 0 || (last && (i % step) * 2 > step) {
                // The last label ends at its point, so it never runs off the edge.
                let (anchor, at) = if last && i > 0 {
                    ("end", x_at(i) + 4.0)
                } else {
                    ("middle", x_at(i))
                };
                let _ = write!(
                    svg,
                    r#"<text class="axis" x="{at:.1}" y="{:.1}" text-anchor="{anchor}">{}</text>"#,
                    HEIGHT - BOTTOM + 17.0,
                    escape(week)
                );
            }
        }
        let _ = write!(
            svg,
            r#"<line class="axis-line" x1="{LEFT}" x2="{:.1}" y1="{:.1}" y2="{:.1}"/>"#,
            WIDTH - RIGHT,
            TOP + plot_h,
            TOP + plot_h
        );
        let radius = if count > DENSE { 1.6 } else { 3.0 };
        let has_data = self
            .series
            .iter()
            .any(|se| se.values.iter().any(Option::is_some));
        if !has_data {
            let _ = write!(
                svg,
                r#"<text class="empty" x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
                LEFT + plot_w / 2.0,
                TOP + plot_h / 2.0,
                escape(self.empty)
            );
        }
        for (k, se) in self.series.iter().enumerate() {
            if let Some(band) = &se.band {
                for run in runs_of(band) {
                    let mut d = String::new();
                    for (j, &i) in run.iter().enumerate() {
                        let (_, high) = band[i].unwrap_or_default();
                        let _ = write!(
                            d,
                            "{}{:.1},{:.1}",
                            if j == 0 { "M" } else { "L" },
                            x_at(i),
                            y_at(high)
                        );
                    }
                    for &i in run.iter().rev() {
                        let (low, _) = band[i].unwrap_or_default();
                        let _ = write!(d, "L{:.1},{:.1}", x_at(i), y_at(low));
                    }
                    let _ = write!(svg, r#"<path class="band s{k}" d="{d}Z"/>"#);
                }
            }
            for run in runs_of(&se.values) {
                let mut d = String::new();
                for (j, &i) in run.iter().enumerate() {
                    let _ = write!(
                        d,
                        "{}{:.1},{:.1}",
                        if j == 0 { "M" } else { "L" },
                        x_at(i),
                        y_at(se.values[i].unwrap_or_default())
                    );
                }
                let _ = write!(svg, r#"<path class="line s{k}" d="{d}"/>"#);
            }
            for (i, v) in se.values.iter().enumerate() {
                if let Some(v) = v {
                    let tip = se.tips.get(i).map_or("", String::as_str);
                    let _ = write!(
                        svg,
                        r#"<circle class="dot s{k}" cx="{:.1}" cy="{:.1}" r="{radius}"><title>{}</title></circle>"#,
                        x_at(i),
                        y_at(*v),
                        escape(tip)
                    );
                }
            }
        }
        svg.push_str("</svg>");
        self.legend(&mut svg);
        svg
    }

    /// A key to the series, when there is more than one.
    fn legend(&self, svg: &mut String) {
        if self.series.len() > 1 {
            svg.push_str(r#"<p class="legend">"#);
            for (k, se) in self.series.iter().enumerate() {
                let _ = write!(
                    svg,
                    r#"<span class="key s{k}"></span>{} "#,
                    escape(&se.name)
                );
            }
            svg.push_str("</p>");
        }
    }
}

/// The runs of consecutive indexes holding a value.
fn runs_of<T>(values: &[Option<T>]) -> Vec<Vec<usize>> {
    let mut out: Vec<Vec<usize>> = Vec::new();
    let mut current = Vec::new();
    for (i, v) in values.iter().enumerate() {
        if v.is_some() {
            current.push(i);
        } else if !current.is_empty() {
            out.push(std::mem::take(&mut current));
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nice_ceilings() {
        for (v, want) in [
            (0.0, 1.0),
            (0.03, 0.05),
            (0.2775, 0.5),
            (0.2, 0.2),
            (0.21, 0.25),
            (1.0, 1.0),
            (7.0, 10.0),
            (0.0123, 0.02),
        ] {
            assert!(
                (nice_ceiling(v) - want).abs() < 1e-12,
                "{v}: {}",
                nice_ceiling(v)
            );
        }
    }

    #[test]
    fn gaps_split_lines() {
        assert_eq!(
            runs_of(&[Some(1), None, Some(2), Some(3), None]),
            [vec![0], vec![2, 3]]
        );
        assert!(runs_of::<u8>(&[None, None]).is_empty());
    }

    #[test]
    fn a_chart_draws_band_line_and_points() {
        let weeks: Vec<String> = ["2025-W01", "2025-W02", "2025-W03"]
            .map(String::from)
            .to_vec();
        let chart = Chart {
            title: "t <x>",
            weeks: &weeks,
            series: vec![Series {
                name: "all".into(),
                values: vec![Some(0.1), None, Some(0.2)],
                band: Some(vec![Some((0.0, 0.3)), None, Some((0.1, 0.4))]),
                tips: vec!["a".into(), String::new(), "b & c".into()],
            }],
            format: |v| format!("{:.0}%", v * 100.0),
            cap: Some(1.0),
            empty: "nothing",
        };
        let svg = chart.render();
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"), "{svg}");
        assert_eq!(svg.matches("class=\"band s0\"").count(), 2);
        assert_eq!(svg.matches("class=\"line s0\"").count(), 2);
        assert_eq!(svg.matches("<circle").count(), 2);
        assert!(svg.contains("<title>t &lt;x&gt;</title>") && svg.contains("b &amp; c"));
        assert!(svg.contains(">50%<"), "the axis tops out at 0.5: {svg}");
        assert!(!svg.contains("nothing"));
    }
}
