//! The integration-verify gate: the `gate` command and the pipeline behind it.
//!
//! # Layout
//! - `environment` is the process environment, read once at start and
//!   passed on (in `Context::env`); `cli` parses the command line; `config`
//!   resolves the two.
//! - `verify` runs one gate run stage by stage, using `plan` (what to
//!   run), `change` (what changed), `isolation` (the sandbox) and
//!   `verdict`.
//! - `record` is the run as one value; `output` renders it, and renders
//!   the `events` stages emit while a run goes.
//! - The false-pass scorecard (`gate report`, `gate metrics`) is the
//!   `gate-scorecard` crate; `commands::report` and `commands::metrics`
//!   read the ledger into it and print its views.
//! - `exit` holds the exit codes, `errors` the one map from error to code.
//!
//! The model review (providers, routing, reviewers, house rules) is the
//! `gate-review` crate; `verify` hands it what to review and wraps the
//! events it reports.
//!
//! Modules are private to the crate, so the compiler reports what nothing
//! uses; `doom` is public for the fuzz targets, which call its failure
//! fingerprinting.

// Test code may run long: a scenario reads best whole.
#![cfg_attr(test, allow(clippy::too_many_lines))]

pub(crate) mod attest;
pub(crate) mod base_runs;
pub(crate) mod build_output;
pub(crate) mod change;
pub(crate) mod cli;
pub(crate) mod commands;
pub(crate) mod config;
pub(crate) mod coverage;
pub mod doom;
pub(crate) mod environment;
pub(crate) mod errors;
pub(crate) mod events;
pub(crate) mod exam;
pub(crate) mod exit;
pub(crate) mod git;
pub(crate) mod guard;
pub(crate) mod harvest;
pub(crate) mod init;
pub(crate) mod interpreters;
pub(crate) mod interrupt;
pub(crate) mod isolation;
pub(crate) mod memory;
pub(crate) mod mutants;
pub(crate) mod observed;
pub(crate) mod output;
pub(crate) mod pages;
pub(crate) mod plan;
pub(crate) mod predicate;
pub(crate) mod record;
pub(crate) mod replay;
pub(crate) mod retry;
pub(crate) mod row;
pub(crate) mod startup_hooks;
pub(crate) mod task_reports;
pub(crate) mod verdict;
pub(crate) mod verifiers;
pub(crate) mod verify;
pub(crate) mod vouch;
pub(crate) mod vouch_cache;
pub(crate) mod workspace_files;

use std::ffi::OsString;
use std::process::ExitCode;

use clap::Parser;

use crate::cli::{
    Cli, Command, EvidenceCommand, HookCommand, KeysCommand, LedgerCommand, OutcomeCommand,
    RoutingCommand, RulesCommand, VerifyArgs,
};
use crate::config::{Context, Verbosity};
use crate::environment::{Environment, names};
use crate::errors::GateError;
use crate::record::{RunRecord, Verdict};

