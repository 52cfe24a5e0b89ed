//! The module graph of every crate is acyclic: no module imports (through
//! `crate::…` or `super::…`) a module that imports it back, directly or
//! through others. Read from the sources, as text: each path is resolved
//! to the deepest module file it names; test code (`tests.rs`, and what
//! follows `#[cfg(test)]` in a file) is left out, as is the crate root,
//! which only declares and re-exports. And the gate crate stays within the
//! lasting bounds of `scripts/structure.py --check`.

// Test code: a panic is the failure report.
#![allow(clippy::unwrap_used, clippy::missing_panics_doc)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const CRATES: [&str; 8] = [
    "specs",
    "harness",
    "evidence",
    "history",
    "review",
    "scorecard",
    "mutants",
    "gate",
];

/// A module's path inside its crate (`review::call`), empty for the root.
type Module = Vec<String>;

fn module_of(src: &Path, file: &Path) -> Module {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Module = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The source without comments and without what `#[cfg(test)]` marks: a
/// declaration (`mod tests;`) or a block (`mod tests { … }`, an `impl`),
/// wherever in the file it stands.
fn production_code(text: &str) -> String {
    let lines: Vec<&str> = text
        .lines()
        .map(|l| l.split("//").next().unwrap_or_default())
        .collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if lines[i].trim() != "#[cfg(test)]" {
            out.push(lines[i]);
            i += 1;
            continue;
        }
        // Skip the item it marks: up to its `;`, or to the close of its block.
        i += 1;
        let mut depth = 0_i32;
        let mut opened = false;
        while i < lines.len() {
            let line = lines[i];
            i += 1;
            for c in line.chars() {
                match c {
                    '{' => {
                        depth += 1;
                        opened = true;
                    }
                    '}' => depth -= 1,
                    _ => {}
                }
            }
            if (opened && depth <= 0) || (!opened && line.trim_end().ends_with(';')) {
                break;
            }
        }
    }
    out.join("\n")
}

/// Expands `a::{b, c::{d, e}}` into `a::b`, `a::c::d`, `a::c::e`.
fn expand(tree: &str) -> Vec<String> {
    let tree = tree.trim();
    let Some(open) = tree.find('{') else {
        return vec![tree.to_owned()];
    };
    let prefix = &tree[..open];
    let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&inner[start..]);
    parts
        .into_iter()
        .filter(|p| !p.trim().is_empty())
        .flat_map(|p| expand(p).into_iter().map(move |e| format!("{prefix}{e}")))
        .collect()
}

/// Every path the code names that starts at `crate::` or `super::`.
fn paths(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    // `use` trees, braces and all.
    for stmt in code.split(';') {
        let stmt = stmt.trim();
        let Some(tree) = stmt
            .strip_prefix("pub use ")
            .or_else(|| stmt.strip_prefix("pub(crate) use "))
            .or_else(|| stmt.strip_prefix("use "))
        else {
            continue;
        };
        out.extend(expand(&tree.split_whitespace().collect::<String>()));
    }
    // Paths written inline (`crate::findings::finding_id(…)`).
    let bytes = code.as_bytes();
    for start in ["crate::", "super::"] {
        let mut at = 0;
        while let Some(i) = code[at..].find(start) {
            let i = at + i;
            let before = i.checked_sub(1).map(|b| bytes[b]);
            let end = code[i..]
                .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                .map_or(code.len(), |e| i + e);
            if !before.is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b':') {
                out.push(code[i..end].to_owned());
            }
            at = end.max(i + 1);
        }
    }
    out.into_iter()
        .filter(|p| p.starts_with("crate::") || p.starts_with("super::"))
        .collect()
}

/// The paths the code names from its own child modules, bare (`records::x`,
/// `use patch::Patch`) or through `self::`, each as a `crate::` path.
fn child_paths(code: &str, from: &Module, children: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for child in children {
        let needle = format!("{child}::");
        let mut at = 0;
        while let Some(i) = code[at..].find(&needle) {
            let i = at + i;
            let end = code[i..]
                .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                .map_or(code.len(), |e| i + e);
            let before = &code[..i];
            let bare = !before
                .bytes()
                .last()
                .is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b':');
            let through_self = before.ends_with("self::")
                && !before[..before.len() - 6]
                    .bytes()
                    .last()
                    .is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b':');
            if bare || through_self {
                let mut path = String::from("crate");
                for part in from {
                    path.push_str("::");
                    path.push_str(part);
                }
                path.push_str("::");
                path.push_str(&code[i..end]);
                out.push(path);
            }
            at = end.max(i + 1);
        }
    }
    out
}

