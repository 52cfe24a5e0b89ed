//! TLS to a PostgreSQL ledger, set in its URL as for libpq: `sslmode`
//! (`disable`, `allow`, `prefer` — the default —, `require`, `verify-ca`,
//! `verify-full`), `sslrootcert` (a PEM file of trusted CAs, or `system`
//! for the operating system's), and `sslcert`/`sslkey` (a client
//! certificate and its key, PEM). tokio-postgres reads the rest of the URL
//! and knows only three of those modes, so these settings are taken out
//! before it parses the URL.
//!
//! As in libpq: `prefer` and `require` encrypt without checking who
//! answers unless `sslrootcert` is given (then the chain is checked),
//! `verify-ca` checks the chain, `verify-full` the chain and the host name,
//! and `sslrootcert=system` is only allowed with `verify-full`. Unlike
//! libpq, no file is read unless the URL names it (so the `verify-*` modes
//! need `sslrootcert`, where libpq would read `~/.postgresql/root.crt`),
//! and `allow` tries TLS first, like `prefer`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use percent_encoding::{AsciiSet, CONTROLS, percent_decode_str, utf8_percent_encode};
use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};
use tokio_postgres::config::SslMode;
use tokio_postgres_rustls::MakeRustlsConnect;

/// The URL parameters this module reads in place of tokio-postgres.
const TLS_KEYS: [&str; 4] = ["sslmode", "sslrootcert", "sslcert", "sslkey"];

/// How much of the server's certificate is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Check {
    /// Nothing: the connection is encrypted, not authenticated.
    Nothing,
    /// That a trusted CA issued it.
    Chain,
    /// That, and that it names the host connected to.
    Full,
}

/// Where trusted CAs come from.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Roots {
    File(PathBuf),
    System,
}

/// A ledger URL's TLS settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Tls {
    mode: SslMode,
    check: Check,
    roots: Option<Roots>,
    client: Option<(PathBuf, PathBuf)>,
}

/// Splits a ledger URL into what tokio-postgres reads and its TLS
/// settings; the error says what is wrong with the URL.
pub(crate) fn split(url: &str) -> Result<(tokio_postgres::Config, Tls), String> {
    let (head, query) = url.split_once('?').unwrap_or((url, ""));
    let mut kept = Vec::new();
    let mut found: [Option<String>; 4] = Default::default();
    for (pair, key, value) in params(query) {
        let key = decode(key)?;
        match TLS_KEYS.iter().position(|k| *k == key) {
            Some(i) => found[i] = Some(decode(value)?),
            None => kept.push(pair),
        }
    }
    let [mode, roots, cert, key] = found;
    let rest = if kept.is_empty() {
        head.to_owned()
    } else {
        format!("{head}?{}", kept.join("&"))
    };
    let mut config = rest.parse::<tokio_postgres::Config>().map_err(|e| {
        match std::error::Error::source(&e) {
            // The source says which option is wrong.
            Some(why) => format!("{e}: {why}"),
            None => e.to_string(),
        }
    })?;
    let tls = Tls::new(mode.as_deref(), roots, cert, key)?;
    config.ssl_mode(tls.mode);
    Ok((config, tls))
}

/// What a file path in a URL's query must have escaped.
const QUERY_VALUE: &AsciiSet = &CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b'#')
    .add(b'%')
    .add(b'&')
    .add(b'+')
    .add(b'=')
    .add(b'?');

/// `url` with its relative `sslrootcert`, `sslcert` and `sslkey` paths
/// taken from `base`, as a relative SQLite path is: a URL in a spec names
/// files in its workspace wherever the gate was started.
pub(crate) fn files_relative_to(url: &str, base: &Path) -> String {
    let Some((head, query)) = url.split_once('?') else {
        return url.to_owned();
    };
    let pairs: Vec<String> = params(query)
        .map(|(pair, key, value)| {
            let file = match decode(key).as_deref() {
                Ok("sslrootcert") => decode(value).ok().filter(|v| v != "system"),
                Ok("sslcert" | "sslkey") => decode(value).ok(),
                _ => None,
            };
            match file.filter(|f| !f.is_empty() && Path::new(f).is_relative()) {
                Some(f) => {
                    let joined = base.join(f);
                    let joined = joined.to_string_lossy();
                    format!("{key}={}", utf8_percent_encode(&joined, QUERY_VALUE))
                }
                None => pair.to_owned(),
            }
        })
        .collect();
    format!("{head}?{}", pairs.join("&"))
}

