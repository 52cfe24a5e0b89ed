//! Pages: which `[[page]]`s a change touches, their page checks in the plan,
//! and what their screenshots add to the run record and to the review.
//!
//! A page is touched when a changed file matches its `files`. Its check is a
//! harness item after the checks it names, so the server they started is up
//! while it is captured; it runs with the other plain-code checks, before
//! any model is asked anything.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use gate_evidence::Snapshot;
use gate_evidence::snapshot::item_digest;
use gate_harness::page::{self, Contrast, Credential, PageCapture, VIEWPORTS};
use gate_harness::{Action, Item, ItemKind, ItemResult};
use gate_review::provider::Image;
use gate_review::review::design_rules::PageShots;
use gate_specs::{InputGlobs, Page, Spec};

use crate::environment::Environment;
use crate::plan::{Decision, PlannedItem};
use crate::record::{PageRecord, ShotRecord};

/// Where a run keeps its screenshots.
pub(crate) fn shots_dir(state_dir: &Path, run_id: &str) -> PathBuf {
    state_dir.join("pages").join(run_id)
}

/// The pages the change touches, each with the changed files that match
/// its `files` (sorted), in spec order.
pub(crate) fn touched<'a>(spec: &'a Spec, changed: &[String]) -> Vec<(&'a Page, Vec<String>)> {
    spec.pages
        .iter()
        .filter_map(|page| {
            let globs = InputGlobs::new(&page.files).ok()?;
            let mut files: Vec<String> = changed
                .iter()
                .filter(|f| globs.is_match(f))
                .cloned()
                .collect();
            files.sort();
            (!files.is_empty()).then_some((page, files))
        })
        .collect()
}

/// What the page checks need from the gate's surroundings.
pub(crate) struct Surroundings<'a> {
    /// Whether the change was measured from a base (else it is the files
    /// under the tasks' paths): said when a page is not looked at.
    pub has_base: bool,
    /// Where this run's screenshots go.
    pub out_dir: PathBuf,
    /// The browser, or why there is none.
    pub browser: Result<PathBuf, String>,
    /// axe-core, or why there is none.
    pub axe: Result<PathBuf, String>,
    /// The environment headers' and cookies' values are read from.
    pub env: &'a Environment,
}

/// Why a page the change does not touch is not looked at.
fn not_touched(has_base: bool) -> String {
    if has_base {
        "not looked at: the change touches none of its `files`".to_owned()
    } else {
        "not looked at: without a base the change is the files under the tasks' `paths`, \
         and none of them matches its `files` (pass --base to measure the change from a revision)"
            .to_owned()
    }
}

/// A page check for every `[[page]]`, in spec order, to add to the plan:
/// those the change touches run, the others are skipped with the reason,
/// so every page the spec declares has its line in every output.
pub(crate) fn plan_items(
    spec: &Spec,
    snapshot: &Snapshot,
    changed: &[String],
    around: &Surroundings<'_>,
) -> Vec<PlannedItem> {
    let policy = &spec.policy;
    let touched: Vec<&str> = touched(spec, changed)
        .into_iter()
        .map(|(page, _)| page.id.as_str())
        .collect();
    spec.pages
        .iter()
        .map(|page| {
            let credentials = |map: &std::collections::BTreeMap<String, String>| {
                map.iter()
                    .map(|(name, env)| Credential {
                        name: name.clone(),
                        env: env.clone(),
                        value: around.env.value(env),
                    })
                    .collect()
            };
            let contrast = match (&around.axe, policy.builtin_contrast) {
                (_, false) => Contrast::Off,
                (Ok(path), true) => Contrast::Axe(path.clone()),
                (Err(why), true) => Contrast::Missing(why.clone()),
            };
            let load = Duration::from_secs(page.timeout_s());
            let capture = PageCapture {
                url: page.url.clone(),
                headers: credentials(&page.headers),
                cookies: credentials(&page.cookies),
                browser: around.browser.clone(),
                out_dir: around.out_dir.clone(),
                load_timeout: load,
                overflow: policy.builtin_overflow,
                contrast,
            };
            // Each width loads once; the browser's start and the
            // measurements get a minute on top.
            let timeout = load * 2 + Duration::from_secs(60);
            let globs = InputGlobs::new(&page.files).ok();
            let definition =
                serde_json::to_vec(&(page, policy.builtin_overflow, policy.builtin_contrast))
                    .unwrap_or_default();
            let decision = if touched.contains(&page.id.as_str()) {
                Decision::Run {
                    why: "first attempt".to_owned(),
                }
            } else {
                Decision::Skip {
                    why: not_touched(around.has_base),
                }
            };
            PlannedItem {
                id: page.id.clone(),
                kind: ItemKind::Page,
                command: format!("page {} at 1440×900 and 390×844", page.url),
                inputs_digest: item_digest(&definition, globs.as_ref(), snapshot),
                unmatched: crate::plan::unmatched(&page.files, snapshot),
                decision,
                work: Some(Item {
                    id: page.id.clone(),
                    kind: ItemKind::Page,
                    action: Action::Page(Box::new(capture)),
                    after: page.after.clone(),
                    timeout,
                }),
            }
        })
        .collect()
}

