//! DSSE v1 envelopes: the signed wrapper around every bundle's payload.
//!
//! The signature is over the pre-authentication encoding (PAE) of the payload
//! type and the payload bytes, so neither can be swapped without breaking it.
//! [`sign`] is the one encoder of envelope bytes; [`verify`] accepts what the
//! DSSE spec allows other writers to produce (URL-safe base64, unpadded
//! base64, unknown top-level fields) and nothing that fails to verify.
//! Verifying touches no network and no database.

use base64::Engine as _;
use base64::engine::DecodePaddingMode;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig, STANDARD};
use serde::Serialize;
use serde_json::Value;

use crate::keys::{KeyId, PublicKey, SigningKey};

/// Why an envelope was rejected. Every variant means the envelope is bad
/// (never that it could not be checked).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DsseError {
    /// The bytes are not a JSON object.
    #[error("envelope is not valid JSON: {0}")]
    Json(String),
    /// A required field is absent.
    #[error("envelope has no `{0}` field")]
    MissingField(&'static str),
    /// A field has the wrong JSON type.
    #[error("envelope field `{field}` must be {expected}")]
    FieldType {
        /// The field, e.g. `signatures[0].sig`.
        field: String,
        /// The JSON type it must have.
        expected: &'static str,
    },
    /// A base64 field does not decode.
    #[error("envelope field `{field}` is not valid base64: {reason}")]
    Base64 {
        /// The field.
        field: String,
        /// What the decoder said.
        reason: String,
    },
    /// `signatures` is empty.
    #[error("envelope has no signatures")]
    NoSignatures,
    /// `payloadType` is not the one this envelope must carry.
    #[error("envelope payloadType is {found:?}, expected {expected:?}")]
    PayloadType {
        /// What the caller requires.
        expected: String,
        /// What the envelope says.
        found: String,
    },
    /// A signature is not 64 bytes.
    #[error("signature by key {keyid:?} is {len} bytes, not a 64-byte ed25519 signature")]
    SignatureLength {
        /// The keyid the signature claims.
        keyid: String,
        /// Its length.
        len: usize,
    },
    /// A signature names a trusted key but does not verify under it.
    #[error(
        "signature claiming trusted key {keyid} does not verify: the payload, the payloadType or \
         the signature was altered, or another key signed it under this key id"
    )]
    BadSignature {
        /// The trusted key the signature claims.
        keyid: KeyId,
    },
    /// No signature names (or, lacking a keyid, verifies under) a trusted key.
    #[error("no signature is by a trusted key (signature key ids: {})", keyids.join(", "))]
    UntrustedSigner {
        /// The key ids the signatures carry (empty strings for none).
        keyids: Vec<String>,
    },
}

/// One signature as it appears in an envelope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvelopeSignature {
    /// The key id hint (empty when absent).
    pub keyid: String,
    /// The raw signature bytes.
    pub sig: Vec<u8>,
}

/// An envelope parsed but not verified: nothing in it is trustworthy yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Envelope {
    /// The `payloadType` string.
    pub payload_type: String,
    /// The decoded payload bytes.
    pub payload: Vec<u8>,
    /// The signatures, in envelope order.
    pub signatures: Vec<EnvelopeSignature>,
}

/// What a successful [`verify`] vouches for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    /// The payload type (equal to the one required).
    pub payload_type: String,
    /// The payload bytes the signature covers.
    pub payload: Vec<u8>,
    /// The trusted key whose signature verified.
    pub keyid: KeyId,
}

/// DSSE's pre-authentication encoding:
/// `"DSSEv1" SP len(type) SP type SP len(body) SP body`, lengths in ASCII decimal bytes.
pub fn pae(payload_type: &str, body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(32 + payload_type.len() + body.len());
    out.extend_from_slice(
        format!(
            "DSSEv1 {} {payload_type} {} ",
            payload_type.len(),
            body.len()
        )
        .as_bytes(),
    );
    out.extend_from_slice(body);
    out
}

#[derive(Serialize)]
struct WireSignature<'a> {
    keyid: &'a str,
    sig: String,
}

