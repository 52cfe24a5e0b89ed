//! Configuration in stages: the raw command line and the environment's
//! snapshot ([`Environment`]), resolved into the values a command works
//! with.

use std::fmt;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use clap::ValueEnum;

use crate::cli::{ColorChoice, Format, GlobalArgs, VerifyArgs};
use crate::environment::{Environment, names};
use crate::errors::GateError;

/// Where a setting's value came from, strongest first: flag, environment,
/// file, default.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Source {
    /// A command-line flag.
    Flag(&'static str),
    /// An environment variable.
    Env(&'static str),
    /// A file, with the line when known (`gate.toml:12`).
    File(String),
    /// The built-in default (with what it is, when that helps).
    Default(&'static str),
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Flag(flag) => f.write_str(flag),
            Self::Env(var) => write!(f, "env {var}"),
            Self::File(at) => f.write_str(at),
            Self::Default("") => f.write_str("default"),
            Self::Default(what) => write!(f, "default: {what}"),
        }
    }
}

/// Whether each stream gets colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Colors {
    /// Results on stdout.
    pub stdout: bool,
    /// Progress on stderr.
    pub stderr: bool,
}

/// How much progress goes to stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Verbosity {
    /// Results and errors only.
    Quiet,
    /// Progress lines.
    Normal,
    /// Progress and info logs.
    Verbose,
    /// Debug logs.
    Debug,
}

/// Where a command works.
#[derive(Debug, Clone)]
pub(crate) struct Context {
    /// The workspace, absolute and canonical.
    pub workspace: PathBuf,
    /// The state directory (ledger, bundles, keys), absolute.
    pub state_dir: PathBuf,
    /// Progress level.
    pub verbosity: Verbosity,
    /// Whether `--workspace` was given (audit commands then check files against it).
    pub workspace_given: bool,
    /// Where the workspace came from.
    pub workspace_source: Source,
    /// With no `--workspace` and no `gate.toml` found: the folders searched,
    /// from the current directory up to where the search stopped.
    pub searched: Option<(PathBuf, PathBuf)>,
    /// Where the state directory came from.
    pub state_source: Source,
    /// Whether stdout and stderr get colour, and why.
    pub colors: Colors,
    /// Why colour is on or off.
    pub color_source: Source,
    /// Where the ledger is.
    pub ledger: LedgerSetting,
    /// The process environment, as it was when the gate started.
    pub env: Environment,
}

/// Where the ledger is: `GATE_LEDGER`, else the spec's `[ledger] url`, else
/// `ledger.db` in the state directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LedgerSetting {
    /// The location as written (a URL or a path), `None` for the default.
    pub url: Option<String>,
    /// What a relative SQLite path is relative to: the current directory
    /// for `GATE_LEDGER`, the workspace for a spec.
    pub base: PathBuf,
    /// Where it came from.
    pub source: Source,
    /// Why the spec's `[ledger]` could not be read (reported when the
    /// ledger is opened, so commands that need none are not stopped).
    pub error: Option<String>,
}

