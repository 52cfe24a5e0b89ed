//! C2SP signed-note checkpoints of the ledger's Merkle tree.
//!
//! A checkpoint (c2sp.org/tlog-checkpoint) is the note body
//! `<origin>\n<tree size>\n<base64 root hash>\n`; the signed note
//! (c2sp.org/signed-note) appends a blank line and one line per signature,
//! `— <key name> <base64(4-byte key hash ‖ 64-byte ed25519 signature)>\n`,
//! where the signature covers the body bytes and the key hash is the first
//! four bytes of SHA-256(key name ‖ "\n" ‖ 0x01 ‖ public key). An operator
//! keeps a checkpoint elsewhere; a later one must be consistent with it.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use sha2::{Digest as _, Sha256};

use crate::keys::{PublicKey, SigningKey};
use crate::merkle::Hash;

/// The signature type byte of an Ed25519 signed-note key.
const ED25519_TYPE: u8 = 0x01;
/// What starts a signature line: U+2014 EM DASH and a space.
const SIG_PREFIX: &str = "\u{2014} ";
/// Go's note package refuses notes with more signature lines than this.
const MAX_SIGNATURES: usize = 100;

/// A checkpoint or note could not be made, parsed or verified.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CheckpointError {
    /// A key name that signed notes cannot carry.
    #[error("invalid note key name {0:?}: it must be non-empty, without spaces or '+'")]
    KeyName(String),
    /// Text that cannot be a note body.
    #[error("invalid note text: {0}")]
    Text(&'static str),
    /// The note is not in signed-note form.
    #[error("malformed signed note: {0}")]
    Malformed(String),
    /// The body is not a checkpoint.
    #[error("malformed checkpoint: {0}")]
    Body(String),
    /// A signature by the given key is present and does not verify.
    #[error("checkpoint signature by {name} does not verify: the checkpoint was altered")]
    BadSignature {
        /// The key name.
        name: String,
    },
    /// No signature line is by the given key.
    #[error("checkpoint has no signature by key {name} ({key_hash})")]
    NoSignature {
        /// The key name.
        name: String,
        /// The expected key hash, hex.
        key_hash: String,
    },
    /// The checkpoint is for another log.
    #[error("checkpoint origin is {found:?}, expected {expected:?}")]
    Origin {
        /// The origin this ledger uses.
        expected: String,
        /// The origin in the checkpoint.
        found: String,
    },
}

/// The 4-byte signed-note key hash of an ed25519 key under `name`.
pub fn key_hash(name: &str, public: &PublicKey) -> [u8; 4] {
    let mut h = Sha256::new();
    h.update(name.as_bytes());
    h.update(b"\n");
    h.update([ED25519_TYPE]);
    h.update(public.to_bytes());
    let d = h.finalize();
    [d[0], d[1], d[2], d[3]]
}

/// The verifier key text other signed-note tools take:
/// `<name>+<hex key hash>+<base64(0x01 ‖ public key)>`.
pub fn verifier_key(name: &str, public: &PublicKey) -> Result<String, CheckpointError> {
    check_key_name(name)?;
    let mut typed = vec![ED25519_TYPE];
    typed.extend_from_slice(&public.to_bytes());
    Ok(format!(
        "{name}+{}+{}",
        hex::encode(key_hash(name, public)),
        STANDARD.encode(typed)
    ))
}

fn check_key_name(name: &str) -> Result<(), CheckpointError> {
    if name.is_empty() || name.contains('+') || name.chars().any(char::is_whitespace) {
        return Err(CheckpointError::KeyName(name.to_owned()));
    }
    Ok(())
}

fn check_text(text: &str) -> Result<(), CheckpointError> {
    if text.is_empty() {
        return Err(CheckpointError::Text("empty"));
    }
    if !text.ends_with('\n') {
        return Err(CheckpointError::Text("does not end in a newline"));
    }
    if text.contains("\n\n") {
        return Err(CheckpointError::Text("contains a blank line"));
    }
    if text.chars().any(|c| c.is_control() && c != '\n') {
        return Err(CheckpointError::Text("contains a control character"));
    }
    Ok(())
}

