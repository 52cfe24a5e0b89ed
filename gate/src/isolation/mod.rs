//! What isolates the processes a run starts for the workspace: the
//! environment they get and the sandbox they run in, resolved once per run
//! from the spec's `[sandbox]`, the operator's floor (`--sandbox`,
//! `GATE_SANDBOX`) and what this machine allows.
//!
//! Everything here is decided from values passed in (the process
//! environment is read by `config` alone), so the rules are unit-tested as
//! tables: the sandbox's contents are `contents::sandbox` of one
//! `contents::Policy`, or a typed `contents::Refusal`.
//! [`Isolation::prepare`] is the one place that touches the machine around
//! it (the tracer's start, the run's uid, a scratch folder for the run and
//! what the host shows, the network's holder, one probe of bubblewrap).

use std::collections::{BTreeSet, HashMap};
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use gate_evidence::ledger::RunIdentity;
use gate_harness::bpf::Watching;
use gate_harness::netns::Holder;
use gate_harness::sandbox::{Bind, Dropper, Hidden, Home, Network, Overlay};
use gate_harness::seed::Private;
use gate_harness::trace::Tracer;
use gate_harness::{Launcher, Sandbox, process};
use gate_specs::{SandboxMode, SandboxNetwork, SandboxSection};

use crate::config::Source;
use crate::environment::names;
use crate::errors::GateError;
use crate::record::RunIsolation;

mod contents;
mod identity;
pub(crate) mod lineage;
mod scratch;
mod shown;
mod toolchain;
mod tools;
mod watcher;

use contents::Refusal;
use identity::Lease;
use tools::Tools;

/// Environment variables every process gets when the host has them.
const PASSED: [&str; 46] = [
    "PATH",
    "USER",
    "LOGNAME",
    "LANG",
    "TZ",
    "TERM",
    "SHELL",
    // Where toolchains are installed.
    "CARGO_HOME",
    "RUSTUP_HOME",
    "RUSTUP_TOOLCHAIN",
    "PYENV_ROOT",
    "PYENV_VERSION",
    "VIRTUAL_ENV",
    "GOPATH",
    "GOROOT",
    "NVM_DIR",
    "NVM_BIN",
    "JAVA_HOME",
    // Which certificate authorities to trust.
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "NODE_EXTRA_CA_CERTS",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
    // Which CI this is and what it builds (never its tokens).
    "CI",
    "GITHUB_ACTIONS",
    "GITHUB_WORKFLOW",
    "GITHUB_RUN_ID",
    "GITHUB_RUN_NUMBER",
    "GITHUB_SHA",
    "GITHUB_REF",
    "GITHUB_REF_NAME",
    "GITHUB_HEAD_REF",
    "GITHUB_BASE_REF",
    "GITHUB_REPOSITORY",
    "GITHUB_EVENT_NAME",
    "RUNNER_OS",
    "RUNNER_ARCH",
    "GITLAB_CI",
    "CI_PIPELINE_ID",
    "CI_JOB_ID",
    "CI_COMMIT_SHA",
    "CI_COMMIT_REF_NAME",
    "CI_MERGE_REQUEST_IID",
    "CI_PROJECT_PATH",
    "BUILDKITE",
    "CIRCLECI",
];

/// Name endings of secrets: passed only when `pass_env` names them exactly.
const SECRET_SUFFIXES: [&str; 4] = ["_TOKEN", "_PASSWORD", "_SECRET", "_KEY"];

/// Credential files and folders of the gate's user, relative to its home,
/// made unreachable whatever `[sandbox] hidden` says.
pub(crate) const HIDDEN_IN_HOME: [&str; 16] = [
    ".ssh",
    ".aws",
    ".azure",
    ".config/gcloud",
    ".config/gh",
    ".docker",
    ".kube",
    ".gnupg",
    ".netrc",
    ".pgpass",
    ".git-credentials",
    ".npmrc",
    ".pypirc",
    ".cargo/credentials.toml",
    ".cargo/credentials",
    ".config/git/credentials",
];

/// Sockets and folders outside the home made unreachable: the user's
/// session services (agents, keyrings) and container engines.
pub(crate) const HIDDEN_ELSEWHERE: [&str; 4] = [
    "/run/user",
    "/var/run/docker.sock",
    "/run/docker.sock",
    "/run/containerd",
];

/// Toolchain folders of the home shown read-only in the private home, so
/// the common toolchains work without their downloads and caches becoming
/// writable by the agent's code.
pub(crate) const TOOLCHAIN_DIRS: [&str; 17] = [
    ".cargo/bin",
    ".cargo/env",
    ".cargo/registry",
    ".cargo/git",
    ".rustup",
    ".pyenv",
    ".nvm",
    ".local/bin",
    ".local/lib",
    ".volta",
    ".bun",
    ".deno",
    "go/bin",
    "go/pkg/mod",
    ".m2/repository",
    ".gradle/caches",
    ".gradle/wrapper",
];

/// The environment a process the gate starts for the workspace gets: the
/// allow-list, then what `pass_env` names exactly; never a `GATE_*`
/// variable or one of `never` (provider keys, the ledger's and the bundle
/// store's credentials), even when named. `home` and `tmp` replace `HOME`
/// and `TMPDIR` when the process runs with a private home and `/tmp`.
pub(crate) fn environment(
    host: &[(OsString, OsString)],
    pass_env: &[String],
    never: &BTreeSet<String>,
    home: Option<&Path>,
    tmp: Option<&Path>,
    cargo_home: Option<&Path>,
) -> Vec<(OsString, OsString)> {
    let refused = |name: &str| name.starts_with("GATE_") || never.contains(name);
    let mut out: Vec<(OsString, OsString)> = Vec::new();
    for (name, value) in host {
        let Some(n) = name.to_str() else { continue };
        if refused(n) {
            continue;
        }
        let allowed = PASSED.contains(&n) || n.starts_with("LC_");
        let named = pass_env.iter().any(|p| p == n);
        let secret_shaped =
            SECRET_SUFFIXES.iter().any(|s| n.ends_with(s)) || n.starts_with("ACTIONS_");
        if named || (allowed && !secret_shaped) {
            out.push((name.clone(), value.clone()));
        }
    }
    let mut set = |name: &str, value: &OsStr| {
        out.retain(|(n, _)| n != name);
        out.push((name.into(), value.to_owned()));
    };
    match home {
        Some(home) => set("HOME", home.as_os_str()),
        None => {
            if let Some((_, v)) = host.iter().find(|(n, _)| n == "HOME") {
                set("HOME", v);
            }
        }
    }
    match tmp {
        Some(tmp) => set("TMPDIR", tmp.as_os_str()),
        None => {
            if let Some((_, v)) = host.iter().find(|(n, _)| n == "TMPDIR") {
                set("TMPDIR", v);
            }
        }
    }
    if let Some(cargo) = cargo_home {
        set("CARGO_HOME", cargo.as_os_str());
    }
    // Byte-code out of the workspace: an ignored `__pycache__/*.pyc` whose
    // header matches its source would run code no file shows. Each process
    // gets a fresh folder under this one (gate_harness::process).
    let tmp_dir = tmp.map(Path::to_path_buf).or_else(|| {
        host.iter()
            .find(|(n, _)| n == "TMPDIR")
            .map(|(_, v)| PathBuf::from(v))
            .filter(|p| p.is_absolute())
    });
    let pycache = tmp_dir
        .unwrap_or_else(|| PathBuf::from("/tmp"))
        .join(".pycache");
    set(gate_harness::process::PYCACHE_PREFIX, pycache.as_os_str());
    out.sort();
    out
}

/// `~/x` under `home`, an absolute path as it is, anything else `None`.
pub(crate) fn expand(path: &str, home: Option<&Path>) -> Option<PathBuf> {
    if let Some(rest) = path.strip_prefix("~/") {
        return home.map(|h| h.join(rest));
    }
    Path::new(path).is_absolute().then(|| PathBuf::from(path))
}

