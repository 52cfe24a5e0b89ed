//! The rows `gate report` and `gate metrics` have vouched for, kept so a
//! row's bundle is fetched and verified once, not on every report.
//!
//! An entry is the row's envelope digest (the bundle it names) and its
//! stamp, a digest of every column of the row and of the report rows it
//! derives (`run_facts`, `run_models`, `run_roles`, which a report counts)
//! as stored when its bundle vouched for it and they were what it derives
//! (`RowStamp`, read raw: a cached report parses no row): a row or report
//! row edited since, or one naming another bundle, misses and is checked
//! again. The file lives in the state directory, beside
//! the ledger (never created by a report: without a state directory there
//! is no cache), and is sealed with a key derived from the signing key and
//! bound to the keys the report trusts: a file someone else wrote, or one
//! kept under other keys, is ignored whole. Without the signing key there
//! is no cache, and every row is checked every time.

use std::collections::HashMap;
use std::path::PathBuf;

use gate_evidence::ledger::RowStamp;
use gate_evidence::{PublicKey, SigningKey};

use crate::config::Context;

/// What the file begins with.
const MAGIC: &[u8] = b"gate-report-cache 3\n";

/// A digest, as the cache keeps it.
type Digest = [u8; 32];

/// The rows vouched for, as read and as added this time.
#[derive(Debug)]
pub(crate) struct VouchCache {
    path: PathBuf,
    anchor: PathBuf,
    seal: Digest,
    keys: Digest,
    known: HashMap<Digest, Digest>,
    added: usize,
}

impl VouchCache {
    /// The state directory's cache for `trusted`: `None` when there is no
    /// state directory or no signing key to seal it with. A file that does
    /// not open under this key and these trusted keys starts it empty.
    pub(crate) fn open(ctx: &Context, trusted: &[PublicKey]) -> Option<Self> {
        if trusted.is_empty() || !ctx.state_dir.is_dir() {
            return None;
        }
        let key = signing_key(ctx)?;
        Some(Self::with(
            ctx.state_dir.join(crate::attest::REPORT_CACHE_FILE),
            ctx.workspace.clone(),
            &key,
            trusted,
        ))
    }

    fn with(path: PathBuf, anchor: PathBuf, key: &SigningKey, trusted: &[PublicKey]) -> Self {
        // Ed25519 signatures are deterministic: this one is a secret only
        // the signing key's holder can make.
        let seal = blake3::derive_key(
            "gate report cache seal v1",
            &key.sign(b"gate report cache seal"),
        );
        let mut ids: Vec<&str> = trusted.iter().map(|k| k.keyid().as_str()).collect();
        ids.sort_unstable();
        let keys = *blake3::hash(ids.join("\n").as_bytes()).as_bytes();
        let mut cache = Self {
            path,
            anchor,
            seal,
            keys,
            known: HashMap::new(),
            added: 0,
        };
        if let Ok(bytes) = std::fs::read(&cache.path) {
            cache.known = cache.read(&bytes).unwrap_or_default();
        }
        cache
    }

    /// The entries of a file sealed with this cache's key for its keys.
    fn read(&self, bytes: &[u8]) -> Option<HashMap<Digest, Digest>> {
        let (body, mac) = bytes.split_at_checked(bytes.len().checked_sub(32)?)?;
        let want = blake3::keyed_hash(&self.seal, body);
        // `blake3::Hash` compares in constant time.
        if want != blake3::Hash::from_bytes(mac.try_into().ok()?) {
            return None;
        }
        let rest = body.strip_prefix(MAGIC)?;
        let (keys, entries) = rest.split_at_checked(32)?;
        if keys != self.keys || entries.len() % 64 != 0 {
            return None;
        }
        Some(
            entries
                .chunks_exact(64)
                .filter_map(|e| Some((e[..32].try_into().ok()?, e[32..].try_into().ok()?)))
                .collect(),
        )
    }

