//! Ledger verification: rows, their bundles and a trusted key, nothing else.
//!
//! Per row, in parallel: the bundle's bytes hash to the stored sha256 and
//! leaf hash, and its signature verifies. Then in order: seq numbers are
//! contiguous from 1 (a deleted row), each row links to the previous row's
//! sha256 (reordered or swapped rows), no signed payload appears twice (a
//! replayed bundle, even re-wrapped in different bytes), and, given a
//! checkpoint, the current tree extends the one it committed to (a
//! truncated tail). Every problem is reported, not only the first.
//!
//! With a judge ([`verify_with`]), each row's columns are also compared with
//! what its verified envelope signed: a column edited in the database
//! (a flipped verdict, a reset attempt) is a [`ProblemKind::Disagrees`]
//! naming the column, the stored value and the signed one. The judge knows
//! the payload's format; this module does not.

use std::collections::HashMap;
use std::fmt;

use rayon::prelude::*;
use sha2::{Digest as _, Sha256};

use super::entries::{LedgerRow, parse_hash};
use super::signed::{Disagreement, Unvouched};
use crate::checkpoint::Checkpoint;
use crate::dsse::{self, DsseError};
use crate::keys::PublicKey;
use crate::merkle::{self, Hash};
use crate::statement::PAYLOAD_TYPE;

/// Why a row's bundle bytes could not be had; returned by the loader.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoadError {
    /// The bundle is not where the row says (deleted or moved): evidence lost.
    Missing(String),
    /// The store could not be read (permissions, I/O, network): not checked.
    Unavailable(String),
}

/// What is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProblemKind {
    /// The row's seq is not the next number: rows before it were deleted
    /// (or it was moved).
    SeqGap {
        /// The seq the row should have.
        expected: u64,
    },
    /// `prev_sha256` is not the previous row's envelope sha256.
    ChainBroken {
        /// The previous row's `envelope_sha256` (`None` for the first row).
        expected: Option<String>,
        /// What the row holds.
        found: Option<String>,
    },
    /// The bundle's bytes do not hash to the stored digest: the file was edited or replaced.
    EnvelopeChanged {
        /// The digest in the row.
        stored: String,
        /// The digest of the bytes now.
        actual: String,
    },
    /// The stored leaf hash is not the leaf hash of the bundle bytes.
    LeafHashWrong {
        /// The hash in the row.
        stored: String,
        /// The leaf hash of the bytes now.
        actual: String,
    },
    /// The bundle's signature does not verify under the trusted keys.
    Signature(DsseError),
    /// The same signed payload as an earlier row: an old bundle replayed.
    Replayed {
        /// The first row carrying it.
        first_seq: u64,
        /// That row's run.
        first_run_id: String,
    },
    /// The bundle file is gone.
    BundleMissing {
        /// The row's bundle path.
        path: String,
        /// The loader's explanation.
        reason: String,
    },
    /// The bundle could not be read, so the row was not checked.
    BundleUnavailable {
        /// The row's bundle path.
        path: String,
        /// The loader's explanation.
        reason: String,
    },
    /// The ledger has fewer rows than a checkpoint already committed to.
    Truncated {
        /// The checkpoint's tree size.
        checkpoint_size: u64,
        /// Rows now.
        ledger_size: u64,
    },
    /// The first `checkpoint_size` rows are not the ones the checkpoint committed to.
    Inconsistent {
        /// The checkpoint's tree size.
        checkpoint_size: u64,
        /// What the consistency proof said.
        reason: String,
    },
    /// A column is not what the row's signed envelope says.
    Disagrees(Disagreement),
    /// A record kept beside the runs (an outcome, a dismissal, an override,
    /// a circuit breaker's state) is unsigned or not what was signed.
    EventUnvouched {
        /// What it is (`outcome`, `dismissal`, `override`, `breaker MODEL`).
        table: String,
        /// When it says it was recorded.
        recorded_at: String,
        /// What is wrong with it.
        why: Unvouched,
    },
    /// A stored value does not parse.
    Corrupt(String),
}

