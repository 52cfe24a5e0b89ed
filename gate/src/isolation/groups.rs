//! Which items of a run share their private `/tmp`, `/var/tmp` and `HOME`:
//! those linked by `after`. A group is a connected component of the graph
//! whose edges are the `after` links, taken in either direction: an item,
//! the items it runs after, the items that run after it, and so on. A
//! service and the items after it share a socket, a build check leaves
//! artefacts for the items after it; two items nothing links never share
//! a folder, so nothing one leaves there can decide the other's result.

use std::collections::HashMap;

/// The groups of `items` (each an id and the ids its `after` names), each
/// in the order its members first appear; groups in the order of their
/// first member. An id `after` names that is not among `items` (an item
/// carried from an earlier attempt, run in another stage) still links the
/// items that name it, so a group is the same whichever of its items run.
pub(crate) fn of<'a>(items: impl IntoIterator<Item = (&'a str, &'a [String])>) -> Vec<Vec<String>> {
    let mut index: HashMap<&str, usize> = HashMap::new();
    let mut names: Vec<&str> = Vec::new();
    let mut parent: Vec<usize> = Vec::new();
    let mut items_seen: Vec<usize> = Vec::new();
    let mut seen: std::collections::HashSet<usize> = std::collections::HashSet::new();
    let mut node = |id: &'a str, parent: &mut Vec<usize>| {
        *index.entry(id).or_insert_with(|| {
            names.push(id);
            parent.push(parent.len());
            parent.len() - 1
        })
    };
    for (id, after) in items {
        let i = node(id, &mut parent);
        if seen.insert(i) {
            items_seen.push(i);
        }
        for other in after {
            let j = node(other, &mut parent);
            join(&mut parent, i, j);
        }
    }
    let mut groups: Vec<Vec<String>> = Vec::new();
    let mut group_of: HashMap<usize, usize> = HashMap::new();
    for i in items_seen {
        let root = find(&mut parent, i);
        let g = *group_of.entry(root).or_insert_with(|| {
            groups.push(Vec::new());
            groups.len() - 1
        });
        groups[g].push(names[i].to_owned());
    }
    groups
}

/// The groups of `plan`'s items ([`of`]) that hold an item `running` says
/// runs: only those need folders.
pub(crate) fn running(
    plan: &crate::plan::Plan,
    running: impl Fn(&str) -> bool,
) -> Vec<Vec<String>> {
    let mut groups = of(plan
        .items
        .iter()
        .filter_map(|i| i.work.as_ref())
        .map(|w| (w.id.as_str(), w.after.as_slice())));
    groups.retain(|g| g.iter().any(|id| running(id)));
    groups
}

/// The representative of `i`'s set, its path shortened on the way.
fn find(parent: &mut [usize], mut i: usize) -> usize {
    while parent[i] != i {
        parent[i] = parent[parent[i]];
        i = parent[i];
    }
    i
}

/// Puts `i` and `j` in one set.
fn join(parent: &mut [usize], i: usize, j: usize) {
    let (a, b) = (find(parent, i), find(parent, j));
    if a != b {
        parent[a.max(b)] = a.min(b);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_linked_by_after_in_either_direction_share_a_group() {
        // (items as `id: after, after`, the groups wanted)
        let cases: [(&[&str], &[&[&str]]); 8] = [
            (&[], &[]),
            (&["a:", "b:"], &[&["a"], &["b"]]),
            (&["check:", "criterion:check"], &[&["check", "criterion"]]),
            // The /tmp relay: a criterion nothing orders after the check.
            (
                &["relay:", "reads:", "after:relay"],
                &[&["relay", "after"], &["reads"]],
            ),
            // A service and the criteria after it: one group, however
            // many; a build that the criteria also run after joins it.
            (
                &["build:", "db:", "c1:db,build", "c2:db", "lint:"],
                &[&["build", "db", "c1", "c2"], &["lint"]],
            ),
            // Linked through a third: two criteria after one check.
            (&["x:c", "y:c", "c:"], &[&["x", "y", "c"]]),
            // Linked through an item that is not run (carried): the same
            // group as when it runs.
            (&["x:carried", "y:carried", "z:"], &[&["x", "y"], &["z"]]),
            // A chain named backwards still makes one group.
            (
                &["d:c", "c:b", "b:a", "a:", "e:"],
                &[&["d", "c", "b", "a"], &["e"]],
            ),
        ];
        for (items, want) in cases {
            let parsed: Vec<(&str, Vec<String>)> = items
                .iter()
                .map(|item| {
                    let (id, after) = item.split_once(':').unwrap();
                    let after = after
                        .split(',')
                        .filter(|a| !a.is_empty())
                        .map(str::to_owned)
                        .collect();
                    (id, after)
                })
                .collect();
            let got = of(parsed.iter().map(|(id, after)| (*id, after.as_slice())));
            let want: Vec<Vec<String>> = want
                .iter()
                .map(|g| g.iter().map(|s| (*s).to_owned()).collect())
                .collect();
            assert_eq!(got, want, "{items:?}");
        }
    }
}
