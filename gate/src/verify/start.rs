//! What a run starts from: the request, the spec as loaded, the run's id
//! and clock.

use std::path::{Path, PathBuf};
use std::time::Instant;

use gate_evidence::Digest;
use gate_review::record::{ReviewRecord, millis};
use gate_review::tier::Tier;
use gate_specs::Spec;

use crate::config;
use crate::errors::GateError;
use crate::record::{FORMAT_VERSION, Reason, RunIsolation, RunRecord, SelfGuard, Verdict};
use crate::retry::History;

/// What `gate verify` was asked to do, resolved.
#[derive(Debug, Clone)]
pub(crate) struct VerifyRequest {
    /// The spec file.
    pub spec_path: PathBuf,
    /// `--base`, which wins over the spec's `base`.
    pub base: Option<String>,
    /// `--full`.
    pub full: bool,
    /// `--new-series`.
    pub new_series: bool,
    /// `--series`.
    pub series: Option<String>,
    /// `--no-base-runs`.
    pub no_base_runs: bool,
    /// `--offline`.
    pub offline: bool,
    /// `--routing`.
    pub routing: Option<PathBuf>,
    /// The files this run writes its results to (see
    /// [`crate::output::own_files`]): left out of the workspace it verifies.
    pub own_files: Vec<PathBuf>,
    /// The operator's sandbox floor, and where it came from.
    pub sandbox: (gate_specs::SandboxMode, config::Source),
}

/// A spec, loaded: its parsed form and the bytes it was parsed from.
#[derive(Debug, Clone)]
pub(crate) struct LoadedSpec {
    /// The parsed, validated spec.
    pub spec: Spec,
    /// blake3 of the file's bytes.
    pub digest: Digest,
    /// The text it was parsed from (findings about the spec point into it).
    pub text: String,
}

/// Reads and validates the spec.
pub(crate) fn load_spec(path: &Path) -> Result<LoadedSpec, GateError> {
    let bytes = gate_specs::read_bounded(path, gate_specs::TEXT_MAX_BYTES).map_err(|e| {
        GateError::Workspace {
            path: path.to_path_buf(),
            reason: format!("cannot read the spec: {e}"),
        }
    })?;
    let text = gate_specs::text_of(&bytes, path).map_err(gate_specs::SpecErrors::from)?;
    let spec = gate_specs::parse_str(text, path, gate_specs::Format::from_path(path))?;
    Ok(LoadedSpec {
        spec,
        digest: Digest::of(&bytes),
        text: text.to_owned(),
    })
}

/// The parts of a run every record needs, fixed at its start.
pub(super) struct Start {
    pub run_id: String,
    pub clock: Instant,
    pub started_at: String,
    pub spec_digest: String,
}

impl Start {
    pub(super) fn now() -> Self {
        Self {
            run_id: uuid::Uuid::now_v7().to_string(),
            clock: Instant::now(),
            started_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            spec_digest: String::new(),
        }
    }

    /// A record of a run that decided nothing of its own (an escalated series):
    /// the attempt of `history`'s series.
    pub(super) fn bare(
        &self,
        spec: &Spec,
        history: &History,
        verdict: Verdict,
        reasons: Vec<Reason>,
    ) -> RunRecord {
        RunRecord {
            format_version: FORMAT_VERSION,
            run_id: self.run_id.clone(),
            spec_id: spec.spec.id.clone(),
            summary: spec.spec.summary.clone(),
            agent: spec.spec.agent.clone(),
            attempt: history.attempt,
            series: history.series.clone(),
            started_at: self.started_at.clone(),
            duration_ms: millis(self.clock.elapsed()),
            tool_version: env!("CARGO_PKG_VERSION").to_owned(),
            spec_digest: self.spec_digest.clone(),
            base: None,
            base_commit: None,
            verified: None,
            isolation: RunIsolation::default(),
            base_runs: None,
            mutants: None,
            verdict,
            verdict_reasons: reasons,
            qualifier: None,
            // Nothing of the workspace was looked at: no guard to speak of.
            self_guard: SelfGuard::default(),
            overridden: false,
            advisory: false,
            recorded: false,
            tier: Tier::Trivial,
            tier_reason: "nothing ran".to_owned(),
            changed_files: Vec::new(),
            files_fingerprinted: 0,
            checks: Vec::new(),
            criteria: Vec::new(),
            review: ReviewRecord::did_not_run("the series is escalated"),
            findings: Vec::new(),
            dropped_findings: Vec::new(),
            doom_loop: None,
            content_digest: String::new(),
            previous_bundle: None,
            finding_fates: Vec::new(),
            duplicates: 0,
            failures: Vec::new(),
            override_note: None,
            pages: Vec::new(),
            bundle: None,
            routing_override: None,
            // Nothing was accepted here; the memory goes on to the next run.
            accepted_reports: history.accepted_reports.clone(),
            protected_reference: std::collections::BTreeMap::new(),
        }
    }
}
