//! Whose private folders each item starts from. Every item that starts a
//! process has a `/tmp`, `/var/tmp` and `HOME` of its own, and starts with
//! a copy of what the items it runs `after` left in theirs (made when it
//! starts, `gate_harness::seed`): a build check's artefacts reach the
//! criteria after it, a service's socket the items after it, and what one
//! item writes there reaches no item it is not ordered before, not even
//! one after the same check.

use std::collections::{HashMap, HashSet};

/// The items of `plan` that need private folders now and have none yet
/// (`runs` says they run, they start a process, `made` says they have
/// none), each with the items whose folders it starts from ([`before`]).
pub(crate) fn new_items(
    plan: &crate::plan::Plan,
    runs: impl Fn(&str) -> bool,
    made: impl Fn(&str) -> bool,
) -> Vec<(String, Vec<String>)> {
    let after = plan.after();
    let new: Vec<&str> = plan
        .items
        .iter()
        .filter_map(|i| i.work.as_ref())
        .filter(|w| w.action.starts_processes() && runs(&w.id) && !made(&w.id))
        .map(|w| w.id.as_str())
        .collect();
    let fresh: HashSet<&str> = new.iter().copied().collect();
    let has_folders = |id: &str| made(id) || fresh.contains(id);
    new.iter()
        .map(|id| ((*id).to_owned(), before(&after, &has_folders, id)))
        .collect()
}

/// The items whose folders `id` starts from: each item it names in
/// `after` that has folders of its own (`has_folders`); for one that has
/// none (a built-in check, an item carried from an earlier attempt or run
/// in another stage), the items that one runs after, and so on. In the
/// order `after` names them, each once; an item's own folders already hold
/// what the items before it left, so the walk stops at the first with
/// folders on each path.
pub(crate) fn before(
    after: &HashMap<&str, &[String]>,
    has_folders: &impl Fn(&str) -> bool,
    id: &str,
) -> Vec<String> {
    let mut out = Vec::new();
    let mut seen: HashSet<&str> = HashSet::from([id]);
    let mut stack: Vec<&str> = after
        .get(id)
        .map(|a| a.iter().rev().map(String::as_str).collect())
        .unwrap_or_default();
    while let Some(next) = stack.pop() {
        if !seen.insert(next) {
            continue;
        }
        if has_folders(next) {
            out.push(next.to_owned());
        } else if let Some(a) = after.get(next) {
            stack.extend(a.iter().rev().map(String::as_str));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_item_starts_from_the_folders_of_the_items_it_runs_after() {
        // (items as `id: after, after`, with `*` for one without folders
        // of its own; the item asked about; what it starts from)
        let cases: [(&[&str], &str, &[&str]); 8] = [
            (&["a:", "b:"], "b", &[]),
            (&["check:", "criterion:check"], "criterion", &["check"]),
            // Two criteria after one check start from the check, never
            // from each other.
            (&["c:", "x:c", "y:c"], "y", &["c"]),
            // A service and a build: both, in the order `after` names them.
            (&["build:", "db:", "c1:db,build"], "c1", &["db", "build"]),
            // A chain: the nearest, whose folders hold the rest.
            (&["a:", "b:a", "c:b"], "c", &["b"]),
            // Through an item without folders (built-in, or carried).
            (&["a:", "*parse:a", "c:parse"], "c", &["a"]),
            // Through a carried item the plan no longer names.
            (&["x:gone", "y:"], "x", &[]),
            // Two paths to one item: once.
            (&["a:", "*b:a", "*c:a", "d:b,c"], "d", &["a"]),
        ];
        for (items, asked, want) in cases {
            let parsed: Vec<(&str, bool, Vec<String>)> = items
                .iter()
                .map(|item| {
                    let (id, after) = item.split_once(':').unwrap();
                    let (id, folders) = match id.strip_prefix('*') {
                        Some(id) => (id, false),
                        None => (id, true),
                    };
                    let after = after
                        .split(',')
                        .filter(|a| !a.is_empty())
                        .map(str::to_owned)
                        .collect();
                    (id, folders, after)
                })
                .collect();
            let after: HashMap<&str, &[String]> = parsed
                .iter()
                .map(|(id, _, a)| (*id, a.as_slice()))
                .collect();
            let has = |id: &str| parsed.iter().any(|(i, f, _)| *i == id && *f);
            assert_eq!(before(&after, &has, asked), want, "{items:?}");
        }
    }
}
