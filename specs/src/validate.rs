//! Semantic checks of a parsed spec.
//!
//! Every rule runs and every problem is kept, so one pass over the errors
//! fixes the file; each is placed at the value (or key) it is about.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use crate::errors::did_you_mean;
use crate::globs::InputGlobs;
use crate::graph::{CheckGraph, TaskGraph};
use crate::key_path;
use crate::locate::{Locator, Position, Seg};
use crate::model::{Check, Criterion, Page, Policy, SandboxSection, Starts, Task, TaskTests};
use crate::{Format, Spec, SpecError, SpecErrorKind, SpecErrors};

pub(crate) fn validate(
    spec: &Spec,
    text: &str,
    file: &Path,
    format: Format,
) -> Result<(), SpecErrors> {
    let mut v = Validator {
        at: Locator::new(text, format),
        found: Vec::new(),
    };
    v.ids(spec);
    v.afters(spec);
    v.cycles(spec);
    for (i, check) in spec.checks.iter().enumerate() {
        v.check(i, check);
    }
    for (i, task) in spec.tasks.iter().enumerate() {
        v.task(i, task);
    }
    for (i, page) in spec.pages.iter().enumerate() {
        v.page(i, page);
    }
    v.policy(&spec.policy);
    v.globs(&key_path!["spec"], "protected", &spec.spec.protected);
    v.sandbox(&spec.sandbox);
    if v.found.is_empty() {
        return Ok(());
    }
    // Stable: problems at one place keep the order the rules found them in.
    v.found.sort_by_key(|(pos, _)| *pos);
    Err(SpecErrors(
        v.found
            .into_iter()
            .map(|(pos, kind)| SpecError::new(file, pos.line, pos.column, kind))
            .collect(),
    ))
}

struct Validator {
    at: Locator,
    found: Vec<(Position, SpecErrorKind)>,
}

/// Where an id is written, and whether the spec wrote it or the gate made it
/// (`<task>.tests`).
struct IdSite {
    id: String,
    pos: Position,
    synthesized: bool,
}

impl Validator {
    /// A problem with the value at `path`.
    fn value(&mut self, path: &[Seg], kind: SpecErrorKind) {
        let pos = self.at.value_or_ancestor(path);
        self.found.push((pos, kind));
    }

    /// A problem with the key that ends `path`.
    fn key(&mut self, path: &[Seg], kind: SpecErrorKind) {
        let pos = self.at.key_or_ancestor(path);
        self.found.push((pos, kind));
    }

    fn ids(&mut self, spec: &Spec) {
        if let Err(kind) = id_form(&spec.spec.id) {
            self.value(&key_path!["spec", "id"], kind);
        }
        let mut sites = Vec::new();
        let mut site = |id: String, pos: Position, synthesized: bool| {
            sites.push(IdSite {
                id,
                pos,
                synthesized,
            });
        };
        for (i, check) in spec.checks.iter().enumerate() {
            let path = key_path!["check", i, "id"];
            site(check.id.clone(), self.at.value_or_ancestor(&path), false);
        }
        for (i, task) in spec.tasks.iter().enumerate() {
            let path = key_path!["task", i, "id"];
            site(task.id.clone(), self.at.value_or_ancestor(&path), false);
            if task.tests.is_some() {
                let path = key_path!["task", i, "tests"];
                site(
                    Spec::tests_check_id(task),
                    self.at.key_or_ancestor(&path),
                    true,
                );
            }
            for (j, criterion) in task.criteria.iter().enumerate() {
                let path = key_path!["task", i, "criterion", j, "id"];
                site(
                    criterion.id.clone(),
                    self.at.value_or_ancestor(&path),
                    false,
                );
            }
        }
        for (i, page) in spec.pages.iter().enumerate() {
            let path = key_path!["page", i, "id"];
            site(page.id.clone(), self.at.value_or_ancestor(&path), false);
        }
        // "The second occurrence" is the later one in the file.
        sites.sort_by_key(|s| s.pos);
        let mut seen = HashSet::new();
        for s in sites {
            if !s.synthesized {
                if let Err(kind) = id_form(&s.id) {
                    self.found.push((s.pos, kind));
                    continue;
                }
                if s.id.starts_with("builtin.") {
                    self.found
                        .push((s.pos, SpecErrorKind::ReservedId(s.id.clone())));
                }
            }
            if !seen.insert(s.id.clone()) {
                self.found.push((s.pos, SpecErrorKind::DuplicateId(s.id)));
            }
        }
    }

