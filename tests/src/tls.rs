//! Certificates for tests that speak TLS: a CA of the test's own, and the
//! server and client certificates it issues (`rcgen`).

/// A certificate authority made for one test.
pub struct Ca {
    /// Its certificate, PEM.
    pub cert_pem: String,
    issuer: rcgen::Issuer<'static, rcgen::KeyPair>,
}

impl Ca {
    /// A new CA named `name`.
    pub fn new(name: &str) -> Self {
        let key = rcgen::KeyPair::generate().expect("a CA key");
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("CA params");
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, name);
        params.key_usages = vec![
            rcgen::KeyUsagePurpose::KeyCertSign,
            rcgen::KeyUsagePurpose::CrlSign,
        ];
        let cert = params.self_signed(&key).expect("a CA certificate");
        Self {
            cert_pem: cert.pem(),
            issuer: rcgen::Issuer::new(params, key),
        }
    }

    /// A certificate and key (PEM) for common name `cn` and names `sans`
    /// (DNS names, or IP addresses written as such).
    pub fn issue(&self, cn: &str, sans: &[&str]) -> (String, String) {
        let key = rcgen::KeyPair::generate().expect("a key");
        let sans: Vec<String> = sans.iter().map(|s| (*s).to_owned()).collect();
        let mut params = rcgen::CertificateParams::new(sans).expect("certificate params");
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, cn);
        let cert = params
            .signed_by(&key, &self.issuer)
            .expect("a signed certificate");
        (cert.pem(), key.serialize_pem())
    }
}