/// The mode in effect: the spec's when it is at least the operator's floor,
/// else the floor. A spec that sets nothing gets the floor.
pub(crate) fn effective_mode(floor: SandboxMode, spec: Option<SandboxMode>) -> SandboxMode {
    spec.map_or(floor, |s| s.max(floor))
}

/// What the run's isolation is built from.
#[derive(Debug)]
pub(crate) struct Setup<'a> {
    /// The operator's floor and where it came from.
    pub floor: (SandboxMode, Source),
    /// The spec's `[sandbox]`.
    pub section: &'a SandboxSection,
    /// The workspace (canonical).
    pub workspace: &'a Path,
    /// Paths the gate keeps out of reach: the state directory, the signing
    /// key's file, a ledger or bundle store outside the state directory.
    pub secret_paths: Vec<PathBuf>,
    /// Variables never passed: provider keys, the ledger's and the bundle
    /// store's credentials, page credentials.
    pub never_env: BTreeSet<String>,
    /// The gate's environment, read once.
    pub host_env: &'a [(OsString, OsString)],
}

/// The run's isolation: how its processes are started, and what its
/// record says of it.
#[derive(Debug)]
pub(crate) struct Isolation {
    /// What the record, bundle and ledger row say, but for the tracer,
    /// which [`Isolation::record`] adds once the eBPF tracer has loaded
    /// (reading it here would wait for the load).
    pub record: RunIsolation,
    /// The items' environment.
    env: Vec<(OsString, OsString)>,
    /// The sandbox every item runs in (before the run's read-only paths
    /// and overlays), `None` when unisolated.
    sandbox: Option<Sandbox>,
    /// The gate's own tools' environment.
    tools_env: Vec<(OsString, OsString)>,
    /// The process that holds the run's network namespace, when it has
    /// one: held until the run ends, when dropping it kills it (before the
    /// run's uid gives its files back and the scratch folder goes).
    _holder: Option<Holder>,
    /// The uid of the run's own when the gate runs as root: what was
    /// handed to it goes back when it is dropped.
    lease: Option<Lease>,
    /// The run's scratch folder (private `/tmp`, `/var/tmp`, `HOME`, base
    /// files, a copy of the gate's executable), removed when the run ends.
    scratch: Option<scratch::Scratch>,
    /// Every path to hide, whether or not it exists yet: what exists is
    /// hidden each time a launcher is made (a ledger file is created after
    /// the run starts).
    candidates: Vec<PathBuf>,
    /// What the run should be told of its sandbox's settings (a `writable`
    /// path that is not there, a `PATH` folder passed over).
    pub warnings: Vec<String>,
    /// The gate's own `sh`, which runs every item's command line.
    shell: Option<PathBuf>,
    /// The tracer that records what items read, when it works here.
    tracer: Option<Tracer>,
    /// The run's eBPF tracer, when it could start and `GATE_TRACE` did
    /// not ask for `strace` alone.
    watcher: watcher::Watcher,
    /// How many items have had private folders made: the next item's
    /// folders are named by it.
    folders_made: AtomicUsize,
    /// The workspace, as handed to the run's uid with its `.git`
    /// ([`Isolation::hand_over_workspace`]): the gate's own git on a
    /// repository whose work tree it is runs as that uid, not as root.
    handed_repository: Option<PathBuf>,
}

/// How long the sandbox probe may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(20);

/// What every way of running a run's items starts from: the environment
/// of the gate's tools, the tools themselves, and the run's uid.
struct Start {
    tools_env: Vec<(OsString, OsString)>,
    tools: Tools,
    lease: Option<Lease>,
    warnings: Vec<String>,
    tracer: Option<Tracer>,
    watcher: watcher::Watcher,
    /// The identity of the host toolchain the items run.
    toolchain: String,
    /// Whether the run tries the eBPF tracer, as `GATE_TRACE` and the
    /// machine decide.
    ebpf: Ebpf,
}

impl Start {
    /// The gate's tools, found once where the items cannot write, and the
    /// `writable` paths that exist (the items can write those).
    fn new(setup: &Setup<'_>, host_home: Option<&Path>) -> (Vec<PathBuf>, Self) {
        let (writable, mut warnings) = writable_paths(&setup.section.writable, host_home);
        let ebpf = ebpf_wanted(setup.host_env);
        let extra: &[&str] = if ebpf == Ebpf::No { &[] } else { &["clang"] };
        let tools = Tools::resolve(
            lookup(setup.host_env, "PATH"),
            &untrusted_roots(setup, &writable),
            extra,
        );
        warnings.extend(tools.warning());
        // The tools' own `PATH`: only the folders they were found in.
        let trusted_path = std::env::join_paths(
            tools
                .found
                .iter()
                .filter_map(|t| Path::new(&t.path).parent().map(Path::to_path_buf))
                .chain(["/usr/bin", "/bin"].map(PathBuf::from)),
        )
        .ok();
        let started = std::time::Instant::now();
        let toolchain = toolchain::identity(
            lookup(setup.host_env, "PATH"),
            &readable_paths(setup.section, host_home),
            setup.workspace,
        );
        tracing::debug!(
            us = started.elapsed().as_micros(),
            "took the host toolchain's identity"
        );
        let start = Self {
            toolchain,
            tools_env: crate::git::environment(trusted_path, None),
            tools,
            lease: None,
            warnings,
            tracer: None,
            watcher: watcher::Watcher::default(),
            ebpf,
        };
        (writable, start)
    }

    /// Takes the gate's `strace` as the run's tracer when it can trace
    /// here and `GATE_TRACE` does not turn it off, and the eBPF tracer for
    /// the sandboxed items where it starts, else says once why nothing is
    /// traced; a `GATE_TRACE` that is neither a boolean nor `ebpf` is an
    /// error.
    async fn trace(
        &mut self,
        host_env: &[(OsString, OsString)],
        workspace: &Path,
    ) -> Result<(), GateError> {
        let ebpf = self.ebpf;
        let on = match lookup(host_env, names::TRACE) {
            Some(_) if ebpf == Ebpf::Asked => true,
            Some(v) => crate::config::truthy(names::TRACE, &v.to_string_lossy())?,
            None => true,
        };
        if !on {
            self.warnings.push(format!(
                "what the items read is not traced ({}=off): a retry carries no command's \
                 result forward, it runs them all again",
                names::TRACE
            ));
            return Ok(());
        }
        match probe_tracer(&self.tools, &self.tools_env).await {
            Ok(tracer) => {
                if ebpf != Ebpf::No {
                    let cache = tracer_cache(host_env).filter(|c| !c.starts_with(workspace));
                    match self.watcher_settings(workspace, cache) {
                        // Asked for by name: why it does not run is said
                        // with the run's other warnings, so it loads now.
                        Ok(settings) if ebpf == Ebpf::Asked => match load_watcher(&settings) {
                            Ok(watching) => {
                                self.watcher = watcher::Watcher::ready(Some(watching));
                            }
                            Err(why) => self.warnings.push(format!(
                                "{}=ebpf: the eBPF tracer does not run ({why}); strace traces",
                                names::TRACE
                            )),
                        },
                        Ok(settings) => {
                            let thread = std::thread::Builder::new()
                                .name("ebpf-load".into())
                                .spawn(move || {
                                    load_watcher(&settings)
                                        .inspect_err(|why| {
                                            tracing::info!(
                                                %why,
                                                "the eBPF tracer does not run; strace traces"
                                            );
                                        })
                                        .ok()
                                });
                            match thread {
                                Ok(thread) => self.watcher = watcher::Watcher::loading(thread),
                                Err(why) => {
                                    tracing::info!(%why, "the eBPF tracer does not run; strace traces");
                                }
                            }
                        }
                        Err(why) if ebpf == Ebpf::Asked => self.warnings.push(format!(
                            "{}=ebpf: the eBPF tracer does not run ({why}); strace traces",
                            names::TRACE
                        )),
                        Err(why) => {
                            tracing::info!(%why, "the eBPF tracer does not run; strace traces");
                        }
                    }
                }
                self.tracer = Some(tracer);
            }
            Err(why) => self.warnings.push(format!(
                "what the items read is not traced ({why}): a retry carries no command's \
                 result forward, it runs them all again"
            )),
        }
        Ok(())
    }