    fn afters(&mut self, spec: &Spec) {
        let checks: HashSet<String> = spec
            .checks
            .iter()
            .map(|c| c.id.clone())
            .chain(
                spec.tasks
                    .iter()
                    .filter(|t| t.tests.is_some())
                    .map(Spec::tests_check_id),
            )
            .collect();
        let mut checks: Vec<&str> = checks.iter().map(String::as_str).collect();
        checks.sort_unstable();
        let tasks: Vec<&str> = spec.tasks.iter().map(|t| t.id.as_str()).collect();
        for (i, check) in spec.checks.iter().enumerate() {
            self.after_list(&key_path!["check", i], &check.after, &checks, "a check");
        }
        for (i, task) in spec.tasks.iter().enumerate() {
            self.after_list(&key_path!["task", i], &task.after, &tasks, "a task");
            if let Some(tests) = &task.tests {
                self.after_list(
                    &key_path!["task", i, "tests"],
                    &tests.after,
                    &checks,
                    "a check",
                );
            }
            for (j, criterion) in task.criteria.iter().enumerate() {
                self.after_list(
                    &key_path!["task", i, "criterion", j],
                    &criterion.after,
                    &checks,
                    "a check",
                );
            }
        }
        for (i, page) in spec.pages.iter().enumerate() {
            self.after_list(&key_path!["page", i], &page.after, &checks, "a check");
        }
    }

    fn after_list(&mut self, item: &[Seg], after: &[String], ids: &[&str], expected: &'static str) {
        for (k, name) in after.iter().enumerate() {
            if !ids.contains(&name.as_str()) {
                let mut path = item.to_vec();
                path.extend(key_path!["after", k]);
                self.value(
                    &path,
                    SpecErrorKind::UnknownAfter {
                        name: name.clone(),
                        expected,
                        suggestion: did_you_mean(name, ids.iter().copied()),
                    },
                );
            }
        }
    }

    fn cycles(&mut self, spec: &Spec) {
        let mut first_site: HashMap<&str, Vec<Seg>> = HashMap::new();
        for (i, check) in spec.checks.iter().enumerate() {
            first_site
                .entry(&check.id)
                .or_insert_with(|| key_path!["check", i, "id"].to_vec());
        }
        let mut task_site: HashMap<&str, Vec<Seg>> = HashMap::new();
        for (i, task) in spec.tasks.iter().enumerate() {
            task_site
                .entry(&task.id)
                .or_insert_with(|| key_path!["task", i, "id"].to_vec());
        }
        let (check_graph, _) = CheckGraph::build(spec);
        let task_graph = TaskGraph::build(spec);
        for (cycles, sites) in [
            (check_graph.cycles("check"), &first_site),
            (task_graph.cycles("task"), &task_site),
        ] {
            for cycle in cycles {
                let path = cycle
                    .path
                    .first()
                    .and_then(|id| sites.get(id.as_str()))
                    .cloned()
                    .unwrap_or_default();
                self.value(
                    &path,
                    SpecErrorKind::Cycle {
                        graph: cycle.graph,
                        path: cycle.path,
                    },
                );
            }
        }
    }

    fn check(&mut self, i: usize, check: &Check) {
        let here = key_path!["check", i];
        self.command(&here, &check.id, &check.run);
        self.timeout(&here, check.timeout_s);
        self.globs(&here, "inputs", &check.inputs);
        if let Some(starts) = &check.starts {
            self.starts(&join(&here, "starts"), &check.id, starts);
        }
    }

