//! `git blame` itself: one call on line ranges of a file at a commit, and
//! its porcelain output read.

use std::path::Path;

use crate::commits::is_full_id;
use crate::error::BlameError;
use crate::git::RunGit;

/// `git blame --porcelain -w` of `ranges` (inclusive, as `-L`) of `file` at
/// `commit`: (line, commit) for every line they cover, sorted.
pub async fn blame_ranges(
    git: &impl RunGit,
    dir: &Path,
    commit: &str,
    file: &str,
    ranges: &[(u32, u32)],
) -> Result<Vec<(u32, String)>, BlameError> {
    let spans: Vec<String> = ranges.iter().map(|(a, b)| format!("-L{a},{b}")).collect();
    let mut args = vec!["blame", "--porcelain", "-w", "--no-textconv"];
    args.extend(spans.iter().map(String::as_str));
    args.extend([commit, "--", file]);
    let out = git.run(dir, &args).await.map_err(BlameError::Git)?;
    Ok(parse_porcelain(&out))
}

/// Sorted, distinct lines → inclusive ranges of consecutive ones.
pub fn line_ranges(lines: impl IntoIterator<Item = u32>) -> Vec<(u32, u32)> {
    let mut out: Vec<(u32, u32)> = Vec::new();
    for line in lines {
        match out.last_mut() {
            Some((_, end)) if *end + 1 == line => *end = line,
            _ => out.push((line, line)),
        }
    }
    out
}

/// `git blame --porcelain` output → (line in the blamed revision, commit)
/// for every line it covers.
pub fn parse_porcelain(out: &[u8]) -> Vec<(u32, String)> {
    let text = String::from_utf8_lossy(out);
    let mut found = Vec::new();
    for line in text.lines() {
        // Content lines begin with a tab; every other line is git's.
        if line.starts_with('\t') {
            continue;
        }
        let mut parts = line.split(' ');
        let (Some(id), Some(_orig), Some(fin)) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        if !is_full_id(id) {
            continue;
        }
        let Ok(fin) = fin.parse::<u32>() else {
            continue;
        };
        found.push((fin, id.to_owned()));
    }
    found.sort();
    found.dedup();
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn porcelain_reads_every_line() {
        let a = "a".repeat(40);
        let b = "b".repeat(40);
        let out = format!(
            "{a} 1 7 2\nauthor x\nsummary {b} 9 9 1\nfilename f\n\tline\n{a} 2 8\n\tline\n{b} 5 12 1\nfilename f\n\t{a} 1 1 1\n"
        );
        assert_eq!(
            parse_porcelain(out.as_bytes()),
            [(7, a.clone()), (8, a), (12, b)]
        );
    }

    #[test]
    fn lines_make_ranges() {
        assert_eq!(line_ranges([2, 3, 4, 7, 9, 10]), [(2, 4), (7, 7), (9, 10)]);
        assert!(line_ranges([]).is_empty());
    }
}