impl LedgerSetting {
    /// `GATE_LEDGER` if set, else `[ledger] url` of the spec at `spec` (when
    /// it exists), else the default.
    pub(crate) fn resolve(workspace: &Path, spec: &Path, env: &Environment) -> Self {
        // An advisory run (inside an agent's session) never reaches the
        // pipeline's shared ledger: it keeps its own in its state directory.
        if env.advisory() {
            return Self {
                url: None,
                base: workspace.to_path_buf(),
                source: Source::Default("ledger.db in the advisory state directory"),
                error: None,
            };
        }
        if let Some(url) = env.ledger() {
            return Self {
                url: Some(url),
                base: std::env::current_dir().unwrap_or_else(|_| workspace.to_path_buf()),
                source: Source::Env(names::LEDGER),
                error: None,
            };
        }
        let name = spec.file_name().map_or_else(
            || spec.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        let (url, error) = match spec_ledger_url(spec) {
            Ok(url) => (url, None),
            Err(e) => (
                None,
                Some(format!("cannot read [ledger] url: {}", placed(spec, &e))),
            ),
        };
        let source = if url.is_some() {
            Source::File(name)
        } else {
            Source::Default("ledger.db in the state directory")
        };
        Self {
            url,
            base: workspace.to_path_buf(),
            source,
            error,
        }
    }
}

/// Why the spec at `spec` could not be read, as the spec loader says it:
/// with the line and column of the first problem. `reason` is what the
/// `[ledger]` reader found, for a spec the loader takes.
fn placed(spec: &Path, reason: &str) -> String {
    match gate_specs::load(spec) {
        Err(errors) => errors.to_string(),
        Ok(_) => format!("{}: {reason}", spec.display()),
    }
}

/// `[ledger] url` of a spec file, read without validating the rest of it
/// (commands other than `gate verify` only need this).
fn spec_ledger_url(spec: &Path) -> Result<Option<String>, String> {
    Ok(spec_string(spec, "ledger", "url")?.filter(|u| !u.trim().is_empty()))
}

/// The spec file's `[eval] fix_pattern`, read without validating the rest.
pub(crate) fn configured_fix_pattern(spec: &Path) -> Result<Option<String>, String> {
    spec_string(spec, "eval", "fix_pattern")
}

/// A string key of a spec file's section (`[ledger] url`, `[eval]
/// fix_pattern`), read without validating the rest of the file: `None`
/// when the file or the key is not there.
pub(crate) fn spec_string(spec: &Path, section: &str, key: &str) -> Result<Option<String>, String> {
    let bytes = match gate_specs::read_bounded(spec, gate_specs::TEXT_MAX_BYTES) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e.to_string()),
    };
    let text = std::str::from_utf8(&bytes).map_err(|e| e.to_string())?;
    let not_string = || format!("[{section}] {key} is not a string");
    let value = match gate_specs::Format::from_path(spec) {
        gate_specs::Format::Json => {
            let doc: serde_json::Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
            match doc.get(section).and_then(|l| l.get(key)) {
                None => None,
                Some(serde_json::Value::String(u)) => Some(u.clone()),
                Some(_) => return Err(not_string()),
            }
        }
        gate_specs::Format::Toml => {
            let doc: toml_edit::DocumentMut = text
                .parse()
                .map_err(|e: toml_edit::TomlError| e.message().to_owned())?;
            match doc.get(section).and_then(|l| l.get(key)) {
                None => None,
                Some(item) => Some(item.as_str().ok_or_else(not_string)?.to_owned()),
            }
        }
    };
    Ok(value)
}

/// The name of the folder that holds the base runs' build cache.
const BASE_CACHE_FOLDER: &str = "base-cache";

impl Context {
    /// A context over `workspace` with the default state directory, quiet
    /// and without colour, for tests that build one by hand.
    #[cfg(test)]
    pub(crate) fn quiet(workspace: PathBuf) -> Self {
        Self {
            state_dir: workspace.join(".gate"),
            workspace,
            verbosity: Verbosity::Quiet,
            workspace_given: true,
            workspace_source: Source::Flag("--workspace"),
            searched: None,
            state_source: Source::Default(".gate/ in the workspace"),
            colors: Colors {
                stdout: false,
                stderr: false,
            },
            color_source: Source::Default("never"),
            ledger: LedgerSetting {
                url: None,
                base: PathBuf::new(),
                source: Source::Default("ledger.db in the state directory"),
                error: None,
            },
            env: Environment::default(),
        }
    }

    /// This context with the ledger a spec other than the workspace's
    /// `gate.toml` names (`GATE_LEDGER` still wins).
    #[must_use]
    pub(crate) fn with_spec_ledger(&self, spec: &Path) -> Self {
        let mut ctx = self.clone();
        ctx.ledger = LedgerSetting::resolve(&self.workspace, spec, &self.env);
        ctx
    }

