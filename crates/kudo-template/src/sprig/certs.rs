//! `genCA`, `genSelfSignedCert`, `genSignedCert`, `buildCustomCert` as Sprig v2 makes
//! them (RSA-2048 keys, PKCS#1 PEM, 128-bit serial, server+client auth, validity from
//! `now` for `daysValid` days), with keys and serials from the render's deterministic
//! source and signatures in PKCS#1 v1.5 (deterministic), so a certificate is stable
//! across plans. Validity starts at the render's `now`: callers that use these
//! functions should pass a stable, real timestamp in `RenderOptions::now`.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::Arc;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use gotmpl::Value;
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyIdMethod, KeyUsagePurpose, PublicKeyData, SanType, SerialNumber, SignatureAlgorithm,
    SigningKey,
};
use rsa::pkcs1::{DecodeRsaPrivateKey, EncodeRsaPublicKey};
use rsa::{Pkcs1v15Sign, RsaPrivateKey};
use sha1::Sha1;
use sha2::{Digest, Sha256};

use super::Reg;
use super::args::{R, arity, dict, fail, int, s, string};
use super::conv::strval;
use super::crypto::{SeededRng, rsa_pem, rsa_private_key};
use super::random;

struct RsaSigner {
    key: RsaPrivateKey,
    public_der: Vec<u8>,
}

impl RsaSigner {
    fn new(key: RsaPrivateKey) -> Result<Self, String> {
        let public_der = key
            .to_public_key()
            .to_pkcs1_der()
            .map_err(|e| e.to_string())?
            .as_bytes()
            .to_vec();
        Ok(RsaSigner { key, public_der })
    }

    /// Go puts the SHA-1 of the public key in the subject key identifier.
    fn key_id(&self) -> Vec<u8> {
        Sha1::digest(&self.public_der).to_vec()
    }
}

impl PublicKeyData for RsaSigner {
    fn der_bytes(&self) -> &[u8] {
        &self.public_der
    }

    fn algorithm(&self) -> &'static SignatureAlgorithm {
        &rcgen::PKCS_RSA_SHA256
    }
}

impl SigningKey for RsaSigner {
    fn sign(&self, msg: &[u8]) -> Result<Vec<u8>, rcgen::Error> {
        self.key
            .sign(Pkcs1v15Sign::new::<Sha256>(), &Sha256::digest(msg))
            .map_err(|_| rcgen::Error::RemoteKeyError)
    }
}

fn cert_value(cert: String, key: String) -> Value {
    let mut m: BTreeMap<Arc<str>, Value> = BTreeMap::new();
    m.insert("Cert".into(), s(cert));
    m.insert("Key".into(), s(key));
    Value::Map(Arc::new(m))
}

fn base_params(
    name: &str,
    cn: &str,
    ips: Option<&Value>,
    dns: Option<&Value>,
    days: i64,
    signer: &RsaSigner,
) -> Result<CertificateParams, gotmpl::TemplateError> {
    let mut p = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, cn);
    p.distinguished_name = dn;
    let mut serial = random::bytes(16);
    serial[0] &= 0x7f;
    p.serial_number = Some(SerialNumber::from(serial));
    let start = random::now();
    let end = start.saturating_add(days.saturating_mul(86_400));
    let at = |t: i64| {
        time::OffsetDateTime::from_unix_timestamp(t).map_err(|e| fail(name, e.to_string()))
    };
    p.not_before = at(start)?;
    p.not_after = at(end)?;
    p.key_usages = vec![
        KeyUsagePurpose::KeyEncipherment,
        KeyUsagePurpose::DigitalSignature,
    ];
    p.extended_key_usages = vec![
        ExtendedKeyUsagePurpose::ServerAuth,
        ExtendedKeyUsagePurpose::ClientAuth,
    ];
    p.is_ca = IsCa::ExplicitNoCa;
    p.key_identifier_method = KeyIdMethod::PreSpecified(signer.key_id());
    for ip in list_items(ips) {
        let text = strval(ip);
        let addr: IpAddr = text
            .parse()
            .map_err(|_| fail(name, format!("error parsing ip: {text}")))?;
        p.subject_alt_names.push(SanType::IpAddress(addr));
    }
    for d in list_items(dns) {
        let text = strval(d);
        let ia5 = text
            .clone()
            .try_into()
            .map_err(|_| fail(name, format!("invalid DNS name: {text}")))?;
        p.subject_alt_names.push(SanType::DnsName(ia5));
    }
    Ok(p)
}

fn list_items(v: Option<&Value>) -> Vec<&Value> {
    match v {
        Some(Value::List(items)) => items.iter().collect(),
        _ => Vec::new(),
    }
}

fn new_signer(name: &str) -> Result<RsaSigner, gotmpl::TemplateError> {
    super::random::charge_rsa_key().map_err(|e| fail(name, e))?;
    let key = rsa_private_key(&mut SeededRng::new(), 2048).map_err(|e| fail(name, e))?;
    RsaSigner::new(key).map_err(|e| fail(name, e))
}

