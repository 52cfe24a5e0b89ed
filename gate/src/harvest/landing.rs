//! Where a run's change landed on the integration branch: its head on the
//! branch (a merge or a fast-forward), a commit with its patch (a squash),
//! one commit per commit of it with the same patches (a rebase), or a
//! commit with its tree.

use std::collections::HashMap;

use gate_history::commits::History;
use gate_history::patch::PatchId;

/// How a change landed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LandedBy {
    /// Its head is on the branch.
    Merge,
    /// Commits on the branch carry its patch (squash or rebase).
    Patch,
    /// A commit on the branch has its head's tree.
    Tree,
}

impl LandedBy {
    /// As recorded in an outcome's evidence.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Merge => "merge",
            Self::Patch => "patch",
            Self::Tree => "tree",
        }
    }
}

/// Where a change landed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Landing {
    /// The commits that carry it: on the branch, plus the run's own
    /// commits a merge brought in (what reverts, fixes and blame name).
    pub commits: Vec<String>,
    /// The branch commit with which it arrived (the newest, for a rebase):
    /// its index in the history.
    pub at: usize,
    /// How.
    pub by: LandedBy,
}

/// A run's own commits, as far as the repository has them.
#[derive(Debug, Clone, Default)]
pub(crate) struct Change {
    /// The head the run verified.
    pub head: String,
    /// Its tree, when the head's objects are here.
    pub tree: Option<String>,
    /// The run's commits not on the branch, newest first, with their patch ids.
    pub own: Vec<(String, Option<PatchId>)>,
    /// The id of the whole change's patch (from the fork point to the head).
    pub whole: Option<PatchId>,
    /// The branch commit the change forked from (its index in the history).
    pub fork: Option<usize>,
}

/// Each run head's change, by head.
pub(crate) type Changes = HashMap<String, Change>;

/// The branch's commits by patch id and by tree.
#[derive(Debug, Default)]
pub(crate) struct Index {
    /// Patch id → branch commits (indexes, newest first).
    pub patches: HashMap<PatchId, Vec<usize>>,
    /// Tree → branch commits (indexes, newest first).
    pub trees: HashMap<String, Vec<usize>>,
    /// For each merge landing, the commits it brought in.
    pub brought: HashMap<usize, Vec<usize>>,
}

impl Index {
    /// The index of `history`, with the patch ids of its commits.
    pub(crate) fn new(history: &History, ids: &HashMap<String, PatchId>) -> Self {
        let mut index = Self::default();
        for (i, c) in history.commits.iter().enumerate() {
            if let Some(id) = ids.get(&c.id) {
                index.patches.entry(*id).or_default().push(i);
            }
            index.trees.entry(c.tree.clone()).or_default().push(i);
            let at = history.landed_at[i];
            if at != i {
                index.brought.entry(at).or_default().push(i);
            }
        }
        index
    }
}

/// Where `change` landed on the branch, if it did.
pub(crate) fn find(history: &History, index: &Index, change: &Change) -> Option<Landing> {
    if let Some(&i) = history.index.get(&change.head) {
        let at = history.landed_at[i];
        let mut commits = vec![history.commits[at].id.clone()];
        if at != i {
            commits.extend(
                index
                    .brought
                    .get(&at)
                    .into_iter()
                    .flatten()
                    .map(|&k| history.commits[k].id.clone()),
            );
        }
        return Some(Landing {
            commits,
            at,
            by: LandedBy::Merge,
        });
    }
    // Only commits after the fork point can carry the change: an older
    // commit with the same tree or patch is not this change landing.
    let fork = change.fork?;
    let after = |hits: Option<&Vec<usize>>| -> Option<usize> {
        hits?.iter().copied().filter(|&k| k < fork).max()
    };
    if let Some(k) = change.whole.and_then(|id| after(index.patches.get(&id))) {
        return Some(landed(history, vec![k], LandedBy::Patch));
    }
    // A rebase: every commit of the change has its twin on the branch.
    let twins: Option<Vec<usize>> = change
        .own
        .iter()
        .filter_map(|(_, id)| *id)
        .map(|id| after(index.patches.get(&id)))
        .collect();
    if let Some(twins) = twins.filter(|t| !t.is_empty()) {
        return Some(landed(history, twins, LandedBy::Patch));
    }
    let tree = change.tree.as_ref()?;
    let k = after(index.trees.get(tree))?;
    Some(landed(history, vec![k], LandedBy::Tree))
}

