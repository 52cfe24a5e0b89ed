//! Configuration in stages: the raw command line and environment, resolved
//! into the values a command works with. Only this module and the CLI read
//! the process environment.

use std::path::{Path, PathBuf};

use crate::cli::GlobalArgs;
use crate::errors::GateError;

/// How much progress goes to stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verbosity {
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
pub struct Context {
    /// The workspace, absolute and canonical.
    pub workspace: PathBuf,
    /// The state directory (ledger, bundles, keys), absolute.
    pub state_dir: PathBuf,
    /// Progress level.
    pub verbosity: Verbosity,
    /// Whether `--workspace` was given (audit commands then check files against it).
    pub workspace_given: bool,
}

impl Context {
    /// Resolves the global options against the current directory.
    pub fn resolve(global: &GlobalArgs) -> Result<Self, GateError> {
        let cwd = std::env::current_dir().map_err(|e| GateError::Workspace {
            path: PathBuf::from("."),
            reason: format!("cannot read the current directory: {e}"),
        })?;
        let raw = global.workspace.clone().unwrap_or_else(|| cwd.clone());
        let raw = absolute(&cwd, &raw);
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
        let state_dir = global
            .state
            .as_ref()
            .filter(|p| !p.as_os_str().is_empty())
            .map_or_else(|| workspace.join(".gate"), |p| absolute(&cwd, p));
        let verbosity = match (global.quiet, global.verbose) {
            (true, _) => Verbosity::Quiet,
            (false, 0) => Verbosity::Normal,
            (false, 1) => Verbosity::Verbose,
            (false, _) => Verbosity::Debug,
        };
        Ok(Self {
            workspace,
            state_dir,
            verbosity,
            workspace_given: global.workspace.is_some(),
        })
    }

    /// The spec path: `--spec` relative to the current directory, else
    /// `gate.toml` in the workspace. Never inside the state directory.
    pub fn spec_path(&self, flag: Option<&Path>) -> Result<PathBuf, GateError> {
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
        if !path.is_file() {
            return Err(GateError::NoSpec { path });
        }
        Ok(path)
    }

    /// The state directory when it lies inside the workspace (the walk skips it).
    pub fn state_inside_workspace(&self) -> Option<PathBuf> {
        let state = self
            .state_dir
            .canonicalize()
            .unwrap_or_else(|_| self.state_dir.clone());
        state.starts_with(&self.workspace).then_some(state)
    }
}

/// Values of environment variables that look like secrets (names holding
/// KEY, TOKEN, SECRET or PASSWORD), plus those `extra_names` names: they are
/// redacted from everything captured.
pub fn secret_env_values(extra_names: &[String]) -> Vec<String> {
    let mut values: Vec<String> = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .filter(|(k, _)| {
            let k = k.to_ascii_uppercase();
            ["KEY", "TOKEN", "SECRET", "PASSWORD"]
                .iter()
                .any(|w| k.contains(w))
                || extra_names.iter().any(|n| n.eq_ignore_ascii_case(&k))
        })
        .map(|(_, v)| v)
        // Short values would redact ordinary words.
        .filter(|v| v.len() >= 8)
        .collect();
    values.sort();
    values.dedup();
    values
}

/// Whether the gate runs in CI (`CI` set to anything but empty or "false").
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0")
}

/// `GATE_SIGNING_KEY`: PEM text or a path.
pub fn signing_key_env() -> Option<String> {
    std::env::var("GATE_SIGNING_KEY")
        .ok()
        .filter(|v| !v.trim().is_empty())
}

/// API keys of the routing table's configured providers, by provider name
/// (`None` for a provider that needs no key). Empty when none is configured.
pub fn provider_keys(
    routing: &crate::routing::Routing,
) -> std::collections::BTreeMap<String, Option<String>> {
    routing
        .configured_providers(&env_is_set)
        .into_iter()
        .map(|name| {
            let key = routing.table.providers[&name]
                .api_key_env
                .as_deref()
                .and_then(|var| std::env::var(var).ok());
            (name, key)
        })
        .collect()
}

/// Whether an environment variable is set to something.
pub fn env_is_set(name: &str) -> bool {
    std::env::var_os(name).is_some_and(|v| !v.is_empty())
}

/// A path given on the command line, made absolute against the current directory.
pub fn from_cwd(p: &Path) -> PathBuf {
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

/// The value of an environment variable, when it is set (even to nothing).
pub fn env_value(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// The Chromium page checks drive: `GATE_CHROMIUM`, else Debian's
/// `/usr/bin/chromium`, else `chromium` or `chromium-browser` on `PATH`.
pub fn chromium() -> Result<PathBuf, String> {
    if let Some(path) = std::env::var_os("GATE_CHROMIUM").filter(|v| !v.is_empty()) {
        let path = PathBuf::from(path);
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
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
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
pub fn axe_core(workspace: &Path) -> Result<PathBuf, String> {
    const HOW: &str = "install it (`npm install axe-core`) and set GATE_AXE_CORE to its \
                       axe.min.js, or turn the check off with `[policy] builtin_contrast = false`";
    if let Some(path) = std::env::var_os("GATE_AXE_CORE").filter(|v| !v.is_empty()) {
        let path = PathBuf::from(path);
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
