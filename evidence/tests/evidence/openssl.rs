//! OpenSSL, an independent ed25519 implementation, agrees with our
//! signatures byte for byte and verifies them over the PAE bytes.

use std::fs;

use gate_evidence::dsse::{self, Envelope};
use gate_evidence::statement::PAYLOAD_TYPE;

use crate::common::{self, SEED, run};

/// RFC 8410 PKCS#8 v1 prefix of an ed25519 private key; the 32-byte seed follows.
const PKCS8_ED25519_PREFIX: &str = "302e020100300506032b657004220420";

#[test]
fn signature_equals_openssl_pkeyutl_sign() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    let names = common::workspace(&ws);
    let key = common::fixed_key();
    let payload = common::statement(&ws, &names, 1).to_payload();
    let envelope = dsse::sign(PAYLOAD_TYPE, &payload, &key);
    let ours = Envelope::parse(&envelope).unwrap().signatures[0]
        .sig
        .clone();

    // The key reaches OpenSSL as DER built here from the seed, not through our encoder.
    let der = [hex::decode(PKCS8_ED25519_PREFIX).unwrap(), SEED.to_vec()].concat();
    let der_path = dir.path().join("key.der");
    let pem_path = dir.path().join("key.pem");
    fs::write(&der_path, der).unwrap();
    let out = run(
        "openssl",
        &[
            "pkey",
            "-inform",
            "DER",
            "-in",
            der_path.to_str().unwrap(),
            "-out",
            pem_path.to_str().unwrap(),
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // OpenSSL's PEM of the same key is exactly the one we write.
    assert_eq!(fs::read_to_string(&pem_path).unwrap(), key.to_pkcs8_pem());

    let pae_path = dir.path().join("pae.bin");
    let sig_path = dir.path().join("sig.bin");
    fs::write(&pae_path, dsse::pae(PAYLOAD_TYPE, &payload)).unwrap();
    let out = run(
        "openssl",
        &[
            "pkeyutl",
            "-sign",
            "-rawin",
            "-inkey",
            pem_path.to_str().unwrap(),
            "-in",
            pae_path.to_str().unwrap(),
            "-out",
            sig_path.to_str().unwrap(),
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        fs::read(&sig_path).unwrap(),
        ours,
        "ed25519 is deterministic: same key, same bytes, same signature"
    );
}

fn openssl_verify(dir: &std::path::Path, pae: &[u8], sig: &[u8], public_pem: &str) -> bool {
    let (pae_path, sig_path, pub_path) = (
        dir.join("pae.bin"),
        dir.join("sig.bin"),
        dir.join("pub.pem"),
    );
    fs::write(&pae_path, pae).unwrap();
    fs::write(&sig_path, sig).unwrap();
    fs::write(&pub_path, public_pem).unwrap();
    let out = run(
        "openssl",
        &[
            "pkeyutl",
            "-verify",
            "-pubin",
            "-inkey",
            pub_path.to_str().unwrap(),
            "-rawin",
            "-in",
            pae_path.to_str().unwrap(),
            "-sigfile",
            sig_path.to_str().unwrap(),
        ],
    );
    out.status.success()
}

#[test]
fn openssl_verifies_our_envelope_and_rejects_changes() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    let names = common::workspace(&ws);
    // A fresh random key, so the check does not lean on the golden seed.
    let key = gate_evidence::SigningKey::generate().unwrap();
    let envelope = gate_evidence::bundle::seal(&common::statement(&ws, &names, 2), &key);
    let parsed = Envelope::parse(&envelope).unwrap();
    let pae = dsse::pae(&parsed.payload_type, &parsed.payload);
    let sig = &parsed.signatures[0].sig;
    let public_pem = key.public_key().to_spki_pem();
    assert!(openssl_verify(dir.path(), &pae, sig, &public_pem));

    let mut flipped = pae.clone();
    let last = flipped.len() - 2;
    flipped[last] ^= 0x01;
    assert!(!openssl_verify(dir.path(), &flipped, sig, &public_pem));
    let other = gate_evidence::SigningKey::generate().unwrap();
    assert!(!openssl_verify(
        dir.path(),
        &pae,
        sig,
        &other.public_key().to_spki_pem()
    ));
}
