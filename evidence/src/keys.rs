//! ed25519 signing keys: generation, PEM files, key ids.
//!
//! The private key is stored as PKCS#8 v1 PEM (`-----BEGIN PRIVATE KEY-----`,
//! the form OpenSSL and Python's `cryptography` read) with mode 0600; the
//! public key as SPKI PEM. A key id is the securesystemslib default, so
//! third-party DSSE verifiers find our key by the id in the signature.

use std::fmt;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use ed25519_dalek::pkcs8::spki::der::pem::LineEnding;
use ed25519_dalek::pkcs8::{
    DecodePrivateKey, DecodePublicKey, EncodePrivateKey, EncodePublicKey, KeypairBytes,
};
use ed25519_dalek::{Signature, Signer, VerifyingKey};
use sha2::{Digest as _, Sha256};

use crate::place::{self, Existing};

/// File name of the private key inside a key directory.
pub const PRIVATE_KEY_FILE: &str = "signing.key";
/// File name of the public key inside a key directory.
pub const PUBLIC_KEY_FILE: &str = "signing.pub";

/// A key operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KeyError {
    /// A key file could not be read.
    #[error("cannot read key file {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// A key file could not be written.
    #[error("cannot write key file {}: {source}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// Refused to overwrite an existing private key.
    #[error("{} already exists; refusing to replace a signing key", path.display())]
    Exists {
        /// The existing file.
        path: PathBuf,
    },
    /// A private key file that group or others may read or write.
    #[error(
        "{} has mode {mode:04o}: a signing key must not be accessible to group or others (run `chmod 600 {}`)",
        path.display(),
        path.display()
    )]
    InsecurePermissions {
        /// The key file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// The text is not a key of the expected kind.
    #[error("{origin} is not a valid {expected}: {reason}")]
    Malformed {
        /// Where the text came from: a path, or "PEM text".
        origin: String,
        /// What was expected, e.g. "ed25519 private key (PKCS#8 PEM)".
        expected: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// The operating system's random source failed.
    #[error("cannot get random bytes for a new key: {0}")]
    Random(String),
}

const PRIVATE_PEM: &str = "ed25519 private key (PKCS#8 PEM, -----BEGIN PRIVATE KEY-----)";
const PUBLIC_PEM: &str = "ed25519 public key (SPKI PEM, -----BEGIN PUBLIC KEY-----)";

/// The securesystemslib key id: lowercase hex sha256 of the key's canonical JSON.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KeyId(String);

impl KeyId {
    /// The 64 hex digits.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for KeyId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for KeyId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "KeyId({})", self.0)
    }
}

/// An ed25519 public key with its key id.
#[derive(Clone, PartialEq, Eq)]
pub struct PublicKey {
    key: VerifyingKey,
    keyid: KeyId,
}

impl fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PublicKey({})", self.keyid)
    }
}

impl PublicKey {
    /// The key from its raw 32 bytes; fails for bytes that are not a curve point.
    pub fn from_bytes(bytes: &[u8; 32]) -> Result<Self, KeyError> {
        let key = VerifyingKey::from_bytes(bytes).map_err(|e| KeyError::Malformed {
            origin: "raw public key".into(),
            expected: PUBLIC_PEM,
            reason: e.to_string(),
        })?;
        Ok(Self::from_verifying(key))
    }

    fn from_verifying(key: VerifyingKey) -> Self {
        let keyid = keyid_of(&key.to_bytes());
        Self { key, keyid }
    }

    /// Parses SPKI PEM (`-----BEGIN PUBLIC KEY-----`).
    pub fn from_spki_pem(text: &str) -> Result<Self, KeyError> {
        Self::parse_pem(text, "PEM text")
    }