    /// What the run's eBPF tracer is loaded with: the gate must run as
    /// root and have found `clang` where the items cannot write.
    fn watcher_settings(
        &self,
        workspace: &Path,
        cache: Option<PathBuf>,
    ) -> Result<gate_harness::bpf::Settings, String> {
        if !nix::unistd::geteuid().is_root() {
            return Err("it needs the gate to run as root".into());
        }
        let clang = self.tools.path("clang").ok_or_else(|| {
            "`clang` is not installed outside the folders the workspace's code can write \
             (Debian and Ubuntu: `apt-get install clang`)"
                .to_owned()
        })?;
        let launchers = ["bwrap", "nsenter"]
            .iter()
            .filter_map(|name| self.tools.path(name))
            .collect();
        Ok(gate_harness::bpf::Settings {
            clang,
            workspace: workspace.to_path_buf(),
            launchers,
            cache,
        })
    }
}

/// Compiles (or takes from the cache), loads and attaches the run's eBPF
/// tracer.
fn load_watcher(settings: &gate_harness::bpf::Settings) -> Result<Watching, String> {
    let watcher = gate_harness::bpf::Watcher::start(settings).map_err(|e| e.to_string())?;
    tracing::info!(
        startup_ms = watcher.startup().as_millis(),
        "the eBPF tracer is attached"
    );
    Ok(Watching(std::sync::Arc::new(watcher)))
}

/// Where the eBPF tracer's compiled programs are kept: the user's cache
/// folder (`$XDG_CACHE_HOME/gate/ebpf`, by default `~/.cache/gate/ebpf`),
/// which no item sees (their home is a private one).
fn tracer_cache(host_env: &[(OsString, OsString)]) -> Option<PathBuf> {
    let var = |name: &str| {
        host_env
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| PathBuf::from(v))
            .filter(|p| p.is_absolute())
    };
    let user = var("XDG_CACHE_HOME").or_else(|| var("HOME").map(|h| h.join(".cache")))?;
    Some(user.join("gate").join("ebpf"))
}

impl Isolation {
    /// A run without a sandbox: its processes get the allow-listed
    /// environment all the same and, when the gate runs as root, the run's
    /// own uid with a private home and `/tmp`.
    fn unisolated(
        setup: &Setup<'_>,
        start: Start,
        reason: Option<String>,
    ) -> Result<Self, GateError> {
        let (scratch, private) = match &start.lease {
            Some(lease) => {
                let scratch = scratch_folder()?;
                hand_scratch(scratch.path(), lease.uid())?;
                let private = (scratch.path().join("home"), scratch.path().join("tmp"));
                (Some(scratch), Some(private))
            }
            None => (None, None),
        };
        let env = environment(
            setup.host_env,
            &setup.section.pass_env,
            &setup.never_env,
            private.as_ref().map(|p| p.0.as_path()),
            private.as_ref().map(|p| p.1.as_path()),
            None,
        );
        Ok(Self {
            record: RunIsolation {
                kind: "none".to_owned(),
                network: SandboxNetwork::Host.as_str().to_owned(),
                reason,
                identity: Some(identity_record(start.lease.as_ref())),
                tools: start.tools.found.clone(),
                tracer: None,
                toolchain: Some(start.toolchain.clone()),
            },
            shell: start.tools.path("sh"),
            tracer: start.tracer,
            watcher: start.watcher,
            env,
            sandbox: None,
            tools_env: start.tools_env,
            scratch,
            candidates: Vec::new(),
            warnings: start.warnings,
            _holder: None,
            lease: start.lease,
            folders_made: AtomicUsize::new(0),
            handed_repository: None,
        })
    }

    /// Resolves the run's isolation and checks it works here. With `mode =
    /// "required"` a sandbox that cannot start is a configuration error
    /// (exit 2) naming why; with `auto` the run goes on unisolated and says
    /// so. The gate run as root takes a uid of the run's own first: the
    /// items never run as uid 0 (but with `mode = "off"`, the operator's
    /// explicit choice).
    pub(crate) async fn prepare(setup: Setup<'_>) -> Result<Self, GateError> {
        let mode = effective_mode(setup.floor.0, setup.section.mode);
        let network = setup.section.network.unwrap_or_default();
        let host_home = lookup(setup.host_env, "HOME")
            .map(PathBuf::from)
            .filter(|h| h.is_absolute() && h.parent().is_some() && h.is_dir());
        let (writable, mut start) = Start::new(&setup, host_home.as_deref());
        start.trace(setup.host_env, setup.workspace).await?;
        if mode == SandboxMode::Off {
            let why = off_reason(&setup);
            return Self::unisolated(&setup, start, Some(why));
        }
        if nix::unistd::geteuid().is_root() {
            start.lease = Some(Lease::take().map_err(|e| {
                GateError::Usage(format!(
                    "the gate runs as root, and what it runs for the workspace must not: \
                     cannot take a uid of the run's own under {}: {e}",
                    identity::LEASE_DIR
                ))
            })?);
        }
        let refuse = |start: Start, refusal: Refusal| -> Result<Self, GateError> {
            if mode == SandboxMode::Required {
                Err(required(&setup, &refusal))
            } else {
                Self::unisolated(&setup, start, Some(refusal.to_string()))
            }
        };
        let scratch = scratch_folder()?;
        let candidates = hide_candidates(&setup, host_home.as_deref());
        let (host, cargo_home) =
            host_view(&setup, scratch.path(), host_home.as_deref(), &candidates);
        let policy = contents::Policy {
            bwrap: start.tools.path("bwrap"),
            dropper: dropper(&start.tools),
            run_uid: start.lease.as_ref().map(Lease::uid),
            workspace: setup.workspace.to_path_buf(),
            writable,
            scratch: scratch.path().to_path_buf(),
            host,
        };
        let mut sandbox = match contents::sandbox(policy) {
            Ok(sandbox) => sandbox,
            Err(refusal) => return refuse(start, refusal),
        };
        if let Some(identity) = &sandbox.identity {
            own_identity(&sandbox, scratch.path(), identity.uid)?;
        }
        sandbox.rebuild_hidden_parents();
        let env = environment(
            setup.host_env,
            &setup.section.pass_env,
            &setup.never_env,
            host_home.as_deref(),
            Some(Path::new("/tmp")),
            cargo_home.as_deref(),
        );
        let nsenter = start.tools.path("nsenter");
        let (holder, network_reason, probed) =
            network_and_probe(&mut sandbox, &setup, network, scratch.path(), &env, nsenter).await;
        if let Err(why) = probed {
            return refuse(start, Refusal::Probe(why));
        }
        let network_refusal = network_reason.map(Refusal::Network);
        if let Some(refusal) = &network_refusal
            && mode == SandboxMode::Required
        {
            return Err(required(&setup, refusal));
        }
        Ok(Self {
            record: RunIsolation {
                kind: "bwrap".to_owned(),
                network: network_of(holder.as_ref()).as_str().to_owned(),
                reason: network_refusal.map(|r| r.to_string()),
                identity: Some(identity_record(start.lease.as_ref())),
                tools: start.tools.found.clone(),
                tracer: None,
                toolchain: Some(start.toolchain.clone()),
            },
            shell: start.tools.path("sh"),
            tracer: start.tracer,
            watcher: start.watcher,
            env,
            sandbox: Some(sandbox),
            tools_env: start.tools_env,
            scratch: Some(scratch),
            candidates,
            warnings: start.warnings,
            _holder: holder,
            lease: start.lease,
            folders_made: AtomicUsize::new(0),
            handed_repository: None,
        })
    }

