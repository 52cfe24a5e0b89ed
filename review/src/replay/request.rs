//! What a review was sent, kept: the review request as the reviewers were
//! given it (the change after the gate's secret scrubbing, the judged
//! criteria and their files, the tier, the spec's tasks and policy), in a
//! form a later replay rebuilds the review from alone.

use gate_specs::Spec;
use serde::{Deserialize, Serialize};

use crate::review::context::{self, ChangedFile, FileClass};
use crate::review::{JudgedCriterion, ReviewInput};
use crate::tier::{Tier, TierDecision};

/// The version of the kept request's format; a replay reads this one only.
pub const FORMAT_VERSION: u32 = 1;

/// Why a kept request cannot be rebuilt.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RequestError {
    /// Not JSON of the expected shape.
    #[error("the kept review request does not parse: {0}")]
    Parse(#[from] serde_json::Error),
    /// Written by another format version.
    #[error("the kept review request is format {found}; this gate reads format {FORMAT_VERSION}")]
    Version {
        /// The version it holds.
        found: u32,
    },
}

/// A review request as sent, kept beside the run's bundle.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KeptRequest {
    /// [`FORMAT_VERSION`].
    pub format_version: u32,
    /// The spec as the reviewers were told of it: its id, summary, tasks,
    /// criteria and the `[policy]` in effect (checks, pages and the
    /// operator's sections are not sent, so not kept).
    pub spec: Spec,
    /// The run's tier.
    pub tier: Tier,
    /// Why that tier.
    pub tier_reason: String,
    /// The change as read and scrubbed.
    pub change: Vec<KeptFile>,
    /// The model-judged criteria asked.
    pub judged: Vec<KeptCriterion>,
    /// The files those criteria name.
    pub judge_files: Vec<KeptFile>,
    /// Code-decided criteria and their results, as the shared context says them.
    pub code_criteria: Vec<(String, String)>,
}

/// One file as a reviewer could be shown it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KeptFile {
    /// Workspace-relative path.
    pub path: String,
    /// Its class.
    pub class: FileClass,
    /// Its text as read and scrubbed; `None` when deleted or unreadable.
    pub text: Option<String>,
    /// The file's size in bytes.
    pub size: u64,
    /// blake3 (hex) of all its bytes, when it was read.
    pub digest: Option<String>,
    /// Why it is noise, if it is.
    pub noise: Option<String>,
    /// Byte spans that changed against the base.
    pub changed: Vec<(u64, u64)>,
}

/// A model-judged criterion as asked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeptCriterion {
    /// Its id.
    pub id: String,
    /// Its task.
    pub task: String,
    /// What must hold.
    pub text: String,
}

/// Noise reason of a kept file that the path and text no longer give.
const RECORDED_NOISE: &str = "left out as noise when the run was reviewed";

impl KeptFile {
    fn of(f: &ChangedFile) -> Self {
        Self {
            path: f.path.clone(),
            class: f.class,
            text: f.text.clone(),
            size: f.size,
            digest: f.digest.map(|d| d.to_hex().to_string()),
            noise: f.noise.map(str::to_owned),
            changed: f.changed.clone(),
        }
    }

    fn rebuilt(&self) -> ChangedFile {
        let noise = self.noise.as_deref().map(|why| {
            if why == context::GONE {
                context::GONE
            } else {
                let head = self.text.as_deref().unwrap_or("").as_bytes();
                context::noise(&self.path, head).unwrap_or(RECORDED_NOISE)
            }
        });
        ChangedFile {
            path: self.path.clone(),
            class: self.class,
            text: self.text.clone(),
            size: self.size,
            digest: self
                .digest
                .as_deref()
                .and_then(|d| blake3::Hash::from_hex(d).ok()),
            noise,
            changed: self.changed.clone(),
        }
    }
}

impl KeptRequest {
    /// What `input` sends, kept. `input`'s files are already scrubbed; the
    /// spec keeps only what the shared context names.
    pub fn capture(input: &ReviewInput<'_>) -> Self {
        let mut spec = input.spec.clone();
        spec.checks.clear();
        spec.pages.clear();
        spec.sandbox = gate_specs::SandboxSection::default();
        spec.ledger = gate_specs::LedgerSection::default();
        spec.eval = gate_specs::EvalSection::default();
        Self {
            format_version: FORMAT_VERSION,
            spec,
            tier: input.tier.tier,
            tier_reason: input.tier.reason.clone(),
            change: input.change.iter().map(KeptFile::of).collect(),
            judged: input
                .judged
                .iter()
                .map(|c| KeptCriterion {
                    id: c.id.clone(),
                    task: c.task.clone(),
                    text: c.text.clone(),
                })
                .collect(),
            judge_files: input.judge_files.iter().map(KeptFile::of).collect(),
            code_criteria: input.code_criteria.to_vec(),
        }
    }