    /// Whether the row `stamp` is of, exactly as it is, was vouched for by
    /// its bundle.
    pub(crate) fn vouched(&self, stamp: &RowStamp) -> bool {
        stamp
            .envelope
            .is_some_and(|e| self.known.get(&e) == Some(&whole(stamp)))
    }

    /// Keeps the row `stamp` is of, whose bundle has just vouched for it
    /// (and its report rows, which it derives).
    pub(crate) fn remember(&mut self, stamp: &RowStamp) {
        if let Some(e) = stamp.envelope {
            self.known.insert(e, whole(stamp));
            self.added += 1;
        }
    }

    /// How many rows it holds.
    pub(crate) fn len(&self) -> usize {
        self.known.len()
    }

    /// Writes the cache back, atomically, when rows were added; a failure
    /// to write costs only the next report's time.
    pub(crate) fn save(&self) {
        if self.added == 0 {
            return;
        }
        let mut bytes = Vec::with_capacity(MAGIC.len() + 32 + self.known.len() * 64 + 32);
        bytes.extend_from_slice(MAGIC);
        bytes.extend_from_slice(&self.keys);
        for (e, d) in &self.known {
            bytes.extend_from_slice(e);
            bytes.extend_from_slice(d);
        }
        let mac = blake3::keyed_hash(&self.seal, &bytes);
        bytes.extend_from_slice(mac.as_bytes());
        if let Err(e) = gate_evidence::replace_file(&self.anchor, &self.path, &bytes) {
            tracing::warn!(error = %e, path = %self.path.display(), "cannot keep the report's cache");
        }
    }
}

/// What an entry keeps of a stamp: the row's columns and its report rows
/// together, so an edit to either misses.
fn whole(stamp: &RowStamp) -> Digest {
    let mut h = blake3::Hasher::new();
    h.update(&stamp.columns).update(&stamp.derived);
    *h.finalize().as_bytes()
}

/// The signing key, when there is one already: a report never makes one.
fn signing_key(ctx: &Context) -> Option<SigningKey> {
    if let Some(value) = ctx.env.signing_key() {
        return SigningKey::from_pem_or_path(&value).ok();
    }
    let private = crate::attest::keys_dir(ctx).join(gate_evidence::keys::PRIVATE_KEY_FILE);
    private
        .is_file()
        .then(|| SigningKey::load(&private).ok())
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stamp(seq: u64, verdict: &str) -> RowStamp {
        RowStamp {
            seq,
            envelope: Some(*blake3::hash(&seq.to_le_bytes()).as_bytes()),
            columns: *blake3::hash(verdict.as_bytes()).as_bytes(),
            derived: [7; 32],
        }
    }

    #[test]
    fn a_row_is_vouched_for_only_as_it_was_under_the_same_keys() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(crate::attest::REPORT_CACHE_FILE);
        let key = SigningKey::from_seed(&[1; 32]);
        let other = SigningKey::from_seed(&[2; 32]);
        let trusted = [key.public_key().clone()];
        let open = |k: &SigningKey, t: &[PublicKey]| {
            VouchCache::with(path.clone(), dir.path().to_path_buf(), k, t)
        };
        let mut cache = open(&key, &trusted);
        cache.remember(&stamp(1, "pass"));
        cache.save();
        let again = open(&key, &trusted);
        assert!(again.vouched(&stamp(1, "pass")), "kept");
        assert!(!again.vouched(&stamp(1, "fail")), "a column edited since");
        let facts_edited = RowStamp {
            derived: [8; 32],
            ..stamp(1, "pass")
        };
        assert!(
            !again.vouched(&facts_edited),
            "its report rows edited since"
        );
        assert!(!again.vouched(&stamp(2, "pass")), "never vouched for");
        assert_eq!(open(&other, &trusted).len(), 0, "sealed by another key");
        let more = [key.public_key().clone(), other.public_key().clone()];
        assert_eq!(open(&key, &more).len(), 0, "other trusted keys");
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[MAGIC.len() + 40] ^= 1;
        std::fs::write(&path, &bytes).unwrap();
        assert_eq!(open(&key, &trusted).len(), 0, "tampered with");
    }
}