    fn starts(&mut self, here: &[Seg], check_id: &str, starts: &Starts) {
        let probes = [&starts.ready_tcp, &starts.ready_http, &starts.ready_log];
        if probes.iter().filter(|p| p.is_some()).count() > 1 {
            self.value(here, SpecErrorKind::ManyProbes(check_id.to_owned()));
        }
        if starts.within_s == Some(0) {
            self.value(&join(here, "within_s"), at_least("within_s", 1));
        }
        type WellFormed = fn(&str) -> Result<(), String>;
        let probe_checks: [(&str, &Option<String>, WellFormed); 3] = [
            ("ready_tcp", &starts.ready_tcp, tcp_address),
            ("ready_http", &starts.ready_http, http_url),
            ("ready_log", &starts.ready_log, log_text),
        ];
        for (key, value, well_formed) in probe_checks {
            if let Some(Err(reason)) = value.as_deref().map(well_formed) {
                self.value(
                    &join(here, key),
                    SpecErrorKind::BadProbe {
                        key: key.to_owned(),
                        reason,
                    },
                );
            }
        }
    }

    fn task(&mut self, i: usize, task: &Task) {
        let here = key_path!["task", i];
        self.globs(&here, "paths", &task.paths);
        if let Some(tests) = &task.tests {
            self.tests(&join(&here, "tests"), task, tests);
        }
        for (j, criterion) in task.criteria.iter().enumerate() {
            let mut path = here.to_vec();
            path.extend(key_path!["criterion", j]);
            self.criterion(&path, criterion);
        }
    }

    fn tests(&mut self, here: &[Seg], task: &Task, tests: &TaskTests) {
        if tests.report.is_some() == tests.run.is_some() {
            self.value(here, SpecErrorKind::BadTests(task.id.clone()));
        }
        if let Some(run) = &tests.run {
            self.command(here, &Spec::tests_check_id(task), run);
        }
        if let Some(report) = &tests.report {
            let path = join(here, "report");
            if report.trim().is_empty() {
                self.value(&path, SpecErrorKind::EmptyValue("report".to_owned()));
            } else if escapes_workspace(report) {
                self.value(&path, SpecErrorKind::PathEscape(report.clone()));
            }
        }
        self.timeout(here, tests.timeout_s);
    }

    fn criterion(&mut self, here: &[Seg], criterion: &Criterion) {
        match (&criterion.run, &criterion.judge) {
            (Some(_), Some(_)) => {
                self.key(
                    &join(here, "judge"),
                    SpecErrorKind::RunAndJudge(criterion.id.clone()),
                );
            }
            (None, None) => self.value(here, SpecErrorKind::NoDecider(criterion.id.clone())),
            _ => {}
        }
        if let Some(judge) = criterion.judge.as_deref().filter(|j| *j != "model") {
            self.value(
                &join(here, "judge"),
                SpecErrorKind::BadJudge(judge.to_owned()),
            );
        }
        if let Some(run) = &criterion.run {
            self.command(here, &criterion.id, run);
        }
        if criterion.run.is_none()
            && criterion
                .expect
                .is_some_and(|e| e != crate::model::Expect::Any)
        {
            self.value(
                &join(here, "expect"),
                SpecErrorKind::ExpectNeedsRun(criterion.id.clone()),
            );
        }
        self.timeout(here, criterion.timeout_s);
        if let Some(t) = criterion.threshold {
            self.share(&join(here, "threshold"), "threshold", t);
        }
        self.globs(here, "inputs", &criterion.inputs);
    }

