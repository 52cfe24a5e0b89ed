//! Globs over workspace-relative paths (`/`-separated, no leading `./`).
//!
//! `*` stays within one path component and `**` crosses them, as in
//! `.gitignore`; a pattern names files, and a pattern that names a folder
//! (`src/orders`) also names everything under it.

use globset::{Glob, GlobBuilder, GlobSet, GlobSetBuilder};

/// A compiled list of globs.
#[derive(Debug, Clone)]
pub struct InputGlobs {
    patterns: Vec<String>,
    set: GlobSet,
}

impl InputGlobs {
    /// Compiles `patterns`; the error names the first pattern that does not compile.
    pub fn new<S: AsRef<str>>(patterns: &[S]) -> Result<Self, GlobError> {
        let mut builder = GlobSetBuilder::new();
        for p in patterns {
            let p = p.as_ref();
            builder.add(compile(p)?);
            // `src/orders` means the folder too.
            if !p.ends_with("/**") && !p.contains(['*', '?', '[', '{']) {
                builder.add(compile(&format!("{}/**", p.trim_end_matches('/')))?);
            }
        }
        let set = builder.build().map_err(|e| GlobError {
            glob: patterns
                .first()
                .map(|p| p.as_ref().to_owned())
                .unwrap_or_default(),
            reason: e.to_string(),
        })?;
        Ok(Self {
            patterns: patterns.iter().map(|p| p.as_ref().to_owned()).collect(),
            set,
        })
    }

    /// Whether no pattern was given.
    pub fn is_empty(&self) -> bool {
        self.patterns.is_empty()
    }

    /// The patterns as written.
    pub fn patterns(&self) -> &[String] {
        &self.patterns
    }

    /// Whether a workspace-relative path matches any pattern.
    pub fn is_match(&self, rel_path: &str) -> bool {
        self.set.is_match(rel_path)
    }

    /// For each pattern, the folder before its first wildcard: the part of
    /// the tree it can match at all (`src/orders/**/*.rs` → `src/orders`).
    pub fn literal_bases(&self) -> Vec<String> {
        self.patterns.iter().map(|p| literal_base(p)).collect()
    }
}

/// A glob that does not compile.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("glob `{glob}` does not compile: {reason}")]
pub struct GlobError {
    /// The pattern as written.
    pub glob: String,
    /// Why.
    pub reason: String,
}

fn compile(pattern: &str) -> Result<Glob, GlobError> {
    GlobBuilder::new(pattern)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
        .map_err(|e| GlobError {
            glob: pattern.to_owned(),
            reason: e.kind().to_string(),
        })
}

/// The leading components of `pattern` that hold no wildcard.
pub fn literal_base(pattern: &str) -> String {
    let mut base = Vec::new();
    let parts: Vec<&str> = pattern.split('/').collect();
    for (i, part) in parts.iter().enumerate() {
        let wild = part.contains(['*', '?', '[', '{']);
        // The last literal component may be a file, not a folder.
        if wild || i + 1 == parts.len() && pattern.contains(['*', '?', '[', '{']) {
            break;
        }
        if i + 1 == parts.len() {
            // A fully literal pattern: its base is the path itself.
            base.push(*part);
            break;
        }
        base.push(*part);
    }
    base.join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches() {
        let cases: &[(&[&str], &str, bool)] = &[
            (&["src/orders/**"], "src/orders/a.rs", true),
            (&["src/orders/**"], "src/orders/deep/a.rs", true),
            (&["src/orders/**"], "src/order/a.rs", false),
            (&["src/*.rs"], "src/a.rs", true),
            (&["src/*.rs"], "src/x/a.rs", false),
            (&["**/*.md"], "README.md", true),
            (&["**/*.md"], "docs/a/b.md", true),
            (&["src/orders"], "src/orders/a.rs", true),
            (&["src/orders"], "src/orders", true),
            (&["scripts/check.sh"], "scripts/check.sh", true),
            (&[".github/workflows/**"], ".github/workflows/ci.yml", true),
        ];
        for (patterns, path, want) in cases {
            let g = InputGlobs::new(patterns).unwrap();
            assert_eq!(g.is_match(path), *want, "{patterns:?} vs {path}");
        }
    }

    #[test]
    fn bases() {
        let cases = [
            ("src/orders/**/*.rs", "src/orders"),
            ("src/orders/**", "src/orders"),
            ("**/*.md", ""),
            ("scripts/check.sh", "scripts/check.sh"),
            ("src/*.rs", "src"),
            ("a/b/c", "a/b/c"),
        ];
        for (p, want) in cases {
            assert_eq!(literal_base(p), want, "{p}");
        }
    }

    #[test]
    fn bad_glob_names_itself() {
        let err = InputGlobs::new(&["src/[a"]).unwrap_err();
        assert_eq!(err.glob, "src/[a");
    }
}
