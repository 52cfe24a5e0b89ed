//! Generates a ledger of synthetic runs for benchmarks: rows written
//! through the ledger's own API (so the report tables are filled as `gate
//! verify` fills them), with no bundle files behind them.
//!
//! ```text
//! cargo run --release -p gate-evidence --example gen_ledger -- DB [--runs N] [--outcomes M] [--seed S] [--bundles]
//! ```
//!
//! With `--bundles` every run is also a signed bundle file, laid out as a
//! state directory around `DB` (`keys/`, `bundles/`, the key derived from
//! the seed), for the `gate ledger verify` benchmark.
//!
//! Outcomes and dismissals are signed, as `gate outcome` and `gate dismiss`
//! sign them, by the key derived from the seed, whose pair is written to
//! `keys/` beside `DB` (the report counts only what it can vouch for).
//!
//! Defaults: 1,000,000 runs and 100,000 outcomes (about a tenth of them a
//! second outcome for a run that already has one), plus overrides of some
//! failed runs and dismissals of some findings. Deterministic for a seed.
//! Prints one line: `runs=N outcomes=M overrides=O dismissals=D elapsed_ms=T`.

#![allow(
    clippy::print_stdout,
    reason = "a command-line example reports on stdout"
)]
#![allow(
    clippy::print_stderr,
    reason = "a command-line example reports usage errors"
)]

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use chrono::{DateTime, Duration, TimeZone, Utc};
use gate_evidence::ledger::{
    Dismissal, OutcomeEntry, OverrideEntry, RowDispositions, RowFacts, RowFinding, RowRole,
    RunEntry, RunIsolation, seal,
};
use gate_evidence::{Ledger, SigningKey, Statement, Subject, bundle};
use serde_json::json;

/// Rows per transaction.
const BATCH: usize = 10_000;
const SPECS: u64 = 2_000;
const MODELS: [&str; 6] = [
    "openai/gpt-mini",
    "openai/gpt-large",
    "anthropic/claude-haiku",
    "anthropic/claude-sonnet",
    "anthropic/claude-opus",
    "local/qwen-coder",
];
const AGENTS: [&str; 4] = ["claude-code", "codex", "aider", "cursor"];
/// Two years of runs.
const SPAN_S: i64 = 2 * 365 * 24 * 3600;

/// A small deterministic generator (SplitMix64).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// True with probability `percent` / 100.
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

struct Args {
    db: PathBuf,
    runs: u64,
    outcomes: u64,
    seed: u64,
    bundles: bool,
    /// A real run to model each bundle's run on (implies `bundles`).
    template: Option<PathBuf>,
}

fn parse(args: Vec<String>) -> Result<Args, String> {
    let mut out = Args {
        db: PathBuf::new(),
        runs: 1_000_000,
        outcomes: 100_000,
        seed: 7,
        bundles: false,
        template: None,
    };
    let mut it = args.into_iter();
    while let Some(a) = it.next() {
        let mut number = |name: &str| -> Result<u64, String> {
            it.next()
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| format!("{name} needs a number"))
        };
        match a.as_str() {
            "--runs" => out.runs = number("--runs")?,
            "--outcomes" => out.outcomes = number("--outcomes")?,
            "--seed" => out.seed = number("--seed")?,
            "--bundles" => out.bundles = true,
            "--template" => {
                out.bundles = true;
                out.template = Some(it.next().ok_or("--template needs a file")?.into());
            }
            _ if out.db.as_os_str().is_empty() && !a.starts_with('-') => out.db = a.into(),
            _ => return Err(format!("unknown argument {a}")),
        }
    }
    if out.db.as_os_str().is_empty() {
        return Err("usage: gen_ledger DB [--runs N] [--outcomes M] [--seed S] [--bundles | --template FILE]".into());
    }
    Ok(out)
}

fn run_id(i: u64) -> String {
    format!("{:08x}-0000-7000-8000-{:012x}", i >> 16, i)
}