/// Runs the command line `args` and returns the process exit code.
pub fn run<I: IntoIterator<Item = OsString>>(args: I) -> ExitCode {
    // Before any thread or child: what the gate inherited stays the gate's.
    gate_harness::process::keep_inherited_descriptors();
    // Read once, before anything else: every setting comes from this snapshot.
    let env = Environment::capture();
    install_panic_hook();
    let args: Vec<OsString> = args.into_iter().collect();
    let cli = match Cli::try_parse_from(&args) {
        Ok(cli) => cli,
        Err(e) => {
            // --help and --version are successes that clap reports as errors.
            let code = if e.use_stderr() {
                exit::USAGE
            } else {
                exit::PASS
            };
            let _ = e.print();
            if e.use_stderr() && config::github_format_asked(&args, &env) {
                let first = e.to_string();
                let first = first.lines().next().unwrap_or("usage error");
                let _ = output::stdout(&format!(
                    "{}\n",
                    output::github::error_line("gate: usage error", None, first)
                ));
            }
            return exit::code(code);
        }
    };
    if let Command::SandboxHelper { args } = &cli.command {
        return sandbox_helper(args);
    }
    // Generated from the command line alone: no workspace, no state.
    let generated = match &cli.command {
        Command::Completions { shell } => Some(commands::completions::print(*shell)),
        Command::Man { command } => Some(commands::man::print(command)),
        Command::Schema { which } => Some(commands::schema::print(*which)),
        _ => None,
    };
    if let Some(outcome) = generated {
        return match outcome {
            Ok(code) => exit::code(code),
            Err(e) => fail(&e),
        };
    }
    let discover = !matches!(cli.command, Command::Init);
    let ctx = match Context::resolve(&cli.global, discover, env) {
        Ok(ctx) => ctx,
        Err(e) => return fail(&e),
    };
    init_tracing(ctx.verbosity, &ctx.env);
    // The test suite's way to exercise the panic path: nothing has run yet.
    assert!(
        !ctx.env.test_panic(),
        "{} is set: panicking on purpose",
        names::TEST_PANIC
    );
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            output::stderr(&format!("gate: cannot start the runtime: {e}"));
            return exit::code(exit::INCOMPLETE);
        }
    };
    let outcome = runtime.block_on(async {
        if ctx.env.test_task_panic() {
            let task = tokio::spawn(async {
                panic!(
                    "{} is set: panicking in a task on purpose",
                    names::TEST_PANIC
                );
            });
            let _ = task.await;
        }
        dispatch(&ctx, cli.command).await
    });
    // A panic in a spawned task is caught by the runtime, not by `main`: the
    // hook noted it, and it still ends the process with the panic's code.
    if PANICKED.load(std::sync::atomic::Ordering::SeqCst) {
        return exit::code(exit::PANIC);
    }
    match outcome {
        Ok(code) => exit::code(code),
        Err(e) => fail(&e),
    }
}

/// Runs a helper the gate started inside a run's network namespace: none of
/// the gate's settings apply, its answer is one line on stdout, and it
/// exits 0 when it succeeded.
fn sandbox_helper(args: &[OsString]) -> ExitCode {
    let helper = match gate_harness::sandbox::Helper::parse(args) {
        Ok(helper) => helper,
        Err(why) => {
            output::stderr(&format!("gate: {why}"));
            return exit::code(exit::USAGE);
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            output::stderr(&format!("gate: cannot start the runtime: {e}"));
            return exit::code(exit::INCOMPLETE);
        }
    };
    let say = |line: &str| {
        let _ = output::stdout(&format!("{line}\n"));
    };
    match runtime.block_on(gate_harness::inside::run(helper, say)) {
        Ok(()) => exit::code(exit::PASS),
        Err(why) => {
            say(&why);
            exit::code(exit::FAIL)
        }
    }
}

