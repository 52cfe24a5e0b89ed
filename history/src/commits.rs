//! The integration branch's history as the harvester reads it: one `git
//! log` pass for every commit's parents, tree, date and message, one for the
//! patches of the commits that may matter, each parsed here.
//!
//! Commit messages and file names are the agent's text: records are split
//! on a delimiter drawn at random per call, never on a byte a message could
//! hold, and nothing read here goes back to git but validated hex ids and
//! file names passed after `--`.

use std::collections::HashMap;

use chrono::{DateTime, TimeZone as _, Utc};

/// One commit of the branch (or of a run's own history).
#[derive(Debug, Clone)]
pub struct Commit {
    /// Its full id.
    pub id: String,
    /// Its parents, first parent first.
    pub parents: Vec<String>,
    /// Its tree.
    pub tree: String,
    /// Its commit date.
    pub date: DateTime<Utc>,
    /// Its whole message.
    pub message: String,
}

impl Commit {
    /// The message's first line.
    pub fn summary(&self) -> &str {
        self.message.lines().next().unwrap_or("").trim()
    }
}

/// The branch, newest first, with what the harvester asks of it.
#[derive(Debug, Default)]
pub struct History {
    /// Every commit reachable from the branch, in `--topo-order`: a commit
    /// comes before all of its parents.
    pub commits: Vec<Commit>,
    /// A commit's index in `commits`.
    pub index: HashMap<String, usize>,
    /// For each commit, the index of the first-parent commit of the branch
    /// whose arrival brought it in: itself for a commit of the first-parent
    /// line, the merge for a commit a merge brought.
    pub landed_at: Vec<usize>,
    /// For each commit of the first-parent line, how many first-parent
    /// commits came after it; `None` off that line.
    pub later: Vec<Option<u32>>,
    /// For each commit of the first-parent line, when it reached the
    /// branch: its date, but never earlier than its first parent's arrival
    /// (a commit back-dated and landed by fast-forward takes its parent's
    /// time). Off that line, the time of the commit that brought it.
    arrived: Vec<DateTime<Utc>>,
    /// Commit ids, sorted, for resolving short ids.
    sorted: Vec<String>,
}

impl History {
    /// The history of `commits` (newest first, parents after children).
    pub fn new(commits: Vec<Commit>) -> Self {
        let index: HashMap<String, usize> = commits
            .iter()
            .enumerate()
            .map(|(i, c)| (c.id.clone(), i))
            .collect();
        let mut sorted: Vec<String> = commits.iter().map(|c| c.id.clone()).collect();
        sorted.sort();
        let mut history = Self {
            landed_at: vec![usize::MAX; commits.len()],
            later: vec![None; commits.len()],
            arrived: commits.iter().map(|c| c.date).collect(),
            commits,
            index,
            sorted,
        };
        history.mark_landings();
        history
    }

    /// Walks the first-parent line from the oldest commit on, and gives
    /// every commit the first-parent commit that brought it in: each commit
    /// is visited once.
    fn mark_landings(&mut self) {
        let mut line = Vec::new();
        let mut at = (!self.commits.is_empty()).then_some(0);
        while let Some(i) = at {
            line.push(i);
            at = self.commits[i]
                .parents
                .first()
                .and_then(|p| self.index.get(p).copied());
        }
        for (n, &i) in line.iter().enumerate() {
            self.later[i] = Some(n as u32);
        }
        let mut floor: Option<DateTime<Utc>> = None;
        for &i in line.iter().rev() {
            let at = floor.map_or(self.commits[i].date, |f| f.max(self.commits[i].date));
            self.arrived[i] = at;
            floor = Some(at);
        }
        for &tip in line.iter().rev() {
            self.landed_at[tip] = tip;
            let mut stack: Vec<usize> = self.commits[tip]
                .parents
                .iter()
                .skip(1)
                .filter_map(|p| self.index.get(p).copied())
                .collect();
            while let Some(i) = stack.pop() {
                if self.landed_at[i] != usize::MAX {
                    continue;
                }
                self.landed_at[i] = tip;
                stack.extend(
                    self.commits[i]
                        .parents
                        .iter()
                        .filter_map(|p| self.index.get(p).copied()),
                );
            }
        }
    }

    /// When the commit at `i` reached the branch (see `arrived`): the time
    /// windows are measured in, which a commit's own date cannot move back.
    pub fn arrival(&self, i: usize) -> DateTime<Utc> {
        let at = self.landed_at.get(i).copied().unwrap_or(i);
        self.arrived
            .get(at)
            .or_else(|| self.arrived.get(i))
            .copied()
            .unwrap_or_default()
    }

    /// The commit with this id.
    pub fn get(&self, id: &str) -> Option<&Commit> {
        self.index.get(id).map(|&i| &self.commits[i])
    }

    /// The one commit whose id begins with `prefix` (at least 7 hex
    /// digits), if exactly one does.
    pub fn resolve(&self, prefix: &str) -> Option<&str> {
        let prefix = prefix.to_ascii_lowercase();
        if prefix.len() < 7 || !is_hex(&prefix) {
            return None;
        }
        let from = self
            .sorted
            .partition_point(|id| id.as_str() < prefix.as_str());
        let mut found = self.sorted[from..]
            .iter()
            .take_while(|id| id.starts_with(&prefix));
        let first = found.next()?;
        found.next().is_none().then_some(first.as_str())
    }
}