    /// Hands the workspace and the `writable` paths to the run's uid, when
    /// the items run as one (the gate runs as root), so they can write
    /// there; everything goes back when the run ends. The hidden paths stay
    /// as they are, and so does `.git` when no sandbox runs (the items
    /// would write it); in a sandbox every item sees `.git` read-only, and
    /// handing it lets the gate's own git read it as the run's uid.
    pub(crate) fn hand_over_workspace(&mut self, workspace: &Path) -> Result<(), GateError> {
        let Some(lease) = &mut self.lease else {
            return Ok(());
        };
        let mut skip: Vec<PathBuf> = self
            .candidates
            .iter()
            .flat_map(|c| [Some(c.clone()), c.canonicalize().ok()])
            .flatten()
            .collect();
        if self.sandbox.is_none() {
            skip.push(workspace.join(".git"));
        }
        let writable = self
            .sandbox
            .as_ref()
            .map(|s| s.writable.clone())
            .unwrap_or_default();
        for root in std::iter::once(workspace.to_path_buf()).chain(writable) {
            lease.give(&root, &skip).map_err(|e| GateError::Workspace {
                path: root.clone(),
                reason: format!("cannot hand it to the run's uid {}: {e}", lease.uid()),
            })?;
        }
        if self.sandbox.is_some() {
            self.handed_repository = workspace.canonicalize().ok();
        }
        Ok(())
    }

    /// Whether the gate's own git on the repository whose work tree is
    /// `top` runs as the run's uid: as root, when `top` is the workspace
    /// handed to that uid with its `.git`. Otherwise (a workspace inside a
    /// larger repository, whose `.git` lies outside what the run may
    /// change) it runs as root with no capability but reading past
    /// permissions.
    fn git_as_run_uid(&self, top: Option<&Path>) -> bool {
        match (top, &self.handed_repository) {
            (Some(top), Some(handed)) => top.canonicalize().is_ok_and(|top| top == *handed),
            _ => false,
        }
    }

    /// Whether the items' commands are traced (what they read recorded).
    pub(crate) fn traced(&self) -> bool {
        self.items(Vec::new(), Vec::new()).tracer().is_some()
    }

    /// What isolated the run, with which tracer recorded what the items
    /// read (waiting for the eBPF tracer when it is still loading).
    pub(crate) fn record(&self) -> RunIsolation {
        let tracer = if self.traced_from_the_kernel() {
            "ebpf"
        } else if self.traced() {
            "strace"
        } else {
            "none"
        };
        RunIsolation {
            tracer: Some(tracer.to_owned()),
            ..self.record.clone()
        }
    }

    /// Whether the run's eBPF tracer traces its sandboxed items.
    pub(crate) fn traced_from_the_kernel(&self) -> bool {
        self.tracer.is_some() && self.sandbox.is_some() && self.watcher.get().is_some()
    }

    /// The launcher of the gate's own tools (`git`): an environment of
    /// their own and, where the machine isolates, a sandbox in which the
    /// workspace is read-only and no network is reachable.
    /// With `top`, the work tree of the workspace's repository (a folder
    /// above it when the workspace is a folder of a larger repository), the
    /// whole work tree is shown read-only, its `.git` with it.
    pub(crate) fn tools(&self, top: Option<&Path>) -> Launcher {
        match &self.sandbox {
            None => Launcher::new(self.tools_env.clone()),
            Some(sandbox) => {
                let mut tools = sandbox.clone();
                tools.hidden = hidden(&self.candidates);
                if let Some(top) = top {
                    tools.workspace = top.to_path_buf();
                }
                tools.read_only = vec![tools.workspace.clone()];
                tools.writable.clear();
                tools.network = Network::Private;
                // The gate's own, reading what the agent wrote: as the
                // run's uid where the repository was handed to it.
                if !self.git_as_run_uid(top) {
                    tools.read_search = tools.identity.is_some();
                    tools.identity = None;
                }
                tools.home = self.tools_home(tools.home);
                tools.rebuild_hidden_parents();
                Launcher::sandboxed(self.tools_env.clone(), tools)
            }
        }
    }

    /// The private home in the sandbox of the gate's own git, which reads
    /// no configuration of a home: only where a tool of the gate's was
    /// found under it (each toolchain it shows is a mount in every call).
    fn tools_home(&self, home: Option<Home>) -> Option<Home> {
        home.filter(|home| {
            self.record
                .tools
                .iter()
                .any(|tool| Path::new(&tool.path).starts_with(&home.path))
        })
    }

    /// The launcher of the run's items: the paths in `read_only` stay
    /// read-only inside the workspace and each overlay shows its file.
    pub(crate) fn items(&self, read_only: Vec<PathBuf>, overlays: Vec<Overlay>) -> Launcher {
        match &self.sandbox {
            None => self.unsandboxed(),
            Some(sandbox) => {
                let mut items = sandbox.clone();
                items.hidden = hidden(&self.candidates);
                items.read_only = read_only
                    .into_iter()
                    .filter(|p| std::fs::symlink_metadata(p).is_ok_and(|m| !m.is_symlink()))
                    .collect();
                items.overlays = overlays;
                items.rebuild_hidden_parents();
                Launcher::sandboxed(self.env.clone(), items)
                    .with_shell(self.shell.clone())
                    .with_tracer(self.tracer.clone())
                    .with_watcher(self.watcher.get())
            }
        }
    }

    /// The items' launcher when no sandbox runs: as the run's uid when
    /// there is one.
    fn unsandboxed(&self) -> Launcher {
        match &self.lease {
            Some(lease) => Launcher::as_user(self.env.clone(), lease.uid(), lease.uid()),
            None => Launcher::new(self.env.clone()),
        }
        .with_shell(self.shell.clone())
        .with_tracer(self.tracer.clone())
    }

    /// The launcher of the gate's own git while it checks the base out into
    /// `root`: the tools' sandbox with `root` the one writable folder and
    /// the repository's `objects` (which the checkout borrows) read-only.
    /// As root, when the repository (work tree `top`) was handed to the
    /// run's uid, `root` is handed to it too and git runs as that uid.
    pub(crate) fn base_tools(
        &self,
        root: &Path,
        objects: &Path,
        top: &Path,
    ) -> Result<Launcher, String> {
        Ok(match &self.sandbox {
            None => Launcher::new(self.tools_env.clone()),
            Some(sandbox) => {
                let mut tools = sandbox.clone();
                tools.hidden = hidden(&self.candidates);
                tools.workspace = root.to_path_buf();
                tools.read_only = vec![objects.to_path_buf()];
                tools.writable.clear();
                tools.network = Network::Private;
                match &self.lease {
                    Some(lease) if self.git_as_run_uid(Some(top)) => {
                        identity::hand(root, lease.uid()).map_err(|e| {
                            format!("cannot hand {} to the run's uid: {e}", root.display())
                        })?;
                    }
                    _ => {
                        tools.read_search = tools.identity.is_some();
                        tools.identity = None;
                    }
                }
                tools.home = self.tools_home(tools.home);
                tools.rebuild_hidden_parents();
                Launcher::sandboxed(self.tools_env.clone(), tools)
            }
        })
    }

    /// Hands `paths` to the run's uid, when it has one: files and folders
    /// the gate made in a base checkout after it was handed over.
    pub(crate) fn hand_over(&self, paths: &[PathBuf]) -> Result<(), String> {
        let Some(lease) = &self.lease else {
            return Ok(());
        };
        for path in paths {
            identity::hand(path, lease.uid())
                .map_err(|e| format!("cannot hand {} to the run's uid: {e}", path.display()))?;
        }
        Ok(())
    }