async fn dispatch(ctx: &Context, command: Command) -> Result<u8, GateError> {
    match command {
        Command::SandboxHelper { .. }
        | Command::Completions { .. }
        | Command::Man { .. }
        | Command::Schema { .. } => Ok(exit::USAGE),
        Command::Doctor(args) => commands::doctor::doctor(ctx, &args).await,
        Command::Mutants(args) => Box::pin(commands::mutants::command(ctx, &args)).await,
        Command::Init => init::run(ctx),
        Command::Verify(args) => Box::pin(verify_command(ctx, &args)).await,
        Command::Routing(RoutingCommand::Show(args)) => commands::routing::show(ctx, &args).await,
        Command::Routing(RoutingCommand::Check(args)) => commands::routing::check(ctx, &args).await,
        Command::Keys(KeysCommand::Generate) => commands::keys::generate(ctx),
        Command::Keys(KeysCommand::Show) => commands::keys::show(ctx),
        Command::Evidence(EvidenceCommand::Verify { target, keys }) => {
            commands::evidence::verify(ctx, &target, &keys, ctx.workspace_given)
        }
        Command::Evidence(EvidenceCommand::Show {
            target,
            format,
            keys,
        }) => commands::evidence::show(ctx, &target, format, &keys),
        Command::Evidence(EvidenceCommand::Fetch { run, output }) => {
            commands::evidence::fetch(ctx, &run, &output)
        }
        Command::Runs(args) => commands::runs::list(ctx, &args),
        Command::Ledger(LedgerCommand::Verify {
            since,
            keys,
            format,
        }) => commands::ledger::verify(ctx, since.as_deref(), &keys, format),
        Command::Ledger(LedgerCommand::Checkpoint) => commands::ledger::checkpoint(ctx),
        Command::Ledger(LedgerCommand::Import { bundle }) => {
            commands::ledger::import(ctx, bundle.as_deref())
        }
        Command::Ledger(LedgerCommand::Migrate { from, to }) => {
            commands::ledger::migrate(&from, &to)
        }
        Command::Dismiss {
            run,
            finding,
            reason,
        } => commands::review_memory::dismiss(ctx, &run, &finding, &reason),
        Command::Override { run, reason, by } => {
            commands::review_memory::override_run(ctx, &run, &reason, &by)
        }
        Command::Rules(args) => match &args.command {
            None => commands::rules::list(ctx, &args),
            Some(RulesCommand::Check(check)) => commands::rules::check(ctx, check),
            Some(RulesCommand::Test(test)) => commands::rules::test(ctx, test).await,
        },
        Command::Outcome(args) => match &args.command {
            Some(OutcomeCommand::Harvest(harvest)) => {
                commands::outcome::harvest(ctx, harvest).await
            }
            Some(OutcomeCommand::Blame(blame)) => commands::outcome::blame(ctx, blame).await,
            None => commands::outcome::record(ctx, &args),
        },
        Command::Hook(HookCommand::ClaudeCode(args) | HookCommand::Codex(args)) => {
            commands::hook::run(ctx, &args).await
        }
        Command::Hook(HookCommand::Aider(args)) => commands::hook::test_command(ctx, &args).await,
        Command::Hook(HookCommand::Install(args)) => commands::hook::install::install(ctx, &args),
        Command::Mcp => commands::mcp::serve(ctx).await,
        Command::Report(args) => commands::report::report(ctx, &args),
        Command::Metrics(args) => commands::metrics::metrics(ctx, &args),
        Command::Replay(args) => Box::pin(commands::replay::replay(ctx, &args)).await,
    }
}

async fn verify_command(ctx: &Context, args: &VerifyArgs) -> Result<u8, GateError> {
    let result = verify_inner(ctx, args).await;
    // In GitHub output, a usage or configuration error is also an
    // annotation, so the check run shows why nothing was decided.
    if let Err(e) = &result
        && e.exit_code() == exit::USAGE
        && config::github_format(args.format, &ctx.env)
    {
        let text: String = output::github::error_annotations(e, &ctx.workspace)
            .into_iter()
            .map(|l| l + "\n")
            .collect();
        let _ = output::stdout(&text);
    }
    result
}

async fn verify_inner(ctx: &Context, args: &VerifyArgs) -> Result<u8, GateError> {
    let settings = config::VerifySettings::resolve(ctx, args)?;
    // A spec other than the workspace's gate.toml may name its own ledger.
    let ctx = &ctx.with_spec_ledger(&settings.spec_path);
    if args.print_config {
        return commands::config::print(ctx, &settings, args);
    }
    let req = verify::VerifyRequest {
        spec_path: settings.spec_path.clone(),
        base: args.base.clone(),
        full: args.full,
        new_series: args.new_series,
        series: args.series.clone(),
        no_base_runs: args.no_base_runs,
        offline: settings.offline,
        routing: settings.routing.clone(),
        own_files: output::own_files(&settings),
        sandbox: (settings.sandbox, settings.sandbox_source.clone()),
    };
    let live = output::Live::start(ctx, &settings);
    let result = verify::run_with(ctx, &req, live.sink()).await;
    let jsonl = live.finish(&result).await;
    let record = result?;
    output::deliver(ctx, &settings, &record, jsonl.as_deref())?;
    Ok(verify_exit_code(&record))
}