/// The files a URL's `sslrootcert`, `sslcert` and `sslkey` name: what no
/// process the gate starts for the workspace may read.
pub(crate) fn files(url: &str) -> Vec<std::path::PathBuf> {
    let Some((_, query)) = url.split_once('?') else {
        return Vec::new();
    };
    params(query)
        .filter_map(|(_, key, value)| match decode(key).as_deref() {
            Ok("sslrootcert" | "sslcert" | "sslkey") => decode(value).ok(),
            _ => None,
        })
        .filter(|f| !f.is_empty() && f != "system")
        .map(std::path::PathBuf::from)
        .collect()
}

/// A URL query's parameters as (the pair as written, key, value), both
/// still percent-encoded; a key without `=` has an empty value.
fn params(query: &str) -> impl Iterator<Item = (&str, &str, &str)> {
    query.split('&').filter(|p| !p.is_empty()).map(|pair| {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        (pair, key, value)
    })
}

fn decode(text: &str) -> Result<String, String> {
    percent_decode_str(text)
        .decode_utf8()
        .map(std::borrow::Cow::into_owned)
        .map_err(|_| format!("`{text}` is not UTF-8 once decoded"))
}

impl Tls {
    fn new(
        mode: Option<&str>,
        roots: Option<String>,
        cert: Option<String>,
        key: Option<String>,
    ) -> Result<Self, String> {
        let roots = roots.filter(|r| !r.is_empty()).map(|r| match r.as_str() {
            "system" => Roots::System,
            _ => Roots::File(PathBuf::from(r)),
        });
        let given = roots.is_some();
        let asked = mode.unwrap_or("prefer");
        let (mode, check) = match asked {
            "disable" => (SslMode::Disable, Check::Nothing),
            "allow" | "prefer" => (
                SslMode::Prefer,
                if given { Check::Chain } else { Check::Nothing },
            ),
            "require" => (
                SslMode::Require,
                if given { Check::Chain } else { Check::Nothing },
            ),
            "verify-ca" => (SslMode::Require, Check::Chain),
            "verify-full" => (SslMode::Require, Check::Full),
            other => {
                return Err(format!(
                    "sslmode `{other}` is not one of disable, allow, prefer, require, verify-ca, verify-full"
                ));
            }
        };
        if roots == Some(Roots::System) && check != Check::Full {
            return Err(
                "sslrootcert=system checks the server against the system's CAs, which needs sslmode=verify-full"
                    .to_owned(),
            );
        }
        // libpq would fall back to ~/.postgresql/root.crt; the gate reads
        // only what the URL names (and library crates read no environment).
        if roots.is_none() && check != Check::Nothing {
            return Err(format!(
                "sslmode={asked} checks the server against trusted CAs: name them with \
                 sslrootcert=FILE (PEM) or sslrootcert=system"
            ));
        }
        let client = match (
            cert.filter(|c| !c.is_empty()),
            key.filter(|k| !k.is_empty()),
        ) {
            (Some(cert), Some(key)) => Some((PathBuf::from(cert), PathBuf::from(key))),
            (None, None) => None,
            _ => return Err("sslcert and sslkey go together: name both or neither".to_owned()),
        };
        Ok(Self {
            mode,
            check,
            roots,
            client,
        })
    }