    /// Reads an SPKI PEM file.
    pub fn load(path: &Path) -> Result<Self, KeyError> {
        let text = read_pem(path).map_err(|source| KeyError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Self::parse_pem(&text, &path.display().to_string())
    }

    fn parse_pem(text: &str, origin: &str) -> Result<Self, KeyError> {
        let key =
            VerifyingKey::from_public_key_pem(text.trim()).map_err(|e| KeyError::Malformed {
                origin: origin.to_owned(),
                expected: PUBLIC_PEM,
                reason: e.to_string(),
            })?;
        Ok(Self::from_verifying(key))
    }

    /// The SPKI PEM text, ending in a newline.
    pub fn to_spki_pem(&self) -> String {
        self.key
            .to_public_key_pem(LineEnding::LF)
            .expect("encoding a 32-byte ed25519 public key cannot fail")
    }

    /// Writes the SPKI PEM to `path` atomically (mode 0644), replacing any old file.
    pub fn write_pem(&self, path: &Path) -> Result<(), KeyError> {
        place::write(
            place::own_folder(path),
            path,
            self.to_spki_pem().as_bytes(),
            0o644,
            Existing::Replace,
        )
        .map_err(|source| KeyError::Write {
            path: path.to_path_buf(),
            source,
        })
    }

    /// The securesystemslib key id.
    pub fn keyid(&self) -> &KeyId {
        &self.keyid
    }

    /// The raw 32-byte public key.
    pub fn to_bytes(&self) -> [u8; 32] {
        self.key.to_bytes()
    }

    /// The raw public key as 64 lowercase hex digits (what `gate keys show` prints).
    pub fn to_hex(&self) -> String {
        hex::encode(self.key.to_bytes())
    }

    /// Checks an ed25519 signature over `message` with `verify_strict`
    /// (rejects small-order keys and non-canonical signatures).
    pub fn verify(&self, message: &[u8], signature: &[u8; 64]) -> bool {
        self.key
            .verify_strict(message, &Signature::from_bytes(signature))
            .is_ok()
    }
}

/// The securesystemslib default key id of a raw ed25519 public key.
fn keyid_of(public: &[u8; 32]) -> KeyId {
    // Exactly the canonical JSON securesystemslib hashes: sorted keys, no spaces.
    let canonical = format!(
        r#"{{"keytype":"ed25519","keyval":{{"public":"{}"}},"scheme":"ed25519"}}"#,
        hex::encode(public)
    );
    KeyId(hex::encode(Sha256::digest(canonical.as_bytes())))
}

/// An ed25519 private key and its public half.
pub struct SigningKey {
    key: ed25519_dalek::SigningKey,
    public: PublicKey,
}

impl fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SigningKey({})", self.public.keyid)
    }
}

/// Where [`SigningKey::write_pair`] put the two files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyPairPaths {
    /// The private key (`signing.key`, mode 0600).
    pub private: PathBuf,
    /// The public key (`signing.pub`).
    pub public: PathBuf,
}

impl KeyPairPaths {
    /// The two paths inside `dir`.
    pub fn in_dir(dir: &Path) -> Self {
        Self {
            private: dir.join(PRIVATE_KEY_FILE),
            public: dir.join(PUBLIC_KEY_FILE),
        }
    }
}

impl SigningKey {
    /// A new key from the operating system's random source.
    pub fn generate() -> Result<Self, KeyError> {
        let mut seed = [0u8; 32];
        getrandom::fill(&mut seed).map_err(|e| KeyError::Random(e.to_string()))?;
        let key = Self::from_seed(&seed);
        seed.fill(0);
        Ok(key)
    }

    /// The key whose 32-byte seed (RFC 8032 private key) is `seed`.
    pub fn from_seed(seed: &[u8; 32]) -> Self {
        Self::from_dalek(ed25519_dalek::SigningKey::from_bytes(seed))
    }

    fn from_dalek(key: ed25519_dalek::SigningKey) -> Self {
        let public = PublicKey::from_verifying(key.verifying_key());
        Self { key, public }
    }

    /// Parses PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`, v1 or v2).
    pub fn from_pkcs8_pem(text: &str) -> Result<Self, KeyError> {
        Self::parse_pem(text, "PEM text")
    }

    fn parse_pem(text: &str, origin: &str) -> Result<Self, KeyError> {
        let key = ed25519_dalek::SigningKey::from_pkcs8_pem(text.trim()).map_err(|e| {
            KeyError::Malformed {
                origin: origin.to_owned(),
                expected: PRIVATE_PEM,
                reason: e.to_string(),
            }
        })?;
        Ok(Self::from_dalek(key))
    }

