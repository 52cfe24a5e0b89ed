//! What the ledger keeps that a decision reads, tied to a signature: a
//! human's outcome or dismissal and a model's breaker state, each carrying
//! a DSSE envelope over its own fields; and the field-by-field comparison
//! of what a row stores with what was signed, which both these records and
//! a run's row (against its bundle) are checked with.
//!
//! Anyone who can write to the ledger's database can edit a column; only
//! the signing key can make an envelope. A record whose columns disagree
//! with its envelope, or that has none, is not the gate's: the readers that
//! decide ignore it and `gate ledger verify` names it.

use std::fmt;

use chrono::{DateTime, SubsecRound as _, Utc};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::entries::{BreakerRecord, Dismissal, OutcomeEntry};
use crate::dsse::{self, DsseError};
use crate::keys::{PublicKey, SigningKey};

/// The DSSE payload type of a signed outcome.
pub const OUTCOME_PAYLOAD_TYPE: &str = "application/vnd.gate.outcome.v1+json";
/// The DSSE payload type of a signed dismissal.
pub const DISMISSAL_PAYLOAD_TYPE: &str = "application/vnd.gate.dismissal.v1+json";
/// The DSSE payload type of a signed circuit-breaker state.
pub const BREAKER_PAYLOAD_TYPE: &str = "application/vnd.gate.breaker.v1+json";

/// Longest value a disagreement shows, in characters: enough to tell a
/// verdict or a count, short enough for one line per column.
const SHOWN: usize = 120;

/// One column whose stored value is not the signed one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Disagreement {
    /// The column, or `extra.<field>` for a field of a run's `extra`.
    pub column: String,
    /// What the ledger holds (compact JSON, `absent` when missing).
    pub stored: String,
    /// What was signed (compact JSON, `absent` when missing).
    pub signed: String,
}

impl fmt::Display for Disagreement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} is {} in the ledger but {} where signed",
            self.column, self.stored, self.signed
        )
    }
}

/// Why a record could not be vouched for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unvouched {
    /// It carries no envelope.
    Unsigned,
    /// Its envelope does not verify under the trusted keys.
    Signature(DsseError),
    /// Its envelope verifies but holds no record of this kind.
    Unreadable(String),
    /// Its columns are not what was signed.
    Disagrees(Vec<Disagreement>),
    /// The bundle it rests on (an override's own) is missing, is not the
    /// one the row names, or does not verify.
    Bundle(String),
}

impl fmt::Display for Unvouched {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Unsigned => write!(f, "it is not signed"),
            Self::Signature(e) => write!(f, "its signature does not verify: {e}"),
            Self::Unreadable(why) => write!(f, "its envelope holds no readable record: {why}"),
            Self::Bundle(why) => write!(f, "{why}"),
            Self::Disagrees(d) => {
                let all: Vec<String> = d.iter().map(ToString::to_string).collect();
                write!(f, "{}", all.join("; "))
            }
        }
    }
}

/// A record kept with an envelope over its own fields.
pub trait Signed: Serialize + DeserializeOwned + Sized {
    /// The envelope's payload type.
    const PAYLOAD_TYPE: &'static str;
    /// The envelope it carries, if any.
    fn envelope(&self) -> Option<&str>;
    /// The record as the ledger stores it (times at microseconds), without
    /// its envelope: what is signed and what is compared.
    #[must_use]
    fn unsealed(&self) -> Self;
    /// The record carrying `envelope`.
    #[must_use]
    fn with_envelope(self, envelope: String) -> Self;
}

/// Both stores keep microseconds; signing the same precision keeps a
/// record read back equal to the one signed.
fn micros(t: DateTime<Utc>) -> DateTime<Utc> {
    t.trunc_subsecs(6)
}

/// A record signed over its own fields, its time kept to microseconds.
macro_rules! signed_event {
    ($type:ty, $payload:expr) => {
        impl Signed for $type {
            const PAYLOAD_TYPE: &'static str = $payload;
            fn envelope(&self) -> Option<&str> {
                self.envelope.as_deref()
            }
            fn unsealed(&self) -> Self {
                Self {
                    recorded_at: micros(self.recorded_at),
                    envelope: None,
                    ..self.clone()
                }
            }
            fn with_envelope(self, envelope: String) -> Self {
                Self {
                    envelope: Some(envelope),
                    ..self
                }
            }
        }
    };
}

signed_event!(OutcomeEntry, OUTCOME_PAYLOAD_TYPE);
signed_event!(Dismissal, DISMISSAL_PAYLOAD_TYPE);