    /// Resolves the global options against the current directory and
    /// `env`, which the context keeps. Without `--workspace`, and when
    /// `discover` is set, the workspace is found as git finds a repository
    /// (see [`discover_workspace`]); `gate init` does not discover: it
    /// writes where it is run.
    pub(crate) fn resolve(
        global: &GlobalArgs,
        discover: bool,
        env: Environment,
    ) -> Result<Self, GateError> {
        let cwd = std::env::current_dir().map_err(|e| GateError::Workspace {
            path: PathBuf::from("."),
            reason: format!("cannot read the current directory: {e}"),
        })?;
        let (raw, workspace_source, searched) = match &global.workspace {
            Some(dir) => (absolute(&cwd, dir), Source::Flag("--workspace"), None),
            None if discover => match discover_workspace(&cwd) {
                Found::At(dir) if dir == cwd => (
                    dir,
                    Source::Default("the current directory, which holds gate.toml"),
                    None,
                ),
                Found::At(dir) => (
                    dir,
                    Source::Default(
                        "the nearest folder above the current directory holding gate.toml",
                    ),
                    None,
                ),
                Found::Nowhere { top } => (
                    cwd.clone(),
                    Source::Default("the current directory"),
                    Some((cwd.clone(), top)),
                ),
            },
            None => (cwd.clone(), Source::Default("the current directory"), None),
        };
        let workspace = raw.canonicalize().map_err(|e| GateError::Workspace {
            path: raw.clone(),
            reason: e.to_string(),
        })?;
        if !workspace.is_dir() {
            return Err(GateError::Workspace {
                path: raw,
                reason: "not a directory".to_owned(),
            });
        }
        let (state_dir, state_source) = match (
            global.state.as_ref().filter(|p| !p.as_os_str().is_empty()),
            env.state_dir(),
        ) {
            (Some(p), _) => (absolute(&cwd, p), Source::Flag("--state")),
            (None, Some(p)) => (absolute(&cwd, &p), Source::Env(names::STATE_DIR)),
            (None, None) => (
                workspace.join(".gate"),
                Source::Default(".gate/ in the workspace"),
            ),
        };
        let (colors, color_source) = resolve_colors(global.color, &env);
        let verbosity = match (global.quiet, global.verbose) {
            (true, _) => Verbosity::Quiet,
            (false, 0) => Verbosity::Normal,
            (false, 1) => Verbosity::Verbose,
            (false, _) => Verbosity::Debug,
        };
        let ledger = LedgerSetting::resolve(&workspace, &workspace.join("gate.toml"), &env);
        Ok(Self {
            workspace,
            state_dir,
            verbosity,
            workspace_given: global.workspace.is_some(),
            workspace_source,
            searched,
            state_source,
            colors,
            color_source,
            ledger,
            env,
        })
    }

    /// The spec path: `--spec` relative to the current directory, else
    /// `gate.toml` in the workspace. Never inside the state directory.
    pub(crate) fn spec_path(&self, flag: Option<&Path>) -> Result<PathBuf, GateError> {
        let path = match flag {
            Some(p) => {
                let cwd = std::env::current_dir().unwrap_or_else(|_| self.workspace.clone());
                absolute(&cwd, p)
            }
            None => self.workspace.join("gate.toml"),
        };
        if path.starts_with(&self.state_dir) {
            return Err(GateError::Usage(format!(
                "the spec {} is inside the state directory {}; the gate never reads a spec from there",
                path.display(),
                self.state_dir.display()
            )));
        }
        match std::fs::metadata(&path) {
            Ok(meta) if meta.is_file() => Ok(path),
            Ok(meta) => Err(GateError::Usage(format!(
                "the spec {} is {}, not a file",
                path.display(),
                if meta.is_dir() {
                    "a directory"
                } else {
                    "a device, pipe or socket"
                }
            ))),
            Err(_) => Err(GateError::NoSpec {
                path,
                searched: flag.is_none().then(|| self.searched.clone()).flatten(),
            }),
        }
    }