    fn page(&mut self, i: usize, page: &Page) {
        let here = key_path!["page", i];
        if page_url(&page.url).is_err() {
            self.value(
                &join(&here, "url"),
                SpecErrorKind::PageUrl(page.url.clone()),
            );
        }
        for (key, list, hint) in [
            (
                "files",
                &page.files,
                "give the globs whose change makes the page worth looking at",
            ),
            (
                "after",
                &page.after,
                "name the check that starts the page's server",
            ),
        ] {
            if list.is_empty() {
                self.value(
                    &join(&here, key),
                    SpecErrorKind::PageNeeds {
                        page: page.id.clone(),
                        key,
                        hint,
                    },
                );
            }
        }
        self.globs(&here, "files", &page.files);
        for (table, what, map) in [
            ("headers", "header", &page.headers),
            ("cookies", "cookie", &page.cookies),
        ] {
            let table_path = join(&here, table);
            for (name, env) in map {
                let path = join(&table_path, name);
                if !token(name) {
                    self.key(
                        &path,
                        SpecErrorKind::BadName {
                            table,
                            name: name.clone(),
                            what,
                        },
                    );
                }
                if !env_name(env) {
                    self.value(
                        &path,
                        SpecErrorKind::BadEnvName {
                            key: format!("{table}.{name}"),
                            name: env.clone(),
                        },
                    );
                }
            }
        }
        self.timeout(&here, page.timeout_s);
    }

    fn policy(&mut self, policy: &Policy) {
        let here = key_path!["policy"];
        for (key, value) in [
            ("judge_threshold", policy.judge_threshold),
            ("rule_threshold", policy.rule_threshold),
            ("confidence_floor", policy.confidence_floor),
            ("min_coverage", policy.min_coverage),
        ] {
            self.share(&join(&here, key), key, value);
        }
        if let Some(mutants) = &policy.mutants {
            let at = join(&join(&here, "mutants"), "min_score");
            self.share(&at, "mutants.min_score", mutants.min_score);
        }
        for (trivial, light, t, l) in [
            (
                "trivial_max_tasks",
                "light_max_tasks",
                policy.trivial_max_tasks,
                policy.light_max_tasks,
            ),
            (
                "trivial_max_criteria",
                "light_max_criteria",
                policy.trivial_max_criteria,
                policy.light_max_criteria,
            ),
        ] {
            if t > l {
                // Point at whichever of the two the file sets.
                let shown = if self.at.contains(&join(&here, trivial)) {
                    trivial
                } else {
                    light
                };
                self.value(
                    &join(&here, shown),
                    SpecErrorKind::OutOfRange {
                        key: trivial.to_owned(),
                        reason: format!("({t}) must not exceed `{light}` ({l})"),
                    },
                );
            }
        }
        if policy.max_attempts < 1 {
            self.value(&join(&here, "max_attempts"), at_least("max_attempts", 1));
        }
        if policy.output_cap_bytes < 1024 {
            self.value(
                &join(&here, "output_cap_bytes"),
                at_least("output_cap_bytes", 1024),
            );
        }
        for (key, value) in [
            ("check_timeout_s", policy.check_timeout_s),
            ("specialist_timeout_s", policy.specialist_timeout_s),
            ("review_timeout_s", policy.review_timeout_s),
            ("inactivity_timeout_s", policy.inactivity_timeout_s),
            ("connect_timeout_s", policy.connect_timeout_s),
        ] {
            if value < 1 {
                self.value(&join(&here, key), at_least(key, 1));
            }
        }
        let roles = join(&here, "role_timeout_s");
        for (role, seconds) in &policy.role_timeout_s {
            if !Policy::ROLES.contains(&role.as_str()) {
                self.key(
                    &join(&roles, role),
                    SpecErrorKind::UnknownRole {
                        role: role.clone(),
                        suggestion: did_you_mean(role, Policy::ROLES),
                    },
                );
            } else if *seconds < 1 {
                self.value(
                    &join(&roles, role),
                    at_least(&format!("role_timeout_s.{role}"), 1),
                );
            }
        }
        self.globs(&here, "sensitive_paths", &policy.sensitive_paths);
        match &policy.builtin_exclude {
            crate::BuiltinExclude::Every(globs) => self.globs(&here, "builtin_exclude", globs),
            crate::BuiltinExclude::ByCheck(t) => {
                let table = join(&here, "builtin_exclude");
                for (key, globs) in [
                    ("all", &t.all),
                    ("conflicts", &t.conflicts),
                    ("secrets", &t.secrets),
                    ("parse", &t.parse),
                ] {
                    self.globs(&table, key, globs);
                }
            }
        }
    }