fn finish(name: &str, cert: Result<rcgen::Certificate, rcgen::Error>, signer: &RsaSigner) -> R {
    let cert = cert.map_err(|e| fail(name, e.to_string()))?;
    let key = rsa_pem(&signer.key).map_err(|e| fail(name, e))?;
    Ok(cert_value(cert.pem(), key))
}

fn gen_ca(cn: &str, days: i64) -> R {
    let signer = new_signer("genCA")?;
    let mut p = base_params("genCA", cn, None, None, days, &signer)?;
    p.key_usages.push(KeyUsagePurpose::KeyCertSign);
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    finish("genCA", p.self_signed(&signer), &signer)
}

fn gen_self_signed(cn: &str, ips: &Value, dns: &Value, days: i64) -> R {
    let name = "genSelfSignedCert";
    let signer = new_signer(name)?;
    let p = base_params(name, cn, Some(ips), Some(dns), days, &signer)?;
    finish(name, p.self_signed(&signer), &signer)
}

fn gen_signed(cn: &str, ips: &Value, dns: &Value, days: i64, ca: &Value) -> R {
    let name = "genSignedCert";
    let ca = dict(name, ca)?;
    let ca_cert = ca.get("Cert").map(strval).unwrap_or_default();
    let ca_key = ca.get("Key").map(strval).unwrap_or_default();
    let ca_key = RsaPrivateKey::from_pkcs1_pem(&ca_key)
        .map_err(|e| fail(name, format!("error parsing ca key: {e}")))?;
    let ca_signer = RsaSigner::new(ca_key).map_err(|e| fail(name, e))?;
    let issuer = ca_issuer(&ca_cert, ca_signer).map_err(|e| fail(name, e))?;
    let signer = new_signer(name)?;
    let p = base_params(name, cn, Some(ips), Some(dns), days, &signer)?;
    finish(name, p.signed_by(&signer, &issuer), &signer)
}

fn build_custom(b64cert: &str, b64key: &str) -> R {
    let name = "buildCustomCert";
    let cert = STANDARD
        .decode(b64cert)
        .map_err(|_| fail(name, "unable to decode base64 certificate"))?;
    let key = STANDARD
        .decode(b64key)
        .map_err(|_| fail(name, "unable to decode base64 private key"))?;
    let cert = String::from_utf8_lossy(&cert).into_owned();
    let key = String::from_utf8_lossy(&key).into_owned();
    x509_parser_pem(&cert).map_err(|e| fail(name, e))?;
    RsaPrivateKey::from_pkcs1_pem(&key)
        .map_err(|e| fail(name, format!("error parsing prive key: {e}")))?;
    Ok(cert_value(cert, key))
}

/// The CA as an issuer: its subject (common name) and key identifier, read from its
/// certificate.
fn ca_issuer(pem_text: &str, signer: RsaSigner) -> Result<Issuer<'static, RsaSigner>, String> {
    let (_, pem) = x509_parser::pem::parse_x509_pem(pem_text.as_bytes())
        .map_err(|_| "unable to decode ca certificate".to_string())?;
    let cert = pem
        .parse_x509()
        .map_err(|e| format!("error parsing ca certificate: {e}"))?;
    let mut params = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    for cn in cert.subject().iter_common_name() {
        if let Ok(text) = cn.as_str() {
            dn.push(DnType::CommonName, text);
        }
    }
    params.distinguished_name = dn;
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_identifier_method = KeyIdMethod::PreSpecified(signer.key_id());
    Ok(Issuer::new(params, signer))
}

/// Check the certificate parses (Sprig rejects a malformed one).
fn x509_parser_pem(pem_text: &str) -> Result<(), String> {
    let (_, pem) = x509_parser::pem::parse_x509_pem(pem_text.as_bytes())
        .map_err(|_| "unable to decode certificate".to_string())?;
    pem.parse_x509()
        .map(|_| ())
        .map_err(|e| format!("error parsing certificate: {e}"))
}