/// One synthetic run, as `gate verify` would record it.
fn run(rng: &mut Rng, i: u64, n: u64, start: DateTime<Utc>) -> RunEntry {
    let spec = rng.below(SPECS);
    let tier = match rng.below(100) {
        0..50 => "trivial",
        50..85 => "light",
        _ => "full",
    };
    let verdict = match rng.below(100) {
        0..70 => "pass",
        70..95 => "fail",
        95..97 => "escalate",
        _ => "incomplete",
    };
    let roles: &[&str] = match tier {
        "trivial" => &["quality"],
        "light" => &["quality", "security", "performance"],
        _ => &["quality", "security", "performance", "integration", "docs"],
    };
    let ran = rng.chance(90);
    let mut models: Vec<&str> = Vec::new();
    let mut role_rows = Vec::new();
    let (mut input, mut cached, mut output, mut cost) = (0u64, 0u64, 0u64, 0.0f64);
    if ran {
        for role in roles {
            let model = MODELS[rng.below(MODELS.len() as u64) as usize];
            if !models.contains(&model) {
                models.push(model);
            }
            let ok = rng.chance(97);
            let (i_t, c_t, o_t) = if ok {
                let i_t = 2_000 + rng.below(60_000);
                (i_t, i_t * rng.below(80) / 100, 200 + rng.below(3_000))
            } else {
                (0, 0, 0)
            };
            let c = (i_t - c_t) as f64 * 3e-6 + c_t as f64 * 0.3e-6 + o_t as f64 * 15e-6;
            input += i_t;
            cached += c_t;
            output += o_t;
            cost += c;
            role_rows.push(RowRole {
                role: (*role).to_owned(),
                model: model.to_owned(),
                status: if ok { "ok" } else { "did_not_run" }.to_owned(),
                input_tokens: Some(i_t),
                cached_input_tokens: Some(c_t),
                output_tokens: Some(o_t),
                cost_usd: Some(c),
            });
        }
    }
    let findings: Vec<RowFinding> = (0..rng.below(4))
        .map(|k| RowFinding {
            id: format!("{:012x}", rng.next() >> 16),
            severity: "warning".to_owned(),
            role: roles[(k as usize) % roles.len()].to_owned(),
            file: "src/lib.rs".to_owned(),
            line: u32::try_from(k + 1).ok(),
        })
        .collect();
    let attempt = 1 + rng.below(3);
    let resolved: Vec<String> = (0..if attempt > 1 { rng.below(3) } else { 0 })
        .map(|_| format!("{:012x}", rng.next() >> 16))
        .collect();
    let superseded: Vec<String> = (0..u64::from(attempt > 1 && rng.chance(20)))
        .map(|_| format!("{:012x}", rng.next() >> 16))
        .collect();
    let agent = (!rng.chance(10)).then(|| AGENTS[rng.below(AGENTS.len() as u64) as usize]);
    let offset = SPAN_S * i64::try_from(i).unwrap_or(0) / i64::try_from(n.max(1)).unwrap_or(1);
    let started_at = start + Duration::seconds(offset + i64::try_from(rng.below(600)).unwrap_or(0));
    RunEntry {
        run_id: run_id(i),
        spec_id: format!("spec-{spec:04}"),
        attempt: attempt as u32,
        series: None,
        verdict: verdict.into(),
        tier: tier.into(),
        started_at,
        finished_at: started_at
            + Duration::seconds(30 + i64::try_from(rng.below(600)).unwrap_or(0)),
        input_tokens: input,
        cached_input_tokens: cached,
        output_tokens: output,
        cost_usd: Some(cost),
        bundle_path: format!("/var/lib/gate/bundles/{}.dsse.json", run_id(i)),
        extra: serde_json::to_value(RowFacts {
            agent: agent.map(str::to_owned),
            review: Some(if ran { "ran" } else { "did_not_run" }.to_owned()),
            models: models.into_iter().map(str::to_owned).collect(),
            roles: role_rows,
            findings,
            duplicates: rng.below(3),
            dispositions: RowDispositions {
                resolved,
                superseded,
            },
            isolation: RunIsolation::default(),
            criteria_passed: 0,
            fail_to_pass: 0,
        })
        .expect("row facts are plain data"),
    }
}

/// Where `--bundles` writes: a key pair and a bundle file per run, beside
/// the database as in a state directory.
struct Signed {
    key: SigningKey,
    dir: PathBuf,
    /// `{"run": …, "row": …}`: a real run's record and its row's tokens,
    /// cost and facts (`extra`).
    template: Option<serde_json::Value>,
}

/// The key derived from the seed; its pair is written beside `DB` as in a
/// state directory.
fn signer(args: &Args) -> Result<SigningKey, Box<dyn std::error::Error>> {
    let state = args.db.parent().ok_or("DB needs a directory")?;
    let mut seed = [0u8; 32];
    seed[..8].copy_from_slice(&args.seed.to_le_bytes());
    let key = SigningKey::from_seed(&seed);
    if !state.join("keys").exists() {
        key.write_pair(&state.join("keys"))?;
    }
    Ok(key)
}