/// Whether `text` is non-empty lowercase or uppercase hex.
pub fn is_hex(text: &str) -> bool {
    !text.is_empty() && text.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Whether `text` is a full commit id (40 or 64 hex digits).
pub fn is_full_id(text: &str) -> bool {
    matches!(text.len(), 40 | 64) && is_hex(text)
}

/// A delimiter no commit message can be made to contain: drawn at random.
pub fn delimiter() -> String {
    let mut raw = [0u8; 16];
    // Without randomness, a fixed marker still splits honest history.
    if getrandom::fill(&mut raw).is_err() {
        raw = *b"gate-harvest-log";
    }
    format!("\u{1e}{}\u{1f}", hex::encode(raw))
}

/// The `--format` of the commit pass for `delimiter`.
pub fn log_format(delimiter: &str) -> String {
    format!("--format={delimiter}%H%x00%P%x00%T%x00%ct%x00%B")
}

/// Parses the commit pass: records that do not read (a forged one among
/// them) are dropped.
pub fn parse_log(out: &[u8], delimiter: &str) -> Vec<Commit> {
    let text = String::from_utf8_lossy(out);
    text.split(delimiter)
        .filter(|r| !r.is_empty())
        .filter_map(parse_record)
        .collect()
}

fn parse_record(record: &str) -> Option<Commit> {
    let mut fields = record.splitn(5, '\0');
    let id = fields.next()?.trim();
    let parents = fields.next()?;
    let tree = fields.next()?.trim();
    let date = fields.next()?.trim().parse::<i64>().ok()?;
    let message = fields.next().unwrap_or("").trim_end().to_owned();
    if !is_full_id(id) || !is_full_id(tree) {
        return None;
    }
    let parents: Vec<String> = parents.split_whitespace().map(str::to_owned).collect();
    if !parents.iter().all(|p| is_full_id(p)) {
        return None;
    }
    Some(Commit {
        id: id.to_owned(),
        parents,
        tree: tree.to_owned(),
        date: Utc.timestamp_opt(date, 0).single()?,
        message,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn commit(id: char, parents: &[char]) -> Commit {
        Commit {
            id: id.to_string().repeat(40),
            parents: parents.iter().map(|p| p.to_string().repeat(40)).collect(),
            tree: "f".repeat(40),
            date: Utc.timestamp_opt(0, 0).single().unwrap_or_default(),
            message: String::new(),
        }
    }

    #[test]
    fn each_commit_lands_with_the_first_parent_commit_that_brought_it() {
        // d merges c (a side branch off a) into b; e follows d.
        //   e ─ d ─ b ─ a
        //        └─ c ─┘
        let history = History::new(vec![
            commit('e', &['d']),
            commit('d', &['b', 'c']),
            commit('c', &['a']),
            commit('b', &['a']),
            commit('a', &[]),
        ]);
        let at = |id: char| {
            let i = history.index[&id.to_string().repeat(40)];
            history.commits[history.landed_at[i]].id.chars().next()
        };
        assert_eq!(at('c'), Some('d'));
        assert_eq!(at('b'), Some('b'));
        assert_eq!(at('e'), Some('e'));
        assert_eq!(history.later[history.index[&"b".repeat(40)]], Some(2));
        assert_eq!(history.later[history.index[&"c".repeat(40)]], None);
    }

    #[test]
    fn a_commit_arrives_no_earlier_than_its_first_parent() {
        let at = |c: char, days: i64| Commit {
            date: Utc
                .timestamp_opt(days * 86_400, 0)
                .single()
                .unwrap_or_default(),
            ..commit(c, &[])
        };
        // d (day 9) merges c (dated day 1) into b (day 5, back-dated by a
        // fast-forward below a, day 8); e follows on day 10.
        let with = |mut c: Commit, parents: &[char]| {
            c.parents = parents.iter().map(|p| p.to_string().repeat(40)).collect();
            c
        };
        let history = History::new(vec![
            with(at('e', 10), &['d']),
            with(at('d', 9), &['b', 'c']),
            with(at('c', 1), &['a']),
            with(at('b', 5), &['a']),
            at('a', 8),
        ]);
        let day = |c: char| {
            history
                .arrival(history.index[&c.to_string().repeat(40)])
                .timestamp()
                / 86_400
        };
        assert_eq!(
            [day('a'), day('b'), day('c'), day('d'), day('e')],
            [8, 8, 9, 9, 10]
        );
    }

    #[test]
    fn short_ids_resolve_only_when_unique() {
        let mut a = commit('a', &[]);
        a.id = format!("abcdef1{}", "0".repeat(33));
        let mut b = commit('b', &[]);
        b.id = format!("abcdef2{}", "0".repeat(33));
        let history = History::new(vec![a.clone(), b]);
        assert_eq!(history.resolve("abcdef1"), Some(a.id.as_str()));
        assert_eq!(history.resolve("ABCDEF1"), Some(a.id.as_str()));
        assert_eq!(history.resolve("abcdef"), None, "too short");
        assert_eq!(history.resolve("abcdef0"), None, "no such commit");
        let mut c = commit('c', &[]);
        c.id = format!("abcdef1{}", "1".repeat(33));
        let history = History::new(vec![a, c]);
        assert_eq!(history.resolve("abcdef1"), None, "ambiguous");
    }

    #[test]
    fn a_message_cannot_forge_a_record() {
        let delimiter = delimiter();
        let forged = format!("{}\0\0{}\01\0forged", "9".repeat(40), "8".repeat(40));
        let out = format!(
            "{delimiter}{}\0\0{}\0100\0subject\n\n\u{1e}{forged}\n",
            "a".repeat(40),
            "b".repeat(40)
        );
        let commits = parse_log(out.as_bytes(), &delimiter);
        assert_eq!(commits.len(), 1);
        assert!(commits[0].message.contains("forged"));
        assert_eq!(commits[0].summary(), "subject");
    }
}