/// The environment variables pages take header and cookie values from:
/// their values are secrets, redacted from everything captured.
pub(crate) fn credential_variables(spec: &Spec) -> Vec<String> {
    let mut names: Vec<String> = spec
        .pages
        .iter()
        .flat_map(|p| p.headers.values().chain(p.cookies.values()))
        .cloned()
        .collect();
    names.sort();
    names.dedup();
    names
}

/// The pages this run captured: their records (screenshots' digests) and,
/// for those whose check passed, the screenshots as a model is shown them.
/// A screenshot over the providers' limits is downscaled in place first, so
/// the file kept is the one shown.
pub(crate) fn collect<S: std::hash::BuildHasher>(
    spec: &Spec,
    changed: &[String],
    results: &HashMap<String, ItemResult, S>,
    out_dir: &Path,
) -> (Vec<PageRecord>, Vec<PageShots>) {
    let mut records = Vec::new();
    let mut shown = Vec::new();
    for (page, files) in touched(spec, changed) {
        let Some(result) = results.get(&page.id) else {
            continue;
        };
        let mut shots = Vec::new();
        let mut images = Vec::new();
        for viewport in VIEWPORTS {
            let path = page::shot_path(out_dir, &page.id, viewport);
            let Ok(bytes) = std::fs::read(&path) else {
                continue;
            };
            let Ok(image) = Image::fit(&bytes) else {
                tracing::warn!(file = %path.display(), "a screenshot could not be read");
                continue;
            };
            let captured = page::png_size(&bytes).filter(|s| *s != (image.width, image.height));
            if captured.is_some() && std::fs::write(&path, &image.png).is_err() {
                tracing::warn!(file = %path.display(), "a downscaled screenshot could not be kept");
            }
            let subject =
                gate_evidence::Subject::from_bytes(path.display().to_string(), &image.png);
            shots.push(ShotRecord {
                viewport: viewport.name.to_owned(),
                width: image.width,
                height: image.height,
                captured,
                file: subject.name,
                bytes: image.png.len() as u64,
                digest: subject.digest,
            });
            images.push((
                format!("{} {}×{}", viewport.name, image.width, image.height),
                image,
            ));
        }
        if result.status == gate_harness::Status::Passed && !images.is_empty() {
            shown.push(PageShots {
                id: page.id.clone(),
                url: page.url.clone(),
                files: files.clone(),
                images,
            });
        }
        records.push(PageRecord {
            id: page.id.clone(),
            url: page.url.clone(),
            files,
            shots,
        });
    }
    (records, shown)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_is_touched_when_a_changed_file_matches_its_files() {
        let spec = gate_specs::parse_str(
            r#"
[spec]
id = "s"
[[check]]
id = "serve"
run = "x"
[[page]]
id = "checkout"
url = "http://127.0.0.1:8080/checkout"
files = ["web/checkout/**", "web/shared/*.css"]
after = ["serve"]
[[page]]
id = "home"
url = "http://127.0.0.1:8080/"
files = ["web/home/**"]
after = ["serve"]
headers = { Authorization = "APP_AUTH" }
cookies = { session = "APP_SESSION" }
"#,
            Path::new("gate.toml"),
            gate_specs::Format::Toml,
        )
        .unwrap();
        // (changed files, pages touched with the files that touch them)
        type Touched<'a> = &'a [(&'a str, &'a [&'a str])];
        let cases: &[(&[&str], Touched<'_>)] = &[
            (&["README.md"], &[]),
            (
                &["web/shared/base.css", "web/checkout/pay.ts"],
                &[("checkout", &["web/checkout/pay.ts", "web/shared/base.css"])],
            ),
            (
                &["web/home/index.html", "web/shared/deep/x.css"],
                &[("home", &["web/home/index.html"])],
            ),
        ];
        for (changed, want) in cases {
            let changed: Vec<String> = changed.iter().map(|s| (*s).to_owned()).collect();
            let got: Vec<(&str, Vec<String>)> = touched(&spec, &changed)
                .into_iter()
                .map(|(p, f)| (p.id.as_str(), f))
                .collect();
            let want: Vec<(&str, Vec<String>)> = want
                .iter()
                .map(|(id, f)| (*id, f.iter().map(|s| (*s).to_owned()).collect()))
                .collect();
            assert_eq!(got, want, "{changed:?}");
        }
        assert_eq!(credential_variables(&spec), ["APP_AUTH", "APP_SESSION"]);
    }
}
