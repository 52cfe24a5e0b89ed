//! Which keys of a runner configuration a change altered in a way that
//! changes how the runner is launched: [`launch_changes`], by runner, to
//! the ecosystem that reads that configuration.

use super::cargo;
use super::go;
use super::make;
use super::model::{LaunchChange, Runner, RunnerConfig, whole_file};
use super::node;
use super::path::file_name;
use super::python;

/// Which keys of `config` the change from `base` to `now` altered in a way
/// that changes how the runner is launched or what it runs (`None`: the
/// file is absent).
pub fn launch_changes(
    config: &RunnerConfig,
    base: Option<&[u8]>,
    now: Option<&[u8]>,
) -> Vec<LaunchChange> {
    if base == now {
        return Vec::new();
    }
    let name = file_name(&config.path);
    let section = config.section.as_deref();
    match config.runner {
        Runner::Cargo if name == "Cargo.toml" => cargo::manifest_changes(base, now),
        Runner::Cargo => cargo::config_changes(base, now),
        Runner::Rustup => cargo::toolchain_changes(base, now),
        Runner::Npm => node::npm_changes(name, base, now),
        Runner::Vitest | Runner::Jest | Runner::Mocha => node::runner_changes(section, base, now),
        Runner::Pytest => python::pytest_changes(name, section, base, now),
        Runner::Go if name == "go.mod" => go::mod_changes(base, now),
        Runner::Make if section.is_some() => {
            make::make_changes(section.unwrap_or_default(), base, now)
        }
        Runner::Nextest | Runner::Go | Runner::Make | Runner::Module => whole_file(base, now),
    }
}