impl fmt::Display for ProblemKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::SeqGap { expected } => write!(
                f,
                "expected seq {expected}: rows are missing (deleted) or out of place"
            ),
            Self::ChainBroken { expected, found } => write!(
                f,
                "prev_sha256 is {}, but the previous row's envelope is {}: rows were reordered, swapped or removed",
                found.as_deref().unwrap_or("empty"),
                expected.as_deref().unwrap_or("nothing (first row)")
            ),
            Self::EnvelopeChanged { stored, actual } => {
                write!(
                    f,
                    "bundle bytes hash to {actual}, the ledger recorded {stored}: the bundle was altered"
                )
            }
            Self::LeafHashWrong { stored, actual } => {
                write!(
                    f,
                    "leaf_hash is {stored}, the bundle's leaf hash is {actual}"
                )
            }
            Self::Signature(e) => write!(f, "bundle does not verify: {e}"),
            Self::Replayed {
                first_seq,
                first_run_id,
            } => write!(
                f,
                "bundle replays the signed payload of row {first_seq} (run {first_run_id})"
            ),
            Self::BundleMissing { path, reason } => write!(f, "bundle {path} is missing: {reason}"),
            Self::BundleUnavailable { path, reason } => {
                write!(f, "bundle {path} could not be read: {reason}")
            }
            Self::Truncated {
                checkpoint_size,
                ledger_size,
            } => write!(
                f,
                "ledger has {ledger_size} rows but a checkpoint committed to {checkpoint_size}: rows were cut"
            ),
            Self::Inconsistent {
                checkpoint_size,
                reason,
            } => write!(
                f,
                "the first {checkpoint_size} rows are not the ones the checkpoint committed to ({reason})"
            ),
            Self::Disagrees(d) => write!(f, "edited: {d}"),
            Self::EventUnvouched {
                table,
                recorded_at,
                why,
            } => write!(
                f,
                "{table} recorded at {recorded_at} is not the gate's: {why}"
            ),
            Self::Corrupt(reason) => write!(f, "corrupt row: {reason}"),
        }
    }
}

/// One problem, located.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The row's seq, when the problem is about a row.
    pub seq: Option<u64>,
    /// The row's run id, when the problem is about a row.
    pub run_id: Option<String>,
    /// What is wrong.
    pub kind: ProblemKind,
}

impl Problem {
    /// True when the problem means the ledger or a bundle was tampered with
    /// or lost (exit 1); false when a bundle merely could not be read (exit 4).
    pub fn is_tampering(&self) -> bool {
        !matches!(self.kind, ProblemKind::BundleUnavailable { .. })
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.seq, &self.run_id) {
            (Some(seq), Some(run)) => write!(f, "row {seq} (run {run}): {}", self.kind),
            (Some(seq), None) => write!(f, "row {seq}: {}", self.kind),
            _ => write!(f, "{}", self.kind),
        }
    }
}

/// The outcome of [`verify`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyReport {
    /// Rows examined.
    pub rows: u64,
    /// Every problem found, in row order, checkpoint problems last.
    pub problems: Vec<Problem>,
    /// The Merkle root over the bundles as they are now (stored leaf hashes
    /// where a bundle could not be read).
    pub root: Hash,
}

impl VerifyReport {
    /// No problem at all.
    pub fn is_ok(&self) -> bool {
        self.problems.is_empty()
    }

    /// Some problem is evidence of tampering or loss (exit 1).
    pub fn is_tampered(&self) -> bool {
        self.problems.iter().any(Problem::is_tampering)
    }
}

/// What checking one row found, before the ordered checks.
struct RowCheck {
    leaf: Option<Hash>,
    signed: Option<Hash>,
    problems: Vec<ProblemKind>,
}

/// What a judge finds comparing a row's columns with its verified envelope.
pub type Judge<'a> = dyn Fn(&LedgerRow, &dsse::Verified) -> Vec<Disagreement> + Sync + 'a;

/// The judge that compares nothing: the chain and signatures alone.
fn no_judge(_: &LedgerRow, _: &dsse::Verified) -> Vec<Disagreement> {
    Vec::new()
}