    /// Reads a private key file, refusing one that group or others can access.
    pub fn load(path: &Path) -> Result<Self, KeyError> {
        check_private_mode(path)?;
        let text = read_pem(path).map_err(|source| KeyError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Self::parse_pem(&text, &path.display().to_string())
    }

    /// The key from a `GATE_SIGNING_KEY` value: PEM text when it contains
    /// `-----BEGIN`, otherwise a path to a PEM file.
    pub fn from_pem_or_path(value: &str) -> Result<Self, KeyError> {
        if value.contains("-----BEGIN") {
            Self::from_pkcs8_pem(value)
        } else {
            Self::load(Path::new(value.trim()))
        }
    }

    /// Loads `dir/signing.key`, or generates a pair there if it does not
    /// exist; `true` when a new key was made. Safe against a concurrent
    /// caller doing the same: one key wins and both use it.
    pub fn load_or_generate(dir: &Path) -> Result<(Self, bool), KeyError> {
        let paths = KeyPairPaths::in_dir(dir);
        if paths.private.exists() {
            return Ok((Self::load(&paths.private)?, false));
        }
        let key = Self::generate()?;
        match key.write_pair(dir) {
            Ok(_) => Ok((key, true)),
            Err(KeyError::Exists { .. }) => Ok((Self::load(&paths.private)?, false)),
            Err(e) => Err(e),
        }
    }

    /// The PKCS#8 v1 PEM text (no embedded public key, as OpenSSL writes it).
    pub fn to_pkcs8_pem(&self) -> String {
        let bytes = KeypairBytes {
            secret_key: self.key.to_bytes(),
            public_key: None,
        };
        bytes
            .to_pkcs8_pem(LineEnding::LF)
            .expect("encoding a 32-byte ed25519 seed cannot fail")
            .to_string()
    }

    /// Writes the private key to `path` with mode 0600, atomically, never
    /// replacing an existing file.
    pub fn write_pem(&self, path: &Path) -> Result<(), KeyError> {
        let pem = self.to_pkcs8_pem();
        place::write(
            place::own_folder(path),
            path,
            pem.as_bytes(),
            0o600,
            Existing::Keep,
        )
        .map_err(|source| {
            if source.kind() == io::ErrorKind::AlreadyExists {
                KeyError::Exists {
                    path: path.to_path_buf(),
                }
            } else {
                KeyError::Write {
                    path: path.to_path_buf(),
                    source,
                }
            }
        })
    }

    /// Writes `signing.key` (0600, never replaced) and `signing.pub` into
    /// `dir`, creating `dir` (mode 0700) if needed.
    pub fn write_pair(&self, dir: &Path) -> Result<KeyPairPaths, KeyError> {
        create_key_dir(dir)?;
        let paths = KeyPairPaths::in_dir(dir);
        self.write_pem(&paths.private)?;
        self.public.write_pem(&paths.public)?;
        Ok(paths)
    }

    /// The public half.
    pub fn public_key(&self) -> &PublicKey {
        &self.public
    }

    /// The key id of the public half.
    pub fn keyid(&self) -> &KeyId {
        &self.public.keyid
    }

    /// The ed25519 signature over `message` (deterministic).
    pub fn sign(&self, message: &[u8]) -> [u8; 64] {
        self.key.sign(message).to_bytes()
    }
}

fn create_key_dir(dir: &Path) -> Result<(), KeyError> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir).map_err(|source| KeyError::Write {
        path: dir.to_path_buf(),
        source,
    })
}

/// Fails when a private key file is accessible to group or others.
fn check_private_mode(path: &Path) -> Result<(), KeyError> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let meta = fs::metadata(path).map_err(|source| KeyError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let mode = meta.permissions().mode() & 0o7777;
        if mode & 0o077 != 0 {
            return Err(KeyError::InsecurePermissions {
                path: path.to_path_buf(),
                mode,
            });
        }
    }
    #[cfg(not(unix))]
    let _ = path;
    Ok(())
}