    fn sandbox(&mut self, sandbox: &SandboxSection) {
        let here = key_path!["sandbox"];
        for (key, paths) in [
            ("writable", &sandbox.writable),
            ("readable", &sandbox.readable),
            ("hidden", &sandbox.hidden),
        ] {
            for (k, path) in paths.iter().enumerate() {
                if let Err(reason) = host_path(path) {
                    let mut at = join(&here, key);
                    at.push(Seg::Index(k));
                    self.value(
                        &at,
                        SpecErrorKind::OutOfRange {
                            key: format!("sandbox.{key}"),
                            reason: format!("entry `{path}` {reason}"),
                        },
                    );
                }
            }
        }
        for (k, name) in sandbox.pass_env.iter().enumerate() {
            let mut at = join(&here, "pass_env");
            at.push(Seg::Index(k));
            if !env_name(name) {
                self.value(
                    &at,
                    SpecErrorKind::BadEnvName {
                        key: "sandbox.pass_env".to_owned(),
                        name: name.clone(),
                    },
                );
            } else if name.starts_with("GATE_") {
                self.value(
                    &at,
                    SpecErrorKind::OutOfRange {
                        key: "sandbox.pass_env".to_owned(),
                        reason: format!(
                            "cannot name `{name}`: the gate's own settings never reach what it runs"
                        ),
                    },
                );
            }
        }
    }

    /// `run` must hold a command.
    fn command(&mut self, here: &[Seg], id: &str, run: &str) {
        if run.trim().is_empty() {
            self.value(
                &join(here, "run"),
                SpecErrorKind::EmptyCommand(id.to_owned()),
            );
        }
    }

    /// `timeout_s`, when given, is at least a second.
    fn timeout(&mut self, here: &[Seg], timeout_s: Option<u64>) {
        if timeout_s == Some(0) {
            self.value(&join(here, "timeout_s"), at_least("timeout_s", 1));
        }
    }

    /// A probability or share: within 0..=1.
    fn share(&mut self, path: &[Seg], key: &str, value: f64) {
        if !(0.0..=1.0).contains(&value) {
            self.value(
                path,
                SpecErrorKind::OutOfRange {
                    key: key.to_owned(),
                    reason: format!("must be between 0 and 1, not {value}"),
                },
            );
        }
    }

    /// Each glob of `here.key` compiles and stays in the workspace.
    fn globs(&mut self, here: &[Seg], key: &str, globs: &[String]) {
        for (k, glob) in globs.iter().enumerate() {
            let mut path = join(here, key);
            path.push(Seg::Index(k));
            if glob.trim().is_empty() {
                self.value(
                    &path,
                    SpecErrorKind::BadGlob {
                        glob: glob.clone(),
                        reason: "the pattern is empty".to_owned(),
                    },
                );
            } else if escapes_workspace(glob) {
                self.value(&path, SpecErrorKind::PathEscape(glob.clone()));
            } else if let Err(e) = InputGlobs::new(&[glob]) {
                self.value(
                    &path,
                    SpecErrorKind::BadGlob {
                        glob: e.glob,
                        reason: e.reason,
                    },
                );
            }
        }
    }
}

fn join(path: &[Seg], key: &str) -> Vec<Seg> {
    let mut p = path.to_vec();
    p.push(Seg::from(key));
    p
}

fn at_least(key: &str, min: u64) -> SpecErrorKind {
    SpecErrorKind::OutOfRange {
        key: key.to_owned(),
        reason: format!("must be at least {min}"),
    }
}