/// The module file a path names: its deepest prefix that is a module.
fn resolve(from: &Module, is_dir_module: bool, path: &str, modules: &BTreeSet<Module>) -> Module {
    let mut words = path.split("::").filter(|w| !w.is_empty());
    let mut at: Module = if words.next() == Some("crate") {
        Vec::new()
    } else {
        // `super::` from `a/b.rs` is `a`; from `a/b/mod.rs`, also `a`.
        let mut m = from.clone();
        if !is_dir_module || !m.is_empty() {
            m.pop();
        }
        m
    };
    for w in words {
        if w == "super" {
            at.pop();
            continue;
        }
        let mut next = at.clone();
        next.push(w.to_owned());
        if modules.contains(&next) {
            at = next;
        } else {
            break;
        }
    }
    at
}

/// A cycle in `edges`, if there is one.
fn cycle(edges: &BTreeMap<Module, BTreeSet<Module>>) -> Option<Vec<Module>> {
    fn visit(
        m: &Module,
        edges: &BTreeMap<Module, BTreeSet<Module>>,
        state: &mut BTreeMap<Module, u8>,
        stack: &mut Vec<Module>,
    ) -> Option<Vec<Module>> {
        state.insert(m.clone(), 1);
        stack.push(m.clone());
        for n in edges.get(m).into_iter().flatten() {
            match state.get(n) {
                Some(1) => {
                    let from = stack.iter().position(|s| s == n).unwrap_or(0);
                    let mut c = stack[from..].to_vec();
                    c.push(n.clone());
                    return Some(c);
                }
                Some(_) => {}
                None => {
                    if let Some(c) = visit(n, edges, state, stack) {
                        return Some(c);
                    }
                }
            }
        }
        stack.pop();
        state.insert(m.clone(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for m in edges.keys() {
        if !state.contains_key(m)
            && let Some(c) = visit(m, edges, &mut state, &mut Vec::new())
        {
            return Some(c);
        }
    }
    None
}

/// The import graph of the crate whose sources are in `src`.
fn graph(src: &Path) -> BTreeMap<Module, BTreeSet<Module>> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    files.retain(|f| !f.ends_with("tests.rs") && !f.ends_with("testutil.rs"));
    let modules: BTreeSet<Module> = files.iter().map(|f| module_of(src, f)).collect();
    let mut edges: BTreeMap<Module, BTreeSet<Module>> = BTreeMap::new();
    for file in &files {
        let from = module_of(src, file);
        let is_dir_module = file.ends_with("mod.rs") || file.ends_with("lib.rs");
        let code = production_code(&std::fs::read_to_string(file).unwrap());
        let targets = edges.entry(from.clone()).or_default();
        if from.is_empty() {
            continue;
        }
        let children: Vec<String> = modules
            .iter()
            .filter(|m| m.len() == from.len() + 1 && m.starts_with(&from))
            .filter_map(|m| m.last().cloned())
            .collect();
        for path in paths(&code)
            .into_iter()
            .chain(child_paths(&code, &from, &children))
        {
            let to = resolve(&from, is_dir_module, &path, &modules);
            // The root only declares and re-exports; a module's own items
            // are its own.
            if !to.is_empty() && to != from {
                targets.insert(to);
            }
        }
    }
    edges
}

fn show(cycle: &[Module]) -> String {
    cycle
        .iter()
        .map(|m| m.join("::"))
        .collect::<Vec<_>>()
        .join(" → ")
}

/// Every set of modules that import each other (the graph's strongly
/// connected components of more than one module), each in module order.
fn circles(edges: &BTreeMap<Module, BTreeSet<Module>>) -> Vec<Vec<Module>> {
    let reaches = |from: &Module| -> BTreeSet<Module> {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from.clone()];
        while let Some(m) = todo.pop() {
            for n in edges.get(&m).into_iter().flatten() {
                if seen.insert(n.clone()) {
                    todo.push(n.clone());
                }
            }
        }
        seen
    };
    let reach: BTreeMap<&Module, BTreeSet<Module>> =
        edges.keys().map(|m| (m, reaches(m))).collect();
    let mut out: Vec<Vec<Module>> = Vec::new();
    for (m, from_m) in &reach {
        if !from_m.contains(*m) || out.iter().any(|c| c.contains(m)) {
            continue;
        }
        let circle: Vec<Module> = from_m
            .iter()
            .filter(|n| reach.get(n).is_some_and(|r| r.contains(*m)))
            .cloned()
            .collect();
        out.push(circle);
    }
    out
}

#[test]
fn no_crate_has_an_import_cycle() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let mut found = Vec::new();
    for krate in CRATES {
        let edges = graph(&root.join(krate).join("src"));
        assert!(edges.len() > 3, "{krate}: no modules read");
        for circle in circles(&edges) {
            let names: Vec<String> = circle.iter().map(|m| m.join("::")).collect();
            found.push(format!("{krate}: {}", names.join(", ")));
        }
        assert_eq!(
            circles(&edges).is_empty(),
            cycle(&edges).is_none(),
            "{krate}"
        );
    }
    assert!(
        found.is_empty(),
        "modules that import each other:\n{}",
        found.join("\n")
    );
}