/// A key file's text. A PEM key is well under a KiB: a file far larger is
/// not one, and is refused from its size rather than read.
fn read_pem(path: &Path) -> io::Result<String> {
    gate_specs::read_text_bounded(path, 64 * 1024)
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[allow(
        clippy::disallowed_methods,
        reason = "tests run openssl as an independent reader"
    )]
    fn openssl(args: &[&str]) -> std::process::Output {
        std::process::Command::new("openssl")
            .args(args)
            .output()
            .expect("openssl runs")
    }

    #[test]
    fn keyid_matches_securesystemslib_canonical_json() {
        // RFC 8032 test 1: seed 9d61b1…, public key d75a98…
        let seed: [u8; 32] =
            hex::decode("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60")
                .unwrap()
                .try_into()
                .unwrap();
        let key = SigningKey::from_seed(&seed);
        let public_hex = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a";
        assert_eq!(key.public_key().to_hex(), public_hex);
        let canonical = format!(
            "{{\"keytype\":\"ed25519\",\"keyval\":{{\"public\":\"{public_hex}\"}},\"scheme\":\"ed25519\"}}"
        );
        assert_eq!(
            key.keyid().as_str(),
            hex::encode(Sha256::digest(canonical.as_bytes()))
        );
    }

    #[test]
    fn private_pem_is_pkcs8_v1_and_round_trips() {
        let key = SigningKey::from_seed(&[7; 32]);
        let pem = key.to_pkcs8_pem();
        assert!(pem.starts_with("-----BEGIN PRIVATE KEY-----\n"), "{pem}");
        // PKCS#8 v1 for ed25519 is 48 bytes of DER: 64 base64 characters, one line.
        let body: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
        assert_eq!(body.len(), 64, "v1 has no embedded public key: {pem}");
        let back = SigningKey::from_pkcs8_pem(&pem).unwrap();
        assert_eq!(back.keyid(), key.keyid());
        let public = PublicKey::from_spki_pem(&key.public_key().to_spki_pem()).unwrap();
        assert_eq!(&public, key.public_key());
    }

    #[test]
    fn write_pair_is_0600_and_openssl_reads_it() {
        let dir = tempfile::tempdir().unwrap();
        let keys = dir.path().join("keys");
        let key = SigningKey::generate().unwrap();
        let paths = key.write_pair(&keys).unwrap();
        let mode = fs::metadata(&paths.private).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let private = paths.private.to_str().unwrap();
        let out = openssl(&["pkey", "-in", private, "-noout"]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        // OpenSSL derives the same public key we wrote.
        let out = openssl(&["pkey", "-in", private, "-pubout"]);
        assert!(out.status.success());
        assert_eq!(
            String::from_utf8(out.stdout).unwrap(),
            fs::read_to_string(&paths.public).unwrap()
        );
        assert_eq!(
            SigningKey::load(&paths.private).unwrap().keyid(),
            key.keyid()
        );
        assert_eq!(PublicKey::load(&paths.public).unwrap().keyid(), key.keyid());
    }

    #[test]
    fn never_replaces_an_existing_key() {
        let dir = tempfile::tempdir().unwrap();
        let first = SigningKey::generate().unwrap();
        first.write_pair(dir.path()).unwrap();
        let err = SigningKey::generate()
            .unwrap()
            .write_pair(dir.path())
            .unwrap_err();
        assert!(matches!(err, KeyError::Exists { .. }), "{err}");
        let (loaded, created) = SigningKey::load_or_generate(dir.path()).unwrap();
        assert!(!created);
        assert_eq!(loaded.keyid(), first.keyid());
    }

    #[test]
    fn load_or_generate_creates_once() {
        let dir = tempfile::tempdir().unwrap();
        let (a, created_a) = SigningKey::load_or_generate(dir.path()).unwrap();
        let (b, created_b) = SigningKey::load_or_generate(dir.path()).unwrap();
        assert!(created_a && !created_b);
        assert_eq!(a.keyid(), b.keyid());
    }

    #[test]
    fn loose_permissions_are_an_error_naming_file_and_mode() {
        let dir = tempfile::tempdir().unwrap();
        let paths = SigningKey::generate()
            .unwrap()
            .write_pair(dir.path())
            .unwrap();
        for mode in [0o640, 0o604, 0o660, 0o644] {
            fs::set_permissions(&paths.private, fs::Permissions::from_mode(mode)).unwrap();
            let err = SigningKey::load(&paths.private).unwrap_err();
            let msg = err.to_string();
            assert!(matches!(err, KeyError::InsecurePermissions { mode: m, .. } if m == mode));
            assert!(msg.contains(&paths.private.display().to_string()), "{msg}");
            assert!(msg.contains(&format!("{mode:04o}")), "{msg}");
            // Never silently fixed.
            assert_eq!(
                fs::metadata(&paths.private).unwrap().permissions().mode() & 0o777,
                mode
            );
        }
    }

    #[test]
    fn pem_or_path() {
        let dir = tempfile::tempdir().unwrap();
        let key = SigningKey::generate().unwrap();
        let paths = key.write_pair(dir.path()).unwrap();
        let by_text = SigningKey::from_pem_or_path(&key.to_pkcs8_pem()).unwrap();
        let by_path = SigningKey::from_pem_or_path(paths.private.to_str().unwrap()).unwrap();
        assert_eq!(by_text.keyid(), key.keyid());
        assert_eq!(by_path.keyid(), key.keyid());
        let missing = SigningKey::from_pem_or_path("/nonexistent/signing.key").unwrap_err();
        assert!(matches!(missing, KeyError::Read { .. }), "{missing}");
    }

    #[test]
    fn a_key_file_far_larger_than_a_key_is_refused_unread() {
        let dir = tempfile::tempdir().unwrap();
        let paths = SigningKey::generate()
            .unwrap()
            .write_pair(dir.path())
            .unwrap();
        // Sparse: grown to 2 GiB without writing it.
        for path in [&paths.private, &paths.public] {
            fs::OpenOptions::new()
                .write(true)
                .open(path)
                .unwrap()
                .set_len(2 << 30)
                .unwrap();
        }
        let errors = [
            SigningKey::load(&paths.private).unwrap_err(),
            PublicKey::load(&paths.public).unwrap_err(),
        ];
        for err in errors {
            let KeyError::Read { source, .. } = &err else {
                panic!("not a read error: {err}");
            };
            assert_eq!(source.kind(), io::ErrorKind::FileTooLarge, "{err}");
            assert!(
                err.to_string().contains("it is 2 GiB, over the 64 KiB"),
                "{err}"
            );
        }
    }

    #[test]
    fn malformed_pem_is_a_clear_error() {
        let key = SigningKey::from_seed(&[1; 32]);
        let public_pem = key.public_key().to_spki_pem();
        let cases: &[(&str, &str)] = &[
            (
                "-----BEGIN PRIVATE KEY-----\nnot base64!\n-----END PRIVATE KEY-----\n",
                "PEM text",
            ),
            (&public_pem, "PRIVATE KEY"),
            (
                "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIA==\n-----END PRIVATE KEY-----\n",
                "PEM text",
            ),
        ];
        for (text, needle) in cases {
            let err = SigningKey::from_pkcs8_pem(text).unwrap_err();
            assert!(matches!(err, KeyError::Malformed { .. }), "{err}");
            assert!(err.to_string().contains(needle), "{err}");
        }
        let err = PublicKey::from_spki_pem(&key.to_pkcs8_pem()).unwrap_err();
        assert!(err.to_string().contains("PUBLIC KEY"), "{err}");
    }

    #[test]
    fn verify_is_strict_and_detects_changes() {
        let key = SigningKey::from_seed(&[3; 32]);
        let sig = key.sign(b"message");
        assert!(key.public_key().verify(b"message", &sig));
        assert!(!key.public_key().verify(b"messagE", &sig));
        let mut bad = sig;
        bad[10] ^= 1;
        assert!(!key.public_key().verify(b"message", &bad));
    }
}