fn check_row<F>(row: &LedgerRow, load: &F, trusted: &[PublicKey], judge: &Judge<'_>) -> RowCheck
where
    F: Fn(&LedgerRow) -> Result<Vec<u8>, LoadError>,
{
    let mut problems = Vec::new();
    let bytes = match load(row) {
        Ok(b) => b,
        Err(e) => {
            let path = row.entry.bundle_path.clone();
            problems.push(match e {
                LoadError::Missing(reason) => ProblemKind::BundleMissing { path, reason },
                LoadError::Unavailable(reason) => ProblemKind::BundleUnavailable { path, reason },
            });
            return RowCheck {
                leaf: None,
                signed: None,
                problems,
            };
        }
    };
    let actual = crate::bundle::digest(&bytes);
    if actual != row.envelope_sha256 {
        problems.push(ProblemKind::EnvelopeChanged {
            stored: row.envelope_sha256.clone(),
            actual,
        });
    }
    let leaf = merkle::leaf_hash(&bytes);
    if hex::encode(leaf) != row.leaf_hash {
        problems.push(ProblemKind::LeafHashWrong {
            stored: row.leaf_hash.clone(),
            actual: hex::encode(leaf),
        });
    }
    let signed = match dsse::verify(&bytes, PAYLOAD_TYPE, trusted) {
        // The signed content, whatever bytes wrap it, identifies the run.
        Ok(v) => {
            problems.extend(judge(row, &v).into_iter().map(ProblemKind::Disagrees));
            Some(Sha256::digest(dsse::pae(&v.payload_type, &v.payload)).into())
        }
        Err(e) => {
            problems.push(ProblemKind::Signature(e));
            None
        }
    };
    RowCheck {
        leaf: Some(leaf),
        signed,
        problems,
    }
}

/// Verifies the last row alone, as [`verify`] would within the whole
/// chain: its bundle (bytes, leaf hash, signature by a key in `trusted`),
/// and its link to `previous`, the row before it (`None` when the tip is
/// row 1). A quick check of a ledger's health, not of its history.
pub fn verify_tip<F>(
    tip: &LedgerRow,
    previous: Option<&LedgerRow>,
    load: F,
    trusted: &[PublicKey],
) -> Vec<Problem>
where
    F: Fn(&LedgerRow) -> Result<Vec<u8>, LoadError>,
{
    let mut found = Vec::new();
    let expected_seq = previous.map_or(1, |p| p.seq + 1);
    if tip.seq != expected_seq {
        found.push(ProblemKind::SeqGap {
            expected: expected_seq,
        });
    }
    let expected_prev = previous.map(|p| p.envelope_sha256.clone());
    if tip.prev_sha256 != expected_prev {
        found.push(ProblemKind::ChainBroken {
            expected: expected_prev,
            found: tip.prev_sha256.clone(),
        });
    }
    found.extend(check_row(tip, &load, trusted, &no_judge).problems);
    found
        .into_iter()
        .map(|kind| Problem {
            seq: Some(tip.seq),
            run_id: Some(tip.entry.run_id.clone()),
            kind,
        })
        .collect()
}

/// Verifies `rows` (in seq order, as [`super::Ledger::rows`] returns them)
/// against their bundles, loaded by `load`, signed by a key in `trusted`;
/// with `since`, also that the ledger extends that checkpoint. Bundles are
/// checked in parallel.
pub fn verify<F>(
    rows: &[LedgerRow],
    load: F,
    trusted: &[PublicKey],
    since: Option<&Checkpoint>,
) -> VerifyReport
where
    F: Fn(&LedgerRow) -> Result<Vec<u8>, LoadError> + Sync,
{
    verify_with(rows, load, trusted, since, &no_judge)
}

/// [`verify`], and each row's columns compared by `judge` with what its
/// envelope signed (in the same parallel pass).
pub fn verify_with<F>(
    rows: &[LedgerRow],
    load: F,
    trusted: &[PublicKey],
    since: Option<&Checkpoint>,
    judge: &Judge<'_>,
) -> VerifyReport
where
    F: Fn(&LedgerRow) -> Result<Vec<u8>, LoadError> + Sync,
{
    let checks: Vec<RowCheck> = rows
        .par_iter()
        .map(|row| check_row(row, &load, trusted, judge))
        .collect();

    let mut problems = Vec::new();
    let mut seen: HashMap<Hash, (u64, &str)> = HashMap::new();
    let mut leaves = Vec::with_capacity(rows.len());
    let mut prev: Option<&str> = None;
    for (i, (row, check)) in rows.iter().zip(checks).enumerate() {
        let mut found = Vec::new();
        // Against the previous row, so one deletion is one problem.
        let expected_seq = if i == 0 { 1 } else { rows[i - 1].seq + 1 };
        if row.seq != expected_seq {
            found.push(ProblemKind::SeqGap {
                expected: expected_seq,
            });
        }
        if row.prev_sha256.as_deref() != prev {
            found.push(ProblemKind::ChainBroken {
                expected: prev.map(str::to_owned),
                found: row.prev_sha256.clone(),
            });
        }
        found.extend(check.problems);
        if let Some(signed) = check.signed {
            if let Some(&(first_seq, first_run_id)) = seen.get(&signed) {
                found.push(ProblemKind::Replayed {
                    first_seq,
                    first_run_id: first_run_id.to_owned(),
                });
            } else {
                seen.insert(signed, (row.seq, &row.entry.run_id));
            }
        }
        let leaf = check.leaf.or_else(|| parse_hash(&row.leaf_hash));
        if let Some(l) = leaf {
            leaves.push(l);
        } else {
            found.push(ProblemKind::Corrupt(format!(
                "leaf_hash {:?} is not 64 hex digits",
                row.leaf_hash
            )));
            leaves.push([0; 32]);
        }
        problems.extend(found.into_iter().map(|kind| Problem {
            seq: Some(row.seq),
            run_id: Some(row.entry.run_id.clone()),
            kind,
        }));
        prev = Some(&row.envelope_sha256);
    }

    let root = merkle::root(&leaves);
    if let Some(kind) = since.and_then(|cp| check_checkpoint(cp, &leaves, &root)) {
        problems.push(Problem {
            seq: None,
            run_id: None,
            kind,
        });
    }
    VerifyReport {
        rows: rows.len() as u64,
        problems,
        root,
    }
}

fn check_checkpoint(cp: &Checkpoint, leaves: &[Hash], root: &Hash) -> Option<ProblemKind> {
    let size = leaves.len() as u64;
    if cp.size > size {
        return Some(ProblemKind::Truncated {
            checkpoint_size: cp.size,
            ledger_size: size,
        });
    }
    let result = merkle::consistency_proof(leaves, cp.size)
        .and_then(|proof| merkle::verify_consistency(cp.size, size, &cp.root, root, &proof));
    result.err().map(|e| ProblemKind::Inconsistent {
        checkpoint_size: cp.size,
        reason: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use chrono::Utc;

    use super::*;
    use crate::keys::SigningKey;
    use crate::ledger::entries::RunEntry;

    fn signed(i: usize, key: &SigningKey) -> Vec<u8> {
        dsse::sign(PAYLOAD_TYPE, format!("{{\"run\":{i}}}").as_bytes(), key)
    }

    /// Rows chained the way `Ledger::append` chains them, with bundles in memory.
    fn chain(n: usize, key: &SigningKey) -> (Vec<LedgerRow>, HashMap<String, Vec<u8>>) {
        let mut rows: Vec<LedgerRow> = Vec::new();
        let mut store = HashMap::new();
        for i in 0..n {
            let env = signed(i, key);
            let path = format!("b/{i}.dsse.json");
            rows.push(LedgerRow {
                seq: i as u64 + 1,
                entry: RunEntry {
                    run_id: format!("r{i}"),
                    spec_id: "s".into(),
                    attempt: 1,
                    series: None,
                    verdict: "pass".into(),
                    tier: "light".into(),
                    started_at: Utc::now(),
                    finished_at: Utc::now(),
                    input_tokens: 0,
                    cached_input_tokens: 0,
                    output_tokens: 0,
                    cost_usd: None,
                    bundle_path: path.clone(),
                    extra: serde_json::json!({}),
                },
                envelope_sha256: crate::bundle::digest(&env),
                prev_sha256: rows.last().map(|r| r.envelope_sha256.clone()),
                leaf_hash: hex::encode(merkle::leaf_hash(&env)),
                recorded_at: Utc::now(),
            });
            store.insert(path, env);
        }
        (rows, store)
    }

    fn loader(
        store: &HashMap<String, Vec<u8>>,
    ) -> impl Fn(&LedgerRow) -> Result<Vec<u8>, LoadError> + Sync + '_ {
        move |row| {
            store
                .get(&row.entry.bundle_path)
                .cloned()
                .ok_or_else(|| LoadError::Missing("no such file".into()))
        }
    }

    fn kinds(report: &VerifyReport) -> Vec<(Option<u64>, String)> {
        report
            .problems
            .iter()
            .map(|p| {
                let name = format!("{:?}", p.kind);
                (
                    p.seq,
                    name.split([' ', '(', '{'])
                        .next()
                        .unwrap_or_default()
                        .to_owned(),
                )
            })
            .collect()
    }

    #[test]
    fn clean_chain_verifies() {
        let key = SigningKey::from_seed(&[1; 32]);
        let (rows, store) = chain(10, &key);
        let report = verify(&rows, loader(&store), &[key.public_key().clone()], None);
        assert!(report.is_ok(), "{:?}", report.problems);
        assert_eq!(report.rows, 10);
        let leaves: Vec<Hash> = rows
            .iter()
            .map(|r| parse_hash(&r.leaf_hash).unwrap())
            .collect();
        assert_eq!(report.root, merkle::root(&leaves));
        let empty = verify(&[], loader(&store), &[], None);
        assert!(empty.is_ok());
        assert_eq!(empty.root, merkle::empty_root());
    }

    #[test]
    fn the_tip_alone_is_checked_as_the_whole_chain_would_check_it() {
        let key = SigningKey::from_seed(&[1; 32]);
        let other = SigningKey::from_seed(&[2; 32]);
        let trusted = [key.public_key().clone()];
        let (rows, store) = chain(3, &key);
        let names = |problems: Vec<Problem>| -> Vec<String> {
            problems
                .iter()
                .map(|p| {
                    format!("{:?}", p.kind)
                        .split([' ', '(', '{'])
                        .next()
                        .unwrap_or_default()
                        .to_owned()
                })
                .collect()
        };
        // (what is done to the tip or its bundle, the problems found)
        type Edit = fn(&mut LedgerRow, &mut HashMap<String, Vec<u8>>);
        let cases: [(&str, Edit, &[&str]); 5] = [
            ("nothing", |_, _| {}, &[]),
            (
                "its link to the row before",
                |tip, _| tip.prev_sha256 = Some("0".repeat(64)),
                &["ChainBroken"],
            ),
            ("its seq", |tip, _| tip.seq = 7, &["SeqGap"]),
            (
                "its bundle's bytes",
                |tip, store| {
                    if let Some(b) = store.get_mut(&tip.entry.bundle_path) {
                        b.push(b' ');
                    }
                },
                &["EnvelopeChanged", "LeafHashWrong"],
            ),
            (
                "its bundle gone",
                |tip, store| {
                    store.remove(&tip.entry.bundle_path);
                },
                &["BundleMissing"],
            ),
        ];
        for (what, edit, want) in cases {
            let mut tip = rows[2].clone();
            let mut store = store.clone();
            edit(&mut tip, &mut store);
            let found = names(verify_tip(&tip, Some(&rows[1]), loader(&store), &trusted));
            assert_eq!(found, want, "{what}");
        }
        // Row 1 has nothing before it; another signer is not trusted.
        assert!(verify_tip(&rows[0], None, loader(&store), &trusted).is_empty());
        let found = names(verify_tip(
            &rows[2],
            Some(&rows[1]),
            loader(&store),
            &[other.public_key().clone()],
        ));
        assert_eq!(found, ["Signature"]);
    }

    #[test]
    fn each_tampering_is_reported_where_it_happened() {
        let key = SigningKey::from_seed(&[1; 32]);
        let trusted = [key.public_key().clone()];
        type Tamper = fn(&mut Vec<LedgerRow>, &mut HashMap<String, Vec<u8>>, &SigningKey);
        type Want = Vec<(Option<u64>, &'static str)>;
        let cases: Vec<(&str, Tamper, Want)> = vec![
            (
                "deleted row",
                |rows, _, _| {
                    rows.remove(2);
                },
                vec![(Some(4), "SeqGap"), (Some(4), "ChainBroken")],
            ),
            (
                "swapped rows",
                |rows, _, _| {
                    let (a, b) = (rows[1].clone(), rows[2].clone());
                    rows[1] = LedgerRow { seq: 2, ..b };
                    rows[2] = LedgerRow { seq: 3, ..a };
                },
                vec![
                    (Some(2), "ChainBroken"),
                    (Some(3), "ChainBroken"),
                    (Some(4), "ChainBroken"),
                ],
            ),
            (
                "bundle edited",
                |_, store, _| {
                    let env = store.get_mut("b/1.dsse.json").unwrap();
                    let pos = env.len() - 3;
                    env[pos] ^= 1;
                },
                vec![
                    (Some(2), "EnvelopeChanged"),
                    (Some(2), "LeafHashWrong"),
                    (Some(2), "Signature"),
                ],
            ),
            (
                "bundle missing",
                |_, store, _| {
                    store.remove("b/3.dsse.json");
                },
                vec![(Some(4), "BundleMissing")],
            ),
            (
                "bundle re-signed by another key",
                |rows, store, _| {
                    let other = SigningKey::from_seed(&[2; 32]);
                    let env = signed(0, &other);
                    rows[0].envelope_sha256 = crate::bundle::digest(&env);
                    rows[0].leaf_hash = hex::encode(merkle::leaf_hash(&env));
                    store.insert("b/0.dsse.json".into(), env);
                },
                vec![(Some(1), "Signature"), (Some(2), "ChainBroken")],
            ),
            (
                "replayed bundle",
                |rows, store, _| {
                    let old = store["b/1.dsse.json"].clone();
                    let mut row = rows[1].clone();
                    row.seq = 6;
                    row.entry.run_id = "replay".into();
                    row.entry.bundle_path = "b/replay.dsse.json".into();
                    row.prev_sha256 = Some(rows[4].envelope_sha256.clone());
                    store.insert(row.entry.bundle_path.clone(), old);
                    rows.push(row);
                },
                vec![(Some(6), "Replayed")],
            ),
        ];
        for (name, tamper, want) in cases {
            let (mut rows, mut store) = chain(5, &key);
            tamper(&mut rows, &mut store, &key);
            let report = verify(&rows, loader(&store), &trusted, None);
            let got = kinds(&report);
            let want: Vec<(Option<u64>, String)> =
                want.into_iter().map(|(s, k)| (s, k.to_owned())).collect();
            assert_eq!(got, want, "{name}");
            assert!(report.is_tampered(), "{name}");
            for p in &report.problems {
                assert!(
                    p.to_string()
                        .starts_with(&format!("row {} (run ", p.seq.unwrap())),
                    "{p}"
                );
            }
        }
    }

    #[test]
    fn unreadable_bundle_is_not_tampering() {
        let key = SigningKey::from_seed(&[1; 32]);
        let (rows, store) = chain(3, &key);
        let load = |row: &LedgerRow| {
            if row.seq == 2 {
                Err(LoadError::Unavailable("permission denied".into()))
            } else {
                loader(&store)(row)
            }
        };
        let report = verify(&rows, load, &[key.public_key().clone()], None);
        assert_eq!(kinds(&report), [(Some(2), "BundleUnavailable".to_owned())]);
        assert!(!report.is_tampered());
        // The stored leaf hash stands in for the unread bundle.
        let full = verify(&rows, loader(&store), &[key.public_key().clone()], None);
        assert_eq!(report.root, full.root);
    }

    #[test]
    fn checkpoints() {
        let key = SigningKey::from_seed(&[1; 32]);
        let trusted = [key.public_key().clone()];
        let (rows, store) = chain(8, &key);
        let at = |n: usize| {
            let r = verify(&rows[..n], loader(&store), &trusted, None);
            Checkpoint {
                origin: "o".into(),
                size: n as u64,
                root: r.root,
            }
        };
        for n in 0..=8 {
            let report = verify(&rows, loader(&store), &trusted, Some(&at(n)));
            assert!(report.is_ok(), "n={n}: {:?}", report.problems);
        }
        // Truncated after the checkpoint.
        let cp = at(8);
        let report = verify(&rows[..6], loader(&store), &trusted, Some(&cp));
        assert_eq!(kinds(&report), [(None, "Truncated".to_owned())]);
        assert!(
            report.problems[0]
                .to_string()
                .contains("6 rows but a checkpoint committed to 8")
        );
        // A checkpoint over different history.
        let mut forged = at(5);
        forged.root[0] ^= 1;
        let report = verify(&rows, loader(&store), &trusted, Some(&forged));
        assert_eq!(kinds(&report), [(None, "Inconsistent".to_owned())]);
    }
}
