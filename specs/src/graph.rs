//! The task graph and the check graph.
//!
//! Both are built from `after`: an edge runs from the item named in `after`
//! (the dependency) to the item that names it (the dependent). Nodes keep the
//! spec's order, and every list these graphs return is in that order, so
//! results do not depend on hashing.
//!
//! Names in `after` that match no node are left out: validation reports them,
//! and a validated spec has none.

use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap, HashMap, HashSet, VecDeque};

use petgraph::Direction;
use petgraph::algo::kosaraju_scc;
use petgraph::graph::{DiGraph, NodeIndex};

use crate::Spec;

/// A cycle in a graph: the path follows `after` and closes on itself.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{graph} graph has a cycle: {}", path.join(" -> "))]
pub struct GraphCycle {
    /// "task" or "check".
    pub graph: &'static str,
    /// e.g. `["cart", "prices", "cart"]`: `cart` names `prices` in `after`,
    /// and `prices` names `cart`.
    pub path: Vec<String>,
}

/// What a node of the [`CheckGraph`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeKind {
    /// A `[[check]]`.
    Check,
    /// A task's `tests`, the cross-check named `<task>.tests`.
    TaskTests,
    /// A `[[task.criterion]]`.
    Criterion,
    /// A `[[page]]`.
    Page,
}

/// The task graph: tasks and the tasks they name in `after`.
#[derive(Debug, Clone)]
pub struct TaskGraph {
    ids: IdGraph,
}

impl TaskGraph {
    /// Builds the graph of `spec`'s tasks; fails on a cycle.
    pub fn new(spec: &Spec) -> Result<Self, GraphCycle> {
        let ids = Self::build(spec);
        match ids.cycles("task").into_iter().next() {
            Some(cycle) => Err(cycle),
            None => Ok(Self { ids }),
        }
    }

    pub(crate) fn build(spec: &Spec) -> IdGraph {
        let mut ids = IdGraph::default();
        for task in &spec.tasks {
            ids.add_node(&task.id);
        }
        for task in &spec.tasks {
            for dep in &task.after {
                ids.add_edge(dep, &task.id);
            }
        }
        ids
    }

    /// Every task, each after the tasks it names (ties in spec order).
    pub fn topological_order(&self) -> Vec<&str> {
        self.ids.topological_order()
    }

    /// The tasks `id` names in `after`.
    pub fn dependencies(&self, id: &str) -> Vec<&str> {
        self.ids.neighbours(id, Direction::Incoming)
    }

    /// The tasks that name `id` in `after`.
    pub fn dependents(&self, id: &str) -> Vec<&str> {
        self.ids.neighbours(id, Direction::Outgoing)
    }

    /// Whether the graph has a task `id`.
    pub fn contains(&self, id: &str) -> bool {
        self.ids.index.contains_key(id)
    }
}

/// The check graph: checks, task-test checks, criteria and pages, with the
/// checks each names in `after`.
#[derive(Debug, Clone)]
pub struct CheckGraph {
    ids: IdGraph,
    kinds: HashMap<String, NodeKind>,
}

impl CheckGraph {
    /// Builds the graph of `spec`'s checks and criteria; fails on a cycle.
    pub fn new(spec: &Spec) -> Result<Self, GraphCycle> {
        let (ids, kinds) = Self::build(spec);
        match ids.cycles("check").into_iter().next() {
            Some(cycle) => Err(cycle),
            None => Ok(Self { ids, kinds }),
        }
    }

    pub(crate) fn build(spec: &Spec) -> (IdGraph, HashMap<String, NodeKind>) {
        let mut ids = IdGraph::default();
        let mut kinds = HashMap::new();
        let mut add = |ids: &mut IdGraph, id: String, kind: NodeKind| {
            if ids.add_node(&id) {
                kinds.insert(id, kind);
            }
        };
        for check in &spec.checks {
            add(&mut ids, check.id.clone(), NodeKind::Check);
        }
        for task in &spec.tasks {
            if task.tests.is_some() {
                add(&mut ids, Spec::tests_check_id(task), NodeKind::TaskTests);
            }
            for criterion in &task.criteria {
                add(&mut ids, criterion.id.clone(), NodeKind::Criterion);
            }
        }
        for page in &spec.pages {
            add(&mut ids, page.id.clone(), NodeKind::Page);
        }
        let is_check =
            |id: &str| matches!(kinds.get(id), Some(NodeKind::Check | NodeKind::TaskTests));
        let mut edges = Vec::new();
        for check in &spec.checks {
            edges.extend(check.after.iter().map(|dep| (dep, &check.id)));
        }
        for (_, criterion) in spec.criteria() {
            edges.extend(criterion.after.iter().map(|dep| (dep, &criterion.id)));
        }
        for page in &spec.pages {
            edges.extend(page.after.iter().map(|dep| (dep, &page.id)));
        }
        for (dep, dependent) in edges {
            // Only checks can be named in `after`.
            if is_check(dep) {
                ids.add_edge(dep, dependent);
            }
        }
        for task in &spec.tasks {
            let Some(tests) = &task.tests else { continue };
            let id = Spec::tests_check_id(task);
            for dep in tests.after.iter().filter(|dep| is_check(dep)) {
                ids.add_edge(dep, &id);
            }
        }
        (ids, kinds)
    }