/// Signs `text` as a signed note under `name`: the text, a blank line and
/// one signature line.
pub fn sign_note(text: &str, name: &str, key: &SigningKey) -> Result<String, CheckpointError> {
    check_key_name(name)?;
    check_text(text)?;
    let mut sig = key_hash(name, key.public_key()).to_vec();
    sig.extend_from_slice(&key.sign(text.as_bytes()));
    Ok(format!(
        "{text}\n{SIG_PREFIX}{name} {}\n",
        STANDARD.encode(sig)
    ))
}

/// Verifies a signed note against the key `public` under `name` and returns
/// its text. Signatures by other keys are ignored, as the spec requires; one
/// by this key that fails rejects the note.
pub fn open_note<'a>(
    note: &'a str,
    name: &str,
    public: &PublicKey,
) -> Result<&'a str, CheckpointError> {
    check_key_name(name)?;
    let malformed = |why: &str| CheckpointError::Malformed(why.to_owned());
    let split = note
        .rfind("\n\n")
        .ok_or_else(|| malformed("no blank line before the signatures"))?;
    let (text, sigs) = (&note[..=split], &note[split + 2..]);
    if !sigs.ends_with('\n') {
        return Err(malformed(
            "the last signature line does not end in a newline",
        ));
    }
    let want = key_hash(name, public);
    for (count, line) in sigs[..sigs.len() - 1].split('\n').enumerate() {
        if count >= MAX_SIGNATURES {
            return Err(malformed("too many signature lines"));
        }
        let (sig_name, bytes) = parse_signature_line(line)?;
        if sig_name != name || bytes[..4] != want {
            continue;
        }
        let sig: Option<[u8; 64]> = bytes[4..].try_into().ok();
        match sig {
            Some(sig) if public.verify(text.as_bytes(), &sig) => return Ok(text),
            _ => {
                return Err(CheckpointError::BadSignature {
                    name: name.to_owned(),
                });
            }
        }
    }
    Err(CheckpointError::NoSignature {
        name: name.to_owned(),
        key_hash: hex::encode(want),
    })
}

fn parse_signature_line(line: &str) -> Result<(&str, Vec<u8>), CheckpointError> {
    let malformed = |why: String| CheckpointError::Malformed(why);
    let rest = line.strip_prefix(SIG_PREFIX).ok_or_else(|| {
        malformed(format!(
            "signature line {line:?} does not start with \"— \""
        ))
    })?;
    let (name, b64) = rest
        .split_once(' ')
        .ok_or_else(|| malformed(format!("signature line {line:?} has no signature")))?;
    check_key_name(name)
        .map_err(|_| malformed(format!("signature line {line:?} has an invalid key name")))?;
    let bytes = STANDARD
        .decode(b64)
        .map_err(|e| malformed(format!("signature line {line:?}: {e}")))?;
    if bytes.len() < 5 {
        return Err(malformed(format!("signature line {line:?} is too short")));
    }
    Ok((name, bytes))
}

/// A tree head: the size and root of the ledger's Merkle tree under an origin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkpoint {
    /// The log's identity, e.g. `gate.example/ledger` (no spaces or '+').
    pub origin: String,
    /// Number of leaves.
    pub size: u64,
    /// The RFC 6962 root hash.
    pub root: Hash,
}

impl Checkpoint {
    /// The note body: origin, size and base64 root, one per line.
    pub fn body(&self) -> String {
        format!(
            "{}\n{}\n{}\n",
            self.origin,
            self.size,
            STANDARD.encode(self.root)
        )
    }

    /// The signed note text, signed under `key_name` (usually the origin).
    pub fn sign(&self, key_name: &str, key: &SigningKey) -> Result<String, CheckpointError> {
        if self.origin.is_empty()
            || self.origin.contains('+')
            || self.origin.chars().any(char::is_whitespace)
        {
            return Err(CheckpointError::Body(format!(
                "origin {:?} must be non-empty, without spaces or '+'",
                self.origin
            )));
        }
        sign_note(&self.body(), key_name, key)
    }

