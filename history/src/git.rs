//! How this crate runs git: through the caller, who decides where git runs
//! (a sandbox, an environment scrubbed of the repository's hooks) and how
//! much of its output it keeps.

use std::future::Future;
use std::path::Path;

/// Runs `git` with arguments in a folder and returns its standard output.
pub trait RunGit: Sync {
    /// `git ARGS` in `dir`: its standard output, or why it failed. A very
    /// long output may be cut to its head.
    fn run(
        &self,
        dir: &Path,
        args: &[&str],
    ) -> impl Future<Output = Result<Vec<u8>, String>> + Send;

    /// As [`RunGit::run`], but an output too long to keep whole is an
    /// error, not its head: for a pass whose every record must be read.
    fn run_whole(
        &self,
        dir: &Path,
        args: &[&str],
    ) -> impl Future<Output = Result<Vec<u8>, String>> + Send;
}

#[cfg(test)]
pub(crate) mod host {
    //! git itself on the host's `PATH`, for tests whose repositories they
    //! build themselves.

    use std::path::Path;

    use super::RunGit;

    /// Runs the host's git with neither the system's nor the user's
    /// configuration, so a developer's settings cannot change what a test
    /// sees.
    pub(crate) struct HostGit;

    impl RunGit for HostGit {
        async fn run(&self, dir: &Path, args: &[&str]) -> Result<Vec<u8>, String> {
            #[allow(clippy::disallowed_methods)] // test set-up: a repository of the test's own
            let out = tokio::process::Command::new("git")
                .args(args)
                .current_dir(dir)
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .env("GIT_CONFIG_GLOBAL", "/dev/null")
                .output()
                .await
                .map_err(|e| e.to_string())?;
            if out.status.success() {
                Ok(out.stdout)
            } else {
                Err(String::from_utf8_lossy(&out.stderr).into_owned())
            }
        }

        async fn run_whole(&self, dir: &Path, args: &[&str]) -> Result<Vec<u8>, String> {
            self.run(dir, args).await
        }
    }
}