    /// The connector for these settings, with the files they name read.
    pub(crate) fn connector(&self) -> Result<MakeRustlsConnect, String> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = ClientConfig::builder_with_provider(Arc::clone(&provider))
            .with_safe_default_protocol_versions()
            .map_err(|e| format!("TLS: {e}"))?;
        let webpki = match (&self.roots, self.check) {
            (Some(roots), Check::Chain | Check::Full) => Some(
                WebPkiServerVerifier::builder_with_provider(
                    Arc::new(root_store(roots)?),
                    Arc::clone(&provider),
                )
                .build()
                .map_err(|e| format!("TLS: {e}"))?,
            ),
            _ => None,
        };
        let verifier = Arc::new(CertCheck {
            check: self.check,
            webpki,
            provider,
        });
        let builder = builder
            .dangerous()
            .with_custom_certificate_verifier(verifier);
        let config = match &self.client {
            None => builder.with_no_client_auth(),
            Some((cert, key)) => {
                let certs = CertificateDer::pem_file_iter(cert)
                    .and_then(Iterator::collect::<Result<Vec<_>, _>>)
                    .map_err(|e| format!("sslcert {}: {e}", cert.display()))?;
                let key = PrivateKeyDer::from_pem_file(key)
                    .map_err(|e| format!("sslkey {}: {e}", key.display()))?;
                builder
                    .with_client_auth_cert(certs, key)
                    .map_err(|e| format!("sslcert and sslkey: {e}"))?
            }
        };
        Ok(MakeRustlsConnect::new(config))
    }
}

fn root_store(roots: &Roots) -> Result<RootCertStore, String> {
    let mut store = RootCertStore::empty();
    match roots {
        Roots::File(path) => {
            let certs = CertificateDer::pem_file_iter(path)
                .and_then(Iterator::collect::<Result<Vec<_>, _>>)
                .map_err(|e| format!("sslrootcert {}: {e}", path.display()))?;
            if certs.is_empty() {
                return Err(format!(
                    "sslrootcert {}: no certificate in it",
                    path.display()
                ));
            }
            for cert in certs {
                store
                    .add(cert)
                    .map_err(|e| format!("sslrootcert {}: {e}", path.display()))?;
            }
        }
        Roots::System => {
            let found = rustls_native_certs::load_native_certs();
            let (added, _) = store.add_parsable_certificates(found.certs);
            if added == 0 {
                return Err(format!(
                    "sslrootcert=system: no CA certificate found on this system{}",
                    found
                        .errors
                        .first()
                        .map(|e| format!(" ({e})"))
                        .unwrap_or_default()
                ));
            }
        }
    }
    Ok(store)
}