    /// The launcher of what runs on the base: the items' sandbox, with the
    /// base's checkout (`root`) as the one writable workspace, shown where
    /// the change's repository is (`shown_at`) so a verifier cannot tell
    /// the base's run from the change's by where it runs, a `/tmp`,
    /// `/var/tmp` and `HOME` of its own under `scratch`, and the change's
    /// workspace out of sight (the checkout covers it). The checkout and
    /// those folders are handed to the run's uid, when it has one.
    pub(crate) fn base_items(
        &self,
        root: &Path,
        shown_at: &Path,
        scratch: &Path,
    ) -> Result<Launcher, String> {
        if let Some(lease) = &self.lease {
            for dir in [
                root.to_path_buf(),
                scratch.join("tmp"),
                scratch.join("home"),
            ] {
                identity::hand(&dir, lease.uid())
                    .map_err(|e| format!("cannot hand {} to the run's uid: {e}", dir.display()))?;
            }
        }
        Ok(match &self.sandbox {
            None => self.unsandboxed(),
            Some(sandbox) => {
                let mut items = sandbox.clone();
                let mut candidates = self.candidates.clone();
                candidates.push(sandbox.workspace.clone());
                items.hidden = hidden(&candidates);
                items.workspace = root.to_path_buf();
                items.workspace_at = Some(shown_at.to_path_buf());
                items.read_only = Vec::new();
                items.overlays = Vec::new();
                items.tmp = scratch.join("tmp");
                items.var_tmp = scratch.join("tmp");
                if let Some(home) = &mut items.home {
                    home.source = scratch.join("home");
                    if let Some(lease) = &self.lease {
                        prepare_home(home, lease.uid()).map_err(|e| e.to_string())?;
                    }
                }
                items.rebuild_hidden_parents();
                Launcher::sandboxed(self.env.clone(), items).with_shell(self.shell.clone())
            }
        })
    }

    /// One launcher per item of `items` (each an id and the ids of the
    /// items whose folders it starts from, [`lineage::new_items`]):
    /// `launcher` with a fresh `/tmp`, `/var/tmp` and home of the item's
    /// own, made in `under` (the run's scratch folder when `None`, which
    /// goes with the run), handed to the run's uid when it has one, the
    /// home's mount points made as for the run's; what the folders of the
    /// items it starts from hold (in this batch, or in `made`) is copied
    /// in when it starts. No launchers where items have no private folders
    /// (no sandbox and no uid of the run's: they see the host's `/tmp` and
    /// `HOME`).
    pub(crate) fn private_folders(
        &self,
        launcher: &Launcher,
        items: &[(String, Vec<String>)],
        under: Option<&Path>,
        made: &HashMap<String, Arc<Launcher>>,
    ) -> Result<HashMap<String, Arc<Launcher>>, String> {
        let mut out = HashMap::new();
        let root = match (under, &self.scratch) {
            (Some(under), _) => under.to_path_buf(),
            (None, Some(scratch)) => scratch.path().to_path_buf(),
            (None, None) => return Ok(out),
        };
        if (self.sandbox.is_none() && self.lease.is_none()) || items.is_empty() {
            return Ok(out);
        }
        let why = |path: &Path, e: std::io::Error| {
            format!(
                "cannot make the private folder {} of an item: {e}",
                path.display()
            )
        };
        let parent = root.join("items");
        match std::fs::create_dir(&parent) {
            Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => {
                return Err(why(&parent, e));
            }
            Ok(()) | Err(_) => {}
        }
        let uid = self.lease.as_ref().map(Lease::uid);
        let home = self.sandbox.as_ref().and_then(|s| s.home.as_ref());
        let started = std::time::Instant::now();
        // `items/<n>-tmp`, not `items/<n>/tmp`: a folder fewer to make.
        let privates: Vec<Private> = items
            .iter()
            .map(|_| {
                let n = self.folders_made.fetch_add(1, Ordering::Relaxed);
                Private {
                    tmp: parent.join(format!("{n}-tmp")),
                    var_tmp: parent.join(format!("{n}-var-tmp")),
                    home: parent.join(format!("{n}-home")),
                }
            })
            .collect();
        let make = |private: &Private| -> Result<(), String> {
            for folder in [&private.tmp, &private.var_tmp, &private.home] {
                std::fs::create_dir(folder).map_err(|e| why(folder, e))?;
                if let Some(uid) = uid {
                    std::os::unix::fs::chown(folder, Some(uid), Some(uid))
                        .map_err(|e| why(folder, e))?;
                }
            }
            if let (Some(home), Some(uid)) = (home, uid) {
                let home = Home {
                    source: private.home.clone(),
                    ..home.clone()
                };
                prepare_home(&home, uid).map_err(|e| why(&private.home, e))?;
            }
            Ok(())
        };
        // Each folder is a few file system calls that mostly wait on the
        // disk: a handful of threads make many items' at once.
        let workers = privates.len().clamp(1, 4);
        let chunk = privates.len().div_ceil(workers);
        std::thread::scope(|scope| {
            let made: Vec<_> = privates
                .chunks(chunk)
                .map(|part| scope.spawn(move || part.iter().try_for_each(make)))
                .collect();
            made.into_iter().try_for_each(|t| {
                t.join()
                    .unwrap_or_else(|_| Err("a thread making folders panicked".into()))
            })
        })?;
        let fresh: HashMap<&str, &Private> = items
            .iter()
            .map(|(id, _)| id.as_str())
            .zip(&privates)
            .collect();
        for ((id, before), private) in items.iter().zip(&privates) {
            let from: Vec<Private> = before
                .iter()
                .filter_map(|b| {
                    fresh
                        .get(b.as_str())
                        .copied()
                        .or_else(|| made.get(b).and_then(|l| l.private()))
                        .cloned()
                })
                .collect();
            out.insert(id.clone(), Arc::new(launcher.with_private(private, &from)));
        }
        tracing::debug!(
            items = items.len(),
            us = started.elapsed().as_micros(),
            "made the private folders of the items"
        );
        Ok(out)
    }

    /// A folder of the run's, outside the workspace and out of the items'
    /// sight, for files the gate shows them (the base's verifiers).
    pub(crate) fn base_dir(&self) -> Option<PathBuf> {
        self.scratch.as_ref().map(|s| s.path().join("base"))
    }
}

/// The gate's `strace`, when it can trace here: it must be found where
/// the items cannot write and follow a shell with its seccomp filter (a
/// container may refuse `ptrace`).
async fn probe_tracer(tools: &Tools, env: &[(OsString, OsString)]) -> Result<Tracer, String> {
    let strace = tools.path("strace").ok_or_else(|| {
        "`strace` is not installed outside the folders the workspace's code can write \
         (Debian and Ubuntu: `apt-get install strace`)"
            .to_owned()
    })?;
    let shell = tools.path("sh").unwrap_or_else(|| PathBuf::from("/bin/sh"));
    let dir = tempfile::Builder::new()
        .prefix("gate-trace-probe-")
        .tempdir()
        .map_err(|e| format!("cannot make a folder for a trace: {e}"))?;
    let tracer = Tracer { strace };
    let launcher = Launcher::new(env.to_vec())
        .with_tracer(Some(tracer.clone()))
        .traced_into(dir.path());
    let shell = shell.to_string_lossy();
    let output = gate_harness::process::run_argv(
        &[&shell, "-c", ":"],
        dir.path(),
        PROBE_TIMEOUT,
        4096,
        &launcher,
    )
    .await
    .map_err(|e| format!("strace cannot start: {e}"))?;
    if output.exit_code != Some(0) {
        let said = String::from_utf8_lossy(&output.stderr);
        return Err(format!(
            "strace cannot trace here: {}",
            said.lines().next().unwrap_or("it failed")
        ));
    }
    match gate_harness::trace::read(dir.path(), dir.path()).incomplete {
        Some(why) => Err(format!("strace's trace cannot be read here: {why}")),
        None => Ok(tracer),
    }
}