/// `gate verify`'s exit code. A pass without its record in the ledger is not
/// a pass: it exits 4.
pub fn verify_exit_code(record: &RunRecord) -> u8 {
    match record.verdict {
        Verdict::Pass if record.recorded => exit::PASS,
        Verdict::Pass | Verdict::Incomplete => exit::INCOMPLETE,
        Verdict::Fail => exit::FAIL,
        Verdict::Escalate => exit::ESCALATE,
    }
}

fn fail(e: &GateError) -> ExitCode {
    // An error quotes what it was given (a path, a spec key): its lines
    // stay lines, its control characters are shown.
    output::stderr(&output::text::shown_block(&format!("gate: {e}")));
    exit::code(e.exit_code())
}

fn init_tracing(verbosity: Verbosity, env: &Environment) {
    use tracing_subscriber::EnvFilter;
    // The pool's own "connection closed" warnings repeat what the gate
    // reports about an unreachable ledger in its own words.
    let default = match verbosity {
        Verbosity::Quiet | Verbosity::Normal => "warn,deadpool.postgres=error",
        Verbosity::Verbose => "info",
        Verbosity::Debug => "debug",
    };
    // As `EnvFilter::try_from_default_env` would, from the snapshot's `RUST_LOG`.
    let filter = env
        .rust_log()
        .and_then(|dirs| EnvFilter::try_new(dirs).ok())
        .unwrap_or_else(|| EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(config::log_colors(env))
        .with_writer(std::io::stderr)
        .with_target(false)
        .try_init();
}

/// Set by the panic hook: any panic, on any thread, makes the exit code 101.
static PANICKED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        PANICKED.store(true, std::sync::atomic::Ordering::SeqCst);
        let location = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        let message = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown cause".to_owned());
        output::stderr(&format!(
            "gate: internal error: {message}{location}\n\
             This is a bug in gate. Run again with RUST_LOG=debug for the log, \
             and report it with that output."
        ));
    }));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_helper_command_line_the_harness_writes_is_one_the_gate_reads() {
        use gate_harness::sandbox::Helper;
        let helpers = [
            Helper::Ready {
                tcp: Some("127.0.0.1:8080".to_owned()),
                http: Some("http://127.0.0.1:8080/health".to_owned()),
                within: std::time::Duration::from_millis(1500),
            },
            Helper::Forward {
                socket: "/tmp/gate-devtools-x/s".into(),
                to: "127.0.0.1:9222".to_owned(),
            },
        ];
        for helper in helpers {
            let mut argv = vec![OsString::from("gate")];
            argv.extend(helper.args());
            let cli = Cli::try_parse_from(argv).expect("the gate parses the helper's command line");
            let Command::SandboxHelper { args } = cli.command else {
                panic!("{:?} is not the helper subcommand", cli.command);
            };
            assert_eq!(Helper::parse(&args), Ok(helper));
        }
    }

    #[test]
    fn a_run_not_recorded_never_exits_as_a_pass() {
        // (verdict, recorded, exit code)
        let cases = [
            (Verdict::Pass, true, exit::PASS),
            (Verdict::Pass, false, exit::INCOMPLETE),
            (Verdict::Fail, true, exit::FAIL),
            (Verdict::Fail, false, exit::FAIL),
            (Verdict::Escalate, true, exit::ESCALATE),
            (Verdict::Escalate, false, exit::ESCALATE),
            (Verdict::Incomplete, true, exit::INCOMPLETE),
            (Verdict::Incomplete, false, exit::INCOMPLETE),
        ];
        for (verdict, recorded, want) in cases {
            let mut record = output::fixture::record();
            record.verdict = verdict;
            record.recorded = recorded;
            assert_eq!(
                verify_exit_code(&record),
                want,
                "{verdict:?}, recorded {recorded}"
            );
        }
    }
}