/// The field order here is the byte layout of every envelope we write.
#[derive(Serialize)]
struct WireEnvelope<'a> {
    payload: String,
    #[serde(rename = "payloadType")]
    payload_type: &'a str,
    signatures: Vec<WireSignature<'a>>,
}

/// Signs `payload` and returns the envelope's JSON bytes:
/// `{"payload":"<base64>","payloadType":"…","signatures":[{"keyid":"…","sig":"<base64>"}]}`.
pub fn sign(payload_type: &str, payload: &[u8], key: &SigningKey) -> Vec<u8> {
    let sig = key.sign(&pae(payload_type, payload));
    let wire = WireEnvelope {
        payload: STANDARD.encode(payload),
        payload_type,
        signatures: vec![WireSignature {
            keyid: key.keyid().as_str(),
            sig: STANDARD.encode(sig),
        }],
    };
    serde_json::to_vec(&wire).expect("an envelope of strings always serialises")
}

impl Envelope {
    /// Parses envelope bytes without checking any signature.
    pub fn parse(bytes: &[u8]) -> Result<Self, DsseError> {
        let value: Value =
            serde_json::from_slice(bytes).map_err(|e| DsseError::Json(e.to_string()))?;
        let Value::Object(obj) = value else {
            return Err(DsseError::Json("the top level is not an object".into()));
        };
        let payload = string_field(&obj, "payload")?;
        let payload_type = string_field(&obj, "payloadType")?.to_owned();
        let signatures = match obj.get("signatures") {
            None => return Err(DsseError::MissingField("signatures")),
            Some(Value::Array(items)) => items,
            Some(_) => {
                return Err(DsseError::FieldType {
                    field: "signatures".into(),
                    expected: "an array",
                });
            }
        };
        let payload = decode_base64("payload", payload)?;
        let signatures = signatures
            .iter()
            .enumerate()
            .map(|(i, s)| parse_signature(i, s))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            payload_type,
            payload,
            signatures,
        })
    }
}

fn string_field<'a>(
    obj: &'a serde_json::Map<String, Value>,
    name: &'static str,
) -> Result<&'a str, DsseError> {
    match obj.get(name) {
        None => Err(DsseError::MissingField(name)),
        Some(Value::String(s)) => Ok(s),
        Some(_) => Err(DsseError::FieldType {
            field: name.into(),
            expected: "a string",
        }),
    }
}

fn parse_signature(index: usize, value: &Value) -> Result<EnvelopeSignature, DsseError> {
    let Value::Object(obj) = value else {
        return Err(DsseError::FieldType {
            field: format!("signatures[{index}]"),
            expected: "an object",
        });
    };
    let field = |name: &str| format!("signatures[{index}].{name}");
    let keyid = match obj.get("keyid") {
        // DSSE makes keyid an optional, unauthenticated hint.
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(_) => {
            return Err(DsseError::FieldType {
                field: field("keyid"),
                expected: "a string",
            });
        }
    };
    let sig = match obj.get("sig") {
        None => return Err(DsseError::MissingField("signatures[].sig")),
        Some(Value::String(s)) => decode_base64(&field("sig"), s)?,
        Some(_) => {
            return Err(DsseError::FieldType {
                field: field("sig"),
                expected: "a string",
            });
        }
    };
    Ok(EnvelopeSignature { keyid, sig })
}

const LENIENT: GeneralPurposeConfig =
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent);
const STANDARD_LENIENT: GeneralPurpose = GeneralPurpose::new(&base64::alphabet::STANDARD, LENIENT);
const URL_SAFE_LENIENT: GeneralPurpose = GeneralPurpose::new(&base64::alphabet::URL_SAFE, LENIENT);

/// Decodes standard or URL-safe base64, padded or not (DSSE allows either).
fn decode_base64(field: &str, text: &str) -> Result<Vec<u8>, DsseError> {
    let engine = if text.contains(['-', '_']) {
        &URL_SAFE_LENIENT
    } else {
        &STANDARD_LENIENT
    };
    engine.decode(text).map_err(|e| DsseError::Base64 {
        field: field.to_owned(),
        reason: e.to_string(),
    })
}