    /// The bytes kept: compact JSON.
    pub fn to_bytes(&self) -> Vec<u8> {
        // A value of plain strings, numbers and vectors always encodes.
        serde_json::to_vec(self).unwrap_or_default()
    }

    /// Reads kept bytes back.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, RequestError> {
        #[derive(Deserialize)]
        struct Version {
            format_version: u32,
        }
        let Version { format_version } = serde_json::from_slice(bytes)?;
        if format_version != FORMAT_VERSION {
            return Err(RequestError::Version {
                found: format_version,
            });
        }
        Ok(serde_json::from_slice(bytes)?)
    }

    /// The review's inputs again, owned.
    pub fn rebuild(&self) -> Rebuilt {
        Rebuilt {
            spec: self.spec.clone(),
            tier: TierDecision {
                tier: self.tier,
                reason: self.tier_reason.clone(),
            },
            change: self.change.iter().map(KeptFile::rebuilt).collect(),
            judged: self
                .judged
                .iter()
                .map(|c| JudgedCriterion {
                    id: c.id.clone(),
                    task: c.task.clone(),
                    text: c.text.clone(),
                })
                .collect(),
            judge_files: self.judge_files.iter().map(KeptFile::rebuilt).collect(),
            code_criteria: self.code_criteria.clone(),
        }
    }

    /// The changed files' paths.
    pub fn changed_paths(&self) -> Vec<String> {
        self.change.iter().map(|f| f.path.clone()).collect()
    }

    /// Tasks in the spec (a stratum).
    pub fn task_count(&self) -> usize {
        self.spec.tasks.len()
    }
}

/// A kept request made into the review's inputs again.
#[derive(Debug, Clone)]
pub struct Rebuilt {
    /// The spec as kept.
    pub spec: Spec,
    /// The recorded tier.
    pub tier: TierDecision,
    /// The change.
    pub change: Vec<ChangedFile>,
    /// The judged criteria.
    pub judged: Vec<JudgedCriterion>,
    /// Their files.
    pub judge_files: Vec<ChangedFile>,
    /// Code-decided criteria's results.
    pub code_criteria: Vec<(String, String)>,
}

/// sha256 (lowercase hex) of kept bytes: the name they are stored under.
pub fn digest(bytes: &[u8]) -> String {
    gate_evidence::bundle::digest(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kept() -> KeptRequest {
        let spec: Spec = gate_specs::from_toml_str(
            "[spec]\nid = \"s\"\nsummary = \"a login\"\n[[task]]\nid = \"t\"\ntitle = \"T\"\n\
             [[task.criterion]]\nid = \"c\"\ntext = \"works\"\nrun = \"true\"\n",
            std::path::Path::new("gate.toml"),
        )
        .unwrap();
        KeptRequest {
            format_version: FORMAT_VERSION,
            spec,
            tier: Tier::Light,
            tier_reason: "1 task × 1 criterion".into(),
            change: vec![
                KeptFile {
                    path: "src/auth.py".into(),
                    class: FileClass::Code,
                    text: Some("def login(): pass\n".into()),
                    size: 18,
                    digest: Some(blake3::hash(b"def login(): pass\n").to_hex().to_string()),
                    noise: None,
                    changed: vec![(0, 18)],
                },
                KeptFile {
                    path: "Cargo.lock".into(),
                    class: FileClass::Config,
                    text: None,
                    size: 0,
                    digest: None,
                    noise: Some(context::GONE.into()),
                    changed: Vec::new(),
                },
            ],
            judged: Vec::new(),
            judge_files: Vec::new(),
            code_criteria: vec![("c".into(), "passed".into())],
        }
    }

    #[test]
    fn a_kept_request_reads_back_and_rebuilds_the_review_input() {
        let request = kept();
        let back = KeptRequest::from_bytes(&request.to_bytes()).unwrap();
        assert_eq!(back, request);
        let rebuilt = back.rebuild();
        assert_eq!(rebuilt.tier.tier, Tier::Light);
        assert_eq!(
            rebuilt.change[0].text.as_deref(),
            Some("def login(): pass\n")
        );
        assert_eq!(
            rebuilt.change[0].digest,
            Some(blake3::hash(b"def login(): pass\n"))
        );
        assert_eq!(rebuilt.change[1].noise, Some(context::GONE));
        assert_eq!(rebuilt.spec.spec.summary, "a login");
        assert_eq!(back.changed_paths(), ["src/auth.py", "Cargo.lock"]);
    }

    #[test]
    fn another_format_is_refused_by_its_version() {
        let mut value = serde_json::to_value(kept()).unwrap();
        value["format_version"] = 2.into();
        let err = KeptRequest::from_bytes(&serde_json::to_vec(&value).unwrap()).unwrap_err();
        assert!(matches!(err, RequestError::Version { found: 2 }), "{err}");
        assert!(KeptRequest::from_bytes(b"{}").is_err());
    }
}