    /// Where base runs keep their build cache, outside the workspace: in
    /// the state directory when that is outside it, else the user's cache
    /// folder (`$XDG_CACHE_HOME/gate/base-cache`, by default
    /// `~/.cache/gate/base-cache`); `None` when there is neither.
    pub(crate) fn base_cache_dir(&self) -> Option<PathBuf> {
        if self.state_inside_workspace().is_none() {
            return Some(self.state_dir.join(BASE_CACHE_FOLDER));
        }
        let user = self
            .env
            .absolute_path("XDG_CACHE_HOME")
            .or_else(|| self.env.absolute_path("HOME").map(|h| h.join(".cache")))?;
        Some(user.join("gate").join(BASE_CACHE_FOLDER))
    }

    /// The state directory when it lies inside the workspace (the walk skips it).
    pub(crate) fn state_inside_workspace(&self) -> Option<PathBuf> {
        let state = self
            .state_dir
            .canonicalize()
            .unwrap_or_else(|_| self.state_dir.clone());
        state.starts_with(&self.workspace).then_some(state)
    }
}

/// What the search for a workspace found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Found {
    /// The workspace: the nearest folder holding `gate.toml`.
    At(PathBuf),
    /// None, searching from the start up to `top`.
    Nowhere {
        /// The last folder searched: the repository root, or `/`.
        top: PathBuf,
    },
}

/// The workspace as git finds a repository: the nearest folder at or above
/// `start` that holds `gate.toml`, looking no higher than the repository
/// root (the nearest folder holding `.git`) — or the filesystem's root
/// outside any repository.
pub(crate) fn discover_workspace(start: &Path) -> Found {
    let mut top = start.to_path_buf();
    for dir in start.ancestors() {
        top = dir.to_path_buf();
        if dir.join("gate.toml").is_file() {
            return Found::At(dir.to_path_buf());
        }
        if dir.join(".git").exists() {
            break;
        }
    }
    Found::Nowhere { top }
}

/// Whether stdout and stderr get colour: `--color always|never` decides;
/// with `auto`, a non-empty `NO_COLOR` or `TERM=dumb` turns it off, else
/// each stream gets colour when it is a terminal.
fn resolve_colors(choice: ColorChoice, env: &Environment) -> (Colors, Source) {
    match choice {
        ColorChoice::Always => (
            Colors {
                stdout: true,
                stderr: true,
            },
            Source::Flag("--color"),
        ),
        ColorChoice::Never => (Colors::default(), Source::Flag("--color")),
        ColorChoice::Auto if env.no_color() => (Colors::default(), Source::Env("NO_COLOR")),
        ColorChoice::Auto if env.dumb_terminal() => (Colors::default(), Source::Env("TERM")),
        ColorChoice::Auto => (
            Colors {
                stdout: std::io::stdout().is_terminal(),
                stderr: std::io::stderr().is_terminal(),
            },
            Source::Default("auto, only on a terminal"),
        ),
    }
}

/// Whether the log on stderr gets colour: stderr is a terminal and
/// `NO_COLOR` is not set (`--color` and `TERM` do not reach the log).
pub(crate) fn log_colors(env: &Environment) -> bool {
    std::io::stderr().is_terminal() && !env.no_color()
}

