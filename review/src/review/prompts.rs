//! The specialists' instructions: Markdown files in the repository
//! (`review/prompts/`), embedded in the binary, each replaceable by a file
//! named in the routing table's `[prompts]`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use gate_evidence::Digest;

use crate::role::Role;

/// Which instructions a request carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Prompt {
    /// A role's own prompt.
    Role(Role),
    /// The trivial tier's quality reviewer, who also covers security,
    /// performance and docs briefly.
    Generalist,
}

impl Prompt {
    /// The key in `[prompts]` and in the bundle.
    pub fn key(self) -> &'static str {
        match self {
            Self::Generalist => "generalist",
            Self::Role(r) => r.as_str(),
        }
    }

    fn builtin(self) -> &'static str {
        match self {
            Self::Generalist => include_str!("../../prompts/generalist.md"),
            Self::Role(Role::Quality) => include_str!("../../prompts/quality.md"),
            Self::Role(Role::Security) => include_str!("../../prompts/security.md"),
            Self::Role(Role::Performance) => include_str!("../../prompts/performance.md"),
            Self::Role(Role::Docs) => include_str!("../../prompts/docs.md"),
            Self::Role(Role::Integration) => include_str!("../../prompts/integration.md"),
            Self::Role(Role::Judge) => include_str!("../../prompts/judge.md"),
            Self::Role(Role::Coordinator) => include_str!("../../prompts/coordinator.md"),
            Self::Role(Role::Rules) => include_str!("../../prompts/rules.md"),
        }
    }

    /// Every prompt.
    pub fn all() -> impl Iterator<Item = Prompt> {
        std::iter::once(Prompt::Generalist).chain(Role::ALL.into_iter().map(Prompt::Role))
    }
}

/// The prompts in effect.
#[derive(Debug, Clone)]
pub struct Prompts {
    texts: BTreeMap<Prompt, (String, Option<PathBuf>)>,
}

/// A prompt file that cannot be read.
#[derive(Debug, thiserror::Error)]
#[error("cannot read prompt `{key}` from {}: {source}", path.display())]
pub struct PromptError {
    /// The prompt.
    pub key: String,
    /// The file.
    pub path: PathBuf,
    /// Why.
    #[source]
    pub source: std::io::Error,
}

impl Prompts {
    /// The built-in prompts, with `overrides` (`[prompts]` key → path,
    /// relative to `base`) read in their place.
    pub fn load(overrides: &BTreeMap<String, String>, base: &Path) -> Result<Self, PromptError> {
        let mut texts = BTreeMap::new();
        for prompt in Prompt::all() {
            let entry = match overrides.get(prompt.key()) {
                Some(rel) => {
                    let path = base.join(rel);
                    let text = gate_specs::read_text_bounded(&path, gate_specs::TEXT_MAX_BYTES)
                        .map_err(|source| PromptError {
                            key: prompt.key().to_owned(),
                            path: path.clone(),
                            source,
                        })?;
                    (text, Some(path))
                }
                None => (prompt.builtin().to_owned(), None),
            };
            texts.insert(prompt, entry);
        }
        Ok(Self { texts })
    }

    /// The built-in prompts only.
    pub fn builtin() -> Self {
        Self {
            texts: Prompt::all()
                .map(|p| (p, (p.builtin().to_owned(), None)))
                .collect(),
        }
    }

    /// A prompt's text.
    pub fn text(&self, prompt: Prompt) -> &str {
        self.texts.get(&prompt).map_or("", |(t, _)| t.as_str())
    }

    /// The override files in use.
    pub fn files(&self) -> impl Iterator<Item = &Path> {
        self.texts.values().filter_map(|(_, p)| p.as_deref())
    }

    /// Each prompt's key, blake3 digest and (when overridden) file, for the bundle.
    pub fn digests(&self) -> Vec<(String, Digest, Option<PathBuf>)> {
        self.texts
            .iter()
            .map(|(p, (t, path))| (p.key().to_owned(), Digest::of(t.as_bytes()), path.clone()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each prompt's "do not flag" block is longer than its "flag" block.
    #[test]
    fn do_not_flag_outweighs_flag() {
        let prompts = Prompts::builtin();
        for role in [
            Prompt::Generalist,
            Prompt::Role(Role::Quality),
            Prompt::Role(Role::Security),
            Prompt::Role(Role::Performance),
            Prompt::Role(Role::Docs),
            Prompt::Role(Role::Integration),
        ] {
            let text = prompts.text(role);
            let section = |heading: &str| -> usize {
                let start = text
                    .find(heading)
                    .unwrap_or_else(|| panic!("{heading} in {role:?}"));
                let rest = &text[start + heading.len()..];
                let end = rest.find("\n## ").unwrap_or(rest.len());
                rest[..end].lines().filter(|l| l.starts_with("- ")).count()
            };
            let (flag, dont) = (section("## Flag\n"), section("## Do not flag\n"));
            assert!(
                dont > flag,
                "{role:?}: {dont} do-not-flag items vs {flag} flag items"
            );
        }
    }

    #[test]
    fn overrides_replace_one_prompt() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("q.md"), "house quality prompt").unwrap();
        let overrides = BTreeMap::from([("quality".to_owned(), "q.md".to_owned())]);
        let p = Prompts::load(&overrides, dir.path()).unwrap();
        assert_eq!(p.text(Prompt::Role(Role::Quality)), "house quality prompt");
        assert!(p.text(Prompt::Role(Role::Security)).contains("security"));
        let missing = BTreeMap::from([("docs".to_owned(), "nope.md".to_owned())]);
        assert!(Prompts::load(&missing, dir.path()).is_err());
    }
}