/// Whether the run tries the eBPF tracer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ebpf {
    /// `GATE_TRACE=ebpf`: a run where it cannot start says why.
    Asked,
    /// `GATE_TRACE` unset and the gate runs as root on a kernel with BTF:
    /// tried, and `strace` traces quietly where it cannot start.
    IfItRuns,
    /// Not tried: `GATE_TRACE` names a boolean, or the gate cannot load
    /// programs.
    No,
}

/// Whether `GATE_TRACE` asks for the eBPF tracer, leaves it to the machine
/// or rules it out.
fn ebpf_wanted(host_env: &[(OsString, OsString)]) -> Ebpf {
    match lookup(host_env, names::TRACE) {
        Some(v) if v.to_string_lossy().eq_ignore_ascii_case("ebpf") => Ebpf::Asked,
        None if nix::unistd::geteuid().is_root()
            && Path::new("/sys/kernel/btf/vmlinux").is_file() =>
        {
            Ebpf::IfItRuns
        }
        Some(_) | None => Ebpf::No,
    }
}

/// Why a run with `mode = "off"` is unisolated: the spec's word or the
/// operator's.
fn off_reason(setup: &Setup<'_>) -> String {
    let why = if setup.section.mode == Some(SandboxMode::Off) && setup.floor.0 == SandboxMode::Off {
        "[sandbox] mode = \"off\"".to_owned()
    } else {
        setup.floor.1.to_string()
    };
    format!("the sandbox is off ({why})")
}

/// What the record says of who the items ran as.
fn identity_record(lease: Option<&Lease>) -> RunIdentity {
    match lease {
        Some(lease) => RunIdentity {
            uid: lease.uid(),
            gid: lease.uid(),
            kind: "per_run".to_owned(),
        },
        None => RunIdentity {
            uid: nix::unistd::geteuid().as_raw(),
            gid: nix::unistd::getegid().as_raw(),
            kind: "gate_user".to_owned(),
        },
    }
}

/// The folders the items can write or must not reach, where the gate takes
/// none of its tools from: the workspace, the state directory and every
/// secret path, and the `writable` paths.
fn untrusted_roots(setup: &Setup<'_>, writable: &[PathBuf]) -> Vec<PathBuf> {
    std::iter::once(setup.workspace.to_path_buf())
        .chain(setup.secret_paths.iter().cloned())
        .chain(writable.iter().cloned())
        .flat_map(|p| [p.canonicalize().ok(), Some(p)])
        .flatten()
        .collect()
}

/// What of the host the run's sandbox shows and hides, found on the
/// machine (the empty user site made in `scratch`), and the `CARGO_HOME`
/// items get when cargo's home lies outside the home.
fn host_view(
    setup: &Setup<'_>,
    scratch: &Path,
    host_home: Option<&Path>,
    candidates: &[PathBuf],
) -> (contents::Host, Option<PathBuf>) {
    let readable = readable_paths(setup.section, host_home);
    let mut cargo_home = None;
    let home = host_home.map(|real| {
        let (mut binds, cargo) = toolchains(real, lookup(setup.host_env, "CARGO_HOME"));
        cargo_home = cargo;
        binds.extend(closed_user_site(real, &binds, scratch));
        binds.extend(shown::in_home(
            setup.host_env,
            &readable,
            real,
            setup.workspace,
        ));
        (real.to_path_buf(), without_repeats(binds))
    });
    let host = contents::Host {
        home,
        shown: shown::outside_home(setup.host_env, &readable, host_home, setup.workspace),
        run_files: shown::run_files(),
        hidden: hidden(candidates),
    };
    (host, cargo_home)
}

/// The error of a run whose sandbox is required but refused.
fn required(setup: &Setup<'_>, refusal: &Refusal) -> GateError {
    GateError::Usage(format!(
        "the sandbox is required ([sandbox] mode or {}) but cannot run here: {refusal}",
        setup.floor.1
    ))
}

/// What drops the items to the run's uid: the gate's own `gate-drop` when
/// it lies beside the gate, else `setpriv`.
fn dropper(tools: &Tools) -> Option<Dropper> {
    tools
        .path(tools::DROPPER)
        .map(Dropper::Own)
        .or_else(|| tools.path("setpriv").map(Dropper::Setpriv))
}

/// Readies what the items of `sandbox` need to run as the run's `uid`:
/// their private folders handed to it, and the accounts that name it.
fn own_identity(sandbox: &Sandbox, scratch: &Path, uid: u32) -> Result<(), GateError> {
    let why = |e: std::io::Error| {
        GateError::Usage(format!(
            "cannot prepare the run's folders for its uid {uid}: {e}"
        ))
    };
    hand_scratch(scratch, uid)?;
    if let Some(home) = &sandbox.home {
        prepare_home(home, uid).map_err(why)?;
    }
    let home = sandbox
        .home
        .as_ref()
        .map_or_else(|| PathBuf::from("/"), |h| h.path.clone());
    identity::accounts(scratch, uid, &home).map_err(why)
}

/// Hands the run's private `/tmp`, `/var/tmp` and home to `uid`.
fn hand_scratch(scratch: &Path, uid: u32) -> Result<(), GateError> {
    for sub in ["tmp", "var-tmp", "home"] {
        std::os::unix::fs::chown(scratch.join(sub), Some(uid), Some(uid)).map_err(|e| {
            GateError::Usage(format!(
                "cannot hand the run's {sub} folder to its uid {uid}: {e}"
            ))
        })?;
    }
    Ok(())
}

/// `binds` without those that show again what the bind already holding
/// their place shows there (a toolchain named twice, a `PATH` folder inside
/// a toolchain shown whole): each bind is a mount in every item's sandbox.
fn without_repeats(binds: Vec<Bind>) -> Vec<Bind> {
    let mut kept: Vec<Bind> = Vec::new();
    for bind in binds {
        // The innermost bind kept so far whose place holds this one's (the
        // latest of equals, which is the one seen there).
        let holder = kept
            .iter()
            .filter(|k| bind.target.starts_with(&k.target))
            .max_by_key(|k| k.target.components().count());
        let repeat = holder.is_some_and(|k| {
            bind.target
                .strip_prefix(&k.target)
                .is_ok_and(|rest| k.source.join(rest) == bind.source)
        });
        if !repeat {
            kept.push(bind);
        }
    }
    kept
}

/// Makes, in the private home's folder, the folders and mount points of
/// the toolchains it shows, owned by `uid`: bubblewrap would make them as
/// root, and cargo writes its locks beside the folders it is shown. A
/// toolchain folder shown inside another that holds its path already
/// needs none (each folder made costs an item its start).
fn prepare_home(home: &Home, uid: u32) -> std::io::Result<()> {
    let covered = |bind: &Bind| {
        home.read_only.iter().any(|outer| {
            outer.target != bind.target
                && bind
                    .target
                    .strip_prefix(&outer.target)
                    .is_ok_and(|rest| outer.source.join(rest).exists())
        })
    };
    for bind in &home.read_only {
        let Ok(rel) = bind.target.strip_prefix(&home.path) else {
            continue;
        };
        if covered(bind) {
            continue;
        }
        let inside = home.source.join(rel);
        let mut made = home.source.clone();
        let parents: Vec<_> = rel
            .parent()
            .map(|p| p.components().collect())
            .unwrap_or_default();
        for part in parents {
            made.push(part);
            if !made.exists() {
                std::fs::create_dir(&made)?;
                std::os::unix::fs::chown(&made, Some(uid), Some(uid))?;
            }
        }
        if !inside.exists() {
            if bind.source.is_dir() {
                std::fs::create_dir(&inside)?;
            } else {
                std::fs::write(&inside, "")?;
            }
            std::os::unix::fs::chown(&inside, Some(uid), Some(uid))?;
        }
    }
    Ok(())
}

/// The network a run's items have: a private one when a holder keeps it.
fn network_of(holder: Option<&Holder>) -> SandboxNetwork {
    if holder.is_some() {
        SandboxNetwork::Loopback
    } else {
        SandboxNetwork::Host
    }
}