/// `gate verify`'s options, resolved: flags over `GATE_*` variables over defaults.
#[derive(Debug, Clone)]
pub(crate) struct VerifySettings {
    /// The spec file.
    pub spec_path: PathBuf,
    /// Where the spec path came from.
    pub spec_source: Source,
    /// stdout's format.
    pub format: Format,
    /// Where the format came from.
    pub format_source: Source,
    /// `--report FORMAT=PATH`s, paths absolute.
    pub reports: Vec<(Format, PathBuf)>,
    /// Call no model provider.
    pub offline: bool,
    /// Where `offline` came from.
    pub offline_source: Source,
    /// `--routing`, absolute.
    pub routing: Option<PathBuf>,
    /// The sandbox floor the spec can only tighten.
    pub sandbox: gate_specs::SandboxMode,
    /// Where the floor came from.
    pub sandbox_source: Source,
}

impl VerifySettings {
    /// Resolves `gate verify`'s flags against the environment.
    pub(crate) fn resolve(ctx: &Context, args: &VerifyArgs) -> Result<Self, GateError> {
        let spec_path = ctx.spec_path(args.spec.as_deref())?;
        let spec_source = if args.spec.is_some() {
            Source::Flag("--spec")
        } else {
            Source::Default("gate.toml in the workspace")
        };
        let env = &ctx.env;
        let (format, format_source) = match (args.format, env.format()) {
            (Some(f), _) => (f, Source::Flag("--format")),
            (None, Some(v)) if !v.trim().is_empty() => {
                let f = Format::from_str(v.trim(), true).map_err(|_| {
                    GateError::Usage(format!(
                        "{}={v} is not a format; one of {}",
                        names::FORMAT,
                        format_names()
                    ))
                })?;
                (f, Source::Env(names::FORMAT))
            }
            _ => (Format::Human, Source::Default("")),
        };
        let (offline, offline_source) = if args.offline {
            (true, Source::Flag("--offline"))
        } else {
            match env.offline() {
                Some(v) if !v.trim().is_empty() => {
                    (truthy(names::OFFLINE, v)?, Source::Env(names::OFFLINE))
                }
                _ => (false, Source::Default("")),
            }
        };
        let (sandbox, sandbox_source) = sandbox_floor(args.sandbox, env)?;
        let mut reports: Vec<(Format, PathBuf)> = Vec::new();
        for r in &args.reports {
            let path = from_cwd(&r.path);
            if reports.iter().any(|(_, p)| *p == path) {
                return Err(GateError::Usage(format!(
                    "--report names {} twice; give each format its own file",
                    path.display()
                )));
            }
            reports.push((r.format, path));
        }
        Ok(Self {
            spec_path,
            spec_source,
            format,
            format_source,
            reports,
            offline,
            offline_source,
            routing: args.routing.as_deref().map(from_cwd),
            sandbox,
            sandbox_source,
        })
    }
}

/// The sandbox floor a spec can only tighten: `--sandbox`, else
/// `GATE_SANDBOX`, else auto; with where it came from.
pub(crate) fn sandbox_floor(
    flag: Option<crate::cli::SandboxArg>,
    env: &Environment,
) -> Result<(gate_specs::SandboxMode, Source), GateError> {
    Ok(match (flag, env.sandbox()) {
        (Some(mode), _) => (mode.into(), Source::Flag("--sandbox")),
        (None, Some(v)) if !v.trim().is_empty() => {
            let mode = crate::cli::SandboxArg::from_str(v.trim(), true).map_err(|_| {
                GateError::Usage(format!(
                    "{}={v} is not a sandbox mode; one of auto, required, off",
                    names::SANDBOX
                ))
            })?;
            (mode.into(), Source::Env(names::SANDBOX))
        }
        _ => (
            gate_specs::SandboxMode::Auto,
            Source::Default("auto: isolate where the machine allows"),
        ),
    })
}