impl Signed for BreakerRecord {
    const PAYLOAD_TYPE: &'static str = BREAKER_PAYLOAD_TYPE;
    fn envelope(&self) -> Option<&str> {
        self.seal.as_deref()
    }
    fn unsealed(&self) -> Self {
        Self {
            opened_at: self.opened_at.map(micros),
            probe: self.probe.clone().map(|(who, until)| (who, micros(until))),
            updated_at: micros(self.updated_at),
            seal: None,
            ..self.clone()
        }
    }
    fn with_envelope(self, envelope: String) -> Self {
        Self {
            seal: Some(envelope),
            ..self
        }
    }
}

/// `record` as it is to be stored: its times at the ledger's precision and
/// an envelope, signed by `key`, over exactly those fields.
pub fn seal<T: Signed>(record: &T, key: &SigningKey) -> T {
    let unsealed = record.unsealed();
    // A record of plain fields always encodes; an empty payload would
    // simply never vouch.
    let payload = serde_json::to_vec(&unsealed).unwrap_or_default();
    let envelope = dsse::sign(T::PAYLOAD_TYPE, &payload, key);
    unsealed.with_envelope(String::from_utf8_lossy(&envelope).into_owned())
}

/// The signed record, when `record` carries an envelope that verifies under
/// `trusted` and its fields are exactly the signed ones.
pub fn vouch<T: Signed>(record: &T, trusted: &[PublicKey]) -> Result<T, Unvouched> {
    let envelope = record.envelope().ok_or(Unvouched::Unsigned)?;
    let verified = dsse::verify(envelope.as_bytes(), T::PAYLOAD_TYPE, trusted)
        .map_err(Unvouched::Signature)?;
    let signed: Value = serde_json::from_slice(&verified.payload)
        .map_err(|e| Unvouched::Unreadable(e.to_string()))?;
    let stored = serde_json::to_value(record.unsealed())
        .map_err(|e| Unvouched::Unreadable(e.to_string()))?;
    let found = diff(&stored, &signed, "");
    if !found.is_empty() {
        return Err(Unvouched::Disagrees(found));
    }
    serde_json::from_value(signed).map_err(|e| Unvouched::Unreadable(e.to_string()))
}

/// Every place where `stored` is not `signed`: objects field by field
/// (nested objects too, named `outer.inner`), anything else whole. `prefix`
/// names the value compared (empty for a record's top level).
pub fn diff(stored: &Value, signed: &Value, prefix: &str) -> Vec<Disagreement> {
    let mut out = Vec::new();
    diff_into(Some(stored), Some(signed), prefix, &mut out);
    out
}

fn diff_into(
    stored: Option<&Value>,
    signed: Option<&Value>,
    at: &str,
    out: &mut Vec<Disagreement>,
) {
    if let (Some(Value::Object(a)), Some(Value::Object(b))) = (stored, signed) {
        let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
        keys.sort();
        keys.dedup();
        for key in keys {
            let name = if at.is_empty() {
                key.clone()
            } else {
                format!("{at}.{key}")
            };
            diff_into(a.get(key), b.get(key), &name, out);
        }
        return;
    }
    // A field absent on one side and null on the other says the same.
    if present(stored) != present(signed) {
        out.push(Disagreement {
            column: at.to_owned(),
            stored: shown(stored),
            signed: shown(signed),
        });
    }
}

fn present(v: Option<&Value>) -> Option<&Value> {
    v.filter(|v| !v.is_null())
}

