//! What a change did to an exam file or entry: nothing, only added lines,
//! or altered what was there.

/// What a change did to an exam file's lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum LineFate {
    /// The same bytes.
    Same,
    /// Every line of the base is still there, in order: lines were only
    /// inserted. An inserted line can still change what an old one means
    /// (`#[ignore]` above a test, an early `return`, a `/*`), so this is
    /// "no line was lost", not "the old tests still run".
    OnlyGained,
    /// A line of the base was modified or deleted, or moved out of order.
    Altered,
}

/// Whether `now` keeps every line of `base` in order.
///
/// Keeping lines in order is a subsequence question, which a greedy scan
/// answers exactly in one pass over both files (no diff is needed), so
/// files of any size are cheap. Lines end at `\n`; a final line without
/// one is a line, and a `\r` before the `\n` is part of its line.
pub fn line_fate(base: &[u8], now: &[u8]) -> LineFate {
    if base == now {
        return LineFate::Same;
    }
    let mut kept = lines(base).peekable();
    for line in lines(now) {
        if kept.peek() == Some(&line) {
            kept.next();
        }
    }
    if kept.peek().is_none() {
        LineFate::OnlyGained
    } else {
        LineFate::Altered
    }
}

/// The lines `now` gained (1-based line numbers in `now`) when it keeps
/// every line of `base` in order, `None` when it does not: for the gate to
/// show what an [`LineFate::OnlyGained`] file gained, since an inserted
/// line can change what the old ones mean.
pub fn gained_lines(base: &[u8], now: &[u8]) -> Option<Vec<usize>> {
    let mut kept = lines(base).peekable();
    let mut gained = Vec::new();
    for (i, line) in lines(now).enumerate() {
        if kept.peek() == Some(&line) {
            kept.next();
        } else {
            gained.push(i + 1);
        }
    }
    kept.peek().is_none().then_some(gained)
}

fn lines(bytes: &[u8]) -> impl Iterator<Item = &[u8]> {
    let body = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    let empty = bytes.is_empty();
    body.split(|&b| b == b'\n').filter(move |_| !empty)
}

/// The command line of `scripts.NAME` in a package.json, `None` when the
/// file is not JSON or has no such script.
pub fn script_entry(package_json: &[u8], name: &str) -> Option<String> {
    let value: serde_json::Value = serde_json::from_slice(package_json).ok()?;
    value.get("scripts")?.get(name)?.as_str().map(str::to_owned)
}

/// What a change did to a package.json script entry (`key` is the
/// [`ExamKind::ScriptEntry`](super::ExamKind::ScriptEntry) key,
/// `scripts.NAME`; `None`: the file is absent). A script is one command
/// line: any change to it, adding it among them (a new `pretest` runs
/// before the exam), is `Altered`.
pub fn entry_fate(key: &str, base: Option<&[u8]>, now: Option<&[u8]>) -> LineFate {
    let name = key.strip_prefix("scripts.").unwrap_or(key);
    let was = base.and_then(|b| script_entry(b, name));
    let is = now.and_then(|b| script_entry(b, name));
    if was == is {
        LineFate::Same
    } else {
        LineFate::Altered
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_a_change_did_to_the_lines() {
        let cases: &[(&str, &str, LineFate)] = &[
            ("a\nb\n", "a\nb\n", LineFate::Same),
            ("a\nb\n", "a\nb\nc\n", LineFate::OnlyGained),
            ("a\nb\n", "x\na\ny\nb\nz", LineFate::OnlyGained),
            ("a\nb", "a\nb\n", LineFate::OnlyGained),
            ("", "a\n", LineFate::OnlyGained),
            ("a\nb\n", "a\n", LineFate::Altered),
            ("a\nb\n", "a\nB\n", LineFate::Altered),
            ("a\nb\n", "b\na\n", LineFate::Altered),
            ("a\nb\n", "", LineFate::Altered),
            ("a\r\nb\r\n", "a\nb\n", LineFate::Altered),
            ("x\nx\n", "x\ny\n", LineFate::Altered),
        ];
        for (base, now, want) in cases {
            assert_eq!(
                line_fate(base.as_bytes(), now.as_bytes()),
                *want,
                "{base:?} → {now:?}"
            );
        }
    }

    #[test]
    fn the_lines_a_file_gained() {
        let cases: &[(&str, &str, Option<&[usize]>)] = &[
            ("a\nb\n", "a\nb\n", Some(&[])),
            ("a\nb\n", "x\na\n#[ignore]\nb\n", Some(&[1, 3])),
            ("a\nb\n", "a\n", None),
        ];
        for (base, now, want) in cases {
            assert_eq!(
                gained_lines(base.as_bytes(), now.as_bytes()).as_deref(),
                *want,
                "{base:?} → {now:?}"
            );
        }
    }

    #[test]
    fn a_big_file_is_read_in_one_pass() {
        let base = (0..200_000).fold(String::new(), |mut s, i| {
            s.push_str(&i.to_string());
            s.push('\n');
            s
        });
        let now = format!("{base}#[test] fn more() {{}}\n");
        assert_eq!(
            line_fate(base.as_bytes(), now.as_bytes()),
            LineFate::OnlyGained
        );
    }

    #[test]
    fn script_entries() {
        let a = br#"{"scripts": {"test": "vitest run", "pretest": "tsc"}}"#;
        let b = br#"{"scripts": {"test": "vitest run || true"}}"#;
        assert_eq!(script_entry(a, "test").as_deref(), Some("vitest run"));
        assert_eq!(script_entry(b"not json", "test"), None);
        assert_eq!(entry_fate("scripts.test", Some(a), Some(a)), LineFate::Same);
        assert_eq!(
            entry_fate("scripts.test", Some(a), Some(b)),
            LineFate::Altered
        );
        assert_eq!(
            entry_fate("scripts.pretest", Some(b), Some(a)),
            LineFate::Altered
        );
        assert_eq!(
            entry_fate("scripts.posttest", Some(b), Some(a)),
            LineFate::Same
        );
    }
}
