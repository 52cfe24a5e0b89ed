//! `gate rules [--files PATH…] | check | test`, and the rules half of
//! `gate routing check --qualify`.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::{Component, Path, PathBuf};
use std::time::Duration;

use gate_review::review::call::{self, Clients};
use gate_review::review::prompts::Prompts;
use gate_review::review::rule_trial::{RuleResult, Tester};
use gate_review::role::Role;
use gate_review::routing::{ChainModel, Routing};
use gate_review::rules::model::{Claim, PASS_MARGIN, Rule, Tested};
use gate_review::rules::{RuleSet, RulesError, discover, write_back};
use gate_review::tier::Tier;
use gate_specs::Policy;
use serde_json::{Value, json};

use crate::cli::{RoutingArgs, RulesArgs, RulesCheckArgs, RulesTestArgs, ShowFormat};
use crate::config::{self, Context};
use crate::errors::GateError;
use crate::exit;
use crate::output;

/// Version of `gate rules --format json`.
pub(crate) const FORMAT_VERSION: u32 = 1;

/// Every rules file of the workspace, loaded.
fn load_all(ctx: &Context) -> Result<RuleSet, GateError> {
    let state = ctx.state_inside_workspace();
    let sources = discover::all(&ctx.workspace, state.as_deref());
    Ok(RuleSet::load(&ctx.workspace, &sources)?)
}

/// `gate rules [--files PATH…]`: what applies, with no model call.
pub(crate) fn list(ctx: &Context, args: &RulesArgs) -> Result<u8, GateError> {
    let files: Vec<String> = args
        .files
        .iter()
        .map(|p| workspace_relative(ctx, p))
        .collect::<Result<_, _>>()?;
    let (set, listed): (RuleSet, Vec<(usize, Vec<String>)>) = if files.is_empty() {
        let set = load_all(ctx)?;
        let listed = (0..set.rules.len()).map(|i| (i, Vec::new())).collect();
        (set, listed)
    } else {
        let set = RuleSet::load(&ctx.workspace, &discover::for_files(&ctx.workspace, &files))?;
        let listed = set
            .rules
            .iter()
            .enumerate()
            .filter_map(|(i, r)| {
                let on: Vec<String> = files.iter().filter(|f| r.applies_to(f)).cloned().collect();
                (!on.is_empty()).then_some((i, on))
            })
            .collect();
        (set, listed)
    };
    let text = match args.format {
        ShowFormat::Human => render_list(&set, &listed, &files),
        ShowFormat::Json => {
            let doc = json!({
                "format_version": FORMAT_VERSION,
                "files": files,
                "rules": listed.iter().map(|(i, on)| rule_json(&set.rules[*i], on)).collect::<Vec<_>>(),
            });
            output::json_document(&doc)
        }
    };
    output::stdout(&text).map_err(GateError::stdout)?;
    Ok(exit::PASS)
}

fn rule_json(rule: &Rule, files: &[String]) -> Value {
    json!({
        "id": rule.id,
        "kind": rule.claim.kind(),
        "text": rule.claim.text(),
        "fix": rule.fix,
        "reference": rule.reference,
        "severity": rule.severity.as_str(),
        "judge": rule.judge,
        "applies": rule.applies,
        "scope": rule.scope(),
        "home": rule.home,
        "source": rule.source,
        "files": files,
    })
}