pub(super) fn register(m: &mut Reg) {
    m.add("genCA", |a| {
        arity("genCA", a, 2)?;
        gen_ca(&string("genCA", &a[0])?, int("genCA", &a[1])?)
    });
    m.add("genSelfSignedCert", |a| {
        arity("genSelfSignedCert", a, 4)?;
        gen_self_signed(
            &string("genSelfSignedCert", &a[0])?,
            &a[1],
            &a[2],
            int("genSelfSignedCert", &a[3])?,
        )
    });
    m.add("genSignedCert", |a| {
        arity("genSignedCert", a, 5)?;
        gen_signed(
            &string("genSignedCert", &a[0])?,
            &a[1],
            &a[2],
            int("genSignedCert", &a[3])?,
            &a[4],
        )
    });
    m.add("buildCustomCert", |a| {
        arity("buildCustomCert", a, 2)?;
        build_custom(
            &string("buildCustomCert", &a[0])?,
            &string("buildCustomCert", &a[1])?,
        )
    });
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use rsa::RsaPublicKey;
    use rsa::pkcs1::DecodeRsaPublicKey;
    use sha2::{Digest, Sha256};
    use x509_parser::prelude::*;

    use crate::{RenderOptions, Vars, render_with};

    const NOW: i64 = 1_700_000_000;

    fn render(text: &str) -> String {
        let vars = Vars {
            name: "inst".into(),
            namespace: "ns".into(),
            params: BTreeMap::new(),
            ..Vars::default()
        };
        let opts = RenderOptions {
            now: Some(NOW),
            seed: None,
        };
        render_with("certs.yaml", text, &vars, &opts)
            .unwrap_or_else(|e| panic!("render failed: {e}"))
    }

    fn der(pem_text: &str) -> Vec<u8> {
        let (_, pem) = x509_parser::pem::parse_x509_pem(pem_text.as_bytes())
            .unwrap_or_else(|e| panic!("not PEM: {e}"));
        pem.contents
    }

    /// Check `cert` was signed by the RSA key whose public part is `issuer_der`'s.
    fn signed_by(cert: &X509Certificate, issuer: &X509Certificate) -> bool {
        let spki = issuer.public_key().subject_public_key.data.as_ref();
        let Ok(key) = RsaPublicKey::from_pkcs1_der(spki) else {
            return false;
        };
        let digest = Sha256::digest(cert.tbs_certificate.as_ref());
        key.verify(
            rsa::Pkcs1v15Sign::new::<Sha256>(),
            &digest,
            cert.signature_value.data.as_ref(),
        )
        .is_ok()
    }

    #[test]
    fn ca_and_signed_certificate_chain() {
        let t = r#"{{- $ca := genCA "my-ca" 365 -}}
{{- $c := genSignedCert "svc" (list "10.0.0.1") (list "svc.ns.svc") 30 $ca -}}
{{ $ca.Cert }}|{{ $ca.Key }}|{{ $c.Cert }}|{{ $c.Key }}"#;
        let out = render(t);
        assert_eq!(out, render(t), "certificates must be stable across renders");
        let parts: Vec<&str> = out.split('|').collect();
        assert!(parts[1].starts_with("-----BEGIN RSA PRIVATE KEY-----\n"));
        let ca_der = der(parts[0]);
        let leaf_der = der(parts[2]);
        let (_, ca) = X509Certificate::from_der(&ca_der).unwrap_or_else(|e| panic!("{e}"));
        let (_, leaf) = X509Certificate::from_der(&leaf_der).unwrap_or_else(|e| panic!("{e}"));
        assert!(ca.is_ca());
        assert!(!leaf.is_ca());
        assert_eq!(ca.validity().not_before.timestamp(), NOW);
        assert_eq!(ca.validity().not_after.timestamp(), NOW + 365 * 86_400);
        assert_eq!(leaf.validity().not_after.timestamp(), NOW + 30 * 86_400);
        let cn = |c: &X509Certificate| {
            c.subject()
                .iter_common_name()
                .next()
                .and_then(|n| n.as_str().ok())
                .unwrap_or_default()
                .to_string()
        };
        assert_eq!(cn(&ca), "my-ca");
        assert_eq!(cn(&leaf), "svc");
        assert_eq!(leaf.issuer().to_string(), ca.subject().to_string());
        assert!(signed_by(&ca, &ca));
        assert!(signed_by(&leaf, &ca));
        let san = leaf
            .subject_alternative_name()
            .ok()
            .flatten()
            .map(|s| format!("{:?}", s.value.general_names))
            .unwrap_or_default();
        assert!(
            san.contains("svc.ns.svc") && san.contains("10.0.0.1") || san.contains("[10, 0, 0, 1]"),
            "{san}"
        );
    }

    #[test]
    fn self_signed_and_custom_certificates() {
        let t = r#"{{- $c := genSelfSignedCert "me" nil (list "a.example") 10 -}}
{{- $b := buildCustomCert ($c.Cert | b64enc) ($c.Key | b64enc) -}}
{{ eq $b.Cert $c.Cert }} {{ eq $b.Key $c.Key }}"#;
        assert_eq!(render(t), "true true");
        let bad = r#"{{ buildCustomCert "bm90IGEgY2VydA==" "eA==" }}"#;
        let vars = Vars::default();
        let e = render_with("x", bad, &vars, &RenderOptions::default());
        assert!(e.is_err_and(|e| e.message.contains("unable to decode certificate")));
        let bad_ip = render_with(
            "x",
            r#"{{ genSelfSignedCert "me" (list "not-an-ip") nil 1 }}"#,
            &vars,
            &RenderOptions::default(),
        );
        assert!(bad_ip.is_err_and(|e| e.message.contains("error parsing ip: not-an-ip")));
    }
}