/// The formats' names, for messages.
fn format_names() -> String {
    Format::value_variants()
        .iter()
        .map(|f| f.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// A boolean environment value: 1/true/yes/on or 0/false/no/off.
pub(crate) fn truthy(name: &str, value: &str) -> Result<bool, GateError> {
    match value.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" => Ok(false),
        _ => Err(GateError::Usage(format!(
            "{name}={value} is not a boolean; use 1/true/yes or 0/false/no"
        ))),
    }
}

/// Whether `gate verify` prints GitHub output: `--format github`, else
/// `GATE_FORMAT=github`.
pub(crate) fn github_format(flag: Option<Format>, env: &Environment) -> bool {
    match flag {
        Some(f) => f == Format::Github,
        None => env
            .format()
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("github")),
    }
}

/// Whether a command line that did not parse asked for GitHub output
/// (`--format github`, `--format=github`, or `GATE_FORMAT=github`).
pub(crate) fn github_format_asked(args: &[std::ffi::OsString], env: &Environment) -> bool {
    let words: Vec<&str> = args.iter().filter_map(|a| a.to_str()).collect();
    let flagged = words
        .windows(2)
        .any(|w| w[0] == "--format" && w[1] == "github")
        || words.contains(&"--format=github");
    flagged || github_format(None, env)
}

/// API keys of the routing table's configured providers, by provider name
/// (`None` for a provider that needs no key). Empty when none is configured.
pub(crate) fn provider_keys(
    routing: &gate_review::routing::Routing,
    env: &Environment,
) -> std::collections::BTreeMap<String, Option<String>> {
    routing
        .configured_providers(env)
        .into_iter()
        .map(|name| {
            let key = routing.table.providers[&name]
                .api_key_env
                .as_deref()
                .and_then(|var| env.var(var))
                // Secret stores often keep a pasted key's newline, which
                // no HTTP header may carry.
                .map(|key| key.trim().to_owned());
            (name, key)
        })
        .collect()
}

/// A path given on the command line, made absolute against the current directory.
pub(crate) fn from_cwd(p: &Path) -> PathBuf {
    let cwd = std::env::current_dir().unwrap_or_default();
    absolute(&cwd, p)
}

fn absolute(cwd: &Path, p: &Path) -> PathBuf {
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        cwd.join(p)
    }
}

/// The Chromium page checks drive: `GATE_CHROMIUM`, else Debian's
/// `/usr/bin/chromium`, else `chromium` or `chromium-browser` on `PATH`.
pub(crate) fn chromium(env: &Environment) -> Result<PathBuf, String> {
    if let Some(path) = env.chromium() {
        return if path.is_file() {
            Ok(path)
        } else {
            Err(format!(
                "GATE_CHROMIUM names {}, which is not a file",
                path.display()
            ))
        };
    }
    let debian = PathBuf::from("/usr/bin/chromium");
    if debian.is_file() {
        return Ok(debian);
    }
    std::env::split_paths(env.path().unwrap_or_default())
        .flat_map(|dir| ["chromium", "chromium-browser"].map(|name| dir.join(name)))
        .find(|p| p.is_file())
        .ok_or_else(|| {
            "Chromium not found: install Debian's `chromium` (apt-get install chromium) or set \
             GATE_CHROMIUM to the browser's path"
                .to_owned()
        })
}

/// axe-core's `axe.min.js` for the contrast check: `GATE_AXE_CORE`, else
/// `node_modules/axe-core/axe.min.js` in the workspace.
pub(crate) fn axe_core(workspace: &Path, env: &Environment) -> Result<PathBuf, String> {
    const HOW: &str = "install it (`npm install axe-core`) and set GATE_AXE_CORE to its \
                       axe.min.js, or turn the check off with `[policy] builtin_contrast = false`";
    if let Some(path) = env.axe_core() {
        return if path.is_file() {
            Ok(path)
        } else {
            Err(format!(
                "axe-core not found: GATE_AXE_CORE names {}, which is not a file; {HOW}",
                path.display()
            ))
        };
    }
    let local = workspace.join("node_modules/axe-core/axe.min.js");
    if local.is_file() {
        Ok(local)
    } else {
        Err(format!("axe-core not found for the contrast check: {HOW}"))
    }
}

