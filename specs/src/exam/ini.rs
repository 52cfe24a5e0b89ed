//! A small reader of ini files (`.npmrc`, `pytest.ini`, `tox.ini`,
//! `setup.cfg`): `[section]` headers, `key = value` lines, indented
//! continuation lines, and `;` or `#` comments.

use std::collections::BTreeMap;

/// The keys of `section` (`None`: the keys before any header), with
/// their values.
pub(crate) fn keys(text: &str, section: Option<&str>) -> BTreeMap<String, String> {
    let mut out: BTreeMap<String, String> = BTreeMap::new();
    let mut current: Option<String> = None;
    let mut last: Option<String> = None;
    for raw in text.lines() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with(';') || line.starts_with('#') {
            continue;
        }
        let inside = current.as_deref() == section;
        if raw.starts_with([' ', '\t']) && last.is_some() {
            // An indented line continues the value above it.
            if inside && let Some(value) = last.as_ref().and_then(|k| out.get_mut(k)) {
                value.push('\n');
                value.push_str(line);
            }
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            current = Some(name.trim().to_owned());
            last = None;
            continue;
        }
        let (key, value) = line
            .split_once('=')
            .or_else(|| line.split_once(':').filter(|_| section.is_some()))
            .map_or((line, ""), |(k, v)| (k.trim(), v.trim()));
        last = Some(key.to_owned());
        if inside {
            out.insert(key.to_owned(), value.to_owned());
        }
    }
    out
}

/// Whether the file has a `[section]` header.
pub(crate) fn has_section(text: &str, section: &str) -> bool {
    text.lines().any(|l| {
        l.trim()
            .strip_prefix('[')
            .and_then(|l| l.strip_suffix(']'))
            .is_some_and(|n| n.trim() == section)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_keys_and_continuations() {
        let text =
            "top = 1\n; note\n[pytest]\naddopts = -q\n  --strict\ntestpaths: tests\n[other]\nx=2\n";
        let pytest = keys(text, Some("pytest"));
        assert_eq!(
            pytest.get("addopts").map(String::as_str),
            Some("-q\n--strict")
        );
        assert_eq!(pytest.get("testpaths").map(String::as_str), Some("tests"));
        assert_eq!(keys(text, None).len(), 1);
        assert!(has_section(text, "other"));
        assert!(!has_section(text, "tool:pytest"));
        // `.npmrc` keys may hold `:` (`@scope:registry`).
        let npmrc = keys("@a:registry=https://r/\n//r/:_authToken=x\n", None);
        assert!(npmrc.contains_key("@a:registry"));
        assert!(npmrc.contains_key("//r/:_authToken"));
    }
}