fn shown(v: Option<&Value>) -> String {
    let Some(v) = v else {
        return "absent".to_owned();
    };
    let text = v.to_string();
    if text.chars().count() <= SHOWN {
        return text;
    }
    let cut: String = text.chars().take(SHOWN).collect();
    format!("{cut}…")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn each_difference_is_named_by_its_column() {
        // (what, stored, signed, the columns named)
        let cases: Vec<(&str, Value, Value, Vec<&str>)> = vec![
            ("the same", json!({"a": 1}), json!({"a": 1}), vec![]),
            (
                "a flipped verdict",
                json!({"verdict": "pass", "attempt": 2}),
                json!({"verdict": "fail", "attempt": 2}),
                vec!["verdict"],
            ),
            (
                "two columns, in name order",
                json!({"tier": "trivial", "attempt": 1}),
                json!({"tier": "full", "attempt": 3}),
                vec!["attempt", "tier"],
            ),
            (
                "a nested field",
                json!({"extra": {"failures": [], "agent": "x"}}),
                json!({"extra": {"failures": [{"item": "b"}], "agent": "x"}}),
                vec!["extra.failures"],
            ),
            (
                "a field planted",
                json!({"a": 1, "doom_loop": {"kind": "x"}}),
                json!({"a": 1}),
                vec!["doom_loop"],
            ),
            (
                "null and absent are one",
                json!({"a": 1, "reason": null}),
                json!({"a": 1}),
                vec![],
            ),
            ("not objects", json!(1), json!(2), vec![""]),
        ];
        for (what, stored, signed, want) in cases {
            let got: Vec<String> = diff(&stored, &signed, "")
                .into_iter()
                .map(|d| d.column)
                .collect();
            assert_eq!(got, want, "{what}");
        }
        let d = &diff(&json!({"verdict": "pass"}), &json!({}), "")[0];
        assert_eq!(
            d.to_string(),
            "verdict is \"pass\" in the ledger but absent where signed"
        );
        let long = diff(&json!("x".repeat(500)), &json!(1), "extra");
        assert!(long[0].stored.ends_with('…') && long[0].stored.chars().count() == SHOWN + 1);
        assert_eq!(long[0].column, "extra");
    }

    fn outcome() -> OutcomeEntry {
        OutcomeEntry {
            run_id: "r1".into(),
            broken: true,
            reason: Some("revert".into()),
            source: None,
            recorded_at: Utc::now(),
            envelope: None,
            evidence: None,
        }
    }

    #[test]
    fn a_harvested_outcome_vouches_for_its_evidence_too() {
        let key = SigningKey::from_seed(&[1; 32]);
        let trusted = [key.public_key().clone()];
        let mut harvested = outcome();
        harvested.source = Some("git:revert".into());
        harvested.evidence = Some(crate::ledger::OutcomeEvidence {
            confidence: 95,
            landed: vec!["a".repeat(40)],
            landed_by: "merge".into(),
            ..Default::default()
        });
        let sealed = seal(&harvested, &key);
        assert!(vouch(&sealed, &trusted).is_ok());
        let mut raised = sealed.clone();
        if let Some(e) = raised.evidence.as_mut() {
            e.confidence = 100;
        }
        let Err(Unvouched::Disagrees(d)) = vouch(&raised, &trusted) else {
            panic!("a raised confidence still vouches");
        };
        assert_eq!(d[0].column, "evidence.confidence");
        // An outcome without evidence signs no `evidence` field: envelopes
        // made before the field existed still vouch.
        let plain = seal(&outcome(), &key);
        let payload = dsse::verify(
            plain.envelope.as_deref().unwrap_or("").as_bytes(),
            OUTCOME_PAYLOAD_TYPE,
            &trusted,
        )
        .map(|v| String::from_utf8_lossy(&v.payload).into_owned())
        .unwrap_or_default();
        assert!(!payload.contains("evidence"), "{payload}");
    }

    #[test]
    fn a_record_vouches_only_as_signed() {
        let key = SigningKey::from_seed(&[1; 32]);
        let other = SigningKey::from_seed(&[2; 32]);
        let trusted = [key.public_key().clone()];
        let sealed = seal(&outcome(), &key);
        // (what is done to the sealed record, what vouching says)
        type Edit = fn(&mut OutcomeEntry);
        let cases: [(&str, Edit, Option<&str>); 5] = [
            ("nothing", |_| {}, None),
            (
                "its verdict on the run flipped",
                |o| o.broken = false,
                Some("broken is false"),
            ),
            (
                "moved to another run",
                |o| o.run_id = "r2".into(),
                Some("run_id is \"r2\""),
            ),
            (
                "its envelope removed",
                |o| o.envelope = None,
                Some("not signed"),
            ),
            (
                "its envelope from another key",
                |o| o.envelope = seal(&o.unsealed(), &SigningKey::from_seed(&[2; 32])).envelope,
                Some("signature does not verify"),
            ),
        ];
        for (what, edit, want) in cases {
            let mut record = sealed.clone();
            edit(&mut record);
            match (vouch(&record, &trusted), want) {
                (Ok(signed), None) => assert_eq!(signed, sealed.unsealed(), "{what}"),
                (Err(e), Some(text)) => assert!(e.to_string().contains(text), "{what}: {e}"),
                (got, want) => panic!("{what}: {got:?}, wanted {want:?}"),
            }
        }
        // The stored precision is what is signed: a record read back vouches.
        assert_eq!(sealed.recorded_at.timestamp_subsec_nanos() % 1000, 0);
        assert!(vouch(&sealed, &[other.public_key().clone()]).is_err());
    }
}