impl Signed {
    fn new(args: &Args) -> Result<Self, Box<dyn std::error::Error>> {
        let state = args.db.parent().ok_or("DB needs a directory")?;
        let key = signer(args)?;
        let dir = state.join("bundles");
        std::fs::create_dir_all(&dir)?;
        let template = match &args.template {
            Some(path) => Some(serde_json::from_slice(&std::fs::read(path)?)?),
            None => None,
        };
        Ok(Self { key, dir, template })
    }

    /// Seals `entry`'s run, writes its bundle and points the row at it.
    /// With a template, the run is the template's whole run with this
    /// row's id, spec, attempt, verdict, tier and times, and the row takes
    /// the template row's tokens, cost and facts: a bundle whose run
    /// agrees with its row, as `gate ledger verify` checks.
    fn write(&self, entry: &mut RunEntry) -> Result<Vec<u8>, Box<dyn std::error::Error>> {
        let run = match &self.template {
            Some(t) => {
                let mut run = t["run"].clone();
                let ms = (entry.finished_at - entry.started_at).num_milliseconds();
                run["run_id"] = json!(entry.run_id);
                run["spec_id"] = json!(entry.spec_id);
                run["attempt"] = json!(entry.attempt);
                run["verdict"] = json!(entry.verdict);
                run["tier"] = json!(entry.tier);
                run["started_at"] = json!(entry.started_at.to_rfc3339());
                run["duration_ms"] = json!(ms);
                let row = &t["row"];
                entry.input_tokens = row["input_tokens"].as_u64().unwrap_or(0);
                entry.cached_input_tokens = row["cached_input_tokens"].as_u64().unwrap_or(0);
                entry.output_tokens = row["output_tokens"].as_u64().unwrap_or(0);
                entry.cost_usd = row["cost_usd"].as_f64();
                entry.extra = row["extra"].clone();
                run
            }
            None => json!({
                "run_id": entry.run_id, "verdict": entry.verdict, "attempt": entry.attempt,
            }),
        };
        let statement = Statement::new(
            vec![Subject::from_bytes("gate.toml", entry.spec_id.as_bytes())],
            "https://gate.dev/attestation/run/v1",
            json!({"format_version": 1, "run": run}),
        );
        let envelope = bundle::seal(&statement, &self.key);
        // A generator needs no durability: plain writes, not bundle::write's
        // fsyncs (which make 100,000 files take many minutes).
        let path = bundle::path_for(&self.dir, &entry.run_id)?;
        std::fs::write(&path, &envelope)?;
        entry.bundle_path = path.display().to_string();
        Ok(envelope)
    }
}

impl Signed {
    /// Writes an override's own signed bundle, as `gate override` does,
    /// and points the row at it.
    fn write_override(&self, entry: &mut OverrideEntry) -> Result<(), Box<dyn std::error::Error>> {
        let statement = Statement::new(
            vec![Subject::from_bytes("override", entry.run_id.as_bytes())],
            "https://gate.dev/attestation/override/v1",
            json!({"run_id": entry.run_id, "spec_id": entry.spec_id,
                   "content_digest": entry.content_digest, "reason": entry.reason, "by": entry.by,
                   "at": entry.recorded_at.to_rfc3339_opts(chrono::SecondsFormat::Micros, true)}),
        );
        let envelope = bundle::seal(&statement, &self.key);
        let path = self
            .dir
            .join(format!("override-{}.dsse.json", entry.run_id));
        std::fs::write(&path, &envelope)?;
        entry.bundle_path = path.display().to_string();
        entry.bundle_sha256 = bundle::digest(&envelope);
        Ok(())
    }
}