/// Ids are non-empty and use `[A-Za-z0-9._-]`: they end up in file names,
/// report names and shell-free command lines.
fn id_form(id: &str) -> Result<(), SpecErrorKind> {
    let ok = !id.is_empty()
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if ok {
        Ok(())
    } else {
        Err(SpecErrorKind::InvalidId(id.to_owned()))
    }
}

/// Whether a path or glob could name something outside the workspace: it is
/// absolute (`/x`, `C:\x`, `\\server\x`), starts at a home (`~`), or has a
/// `..` component. Each alternative of a brace pattern (`{a,/etc}`) counts
/// as a path of its own.
pub(crate) fn escapes_workspace(pattern: &str) -> bool {
    let mut starts = vec![0];
    let mut components = Vec::new();
    let mut component_start = 0;
    let mut depth = 0usize;
    for (i, c) in pattern.char_indices() {
        let separates = match c {
            '/' | '\\' => true,
            '{' => {
                depth += 1;
                starts.push(i + 1);
                true
            }
            ',' if depth > 0 => {
                starts.push(i + 1);
                true
            }
            '}' if depth > 0 => {
                depth -= 1;
                true
            }
            _ => false,
        };
        if separates {
            components.push(&pattern[component_start..i]);
            component_start = i + c.len_utf8();
        }
    }
    components.push(&pattern[component_start..]);
    starts.iter().any(|&s| is_rooted(&pattern[s..])) || components.contains(&"..")
}

fn is_rooted(path: &str) -> bool {
    let b = path.as_bytes();
    path.starts_with(['/', '\\', '~']) || b.len() >= 2 && b[0].is_ascii_alphabetic() && b[1] == b':'
}

fn tcp_address(addr: &str) -> Result<(), String> {
    let bad = || format!("must be `host:port` with a port from 1 to 65535, not `{addr}`");
    let (host, port) = addr.rsplit_once(':').ok_or_else(bad)?;
    let port: u16 = port.parse().map_err(|_| bad())?;
    if host.is_empty() || host.contains(char::is_whitespace) || port == 0 {
        return Err(bad());
    }
    Ok(())
}

fn http_url(url: &str) -> Result<(), String> {
    let lower = url.to_ascii_lowercase();
    let rest = lower
        .strip_prefix("http://")
        .or_else(|| lower.strip_prefix("https://"));
    match rest {
        Some(rest) if !rest.is_empty() && !rest.starts_with('/') => Ok(()),
        _ => Err(format!(
            "must be an `http://` or `https://` URL with a host, not `{url}`"
        )),
    }
}

/// A URL on the workspace's own server: `http(s)://` with a loopback host
/// (`localhost`, an address in 127.0.0.0/8, or `[::1]`), an optional port,
/// and no credentials.
pub(crate) fn page_url(url: &str) -> Result<(), ()> {
    let lower = url.to_ascii_lowercase();
    let rest = lower
        .strip_prefix("http://")
        .or_else(|| lower.strip_prefix("https://"))
        .ok_or(())?;
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if authority.contains('@') || url.contains(char::is_whitespace) {
        return Err(());
    }
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let (host, after) = v6.split_once(']').ok_or(())?;
        (host, after.strip_prefix(':'))
    } else {
        match authority.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        }
    };
    if let Some(port) = port
        && !matches!(port.parse::<u16>(), Ok(p) if p > 0)
    {
        return Err(());
    }
    let loopback = host == "localhost"
        || host == "::1"
        || host
            .parse::<std::net::Ipv4Addr>()
            .is_ok_and(|a| a.is_loopback());
    if loopback { Ok(()) } else { Err(()) }
}

