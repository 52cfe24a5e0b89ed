//! The bundle's predicate: the signed account of one run. `attest` writes
//! it; the next attempt, `gate ledger import`, `gate evidence` and the
//! commands that record a human's word on a run read it back, all through
//! [`Predicate`].

use gate_review::routing::patch::OverrideStatus;
use serde::{Deserialize, Serialize};

use crate::plan::Decision;
use crate::record::RunRecord;

/// The predicate type of a gate run, versioned.
pub(crate) const PREDICATE_TYPE: &str = "https://gate.dev/attestation/run/v1";

/// The predicate type of an override bundle, versioned.
pub(crate) const OVERRIDE_PREDICATE_TYPE: &str = "https://gate.dev/attestation/override/v1";

/// A gate run's predicate: the run record without what is only known once
/// the bundle exists (its path, whether the ledger took its row), and the
/// inputs of the decision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[schemars(title = "gate run predicate (https://gate.dev/attestation/run/v1)")]
pub(crate) struct Predicate {
    /// The record format's version.
    pub format_version: u32,
    /// The run, without `bundle` and `recorded`.
    #[serde(with = "sealed_run")]
    #[schemars(with = "RunRecord")]
    pub run: RunRecord,
    /// The spec's `[policy]` in effect, defaults filled in.
    #[serde(default)]
    pub policy: gate_specs::Policy,
    /// The routing table the tier and the models came from.
    #[serde(default)]
    pub routing: RoutingUsed,
    /// Each prompt the reviewers were given.
    #[serde(default)]
    pub prompts: Vec<PromptUsed>,
    /// Each house-rules file.
    #[serde(default)]
    pub rules: Vec<RulesUsed>,
    /// Every check and criterion, and what this attempt did with it.
    #[serde(default)]
    pub plan: Vec<PlanEntry>,
    /// sha256 of the previous attempt's bundle, on a retry.
    #[serde(default)]
    pub previous_bundle_sha256: Option<String>,
}

/// The routing table in effect.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct RoutingUsed {
    /// Where it came from (`built-in`, a file, a URL's patch over one of them).
    pub origin: String,
    /// blake3 of the table as applied.
    pub blake3: String,
    /// What became of `GATE_ROUTING_URL`'s patch, when one was named.
    #[serde(rename = "override")]
    pub patch: Option<OverrideStatus>,
}

/// One reviewer prompt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct PromptUsed {
    /// Its key (`generalist`, `quality`…).
    pub prompt: String,
    /// blake3 of its text.
    pub blake3: String,
    /// The file it was read from, when it overrides the built-in one.
    pub file: Option<String>,
}

/// One house-rules file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct RulesUsed {
    /// Its workspace-relative path.
    pub file: String,
    /// blake3 of its bytes.
    pub blake3: String,
}

/// One planned item.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct PlanEntry {
    /// What this attempt did with it, and why.
    #[serde(flatten)]
    pub decision: Decision,
    /// The check's or criterion's id.
    pub id: String,
    /// blake3 of its definition and input files.
    pub inputs_digest: String,
}

impl Predicate {
    /// Reads a statement's predicate as a gate run's.
    pub(crate) fn read(predicate: &serde_json::Value) -> Result<Self, serde_json::Error> {
        Self::deserialize(predicate)
    }

    /// The predicate as the statement holds it.
    pub(crate) fn to_value(&self) -> Result<serde_json::Value, serde_json::Error> {
        serde_json::to_value(self)
    }
}

/// The run as the bundle keeps it: `bundle` and `recorded` are the record's
/// word on the bundle itself, so they cannot be in it.
mod sealed_run {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use crate::record::RunRecord;

    pub(super) fn serialize<S: Serializer>(run: &RunRecord, s: S) -> Result<S::Ok, S::Error> {
        let mut value = serde_json::to_value(run).map_err(serde::ser::Error::custom)?;
        if let Some(obj) = value.as_object_mut() {
            obj.remove("bundle");
            obj.remove("recorded");
        }
        value.serialize(s)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<RunRecord, D::Error> {
        RunRecord::deserialize(d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::fixture;

    #[test]
    fn the_bundle_keeps_the_run_without_its_word_on_the_bundle() {
        let mut run = fixture::record();
        run.bundle = Some(".gate/bundles/r.dsse.json".into());
        run.recorded = true;
        let predicate = Predicate {
            format_version: crate::record::FORMAT_VERSION,
            run: run.clone(),
            policy: gate_specs::Policy::default(),
            routing: RoutingUsed::default(),
            prompts: Vec::new(),
            rules: Vec::new(),
            plan: vec![PlanEntry {
                decision: Decision::Carry {
                    from_run: "r0".into(),
                    from_bundle: "ab".into(),
                },
                id: "build".into(),
                inputs_digest: "cd".into(),
            }],
            previous_bundle_sha256: None,
        };
        let value = predicate.to_value().unwrap();
        let keys: Vec<&str> = value["run"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert!(
            !keys.contains(&"bundle") && !keys.contains(&"recorded"),
            "{keys:?}"
        );
        assert_eq!(value["plan"][0]["decision"], "carry");
        assert_eq!(value["plan"][0]["from_run"], "r0");
        let read = Predicate::read(&value).unwrap();
        run.bundle = None;
        run.recorded = false;
        assert_eq!(read, Predicate { run, ..predicate });
    }
}