fn generate(args: &Args) -> Result<String, Box<dyn std::error::Error>> {
    let started = Instant::now();
    let mut ledger = Ledger::open(&args.db)?;
    if !ledger.is_empty()? {
        return Err(format!("{} already holds runs", args.db.display()).into());
    }
    let key = signer(args)?;
    let signed = if args.bundles {
        Some(Signed::new(args)?)
    } else {
        None
    };
    let mut rng = Rng(args.seed);
    let start = Utc
        .with_ymd_and_hms(2024, 1, 1, 0, 0, 0)
        .single()
        .ok_or("start time")?;
    let n = args.runs;
    let mut failed: Vec<(u64, String)> = Vec::new();
    // Per run: how likely a later outcome says broken, in percent (the
    // gate is mostly right: approvals rarely break, failures mostly do).
    let mut broken_odds: Vec<u8> = Vec::with_capacity(usize::try_from(n).unwrap_or(0));
    let mut with_findings: Vec<(u64, String, String)> = Vec::new();
    let mut i = 0;
    while i < n {
        let mut batch: Vec<RunEntry> = (i..(i + BATCH as u64).min(n))
            .map(|k| run(&mut rng, k, n, start))
            .collect();
        for (k, e) in (i..).zip(&batch) {
            broken_odds.push(match e.verdict.as_str() {
                "pass" => 8,
                "fail" => 75,
                _ => 50,
            });
            // Each override and dismissal is its own durable write: keep them few.
            if e.verdict == "fail" && rng.below(1000) < 4 {
                failed.push((k, e.spec_id.clone()));
            }
            if let Some(first) = RowFacts::read(&e.extra).findings.first()
                && rng.below(1000) < 2
            {
                with_findings.push((k, e.spec_id.clone(), first.id.clone()));
            }
        }
        let envelopes: Vec<Vec<u8>> = match &signed {
            Some(signed) => batch
                .iter_mut()
                .map(|e| signed.write(e))
                .collect::<Result<_, _>>()?,
            None => batch
                .iter()
                .map(|e| format!("envelope of {}", e.run_id).into_bytes())
                .collect(),
        };
        ledger.append_all(batch.iter().zip(envelopes.iter().map(Vec::as_slice)))?;
        i += batch.len() as u64;
    }
    // Outcomes: most for a run without one yet, a tenth as a later word on one.
    let recorded = start + Duration::seconds(SPAN_S + 86_400);
    let mut outcomes = Vec::new();
    let mut seen = Vec::new();
    for k in 0..args.outcomes {
        let target = if k % 10 == 9 && !seen.is_empty() {
            seen[rng.below(seen.len() as u64) as usize]
        } else {
            let t = rng.below(n.max(1));
            seen.push(t);
            t
        };
        let outcome = OutcomeEntry {
            run_id: run_id(target),
            broken: rng.chance(u64::from(broken_odds[usize::try_from(target).unwrap_or(0)])),
            reason: Some("ci on main".into()),
            source: Some("ci".into()),
            recorded_at: recorded + Duration::seconds(i64::try_from(k).unwrap_or(0)),
            envelope: None,
            evidence: None,
        };
        outcomes.push(seal(&outcome, &key));
        if outcomes.len() == BATCH {
            ledger.add_outcomes(&outcomes)?;
            outcomes.clear();
        }
    }
    ledger.add_outcomes(&outcomes)?;
    for (k, spec) in &failed {
        let mut entry = OverrideEntry {
            run_id: run_id(*k),
            spec_id: spec.clone(),
            reason: "hotfix".into(),
            by: "ops".into(),
            content_digest: format!("{k:064x}"),
            bundle_path: format!("/var/lib/gate/bundles/override-{k}.dsse.json"),
            bundle_sha256: format!("{k:064x}"),
            recorded_at: recorded,
        };
        if let Some(signed) = &signed {
            signed.write_override(&mut entry)?;
        }
        ledger.add_override(&entry)?;
    }
    for (k, spec, finding) in &with_findings {
        let dismissal = Dismissal {
            run_id: run_id(*k),
            spec_id: spec.clone(),
            finding_id: finding.clone(),
            reason: "not a bug".into(),
            code_digest: None,
            recorded_at: recorded,
            envelope: None,
            by: None,
        };
        ledger.add_dismissal(&seal(&dismissal, &key))?;
    }
    Ok(format!(
        "runs={n} outcomes={} overrides={} dismissals={} elapsed_ms={}",
        args.outcomes,
        failed.len(),
        with_findings.len(),
        started.elapsed().as_millis()
    ))
}

fn main() -> ExitCode {
    let args = match parse(std::env::args().skip(1).collect()) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("gen_ledger: {e}");
            return ExitCode::from(2);
        }
    };
    match generate(&args) {
        Ok(line) => {
            println!("{line}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("gen_ledger: {e}");
            ExitCode::FAILURE
        }
    }
}