/// The gate crate keeps the shape `scripts/structure.py --check` bounds:
/// no knot of more than five top-level modules that reach each other, one
/// `pub mod`.
#[test]
fn the_gate_crate_keeps_its_shape() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    #[allow(clippy::disallowed_methods)] // the repository's own script
    let out = std::process::Command::new("python3")
        .arg(root.join("scripts/structure.py"))
        .arg("--check")
        .arg(root.join("gate/src"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The reader sees a cycle where there is one, through braces, `super::`
/// and inline paths alike.
#[test]
fn the_reader_finds_a_planted_cycle() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    let write = |rel: &str, text: &str| {
        let p = src.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    write("lib.rs", "pub mod a;\npub mod b;\n");
    write("a/mod.rs", "pub mod inner;\nuse crate::b::{x, y::{Z}};\n");
    write("a/inner.rs", "fn f() { super::super::b::g(); }\n");
    write(
        "b.rs",
        "// use crate::a;\npub fn g() { crate::a::inner::h(); }\n",
    );
    let edges = graph(src);
    let c = cycle(&edges).expect("a cycle");
    assert!(show(&c).contains('b'), "{}", show(&c));
    // Comments and test modules do not count.
    write(
        "b.rs",
        "// use crate::a;\n#[cfg(test)]\nmod tests { use crate::a; }\n",
    );
    assert_eq!(cycle(&graph(src)), None);
    // What follows a test module's declaration or block still does.
    write(
        "b.rs",
        "#[cfg(test)]\nmod tests;\n#[cfg(test)]\nimpl X {\n    fn t() {}\n}\npub fn g() { crate::a::inner::h(); }\n",
    );
    assert!(cycle(&graph(src)).is_some());
    // Nor does a path into a module's own items.
    assert_eq!(
        expand("crate::x::{a, b::{c, d}}"),
        ["crate::x::a", "crate::x::b::c", "crate::x::b::d"]
    );

    // A parent naming its child by a bare path or through `self::`, while
    // the child imports the parent back.
    for parent in [
        "pub mod kid;\npub struct T;\npub fn f() { kid::g(); }\n",
        "pub mod kid;\npub use self::kid::g;\npub struct T;\n",
    ] {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path();
        std::fs::create_dir_all(src.join("p")).unwrap();
        std::fs::write(src.join("lib.rs"), "pub mod p;\npub mod q;\n").unwrap();
        std::fs::write(src.join("p/mod.rs"), parent).unwrap();
        std::fs::write(src.join("p/kid.rs"), "use super::T;\npub fn g() {}\n").unwrap();
        // A sibling's bare name is not the parent's child.
        std::fs::write(src.join("q.rs"), "pub fn h() { kid::g(); }\n").unwrap();
        let found = circles(&graph(src));
        assert_eq!(found.len(), 1, "{parent}: {found:?}");
        assert_eq!(show(&found[0]), "p → p::kid", "{parent}");
        // Once the child no longer imports the parent, nothing is circular.
        std::fs::write(src.join("p/kid.rs"), "pub fn g() {}\n").unwrap();
        assert!(circles(&graph(src)).is_empty(), "{parent}");
    }
}