    /// Verifies a signed checkpoint note under `key_name` and parses it.
    pub fn open(note: &str, key_name: &str, public: &PublicKey) -> Result<Self, CheckpointError> {
        Self::parse_body(open_note(note, key_name, public)?)
    }

    /// Parses a checkpoint body (extension lines after the root are allowed
    /// and ignored).
    pub fn parse_body(text: &str) -> Result<Self, CheckpointError> {
        let bad = |why: String| CheckpointError::Body(why);
        let mut lines = text
            .strip_suffix('\n')
            .ok_or_else(|| bad("does not end in a newline".into()))?
            .split('\n');
        let origin = lines.next().unwrap_or_default();
        if origin.is_empty() {
            return Err(bad("empty origin line".into()));
        }
        let size_text = lines
            .next()
            .ok_or_else(|| bad("no tree size line".into()))?;
        let canonical = !size_text.is_empty()
            && size_text.bytes().all(|b| b.is_ascii_digit())
            && (size_text == "0" || !size_text.starts_with('0'));
        let size = canonical
            .then(|| size_text.parse::<u64>().ok())
            .flatten()
            .ok_or_else(|| bad(format!("tree size {size_text:?} is not a decimal number")))?;
        let root_text = lines
            .next()
            .ok_or_else(|| bad("no root hash line".into()))?;
        let root: Hash = STANDARD
            .decode(root_text)
            .ok()
            .and_then(|b| b.try_into().ok())
            .ok_or_else(|| bad(format!("root hash {root_text:?} is not 32 bytes of base64")))?;
        Ok(Self {
            origin: origin.to_owned(),
            size,
            root,
        })
    }