    /// What `id` is, if it is in the graph.
    pub fn kind(&self, id: &str) -> Option<NodeKind> {
        self.kinds.get(id).copied()
    }

    /// Every item, each after the checks it names (ties in spec order:
    /// checks, then per task its tests and criteria).
    pub fn topological_order(&self) -> Vec<&str> {
        self.ids.topological_order()
    }

    /// The checks `id` names in `after`.
    pub fn dependencies(&self, id: &str) -> Vec<&str> {
        self.ids.neighbours(id, Direction::Incoming)
    }

    /// The items that name `id` in `after`.
    pub fn dependents(&self, id: &str) -> Vec<&str> {
        self.ids.neighbours(id, Direction::Outgoing)
    }

    /// The items that name, through `after` at any depth, one of `ids`.
    /// An item of `ids` is in the result only if it is itself such an item.
    pub fn transitive_dependents<I, S>(&self, ids: I) -> BTreeSet<&str>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut seen = BTreeSet::new();
        let mut queue: VecDeque<NodeIndex> = ids
            .into_iter()
            .filter_map(|id| self.ids.index.get(id.as_ref()).copied())
            .collect();
        while let Some(n) = queue.pop_front() {
            for m in self.ids.graph.neighbors_directed(n, Direction::Outgoing) {
                if seen.insert(self.ids.graph[m].as_str()) {
                    queue.push_back(m);
                }
            }
        }
        seen
    }

    /// Whether the graph has an item `id`.
    pub fn contains(&self, id: &str) -> bool {
        self.ids.index.contains_key(id)
    }
}

/// A graph over string ids, nodes in insertion order.
#[derive(Debug, Clone, Default)]
pub(crate) struct IdGraph {
    graph: DiGraph<String, ()>,
    index: HashMap<String, NodeIndex>,
}

impl IdGraph {
    /// Adds `id`; a repeated id keeps its first node (and returns false).
    fn add_node(&mut self, id: &str) -> bool {
        if self.index.contains_key(id) {
            return false;
        }
        let n = self.graph.add_node(id.to_owned());
        self.index.insert(id.to_owned(), n);
        true
    }

    /// Adds `dependency → dependent` if both exist.
    fn add_edge(&mut self, dependency: &str, dependent: &str) {
        if let (Some(&a), Some(&b)) = (self.index.get(dependency), self.index.get(dependent)) {
            self.graph.update_edge(a, b, ());
        }
    }

    fn neighbours(&self, id: &str, dir: Direction) -> Vec<&str> {
        let Some(&n) = self.index.get(id) else {
            return Vec::new();
        };
        let mut out: Vec<NodeIndex> = self.graph.neighbors_directed(n, dir).collect();
        out.sort_unstable();
        out.into_iter().map(|m| self.graph[m].as_str()).collect()
    }

    /// Kahn's algorithm, taking the earliest ready node each time; nodes on
    /// a cycle are left out.
    fn topological_order(&self) -> Vec<&str> {
        let mut waiting: Vec<usize> = self
            .graph
            .node_indices()
            .map(|n| {
                self.graph
                    .neighbors_directed(n, Direction::Incoming)
                    .count()
            })
            .collect();
        let mut ready: BinaryHeap<Reverse<NodeIndex>> = self
            .graph
            .node_indices()
            .filter(|n| waiting[n.index()] == 0)
            .map(Reverse)
            .collect();
        let mut order = Vec::with_capacity(self.graph.node_count());
        while let Some(Reverse(n)) = ready.pop() {
            order.push(self.graph[n].as_str());
            for m in self.graph.neighbors_directed(n, Direction::Outgoing) {
                waiting[m.index()] -= 1;
                if waiting[m.index()] == 0 {
                    ready.push(Reverse(m));
                }
            }
        }
        order
    }