/// An HTTP token (RFC 9110): what header and cookie names are made of.
fn token(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// A path of `[sandbox] writable`, `readable` or `hidden`: absolute or under the home
/// folder (`~/…`), never the whole file system or the whole home, and
/// without `..`.
fn host_path(path: &str) -> Result<(), String> {
    let rest = if let Some(rest) = path.strip_prefix("~/") {
        rest
    } else if let Some(rest) = path.strip_prefix('/') {
        rest
    } else {
        return Err("must be absolute or start with `~/`".to_owned());
    };
    if rest.split('/').any(|c| c == "..") {
        return Err("must not contain `..`".to_owned());
    }
    if rest.split('/').all(|c| c.is_empty() || c == ".") {
        return Err("must name a folder or file, not the whole tree".to_owned());
    }
    Ok(())
}

/// A portable environment variable name.
fn env_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn log_text(text: &str) -> Result<(), String> {
    if text.is_empty() {
        Err("must not be empty".to_owned())
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workspace_escapes() {
        let cases = [
            ("src/**", false),
            ("src/orders", false),
            ("a..b/c", false),
            ("..foo", false),
            ("a,/b", false),
            ("reports/x.junit.xml", false),
            ("{src,lib}/**", false),
            ("/etc/passwd", true),
            ("\\\\server\\share", true),
            ("C:\\x", true),
            ("c:/x", true),
            ("~/x", true),
            ("~user/x", true),
            ("..", true),
            ("../x", true),
            ("src/../../x", true),
            ("src\\..\\x", true),
            ("{src,/etc}/*", true),
            ("{src,..}/*", true),
            ("a/{b,~}/c", true),
        ];
        for (p, want) in cases {
            assert_eq!(escapes_workspace(p), want, "{p}");
        }
    }

    #[test]
    fn probes() {
        let tcp = [
            ("127.0.0.1:8080", true),
            ("localhost:1", true),
            ("[::1]:65535", true),
            ("localhost", false),
            ("localhost:0", false),
            ("localhost:65536", false),
            (":80", false),
            ("host:http", false),
        ];
        for (a, ok) in tcp {
            assert_eq!(tcp_address(a).is_ok(), ok, "{a}");
        }
        let http = [
            ("http://127.0.0.1:8080/health", true),
            ("HTTPS://example.com", true),
            ("ftp://x", false),
            ("http://", false),
            ("127.0.0.1:8080", false),
        ];
        for (u, ok) in http {
            assert_eq!(http_url(u).is_ok(), ok, "{u}");
        }
    }

    #[test]
    fn page_urls() {
        let cases = [
            ("http://127.0.0.1:8080/", true),
            ("http://localhost/checkout?step=2", true),
            ("HTTPS://LOCALHOST:8443", true),
            ("http://127.1.2.3:3000/a", true),
            ("http://[::1]:8080/", true),
            ("http://example.com/", false),
            ("http://10.0.0.1/", false),
            ("http://localhost.example.com/", false),
            ("http://user:pw@localhost/", false),
            ("http://localhost:0/", false),
            ("http://localhost:99999/", false),
            ("http://[::2]/", false),
            ("ftp://localhost/", false),
            ("localhost:8080", false),
            ("http://", false),
        ];
        for (url, ok) in cases {
            assert_eq!(page_url(url).is_ok(), ok, "{url}");
        }
        for (name, ok) in [
            ("APP_TOKEN", true),
            ("_x1", true),
            ("1X", false),
            ("A-B", false),
            ("", false),
        ] {
            assert_eq!(env_name(name), ok, "{name}");
        }
        for (name, ok) in [
            ("Authorization", true),
            ("X-Csrf", true),
            ("a b", false),
            ("a:b", false),
            ("", false),
        ] {
            assert_eq!(token(name), ok, "{name}");
        }
    }

    #[test]
    fn id_forms() {
        for ok in ["a", "orders-201", "x.tests", "A_b.9"] {
            assert!(id_form(ok).is_ok(), "{ok}");
        }
        for bad in ["", "a b", "a/b", "é", "a:b"] {
            assert_eq!(id_form(bad), Err(SpecErrorKind::InvalidId(bad.to_owned())));
        }
    }
}