/// Checks the server's certificate as far as the mode says; the
/// handshake's signatures are checked in every mode, so even unchecked the
/// session is the one the certificate's key holder set up.
#[derive(Debug)]
struct CertCheck {
    check: Check,
    /// The trusted CAs' verifier, for `Chain` and `Full`.
    webpki: Option<Arc<WebPkiServerVerifier>>,
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for CertCheck {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        if self.check == Check::Nothing {
            return Ok(ServerCertVerified::assertion());
        }
        // A check with nothing to check against fails closed.
        let Some(webpki) = &self.webpki else {
            return Err(rustls::Error::General(
                "no trusted CA to check against".into(),
            ));
        };
        let verified =
            webpki.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now);
        match verified {
            // The verifier checks the chain before the name, so a wrong
            // name means the chain was good: enough for `verify-ca`.
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) if self.check == Check::Chain => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let algorithms = &self.provider.signature_verification_algorithms;
        rustls::crypto::verify_tls12_signature(message, cert, dss, algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let algorithms = &self.provider.signature_verification_algorithms;
        rustls::crypto::verify_tls13_signature(message, cert, dss, algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_split_into_config_and_tls() {
        let root = |p: &str| Some(Roots::File(PathBuf::from(p)));
        // (url, mode, check, roots, client, or the error's start)
        type Want = Result<(SslMode, Check, Option<Roots>, bool), &'static str>;
        let cases: Vec<(&str, Want)> = vec![
            (
                "postgres://u@h/db",
                Ok((SslMode::Prefer, Check::Nothing, None, false)),
            ),
            (
                "postgres://u@h/db?sslmode=disable",
                Ok((SslMode::Disable, Check::Nothing, None, false)),
            ),
            (
                "postgres://u@h/db?sslmode=allow",
                Ok((SslMode::Prefer, Check::Nothing, None, false)),
            ),
            (
                "postgres://u@h/db?sslmode=require&connect_timeout=2",
                Ok((SslMode::Require, Check::Nothing, None, false)),
            ),
            (
                "postgres://u@h/db?sslmode=require&sslrootcert=%2Fetc%2Fca.pem",
                Ok((SslMode::Require, Check::Chain, root("/etc/ca.pem"), false)),
            ),
            (
                "postgres://u@h/db?sslrootcert=/ca.pem",
                Ok((SslMode::Prefer, Check::Chain, root("/ca.pem"), false)),
            ),
            (
                "postgres://u@h/db?sslmode=verify-ca&sslrootcert=/ca.pem",
                Ok((SslMode::Require, Check::Chain, root("/ca.pem"), false)),
            ),
            (
                "postgres://u@h/db?sslmode=verify-full&sslrootcert=system",
                Ok((SslMode::Require, Check::Full, Some(Roots::System), false)),
            ),
            (
                "postgres://u@h/db?sslmode=verify-full",
                Err("sslmode=verify-full checks the server against trusted CAs"),
            ),
            (
                "postgres://u@h/db?sslmode=require&sslcert=/c.pem&sslkey=/k.pem",
                Ok((SslMode::Require, Check::Nothing, None, true)),
            ),
            (
                "postgres://u@h/db?sslmode=verify",
                Err("sslmode `verify` is not one of"),
            ),
            (
                "postgres://u@h/db?sslmode=require&sslrootcert=system",
                Err("sslrootcert=system checks"),
            ),
            (
                "postgres://u@h/db?sslcert=/c.pem",
                Err("sslcert and sslkey go together"),
            ),
            (
                "postgres://u@h/db?sslmode=require&nonsense=1",
                Err("invalid connection string: unknown option `nonsense`"),
            ),
        ];
        for (url, want) in cases {
            let got = split(url).map(|(config, tls)| {
                assert_eq!(config.get_ssl_mode(), tls.mode, "{url}");
                (tls.mode, tls.check, tls.roots, tls.client.is_some())
            });
            match (got, want) {
                (Ok(got), Ok(want)) => assert_eq!(got, want, "{url}"),
                (Err(e), Err(start)) => assert!(e.starts_with(start), "{url}: {e}"),
                (got, want) => panic!("{url}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn relative_files_are_taken_from_the_base() {
        let base = Path::new("/work/shop");
        let cases = [
            ("postgres://h/db", "postgres://h/db"),
            (
                "postgres://h/db?sslmode=verify-full&sslrootcert=ci/ca.pem",
                "postgres://h/db?sslmode=verify-full&sslrootcert=/work/shop/ci/ca.pem",
            ),
            (
                "postgres://h/db?sslmode=verify-full&sslrootcert=system",
                "postgres://h/db?sslmode=verify-full&sslrootcert=system",
            ),
            (
                "postgres://h/db?sslrootcert=/etc/ca.pem",
                "postgres://h/db?sslrootcert=/etc/ca.pem",
            ),
            (
                "postgres://h/db?sslcert=c%20d.pem&sslkey=k%26.pem&application_name=a%26b",
                "postgres://h/db?sslcert=/work/shop/c%20d.pem&sslkey=/work/shop/k%26.pem&application_name=a%26b",
            ),
        ];
        for (url, want) in cases {
            let got = files_relative_to(url, base);
            assert_eq!(got, want);
            // What the rewritten URL names, once decoded, is the joined path.
            split(&got).unwrap();
        }
        let (_, tls) = split(&files_relative_to(
            "postgres://h/db?sslcert=c%20d.pem&sslkey=k%26.pem",
            base,
        ))
        .unwrap();
        assert_eq!(
            tls.client,
            Some((base.join("c d.pem"), base.join("k&.pem")))
        );
    }

    #[test]
    fn other_parameters_reach_tokio_postgres() {
        let (config, _) =
            split("postgres://u@h:5433/db?connect_timeout=7&sslmode=require&application_name=ci")
                .unwrap();
        assert_eq!(
            config.get_connect_timeout(),
            Some(&std::time::Duration::from_secs(7))
        );
        assert_eq!(config.get_application_name(), Some("ci"));
        assert_eq!(config.get_dbname(), Some("db"));
    }
}