fn landed(history: &History, mut at: Vec<usize>, by: LandedBy) -> Landing {
    at.sort_unstable();
    at.dedup();
    Landing {
        commits: at.iter().map(|&k| history.commits[k].id.clone()).collect(),
        // The newest of them: the change was whole only then.
        at: at[0],
        by,
    }
}

#[cfg(test)]
mod tests {
    use chrono::{TimeZone as _, Utc};

    use super::*;
    use gate_history::commits::Commit;

    fn id(c: char) -> String {
        c.to_string().repeat(40)
    }

    fn commit(c: char, parents: &[char], tree: char) -> Commit {
        Commit {
            id: id(c),
            parents: parents.iter().map(|&p| id(p)).collect(),
            tree: id(tree),
            date: Utc.timestamp_opt(0, 0).single().unwrap_or_default(),
            message: String::new(),
        }
    }

    #[test]
    fn a_change_lands_by_merge_patch_rebase_or_tree() {
        // Branch: 6 squashes; 5 merges 4 (a side commit); 3, 2 rebased; 1 root.
        let history = History::new(vec![
            commit('6', &['5'], 'f'),
            commit('5', &['3', '4'], 'e'),
            commit('4', &['1'], 'd'),
            commit('3', &['2'], 'c'),
            commit('2', &['1'], 'b'),
            commit('1', &[], 'a'),
        ]);
        let ids: HashMap<String, PatchId> =
            [(id('6'), [6; 32]), (id('3'), [3; 32]), (id('2'), [2; 32])]
                .into_iter()
                .collect();
        let index = Index::new(&history, &ids);
        let fork = Some(history.index[&id('1')]);
        let change = |head: char, own: Vec<[u8; 32]>, whole: Option<[u8; 32]>| Change {
            head: id(head),
            tree: Some(id('z')),
            own: own.into_iter().map(|p| (id('x'), Some(p))).collect(),
            whole,
            fork,
        };
        // (what, the change, the commits it landed as, how)
        type Case = (&'static str, Change, Option<(Vec<char>, LandedBy)>);
        let cases: Vec<Case> = vec![
            (
                "merged",
                change('4', vec![], None),
                Some((vec!['5', '4'], LandedBy::Merge)),
            ),
            (
                "squashed",
                change('9', vec![[7; 32], [8; 32]], Some([6; 32])),
                Some((vec!['6'], LandedBy::Patch)),
            ),
            (
                "rebased",
                change('9', vec![[3; 32], [2; 32]], Some([9; 32])),
                Some((vec!['3', '2'], LandedBy::Patch)),
            ),
            (
                "half rebased is not landed",
                change('9', vec![[3; 32], [7; 32]], None),
                None,
            ),
            ("nothing alike", change('9', vec![[7; 32]], None), None),
            (
                "the same tree",
                Change {
                    tree: Some(id('f')),
                    ..change('9', vec![], None)
                },
                Some((vec!['6'], LandedBy::Tree)),
            ),
            (
                "a patch older than the fork point does not count",
                Change {
                    fork: Some(history.index[&id('3')]),
                    ..change('9', vec![[2; 32]], None)
                },
                None,
            ),
        ];
        for (what, change, want) in cases {
            let got = find(&history, &index, &change).map(|l| {
                (
                    l.commits
                        .iter()
                        .filter_map(|c| c.chars().next())
                        .collect::<Vec<_>>(),
                    l.by,
                )
            });
            assert_eq!(got, want, "{what}");
        }
    }
}