    /// One cycle per strongly connected component that has one, each the
    /// shortest through the component's earliest node, starting there;
    /// ordered by that node. Kosaraju's search keeps its own stack (petgraph's
    /// Tarjan recurses, and a spec's chain of `after` can be as long as the
    /// spec).
    pub(crate) fn cycles(&self, graph: &'static str) -> Vec<GraphCycle> {
        let mut cycles: Vec<(NodeIndex, GraphCycle)> = kosaraju_scc(&self.graph)
            .into_iter()
            .filter(|scc| scc.len() > 1 || self.graph.contains_edge(scc[0], scc[0]))
            .filter_map(|scc| {
                let start = scc.iter().copied().min()?;
                let path = self.shortest_cycle(start, &scc)?;
                Some((
                    start,
                    GraphCycle {
                        graph,
                        path: path.into_iter().map(|n| self.graph[n].clone()).collect(),
                    },
                ))
            })
            .collect();
        cycles.sort_by_key(|(start, _)| *start);
        cycles.into_iter().map(|(_, c)| c).collect()
    }

    /// Breadth-first from `start` along `after` (dependent → dependency),
    /// within `scc`, back to `start`.
    fn shortest_cycle(&self, start: NodeIndex, scc: &[NodeIndex]) -> Option<Vec<NodeIndex>> {
        let scc: HashSet<NodeIndex> = scc.iter().copied().collect();
        let mut came_from: HashMap<NodeIndex, NodeIndex> = HashMap::new();
        let mut queue = VecDeque::from([start]);
        while let Some(n) = queue.pop_front() {
            let mut next: Vec<NodeIndex> = self
                .graph
                .neighbors_directed(n, Direction::Incoming)
                .filter(|m| scc.contains(m))
                .collect();
            next.sort_unstable();
            for m in next {
                if m == start {
                    // `n` names `start`: walk back to `start`, then close.
                    let mut path = vec![n];
                    let mut at = n;
                    while at != start {
                        at = *came_from.get(&at)?;
                        path.push(at);
                    }
                    path.reverse();
                    path.push(start);
                    return Some(path);
                }
                if m != start && !came_from.contains_key(&m) {
                    came_from.insert(m, n);
                    queue.push_back(m);
                }
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use std::fmt::Write;
    use std::path::Path;

    use super::*;
    use crate::Format;

    /// A spec from TOML, parsed but not validated (so cycles get through).
    fn spec(body: &str) -> Spec {
        let text = format!("[spec]\nid = \"g\"\n{body}");
        crate::parse::parse(&text, Path::new("gate.toml"), Format::Toml).unwrap()
    }

    /// Items and the names in their `after`.
    type Afters<'a> = &'a [(&'a str, &'a [&'a str])];

    fn tasks(afters: Afters<'_>) -> Spec {
        let mut body = String::new();
        for (id, after) in afters {
            writeln!(body, "[[task]]\nid = \"{id}\"\nafter = {after:?}").unwrap();
        }
        spec(&body)
    }

    fn checks(afters: Afters<'_>) -> Spec {
        let mut body = String::new();
        for (id, after) in afters {
            writeln!(
                body,
                "[[check]]\nid = \"{id}\"\nrun = \"true\"\nafter = {after:?}"
            )
            .unwrap();
        }
        spec(&body)
    }

    #[test]
    fn task_order_and_neighbours() {
        let s = tasks(&[("d", &[]), ("c", &["a", "b"]), ("b", &["a"]), ("a", &[])]);
        let g = TaskGraph::new(&s).unwrap();
        assert_eq!(g.topological_order(), ["d", "a", "b", "c"]);
        assert_eq!(g.dependencies("c"), ["b", "a"]);
        assert_eq!(g.dependents("a"), ["c", "b"]);
        assert!(g.dependencies("a").is_empty());
        assert!(g.dependents("nope").is_empty());
        assert!(g.contains("d") && !g.contains("e"));
    }

    #[test]
    fn cycles_close_on_themselves() {
        let cases: &[(Afters<'_>, &[&[&str]])] = &[
            (&[("a", &["a"])], &[&["a", "a"]]),
            (
                &[("cart", &["prices"]), ("prices", &["cart"])],
                &[&["cart", "prices", "cart"]],
            ),
            (
                &[("a", &["c"]), ("b", &["a"]), ("c", &["b"])],
                &[&["a", "c", "b", "a"]],
            ),
            // The shortest way back to the earliest node.
            (
                &[("a", &["b", "c"]), ("b", &["c"]), ("c", &["a"])],
                &[&["a", "c", "a"]],
            ),
            // Two separate cycles, in file order, and an acyclic tail.
            (
                &[
                    ("x", &[]),
                    ("p", &["q"]),
                    ("q", &["p", "x"]),
                    ("r", &["r"]),
                    ("s", &["p"]),
                ],
                &[&["p", "q", "p"], &["r", "r"]],
            ),
            (&[("a", &[]), ("b", &["a"])], &[]),
        ];
        for (afters, want) in cases {
            let want: Vec<Vec<String>> = want
                .iter()
                .map(|p| p.iter().map(|s| (*s).to_owned()).collect())
                .collect();
            let t = TaskGraph::build(&tasks(afters)).cycles("task");
            assert_eq!(
                t.iter().map(|c| c.path.clone()).collect::<Vec<_>>(),
                want,
                "{afters:?}"
            );
            assert!(t.iter().all(|c| c.graph == "task"));
            let c = CheckGraph::build(&checks(afters)).0.cycles("check");
            assert_eq!(
                c.iter().map(|c| c.path.clone()).collect::<Vec<_>>(),
                want,
                "{afters:?}"
            );
            assert_eq!(TaskGraph::new(&tasks(afters)).err(), t.first().cloned());
        }
    }

    #[test]
    fn a_chain_as_long_as_a_big_spec_is_searched_without_recursion() {
        // 30,000 deep overflows a test thread's 2 MiB stack under a
        // recursive search; the last link closes the chain into one cycle.
        const N: usize = 30_000;
        let ids: Vec<String> = (0..N).map(|i| format!("t{i}")).collect();
        let after: Vec<[&str; 1]> = (0..N).map(|i| [ids[(i + N - 1) % N].as_str()]).collect();
        let mut items: Vec<(&str, &[&str])> = ids
            .iter()
            .zip(&after)
            .map(|(id, a)| (id.as_str(), &a[..]))
            .collect();
        let err = TaskGraph::new(&tasks(&items)).unwrap_err();
        assert_eq!(err.path.len(), N + 1);
        assert_eq!(
            (err.path[0].as_str(), err.path[1].as_str()),
            ("t0", "t29999")
        );
        // Open the cycle: a chain, in order.
        items[0].1 = &[];
        let g = TaskGraph::new(&tasks(&items)).unwrap();
        assert_eq!(g.topological_order(), ids);
    }

    #[test]
    fn cycle_message() {
        let err =
            TaskGraph::new(&tasks(&[("cart", &["prices"]), ("prices", &["cart"])])).unwrap_err();
        assert_eq!(
            err.to_string(),
            "task graph has a cycle: cart -> prices -> cart"
        );
    }

    const CHECKS: &str = r#"
[[check]]
id = "build"
run = "make"

[[check]]
id = "serve"
run = "./serve.sh"
after = ["build"]

[[check]]
id = "lint"
run = "make lint"

[[task]]
id = "orders"
tests = { run = "make test" }

[[task.criterion]]
id = "c1"
text = "t"
run = "x"
after = ["serve"]

[[task.criterion]]
id = "c2"
text = "t"
judge = "model"
after = ["orders.tests", "build"]

[[task]]
id = "cart"
after = ["orders"]

[[task.criterion]]
id = "c3"
text = "t"
judge = "model"
"#;

    #[test]
    fn check_graph_items() {
        let g = CheckGraph::new(&spec(CHECKS)).unwrap();
        assert_eq!(g.kind("build"), Some(NodeKind::Check));
        assert_eq!(g.kind("orders.tests"), Some(NodeKind::TaskTests));
        assert_eq!(g.kind("c3"), Some(NodeKind::Criterion));
        assert_eq!(g.kind("cart.tests"), None);
        assert_eq!(g.dependencies("c2"), ["build", "orders.tests"]);
        assert_eq!(g.dependents("build"), ["serve", "c2"]);
        assert_eq!(
            g.topological_order(),
            ["build", "serve", "lint", "orders.tests", "c1", "c2", "c3"]
        );
    }

    #[test]
    fn transitive_dependents() {
        let g = CheckGraph::new(&spec(CHECKS)).unwrap();
        let cases: &[(&[&str], &[&str])] = &[
            (&["build"], &["c1", "c2", "serve"]),
            (&["serve"], &["c1"]),
            (&["orders.tests"], &["c2"]),
            (&["orders.tests", "serve"], &["c1", "c2"]),
            (&["lint"], &[]),
            (&["c1"], &[]),
            (&["no-such"], &[]),
            (&["build", "serve"], &["c1", "c2", "serve"]),
        ];
        for (ids, want) in cases {
            let got: Vec<&str> = g.transitive_dependents(*ids).into_iter().collect();
            assert_eq!(got, *want, "{ids:?}");
        }
    }

    #[test]
    fn unknown_names_are_left_out() {
        let s = tasks(&[("a", &["ghost"]), ("b", &["a"])]);
        let g = TaskGraph::new(&s).unwrap();
        assert!(g.dependencies("a").is_empty());
        assert_eq!(g.topological_order(), ["a", "b"]);
    }
}
