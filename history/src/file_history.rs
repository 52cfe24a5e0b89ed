//! The commit graph behind the fixes and what each commit did to the files
//! being blamed, from one `git log --raw` pass: what the shared blame walk
//! ([`crate::blame_walk`]) follows from a fix's parent back to where each
//! line came from.

use std::collections::{HashMap, HashSet};

use crate::commits::is_full_id;

/// The options of the raw pass: every commit's changes against its first
/// parent (a merge's too), path by path, without rename detection, in an
/// order where a commit comes before its parents.
pub(crate) const RAW_OPTIONS: [&str; 6] = [
    "--raw",
    "-r",
    "--no-renames",
    "--no-abbrev",
    "--diff-merges=first-parent",
    "--topo-order",
];

/// A file's entry in a commit's raw diff against its first parent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RawChange {
    /// `A`, `M`, `D`, `T`… as git prints it.
    pub status: char,
    /// The mode before (`000000` when created).
    pub old_mode: String,
    /// The mode after (`000000` when deleted).
    pub new_mode: String,
    /// The blob before.
    pub old_blob: String,
    /// The blob after.
    pub new_blob: String,
}

impl RawChange {
    /// Whether both sides are regular files (a mode change between the two
    /// kinds of regular file aside).
    pub(crate) fn regular(&self) -> bool {
        let regular = |m: &str| matches!(m, "100644" | "100755");
        regular(&self.old_mode) && regular(&self.new_mode)
    }
}

/// One commit of the raw pass.
#[derive(Debug, Clone, Default)]
pub(crate) struct Node {
    /// Its id.
    pub id: String,
    /// Its parents, by index; `None` when a parent was not in the pass.
    pub parents: Vec<Option<usize>>,
    /// Whether its diff against its first parent deletes any file (a rename
    /// source git's rename detection could pick).
    pub deletes: bool,
}

/// The raw pass, kept only for the files asked about.
#[derive(Debug, Default)]
pub(crate) struct FileHistory {
    /// Commits in the pass's order: every commit before its parents.
    pub nodes: Vec<Node>,
    /// Commit id → index.
    pub index: HashMap<String, usize>,
    /// Path → commit index → what the commit did to that file.
    pub changes: HashMap<String, HashMap<usize, RawChange>>,
}

impl FileHistory {
    /// What commit `k` did to `path`; `None` when it left it as its first
    /// parent has it.
    pub(crate) fn change(&self, k: usize, path: &str) -> Option<&RawChange> {
        self.changes.get(path)?.get(&k)
    }

    /// Parses a raw pass of `--format=<delimiter>%H %P` records, keeping
    /// the changes of `paths`; `None` when a record does not read.
    pub(crate) fn parse(out: &[u8], delimiter: &str, paths: &HashSet<&str>) -> Option<Self> {
        let text = String::from_utf8_lossy(out);
        let mut history = Self::default();
        let mut parents: Vec<Vec<String>> = Vec::new();
        for record in text.split(delimiter).skip(1) {
            let mut lines = record.lines();
            let mut head = lines.next()?.split(' ');
            let id = head.next()?;
            if !is_full_id(id) {
                return None;
            }
            let ids: Vec<String> = head.filter(|p| !p.is_empty()).map(str::to_owned).collect();
            if !ids.iter().all(|p| is_full_id(p)) {
                return None;
            }
            let k = history.nodes.len();
            let mut node = Node {
                id: id.to_owned(),
                ..Node::default()
            };
            for line in lines.filter(|l| !l.is_empty()) {
                let (meta, path) = line.split_once('\t')?;
                let mut fields = meta.strip_prefix(':')?.split(' ');
                let (Some(old_mode), Some(new_mode), Some(old_blob), Some(new_blob), Some(status)) = (
                    fields.next(),
                    fields.next(),
                    fields.next(),
                    fields.next(),
                    fields.next().and_then(|s| s.chars().next()),
                ) else {
                    return None;
                };
                if status == 'D' {
                    node.deletes = true;
                }
                if paths.contains(path) {
                    history.changes.entry(path.to_owned()).or_default().insert(
                        k,
                        RawChange {
                            status,
                            old_mode: old_mode.to_owned(),
                            new_mode: new_mode.to_owned(),
                            old_blob: old_blob.to_owned(),
                            new_blob: new_blob.to_owned(),
                        },
                    );
                }
            }
            history.index.insert(node.id.clone(), k);
            history.nodes.push(node);
            parents.push(ids);
        }
        for (node, ids) in history.nodes.iter_mut().zip(parents) {
            node.parents = ids.iter().map(|p| history.index.get(p).copied()).collect();
        }
        Some(history)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_raw_pass_reads_parents_changes_and_deletions() {
        let [root, mid, tip, one, two] = ["a", "b", "c", "1", "2"].map(|h| h.repeat(40));
        let zero = "0".repeat(40);
        let delimiter = "@@";
        let out = format!(
            "{delimiter}{tip} {mid} {root}\n\n:100644 100644 {one} {two} M\tf.c\n\
             {delimiter}{mid} {root}\n\n:100644 000000 {one} {zero} D\told.c\n\
             :000000 100644 {zero} {one} A\tf.c\n\
             {delimiter}{root}\n\n:000000 100644 {zero} {one} A\tg.c\n"
        );
        let paths: HashSet<&str> = ["f.c"].into();
        let h = FileHistory::parse(out.as_bytes(), delimiter, &paths).unwrap();
        assert_eq!(h.nodes.len(), 3);
        assert_eq!(h.nodes[0].parents, [Some(1), Some(2)]);
        assert_eq!(h.nodes[2].parents, []);
        assert!(h.nodes[1].deletes && !h.nodes[0].deletes);
        assert_eq!(h.change(1, "f.c").map(|c| c.status), Some('A'));
        assert!(h.change(0, "f.c").is_some_and(RawChange::regular));
        assert!(h.change(2, "g.c").is_none(), "not asked about");
        assert!(FileHistory::parse(b"@@nothex\n", delimiter, &paths).is_none());
    }
}
