//! What the gate's own executable does inside a run's network namespace
//! (`gate sandbox-helper …`): the [`Helper`] a command line asked for, run
//! with the probes and the browser bridge it needs.

use std::time::Instant;

use crate::sandbox::Helper;

/// Runs `helper`; `say` prints one line on its stdout.
pub async fn run(helper: Helper, say: impl Fn(&str)) -> Result<(), String> {
    match helper {
        Helper::Ready { tcp, http, within } => {
            crate::probe::reachable(tcp, http, Instant::now() + within).await
        }
        Helper::Forward { socket, to } => {
            crate::page::browser::forward_inside(&socket, &to, say).await
        }
    }
}
