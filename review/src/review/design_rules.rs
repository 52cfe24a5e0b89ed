//! Design rules: house rules whose cases are screenshots. They are asked
//! about the screenshots of a page the change touched, one request per page
//! with the page's desktop and phone screenshots as images, and scored and
//! turned into findings like code rules.

use std::fmt::Write;

use crate::findings::{Finding, finding_id};
use crate::provider::{Block, Image};
use crate::review::context::{self, Fence};
use crate::review::house_rules::{self, Asked, Scored};
use crate::rules::scope::RuleSet;

/// A page captured in this run, as the rules reviewer sees it.
#[derive(Debug, Clone)]
pub struct PageShots {
    /// The page's id.
    pub id: String,
    /// Its URL.
    pub url: String,
    /// The changed files that made it worth looking at, sorted.
    pub files: Vec<String>,
    /// Its screenshots, each with a label (`desktop 1440×900`), in order.
    pub images: Vec<(String, Image)>,
}

/// A page and the design rules asked of it.
#[derive(Debug, Clone)]
pub struct PageAsk {
    /// The page and its screenshots.
    pub page: PageShots,
    /// The judged design rules that apply to its changed files.
    pub asked: Vec<Asked>,
}

/// The judged design rules that apply to any of `files`, keyed as in
/// [`house_rules::asked`].
pub fn asked(set: &RuleSet, files: &[String]) -> Vec<Asked> {
    house_rules::judged(set, files, true)
}

/// What the reviewer is told about the screenshots that follow: which page,
/// which sizes, in what order.
pub fn page_text(fence: &Fence, page: &PageShots) -> String {
    let mut data = String::new();
    let _ = writeln!(data, "page: {}", page.id);
    let _ = writeln!(data, "url: {}", page.url);
    let _ = writeln!(
        data,
        "changed files that made it worth looking at: {}",
        page.files.join(", ")
    );
    let labels: Vec<&str> = page.images.iter().map(|(l, _)| l.as_str()).collect();
    let _ = writeln!(data, "screenshots, in order: {}", labels.join("; "));
    let (section, _) = fence.wrap("kind=\"page\"", &data, context::BLOCK_CAP);
    format!(
        "## The page\nThe change is shown as screenshots of one page, taken in a headless \
         browser after it loaded; they follow this text, in the order listed.\n{section}"
    )
}

/// The questions, with how to read them on screenshots.
pub fn questions(fence: &Fence, asked: &[Asked]) -> String {
    format!(
        "{}\n## Design rules\nThese rules are about how the page looks. Judge each one on \
         the screenshots alone, at every size shown; `why` names the screenshot (desktop or \
         phone) and what in it decides. Ignore the file paths' contents: only the pictures \
         are the change here.",
        house_rules::questions(fence, asked)
    )
}

/// One request's blocks for a page: the shared context, the page with its
/// screenshots, then the rules reviewer's instructions and the questions.
pub fn request(shared: &str, fence: &Fence, page: &PageShots, instructions: String) -> Vec<Block> {
    vec![
        Block::cached(shared.to_owned()),
        Block::with_images(
            page_text(fence, page),
            page.images.iter().map(|(_, i)| i.clone()).collect(),
        ),
        Block::new(instructions),
    ]
}

/// Findings for the rules a page's screenshots break, worst first: as for
/// code rules, titled with the page.
pub fn findings(
    page: &PageShots,
    asked: &[Asked],
    scored: &[Scored],
    threshold: f64,
) -> Vec<Finding> {
    house_rules::findings(asked, scored, threshold)
        .into_iter()
        .map(|mut f| {
            let rule = f
                .title
                .strip_prefix("house rule ")
                .unwrap_or(&f.title)
                .to_owned();
            f.title = format!("on page `{}`, design rule {rule}", page.id);
            f.detail = format!(
                "{}\npage: {} ({}), screenshots: {}",
                f.detail,
                page.id,
                page.url,
                page.images
                    .iter()
                    .map(|(l, _)| l.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            f.id = finding_id(&f.role, &f.file, &f.title);
            f
        })
        .collect()
}