/// The run's scratch folder, with its `tmp`, `var-tmp`, `home` and `base`.
fn scratch_folder() -> Result<scratch::Scratch, GateError> {
    scratch::Scratch::make()
        .map_err(|e| GateError::Usage(format!("cannot create the run's scratch folder: {e}")))
}

/// Every path to hide, whether or not it exists yet: the gate's secrets,
/// the user's credential files, what `[sandbox] hidden` adds, and the
/// sockets of the shown folders searched.
fn hide_candidates(setup: &Setup<'_>, host_home: Option<&Path>) -> Vec<PathBuf> {
    let mut candidates: Vec<PathBuf> = setup.secret_paths.clone();
    if let Some(home) = host_home {
        candidates.extend(HIDDEN_IN_HOME.iter().map(|rel| home.join(rel)));
    }
    candidates.extend(HIDDEN_ELSEWHERE.iter().map(PathBuf::from));
    candidates.extend(
        setup
            .section
            .hidden
            .iter()
            .filter_map(|p| expand(p, host_home)),
    );
    let readable = readable_paths(setup.section, host_home);
    candidates.extend(shown::sockets(setup.host_env, &readable));
    candidates
}

/// The host paths `[sandbox] readable` names, expanded.
fn readable_paths(section: &SandboxSection, host_home: Option<&Path>) -> Vec<PathBuf> {
    section
        .readable
        .iter()
        .filter_map(|p| expand(p, host_home))
        .collect()
}

/// The paths `[sandbox] writable` names that exist, and a warning for each
/// that does not: it is not made writable, and the run says so rather than
/// leave a build to fail on a read-only cache.
fn writable_paths(named: &[String], host_home: Option<&Path>) -> (Vec<PathBuf>, Vec<String>) {
    let mut warnings = Vec::new();
    let mut writable = Vec::new();
    for named in named {
        match expand(named, host_home) {
            Some(path) if path.exists() => writable.push(path),
            Some(path) => warnings.push(format!(
                "[sandbox] writable names {}, which does not exist: nothing is made writable for it",
                path.display()
            )),
            None => warnings.push(format!(
                "[sandbox] writable names `{named}`, which is neither absolute nor under a HOME that exists: nothing is made writable for it"
            )),
        }
    }
    (writable, warnings)
}

/// The run's network namespace, when the spec asks for one, and the probe
/// that starts the sandbox exactly as an item would. What prevents the
/// namespace is said (the run goes on with the host's network, or,
/// required, refuses); a sandbox that cannot start inside it is tried once
/// more on the host's network.
async fn network_and_probe(
    sandbox: &mut Sandbox,
    setup: &Setup<'_>,
    network: SandboxNetwork,
    scratch: &Path,
    env: &[(OsString, OsString)],
    nsenter: Option<PathBuf>,
) -> (Option<Holder>, Option<String>, Result<(), String>) {
    let mut holder = None;
    let mut network_reason = None;
    if network == SandboxNetwork::Loopback {
        match start_holder(sandbox, nsenter, scratch, env.to_vec()).await {
            Ok(started) => {
                sandbox.network = Network::Join(started.namespace().clone());
                holder = Some(started);
            }
            Err(why) => network_reason = Some(why),
        }
    }
    let mut probed = probe_sandbox(setup.workspace, env, sandbox).await;
    if let Err(why) = &probed
        && let Some(started) = holder.take()
    {
        started.stop().await;
        network_reason = Some(format!(
            "a sandbox cannot start inside the run's network namespace: {why}"
        ));
        sandbox.network = Network::Host;
        probed = probe_sandbox(setup.workspace, env, sandbox).await;
    }
    (holder, network_reason, probed)
}

/// Starts the process that holds the run's network namespace, with the
/// items' environment; the error says why there cannot be one here.
async fn start_holder(
    sandbox: &Sandbox,
    nsenter: Option<PathBuf>,
    cwd: &Path,
    env: Vec<(OsString, OsString)>,
) -> Result<Holder, String> {
    let Some(nsenter) = nsenter else {
        return Err(
            "`nsenter` is not installed (Debian and Ubuntu: `apt-get install \
                    util-linux`)"
                .to_owned(),
        );
    };
    let helper = own_executable(sandbox, cwd)?;
    Holder::start(&sandbox.bwrap, &nsenter, &helper, cwd, env).await
}

/// The gate's executable, which runs the helpers inside the namespace: the
/// file this process runs from, when it is still at its path and nothing
/// the run starts can write there; else a copy of it in the run's scratch
/// folder `scratch`. (A check may rebuild the very file, when the gate
/// verifies its own workspace; `/proc/self/exe` itself cannot be run from
/// inside the user namespace an unprivileged run joins.)
fn own_executable(sandbox: &Sandbox, scratch: &Path) -> Result<PathBuf, String> {
    use std::os::unix::fs::MetadataExt;
    let running = std::fs::metadata("/proc/self/exe")
        .map_err(|e| format!("cannot find the gate's own executable: {e}"))?;
    if let Ok(path) = std::env::current_exe()
        && path.to_str().is_some()
        && std::fs::metadata(&path)
            .is_ok_and(|m| (m.dev(), m.ino()) == (running.dev(), running.ino()))
        && !path.starts_with(&sandbox.workspace)
        && !sandbox
            .writable
            .iter()
            .any(|w| path.starts_with(w.canonicalize().as_deref().unwrap_or(w)))
    {
        return Ok(path);
    }
    let copy = scratch.join("gate");
    std::fs::copy("/proc/self/exe", &copy)
        .map_err(|e| format!("cannot copy the gate's own executable: {e}"))?;
    Ok(copy)
}

/// Runs `true` in `sandbox` as an item would; the error is bubblewrap's
/// first line.
async fn probe_sandbox(
    workspace: &Path,
    env: &[(OsString, OsString)],
    sandbox: &Sandbox,
) -> Result<(), String> {
    let probe = Launcher::sandboxed(env.to_vec(), sandbox.clone());
    match process::run_argv(&["true"], workspace, PROBE_TIMEOUT, 4096, &probe).await {
        Ok(out) if out.exit_code == Some(0) => Ok(()),
        Ok(out) => {
            let stderr = String::from_utf8_lossy(&out.stderr);
            Err(stderr
                .lines()
                .next()
                .unwrap_or("no reason given")
                .trim()
                .to_owned())
        }
        Err(e) => Err(e.to_string()),
    }
}

/// What of `candidates` exists, each path as given and with its links
/// resolved (a link is never masked itself: what it leads to is).
fn hidden(candidates: &[PathBuf]) -> Vec<Hidden> {
    let mut out: Vec<Hidden> = Vec::new();
    for path in candidates {
        for p in [Some(path.clone()), path.canonicalize().ok()]
            .into_iter()
            .flatten()
        {
            if let Ok(meta) = std::fs::symlink_metadata(&p)
                && !meta.file_type().is_symlink()
                && !out.iter().any(|h| h.path == p)
            {
                out.push(Hidden {
                    dir: meta.is_dir(),
                    path: p,
                });
            }
        }
    }
    out
}

/// Python's user site (`~/.local/lib`) is never the items' to write: an
/// item could plant a `usercustomize.py` or a `.pth` line there that every
/// later Python of the run, the exam's among them, runs at start-up. Where
/// the host has one it is shown read-only with the toolchains; where it
/// has none, an empty folder of the gate's is shown read-only in its place.
fn closed_user_site(home: &Path, binds: &[Bind], scratch: &Path) -> Option<Bind> {
    let target = home.join(USER_SITE);
    if binds.iter().any(|b| b.target == target) {
        return None;
    }
    let source = scratch.join("user-site");
    match std::fs::create_dir(&source) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => {
            tracing::warn!(error = %e, "cannot make the empty user site");
            return None;
        }
    }
    Some(Bind { source, target })
}