/// Verifies envelope bytes: the payload type must be `payload_type` and at
/// least one signature must verify (strictly) under a key in `trusted`.
///
/// Checks, in order: JSON and fields, at least one signature, the payload
/// type, then signatures. A signature whose keyid names a trusted key is
/// checked only under that key; one without a keyid under every trusted key;
/// one naming an unknown key is skipped.
pub fn verify(
    envelope: &[u8],
    payload_type: &str,
    trusted: &[PublicKey],
) -> Result<Verified, DsseError> {
    let env = Envelope::parse(envelope)?;
    if env.signatures.is_empty() {
        return Err(DsseError::NoSignatures);
    }
    if env.payload_type != payload_type {
        return Err(DsseError::PayloadType {
            expected: payload_type.to_owned(),
            found: env.payload_type,
        });
    }
    let message = pae(&env.payload_type, &env.payload);
    // The first failure of a signature that names a trusted key; reported
    // only if no signature verifies.
    let mut failure: Option<DsseError> = None;
    for s in &env.signatures {
        let candidates: Vec<&PublicKey> = if s.keyid.is_empty() {
            trusted.iter().collect()
        } else {
            trusted
                .iter()
                .filter(|k| k.keyid().as_str() == s.keyid)
                .collect()
        };
        if candidates.is_empty() {
            continue;
        }
        let Ok(sig) = <[u8; 64]>::try_from(s.sig.as_slice()) else {
            failure.get_or_insert_with(|| DsseError::SignatureLength {
                keyid: s.keyid.clone(),
                len: s.sig.len(),
            });
            continue;
        };
        if let Some(key) = candidates.iter().find(|k| k.verify(&message, &sig)) {
            return Ok(Verified {
                payload_type: env.payload_type,
                payload: env.payload,
                keyid: key.keyid().clone(),
            });
        }
        if !s.keyid.is_empty() {
            failure.get_or_insert_with(|| DsseError::BadSignature {
                keyid: candidates[0].keyid().clone(),
            });
        }
    }
    Err(failure.unwrap_or_else(|| DsseError::UntrustedSigner {
        keyids: env.signatures.into_iter().map(|s| s.keyid).collect(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    const TYPE: &str = "application/vnd.in-toto+json";

    fn key(seed: u8) -> SigningKey {
        SigningKey::from_seed(&[seed; 32])
    }

    #[test]
    fn pae_matches_the_spec_example() {
        // The DSSE protocol document's test vector.
        assert_eq!(
            pae("http://example.com/HelloWorld", b"hello world"),
            b"DSSEv1 29 http://example.com/HelloWorld 11 hello world"
        );
        assert_eq!(pae("", b""), b"DSSEv1 0  0 ");
        // Lengths are byte counts, not characters.
        assert_eq!(pae("é", "ü".as_bytes()), "DSSEv1 2 é 2 ü".as_bytes());
    }

    #[test]
    fn signed_envelope_has_the_documented_layout_and_verifies() {
        let k = key(1);
        let bytes = sign(TYPE, b"{\"a\":1}", &k);
        let text = String::from_utf8(bytes.clone()).unwrap();
        let sig = Envelope::parse(&bytes).unwrap().signatures[0].sig.clone();
        assert_eq!(
            text,
            format!(
                "{{\"payload\":\"eyJhIjoxfQ==\",\"payloadType\":\"{TYPE}\",\"signatures\":[{{\"keyid\":\"{}\",\"sig\":\"{}\"}}]}}",
                k.keyid(),
                STANDARD.encode(&sig)
            )
        );
        let v = verify(
            &bytes,
            TYPE,
            &[key(2).public_key().clone(), k.public_key().clone()],
        )
        .unwrap();
        assert_eq!(v.payload, b"{\"a\":1}");
        assert_eq!(&v.keyid, k.keyid());
    }

    #[test]
    fn structural_errors() {
        let k = key(1);
        let trusted = [k.public_key().clone()];
        let cases: &[(&str, DsseError)] = &[
            ("not json", DsseError::Json(String::new())),
            ("[1]", DsseError::Json(String::new())),
            (
                r#"{"payloadType":"t","signatures":[]}"#,
                DsseError::MissingField("payload"),
            ),
            (
                r#"{"payload":"","signatures":[]}"#,
                DsseError::MissingField("payloadType"),
            ),
            (
                r#"{"payload":"","payloadType":"t"}"#,
                DsseError::MissingField("signatures"),
            ),
            (
                r#"{"payload":"","payloadType":"t","signatures":[{"keyid":"k"}]}"#,
                DsseError::MissingField("signatures[].sig"),
            ),
            (
                r#"{"payload":1,"payloadType":"t","signatures":[]}"#,
                DsseError::FieldType {
                    field: "payload".into(),
                    expected: "a string",
                },
            ),
            (
                r#"{"payload":"!!","payloadType":"t","signatures":[]}"#,
                DsseError::Base64 {
                    field: "payload".into(),
                    reason: String::new(),
                },
            ),
            (
                r#"{"payload":"","payloadType":"t","signatures":[]}"#,
                DsseError::NoSignatures,
            ),
            (
                r#"{"payload":"","payloadType":"t","signatures":[{"keyid":"","sig":"AAAA"}]}"#,
                DsseError::PayloadType {
                    expected: TYPE.into(),
                    found: "t".into(),
                },
            ),
        ];
        for (input, want) in cases {
            let got = verify(input.as_bytes(), TYPE, &trusted).unwrap_err();
            assert_eq!(
                std::mem::discriminant(&got),
                std::mem::discriminant(want),
                "{input}: {got}"
            );
            if !matches!(want, DsseError::Json(_) | DsseError::Base64 { .. }) {
                assert_eq!(&got, want, "{input}");
            }
        }
    }

    #[test]
    fn signature_of_wrong_length_is_named() {
        let k = key(1);
        let body = format!(
            r#"{{"payload":"","payloadType":"{TYPE}","signatures":[{{"keyid":"{}","sig":"AAAA"}}]}}"#,
            k.keyid()
        );
        let err = verify(body.as_bytes(), TYPE, &[k.public_key().clone()]).unwrap_err();
        assert!(
            matches!(err, DsseError::SignatureLength { len: 3, .. }),
            "{err}"
        );
    }

    #[test]
    fn missing_keyid_tries_every_trusted_key() {
        let k = key(1);
        let env = Envelope::parse(&sign(TYPE, b"x", &k)).unwrap();
        let body = format!(
            r#"{{"payload":"eA","payloadType":"{TYPE}","signatures":[{{"sig":"{}"}}]}}"#,
            STANDARD.encode(&env.signatures[0].sig)
        );
        let v = verify(
            body.as_bytes(),
            TYPE,
            &[key(9).public_key().clone(), k.public_key().clone()],
        )
        .unwrap();
        assert_eq!(&v.keyid, k.keyid());
        let err = verify(body.as_bytes(), TYPE, &[key(9).public_key().clone()]).unwrap_err();
        assert_eq!(
            err,
            DsseError::UntrustedSigner {
                keyids: vec![String::new()]
            }
        );
    }

    #[test]
    fn untrusted_signer_lists_the_key_ids() {
        let bytes = sign(TYPE, b"x", &key(1));
        let err = verify(&bytes, TYPE, &[key(2).public_key().clone()]).unwrap_err();
        assert_eq!(
            err,
            DsseError::UntrustedSigner {
                keyids: vec![key(1).keyid().to_string()]
            }
        );
    }

    #[test]
    fn base64_forms() {
        let cases = [
            ("aGk=", Some(b"hi".to_vec())),
            ("aGk", Some(b"hi".to_vec())),
            ("-_8=", Some(vec![0xfb, 0xff])),
            ("-_8", Some(vec![0xfb, 0xff])),
            ("+/8=", Some(vec![0xfb, 0xff])),
            ("+_8=", None),
            ("a", None),
        ];
        for (text, want) in cases {
            assert_eq!(decode_base64("f", text).ok(), want, "{text}");
        }
    }
}