/// Avoid / do / see, one block per rule.
fn render_list(set: &RuleSet, listed: &[(usize, Vec<String>)], files: &[String]) -> String {
    let mut out = String::new();
    let what = if files.is_empty() {
        "in this workspace".to_owned()
    } else {
        format!("apply to {}", files.join(", "))
    };
    if listed.is_empty() {
        let _ = writeln!(out, "no house rules {what}");
        return out;
    }
    let n = listed.len();
    let _ = writeln!(
        out,
        "{n} house rule{} {what}",
        if n == 1 { "" } else { "s" }
    );
    for (i, on) in listed {
        let r = &set.rules[*i];
        // A guide entry is never asked, so it never raises a finding.
        let kind = if r.judge {
            r.severity.as_str()
        } else {
            "guide"
        };
        let _ = writeln!(
            out,
            "\n{} · {kind} · in {} ({}:{})",
            r.id,
            r.scope(),
            r.source,
            r.at.0
        );
        match &r.claim {
            Claim::Mistake(m) => {
                let _ = writeln!(out, "  avoid  {}", one_line(m));
                let _ = writeln!(out, "  do     {}", one_line(&r.fix));
            }
            Claim::Statement(s) => {
                let _ = writeln!(out, "  do     {}", one_line(s));
                let _ = writeln!(out, "  fix    {}", one_line(&r.fix));
            }
        }
        if let Some(reference) = &r.reference {
            let _ = writeln!(out, "  see    {reference}");
        }
        if files.len() > 1 && on.len() < files.len() {
            let _ = writeln!(out, "  for    {}", on.join(", "));
        }
    }
    out
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A path given on the command line, workspace-relative: relative to the
/// current directory when that is inside the workspace, else to the
/// workspace. It need not exist.
fn workspace_relative(ctx: &Context, p: &Path) -> Result<String, GateError> {
    let cwd = std::env::current_dir().unwrap_or_else(|_| ctx.workspace.clone());
    let cwd = cwd.canonicalize().unwrap_or(cwd);
    let base = if cwd.starts_with(&ctx.workspace) {
        cwd
    } else {
        ctx.workspace.clone()
    };
    let joined = normalise(&base.join(p));
    // Resolve symlinks in the part that exists (the workspace is canonical).
    let mut existing = joined.clone();
    let mut rest = Vec::new();
    while !existing.exists() {
        match (existing.file_name(), existing.parent()) {
            (Some(name), Some(parent)) => {
                rest.push(name.to_owned());
                existing = parent.to_path_buf();
            }
            _ => break,
        }
    }
    let mut full = existing.canonicalize().unwrap_or(existing);
    for name in rest.iter().rev() {
        full.push(name);
    }
    let rel = full.strip_prefix(&ctx.workspace).map_err(|_| {
        GateError::Usage(format!(
            "{} is outside the workspace {}",
            p.display(),
            ctx.workspace.display()
        ))
    })?;
    Ok(rel.to_string_lossy().replace('\\', "/"))
}

/// `.` and `..` resolved without touching the file system.
fn normalise(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// `gate rules check`: exit 1 when a file has more rules than the cap, or
/// a judged rule was never tested, changed since, or failed its margin.
pub(crate) fn check(ctx: &Context, args: &RulesCheckArgs) -> Result<u8, GateError> {
    let set = load_all(ctx)?;
    let state = ctx.state_inside_workspace();
    let files = discover::workspace_files(&ctx.workspace, state.as_deref());
    let problems = problems(&set, &files, args.cap);
    let mut out = String::new();
    for p in &problems {
        let _ = writeln!(out, "error: {p}");
    }
    if problems.is_empty() {
        let judged = set.rules.iter().filter(|r| r.judge).count();
        let _ = writeln!(
            out,
            "ok: {} rules ({judged} judged) in {} files, at most {} per file",
            set.rules.len(),
            set.files.len(),
            files
                .iter()
                .map(|f| set.applying_to(f).len())
                .max()
                .unwrap_or(0)
        );
    } else {
        let _ = writeln!(out, "{} problem(s)", problems.len());
    }
    output::stdout(&out).map_err(GateError::stdout)?;
    Ok(if problems.is_empty() {
        exit::PASS
    } else {
        exit::FAIL
    })
}

/// What `gate rules check` fails on, one line each; `files` is every file
/// of the workspace, sorted.
pub(crate) fn problems(set: &RuleSet, files: &[String], cap: usize) -> Vec<String> {
    let mut out = Vec::new();
    for (file, n) in set.over_cap(files, cap) {
        out.push(format!(
            "{file}: {n} rules apply to it, more than the cap of {cap}: merge or narrow some"
        ));
    }
    for r in &set.rules {
        if let Some(reference) = &r.reference
            && files.binary_search(reference).is_err()
        {
            out.push(format!(
                "{}:{}:{}: rule `{}` names reference `{reference}`, which is not a file of the workspace",
                r.source, r.at.0, r.at.1, r.id
            ));
        }
        if let Some(why) = r.staleness() {
            out.push(format!(
                "{}:{}:{}: rule `{}` {why}",
                r.source, r.at.0, r.at.1, r.id
            ));
        }
    }
    out
}

/// The policy for time bounds: the spec's when there is one, else the defaults.
fn policy(ctx: &Context, routing: &RoutingArgs) -> Result<Policy, GateError> {
    match ctx.spec_path(routing.spec.as_deref()) {
        Ok(path) => Ok(crate::verify::load_spec(&path)?.spec.policy),
        Err(GateError::NoSpec { .. }) if routing.spec.is_none() => Ok(Policy::default()),
        Err(e) => Err(e),
    }
}

/// Clients for the configured providers, or why there are none.
fn clients_for(ctx: &Context, routing: &Routing, policy: &Policy) -> Result<Clients, GateError> {
    let keys = config::provider_keys(routing, &ctx.env);
    if keys.is_empty() {
        return Err(GateError::Unavailable(
            "no provider configured: set the API key variable the routing table names, or \
             point a provider without `api_key_env` at a local server"
                .to_owned(),
        ));
    }
    call::clients(
        routing,
        &keys,
        Duration::from_secs(policy.connect_timeout_s),
    )
    .map_err(|e| GateError::Usage(format!("cannot set up the model client: {e}")))
}

/// `gate rules test [--rule ID] [--tier T]`: exit 1 when a tested rule is
/// below the margin, 4 when a rule could not be tested.
pub(crate) async fn test(ctx: &Context, args: &RulesTestArgs) -> Result<u8, GateError> {
    let (text, code) = test_report(ctx, args).await?;
    output::stdout(&text).map_err(GateError::stdout)?;
    Ok(code)
}

/// Runs the rule tests, writes the results back, and returns the report
/// and the exit code.
pub(crate) async fn test_report(
    ctx: &Context,
    args: &RulesTestArgs,
) -> Result<(String, u8), GateError> {
    let set = load_all(ctx)?;
    let selected: Vec<&Rule> = match &args.rule {
        Some(id) => {
            let found = set.with_id(id);
            if found.is_empty() {
                return Err(RulesError::NoSuchRule(id.clone()).into());
            }
            if found.iter().all(|r| !r.judge) {
                return Err(GateError::Usage(format!(
                    "rule `{id}` is a guide entry (judge = false): it is never asked, so there is nothing to test"
                )));
            }
            found.into_iter().filter(|r| r.judge).collect()
        }
        None => set.rules.iter().filter(|r| r.judge).collect(),
    };
    if selected.is_empty() {
        return Ok(("no judged house rules to test\n".to_owned(), exit::PASS));
    }
    let routing = super::routing_table(ctx, &args.routing)?;
    let policy = policy(ctx, &args.routing)?;
    let prompts = crate::verify::load_prompts(ctx, &routing)?;
    let clients = clients_for(ctx, &routing, &policy)?;
    let chain = routing.chain(Role::Rules, args.tier);
    if chain.is_empty() {
        return Err(GateError::Usage(format!(
            "the routing table routes no usable model for rules.{}",
            args.tier
        )));
    }
    if ctx.verbosity > crate::config::Verbosity::Quiet {
        output::stderr(&format!(
            "gate: testing {} rule(s) against {}",
            selected.len(),
            chain
                .iter()
                .map(|m| m.model.name.as_str())
                .collect::<Vec<_>>()
                .join(" → ")
        ));
    }
    let tester = Tester {
        workspace: &ctx.workspace,
        clients: &clients,
        chain,
        policy: &policy,
        prompts: &prompts,
        run_id: format!("rules-test-{}", uuid::Uuid::now_v7()),
    };
    let results = gate_review::review::rule_trial::run(&tester, &selected).await;
    let when = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let mut out = String::new();
    let (mut failed, mut untested) = (0, 0);
    for result in &results {
        render_result(&mut out, result);
        let Some(margin) = result.margin() else {
            untested += 1;
            continue;
        };
        if margin < PASS_MARGIN {
            failed += 1;
        }
        let rule = &result.rule;
        let record = Tested {
            margin,
            model: result.models(),
            hash: rule.hash(),
            when: when.clone(),
        };
        write_back::write_back(
            &ctx.workspace.join(&rule.source),
            rule.index,
            &rule.id,
            &record,
        )?;
    }
    let _ = writeln!(
        out,
        "\n{} passed, {failed} below the margin of {PASS_MARGIN}, {untested} could not be tested",
        results.len() - failed - untested
    );
    let code = if failed > 0 {
        exit::FAIL
    } else if untested > 0 {
        exit::INCOMPLETE
    } else {
        exit::PASS
    };
    Ok((out, code))
}

fn render_result(out: &mut String, result: &RuleResult) {
    let rule = &result.rule;
    let verdict = match result.margin() {
        Some(m) if m >= PASS_MARGIN => format!("pass  margin {m:.2}"),
        Some(m) => format!("FAIL  margin {m:.2} (needs {PASS_MARGIN})"),
        None => "not tested: a case got no answer".to_owned(),
    };
    let _ = writeln!(out, "{} ({}): {verdict}", rule.id, rule.source);
    for c in &result.cases {
        let score = c
            .compliance
            .map_or_else(|| "  —".to_owned(), |s| format!("{s:.2}"));
        let _ = writeln!(
            out,
            "  {:<9} {score}  {}  [{}]",
            c.kind.as_str(),
            c.file,
            c.model
        );
        if c.compliance.is_none() {
            let _ = writeln!(out, "            {}", one_line(&c.why));
        }
    }
}

/// One model the rules reviewer can be routed to, and what its test showed.
#[derive(Debug, Clone)]
pub(crate) struct Qualification {
    /// `provider/model`.
    pub model: String,
    /// The classes naming it.
    pub classes: Vec<String>,
    /// Lowest margin over the rules, when every rule could be tested.
    pub lowest: Option<(String, f64)>,
    /// Rules below the margin, with theirs.
    pub below: Vec<(String, f64)>,
    /// Why it could not be qualified here.
    pub unavailable: Option<String>,
}

#[cfg(test)]
impl Qualification {
    /// Whether it met the margin on every rule.
    pub(crate) fn qualified(&self) -> bool {
        self.unavailable.is_none() && self.below.is_empty()
    }
}

/// Every model any tier's rules chain could reach (failbacks included),
/// each once, in the order first met.
pub(crate) fn rules_models(routing: &Routing) -> Vec<(String, Vec<String>, ChainModel)> {
    let mut out: Vec<(String, Vec<String>, ChainModel)> = Vec::new();
    for tier in [Tier::Trivial, Tier::Light, Tier::Full] {
        for step in routing.chain(Role::Rules, tier) {
            let key = format!("{}/{}", step.provider_name, step.model.name);
            match out.iter_mut().find(|(k, _, _)| *k == key) {
                Some((_, classes, _)) => {
                    if !classes.contains(&step.class) {
                        classes.push(step.class.clone());
                    }
                }
                None => out.push((key, vec![step.class.clone()], step)),
            }
        }
    }
    out
}

/// Runs every rule test against each model the rules reviewer could use.
/// Nothing is written back: the rules' `tested` tables record the routed model's runs.
pub(crate) async fn qualify(
    ctx: &Context,
    routing: &Routing,
    args: &RoutingArgs,
) -> Result<(Vec<Qualification>, usize), GateError> {
    let set = load_all(ctx)?;
    let rules: Vec<&Rule> = set.rules.iter().filter(|r| r.judge).collect();
    let models = rules_models(routing);
    if rules.is_empty() || models.is_empty() {
        return Ok((Vec::new(), rules.len()));
    }
    let policy = policy(ctx, args)?;
    let prompts: Prompts = crate::verify::load_prompts(ctx, routing)?;
    let keys = config::provider_keys(routing, &ctx.env);
    let clients = if keys.is_empty() {
        Clients::new()
    } else {
        call::clients(
            routing,
            &keys,
            Duration::from_secs(policy.connect_timeout_s),
        )
        .map_err(|e| GateError::Usage(format!("cannot set up the model client: {e}")))?
    };
    let mut out = Vec::new();
    for (model, classes, step) in models {
        let mut q = Qualification {
            model,
            classes,
            lowest: None,
            below: Vec::new(),
            unavailable: None,
        };
        if !clients.contains_key(&step.provider_name) {
            q.unavailable = Some(format!(
                "provider `{}` is not configured here",
                step.provider_name
            ));
            out.push(q);
            continue;
        }
        let tester = Tester {
            workspace: &ctx.workspace,
            clients: &clients,
            chain: vec![step],
            policy: &policy,
            prompts: &prompts,
            run_id: format!("rules-qualify-{}", uuid::Uuid::now_v7()),
        };
        let results = gate_review::review::rule_trial::run(&tester, &rules).await;
        let mut margins: BTreeMap<String, f64> = BTreeMap::new();
        for r in &results {
            if let Some(m) = r.margin() {
                margins.insert(r.rule.id.clone(), m);
            } else {
                let why = r
                    .cases
                    .iter()
                    .find(|c| c.compliance.is_none())
                    .map_or_else(String::new, |c| one_line(&c.why));
                q.unavailable = Some(format!("rule `{}` could not be asked: {why}", r.rule.id));
            }
        }
        q.below = margins
            .iter()
            .filter(|(_, m)| **m < PASS_MARGIN)
            .map(|(id, m)| (id.clone(), *m))
            .collect();
        q.lowest = margins
            .iter()
            .min_by(|a, b| a.1.total_cmp(b.1))
            .map(|(id, m)| (id.clone(), *m));
        out.push(q);
    }
    Ok((out, rules.len()))
}

#[cfg(test)]
mod tests;