/// Where Python's user site lies below the home (`site.USER_BASE/lib`).
const USER_SITE: &str = ".local/lib";

/// The toolchain folders of `home` to show read-only, and the `CARGO_HOME`
/// processes get when cargo's home lies outside the home: cargo writes its
/// locks at the top of its home, so it gets a writable one in the private
/// home with the real one's binaries and downloads shown read-only in it.
fn toolchains(home: &Path, cargo_home: Option<&OsStr>) -> (Vec<Bind>, Option<PathBuf>) {
    let mut binds: Vec<Bind> = TOOLCHAIN_DIRS
        .iter()
        .map(|rel| home.join(rel))
        .filter(|p| p.exists())
        .map(|p| Bind {
            source: p.clone(),
            target: p,
        })
        .collect();
    let mut relocated = None;
    if let Some(cargo) = cargo_home.map(PathBuf::from)
        && cargo.is_absolute()
        && cargo != home.join(".cargo")
    {
        let inside = home.join(".cargo");
        for sub in ["bin", "env", "registry", "git"] {
            let source = cargo.join(sub);
            if source.exists() && !binds.iter().any(|b| b.target == inside.join(sub)) {
                binds.push(Bind {
                    source,
                    target: inside.join(sub),
                });
            }
        }
        relocated = Some(inside);
    }
    (binds, relocated)
}

fn lookup<'a>(env: &'a [(OsString, OsString)], name: &str) -> Option<&'a OsStr> {
    env.iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_os_str())
        .filter(|v| !v.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        pairs
            .iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v)))
            .collect()
    }

    #[test]
    fn a_bind_that_shows_again_what_its_holder_shows_there_is_left_out() {
        let bind = |source: &str, target: &str| Bind {
            source: source.into(),
            target: target.into(),
        };
        let pyenv = bind("/root/.pyenv", "/root/.pyenv");
        let shims = bind("/root/.pyenv/shims", "/root/.pyenv/shims");
        let cargo_bin = bind("/root/.cargo/bin", "/root/.cargo/bin");
        let site = bind("/run/gate-x/user-site", "/root/.local/lib");
        let in_site = bind("/root/.local/lib/python3", "/root/.local/lib/python3");
        let elsewhere = bind("/opt/pyenv-shims", "/root/.pyenv/shims");
        let again = bind("/root/.pyenv/shims/x", "/root/.pyenv/shims/x");
        // (binds in order, those kept)
        let cases: [(Vec<&Bind>, Vec<&Bind>); 5] = [
            (
                vec![&pyenv, &cargo_bin, &pyenv, &cargo_bin],
                vec![&pyenv, &cargo_bin],
            ),
            (vec![&pyenv, &shims], vec![&pyenv]),
            // Shown before the folder that holds it: both are needed.
            (vec![&shims, &pyenv], vec![&shims, &pyenv]),
            // Under a bind of another source, a host path is not a repeat.
            (vec![&site, &in_site], vec![&site, &in_site]),
            // The innermost holder decides.
            (
                vec![&pyenv, &elsewhere, &again],
                vec![&pyenv, &elsewhere, &again],
            ),
        ];
        for (binds, want) in cases {
            let got = without_repeats(binds.iter().map(|b| (*b).clone()).collect());
            let want: Vec<Bind> = want.into_iter().cloned().collect();
            assert_eq!(got, want, "{binds:?}");
        }
    }

    #[test]
    fn only_the_allow_list_and_what_pass_env_names_get_through() {
        let host = env(&[
            ("PATH", "/usr/bin"),
            ("HOME", "/root"),
            ("LANG", "C.UTF-8"),
            ("LC_ALL", "C"),
            ("CI", "true"),
            ("GITHUB_SHA", "abc"),
            ("GITHUB_TOKEN", "ghs_x"),
            ("ACTIONS_RUNTIME_TOKEN", "x"),
            ("ACTIONS_CACHE_URL", "x"),
            ("GATE_SIGNING_KEY", "pem"),
            ("OPENAI_API_KEY", "sk-x"),
            ("AWS_SECRET_ACCESS_KEY", "x"),
            ("PGPASSWORD", "x"),
            ("MY_TOKEN", "needed"),
            ("DATABASE_URL", "postgres://x"),
            ("TMPDIR", "/var/tmp"),
        ]);
        let never: BTreeSet<String> = ["OPENAI_API_KEY".to_owned()].into();
        let pass = [
            "MY_TOKEN".to_owned(),
            "OPENAI_API_KEY".to_owned(),
            "GATE_SIGNING_KEY".to_owned(),
        ];
        let got = environment(
            &host,
            &pass,
            &never,
            Some(Path::new("/root")),
            Some(Path::new("/tmp")),
            None,
        );
        let names: Vec<&str> = got.iter().map(|(n, _)| n.to_str().unwrap()).collect();
        assert_eq!(
            names,
            [
                "CI",
                "GITHUB_SHA",
                "HOME",
                "LANG",
                "LC_ALL",
                "MY_TOKEN",
                "PATH",
                "PYTHONPYCACHEPREFIX",
                "TMPDIR"
            ]
        );
        assert!(got.contains(&("TMPDIR".into(), "/tmp".into())));
        assert!(got.contains(&("PYTHONPYCACHEPREFIX".into(), "/tmp/.pycache".into())));
        // Unisolated: the host's HOME and TMPDIR as they are.
        let got = environment(&host, &[], &never, None, None, None);
        assert!(got.contains(&("TMPDIR".into(), "/var/tmp".into())));
        assert!(got.contains(&("HOME".into(), "/root".into())));
        assert!(got.contains(&("PYTHONPYCACHEPREFIX".into(), "/var/tmp/.pycache".into())));
        assert!(!got.iter().any(|(n, _)| n == "MY_TOKEN"));
    }

    #[test]
    fn the_spec_can_only_tighten_the_operators_floor() {
        use SandboxMode::{Auto, Off, Required};
        // (floor, spec, effective)
        let cases = [
            (Auto, None, Auto),
            (Off, None, Off),
            (Required, None, Required),
            (Auto, Some(Off), Auto),
            (Auto, Some(Required), Required),
            (Required, Some(Off), Required),
            (Off, Some(Auto), Auto),
        ];
        for (floor, spec, want) in cases {
            assert_eq!(effective_mode(floor, spec), want, "{floor:?} {spec:?}");
        }
    }

    #[test]
    fn paths_expand_from_the_home_or_stay_absolute() {
        let home = Path::new("/home/ci");
        assert_eq!(
            expand("~/.cache/x", Some(home)),
            Some(PathBuf::from("/home/ci/.cache/x"))
        );
        assert_eq!(
            expand("/opt/cache", Some(home)),
            Some(PathBuf::from("/opt/cache"))
        );
        assert_eq!(expand("~/.cache", None), None);
        assert_eq!(expand("relative", Some(home)), None);
    }

    #[test]
    fn a_cargo_home_outside_the_home_is_shown_inside_it() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let cargo = dir.path().join("usr-local-cargo");
        std::fs::create_dir_all(home.join(".rustup")).unwrap();
        std::fs::create_dir_all(cargo.join("bin")).unwrap();
        std::fs::create_dir_all(cargo.join("registry")).unwrap();
        let (binds, relocated) = toolchains(&home, Some(cargo.as_os_str()));
        assert_eq!(relocated, Some(home.join(".cargo")));
        let pairs: Vec<(PathBuf, PathBuf)> =
            binds.into_iter().map(|b| (b.source, b.target)).collect();
        assert_eq!(
            pairs,
            [
                (home.join(".rustup"), home.join(".rustup")),
                (cargo.join("bin"), home.join(".cargo/bin")),
                (cargo.join("registry"), home.join(".cargo/registry")),
            ]
        );
        let (_, relocated) = toolchains(&home, Some(home.join(".cargo").as_os_str()));
        assert_eq!(relocated, None);
    }
}