    /// Fails unless the checkpoint is for `origin`.
    pub fn expect_origin(&self, origin: &str) -> Result<(), CheckpointError> {
        if self.origin == origin {
            Ok(())
        } else {
            Err(CheckpointError::Origin {
                expected: origin.to_owned(),
                found: self.origin.clone(),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::merkle;

    /// The example from Go's golang.org/x/mod/sumdb/note documentation.
    #[test]
    fn reproduces_the_go_note_example() {
        let skey = STANDARD
            .decode("AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz")
            .unwrap();
        assert_eq!(skey[0], ED25519_TYPE);
        let key = SigningKey::from_seed(&skey[1..].try_into().unwrap());
        assert_eq!(
            hex::encode(key_hash("PeterNeumann", key.public_key())),
            "c74f20a3"
        );
        let text = "If you think cryptography is the answer to your problem,\n\
                    then you don't know what your problem is.\n";
        let want = format!(
            "{text}\n\u{2014} PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n"
        );
        assert_eq!(sign_note(text, "PeterNeumann", &key).unwrap(), want);
        assert_eq!(
            open_note(&want, "PeterNeumann", key.public_key()).unwrap(),
            text
        );
        assert_eq!(
            verifier_key("PeterNeumann", key.public_key()).unwrap(),
            "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW"
        );
    }

    fn checkpoint() -> Checkpoint {
        let leaves: Vec<_> = (0..5u8).map(|i| merkle::leaf_hash(&[i])).collect();
        Checkpoint {
            origin: "example.com/gate-ledger".into(),
            size: 5,
            root: merkle::root(&leaves),
        }
    }

    #[test]
    fn sign_open_round_trip() {
        let key = SigningKey::from_seed(&[4; 32]);
        let cp = checkpoint();
        let note = cp.sign(&cp.origin, &key).unwrap();
        assert!(note.starts_with(&format!(
            "example.com/gate-ledger\n5\n{}\n\n\u{2014} ",
            STANDARD.encode(cp.root)
        )));
        assert_eq!(
            Checkpoint::open(&note, &cp.origin, key.public_key()).unwrap(),
            cp
        );
        // Another key's line alongside ours is ignored.
        let other = SigningKey::from_seed(&[8; 32]);
        let extra = sign_note(&cp.body(), "witness.example", &other).unwrap();
        let sig_line = extra.rsplit_once("\n\n").unwrap().1;
        let both = format!("{note}{sig_line}");
        assert_eq!(
            Checkpoint::open(&both, &cp.origin, key.public_key()).unwrap(),
            cp
        );
    }

    #[test]
    fn tampering_and_malformed_notes_are_rejected() {
        let key = SigningKey::from_seed(&[4; 32]);
        let cp = checkpoint();
        let note = cp.sign(&cp.origin, &key).unwrap();
        let other = SigningKey::from_seed(&[8; 32]);
        let bad_sig = {
            let (body, line) = note.rsplit_once(' ').unwrap();
            let mut bytes = STANDARD.decode(line.trim_end()).unwrap();
            bytes[10] ^= 1;
            format!("{body} {}\n", STANDARD.encode(bytes))
        };
        let cases: Vec<(String, &str)> = vec![
            (note.replacen("\n5\n", "\n4\n", 1), "does not verify"),
            (
                note.replacen("example.com", "example.org", 1),
                "does not verify",
            ),
            (bad_sig, "does not verify"),
            (note.replace('\u{2014}', "-"), "does not start with"),
            (note.trim_end().to_owned(), "does not end in a newline"),
            (cp.body(), "no blank line"),
        ];
        for (text, needle) in cases {
            let err = Checkpoint::open(&text, &cp.origin, key.public_key()).unwrap_err();
            assert!(err.to_string().contains(needle), "{text:?}: {err}");
        }
        let err = Checkpoint::open(&note, &cp.origin, other.public_key()).unwrap_err();
        assert!(matches!(err, CheckpointError::NoSignature { .. }), "{err}");
        let err = Checkpoint::open(&note, "other.name", key.public_key()).unwrap_err();
        assert!(matches!(err, CheckpointError::NoSignature { .. }), "{err}");
    }

    #[test]
    fn body_parsing() {
        let root = STANDARD.encode([7u8; 32]);
        let ok = [
            (format!("o\n0\n{root}\n"), 0),
            (format!("o\n18446744073709551615\n{root}\n"), u64::MAX),
            (format!("o\n3\n{root}\nextension line\n"), 3),
        ];
        for (text, size) in ok {
            assert_eq!(
                Checkpoint::parse_body(&text).unwrap().size,
                size,
                "{text:?}"
            );
        }
        let bad = [
            format!("o\n03\n{root}\n"),
            format!("o\n-3\n{root}\n"),
            format!("o\n18446744073709551616\n{root}\n"),
            format!("o\n3\n{root}"),
            "o\n3\nAAAA\n".to_owned(),
            format!("\n3\n{root}\n"),
            "o\n3\n".to_owned(),
        ];
        for text in bad {
            assert!(
                matches!(Checkpoint::parse_body(&text), Err(CheckpointError::Body(_))),
                "{text:?}"
            );
        }
    }

    #[test]
    fn names_and_texts_are_validated() {
        let key = SigningKey::from_seed(&[4; 32]);
        for name in ["", "a b", "a+b", "a\tb"] {
            assert!(matches!(
                sign_note("x\n", name, &key),
                Err(CheckpointError::KeyName(_))
            ));
        }
        for text in ["", "x", "a\n\nb\n", "a\u{7}\n"] {
            assert!(
                matches!(sign_note(text, "k", &key), Err(CheckpointError::Text(_))),
                "{text:?}"
            );
        }
        let cp = Checkpoint {
            origin: "has space".into(),
            ..checkpoint()
        };
        assert!(cp.sign("k", &key).is_err());
        assert!(
            checkpoint()
                .expect_origin("example.com/gate-ledger")
                .is_ok()
        );
        assert!(matches!(
            checkpoint().expect_origin("elsewhere"),
            Err(CheckpointError::Origin { .. })
        ));
    }
}