/// Parses a date flag (`--since`, `--until`): a date (`2026-11-30`,
/// midnight UTC) or an RFC 3339 time.
pub(crate) fn parse_date(
    flag: &str,
    text: &str,
) -> Result<chrono::DateTime<chrono::Utc>, GateError> {
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(text) {
        return Ok(t.with_timezone(&chrono::Utc));
    }
    chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d")
        .ok()
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .map(|t| t.and_utc())
        .ok_or_else(|| {
            GateError::Usage(format!(
                "{flag} {text:?}: give a date (2026-11-30) or an RFC 3339 time"
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn date_forms() {
        assert_eq!(
            parse_date("--since", "2026-11-30").unwrap().to_rfc3339(),
            "2026-11-30T00:00:00+00:00"
        );
        assert_eq!(
            parse_date("--since", "2026-11-30T10:00:00+02:00")
                .unwrap()
                .to_rfc3339(),
            "2026-11-30T08:00:00+00:00"
        );
        let err = parse_date("--until", "last tuesday").unwrap_err();
        assert!(err.to_string().contains("--until"), "{err}");
    }

    /// The base runs' build cache is never in the workspace: with the state
    /// directory in it, the cache goes to the user's cache folder.
    #[test]
    fn the_base_cache_is_outside_the_workspace() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().canonicalize().unwrap().join("ws");
        std::fs::create_dir_all(ws.join(".gate")).unwrap();
        let outside = dir.path().canonicalize().unwrap().join("state");
        /// A state directory, the environment, and where the cache goes.
        type Case<'a> = (PathBuf, Vec<(&'a str, &'a str)>, Option<PathBuf>);
        let cases: [Case<'_>; 5] = [
            (
                outside.clone(),
                vec![("XDG_CACHE_HOME", "/c")],
                Some(outside.join("base-cache")),
            ),
            (
                ws.join(".gate"),
                vec![("XDG_CACHE_HOME", "/c"), ("HOME", "/h")],
                Some(PathBuf::from("/c/gate/base-cache")),
            ),
            (
                ws.join(".gate"),
                vec![("HOME", "/h")],
                Some(PathBuf::from("/h/.cache/gate/base-cache")),
            ),
            (
                ws.join(".gate"),
                vec![("XDG_CACHE_HOME", "relative"), ("HOME", "/h")],
                Some(PathBuf::from("/h/.cache/gate/base-cache")),
            ),
            (ws.join(".gate"), vec![], None),
        ];
        for (state, vars, want) in cases {
            let mut ctx = Context::quiet(ws.clone());
            ctx.state_dir = state.clone();
            ctx.env = Environment::from_pairs(vars.clone());
            assert_eq!(ctx.base_cache_dir(), want, "{state:?} {vars:?}");
        }
    }

    /// The workspace is found as git finds a repository, and never above
    /// the repository the command runs in.
    #[test]
    fn the_workspace_is_the_nearest_gate_toml_within_the_repository() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        for folder in [
            "repo/.git",
            "repo/api/src/deep",
            "repo/web",
            "outer/repo2/.git",
            "outer/repo2/sub",
        ] {
            std::fs::create_dir_all(root.join(folder)).unwrap();
        }
        for spec in ["repo/gate.toml", "repo/api/gate.toml", "outer/gate.toml"] {
            std::fs::write(root.join(spec), "").unwrap();
        }
        // (where the command runs, what it finds)
        let cases = [
            ("repo", Found::At(root.join("repo"))),
            ("repo/web", Found::At(root.join("repo"))),
            ("repo/api/src/deep", Found::At(root.join("repo/api"))),
            (
                "outer/repo2/sub",
                Found::Nowhere {
                    top: root.join("outer/repo2"),
                },
            ),
        ];
        for (from, want) in cases {
            assert_eq!(discover_workspace(&root.join(from)), want, "from {from}");
        }
    }
}
