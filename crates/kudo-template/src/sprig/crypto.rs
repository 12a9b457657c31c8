//! Hashes, `derivePassword` (the Master Password algorithm Sprig implements),
//! `encryptAES`/`decryptAES` (AES-256-CBC, PKCS#7 padding, IV prepended, base64) and
//! `genPrivateKey`. The random inputs (AES IV, private keys) come from the render's
//! deterministic source (see `random`), so they are stable across plans.
//! Certificates are in `certs`.

use aes::Aes256;
use aes::cipher::{BlockDecrypt, BlockEncrypt, KeyInit, generic_array::GenericArray};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use sha1::Sha1;
use sha2::{Digest, Sha256};

use super::Reg;
use super::args::{R, arity, fail, int, s, string};
use super::random;

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn adler32(data: &[u8]) -> u32 {
    const MOD: u32 = 65_521;
    let (mut a, mut b) = (1u32, 0u32);
    for chunk in data.chunks(5552) {
        for &x in chunk {
            a += u32::from(x);
            b += a;
        }
        a %= MOD;
        b %= MOD;
    }
    (b << 16) | a
}

const MASTER_PASSWORD_SEED: &str = "com.lyndir.masterpassword";

/// Password templates per type (Master Password v3); one is chosen by the seed.
fn password_templates(kind: &str) -> Option<&'static [&'static str]> {
    Some(match kind {
        "maximum" => &["anoxxxxxxxxxxxxxxxxx", "axxxxxxxxxxxxxxxxxno"],
        "long" => &[
            "CvcvnoCvcvCvcv",
            "CvcvCvcvnoCvcv",
            "CvcvCvcvCvcvno",
            "CvccnoCvcvCvcv",
            "CvccCvcvnoCvcv",
            "CvccCvcvCvcvno",
            "CvcvnoCvccCvcv",
            "CvcvCvccnoCvcv",
            "CvcvCvccCvcvno",
            "CvcvnoCvcvCvcc",
            "CvcvCvcvnoCvcc",
            "CvcvCvcvCvccno",
            "CvccnoCvccCvcv",
            "CvccCvccnoCvcv",
            "CvccCvccCvcvno",
            "CvcvnoCvccCvcc",
            "CvcvCvccnoCvcc",
            "CvcvCvccCvccno",
            "CvccnoCvcvCvcc",
            "CvccCvcvnoCvcc",
            "CvccCvcvCvccno",
        ],
        "medium" => &["CvcnoCvc", "CvcCvcno"],
        "short" => &["Cvcn"],
        "basic" => &["aaanaaan", "aannaaan", "aaannaaa"],
        "pin" => &["nnnn"],
        _ => return None,
    })
}

fn template_characters(class: u8) -> &'static [u8] {
    match class {
        b'V' => b"AEIOU",
        b'C' => b"BCDFGHJKLMNPQRSTVWXYZ",
        b'v' => b"aeiou",
        b'c' => b"bcdfghjklmnpqrstvwxyz",
        b'A' => b"AEIOUBCDFGHJKLMNPQRSTVWXYZ",
        b'a' => b"AEIOUaeiouBCDFGHJKLMNPQRSTVWXYZbcdfghjklmnpqrstvwxyz",
        b'n' => b"0123456789",
        b'o' => b"@&%?,=[]_:-+*$#!'^~;()/.",
        _ => b"AEIOUaeiouBCDFGHJKLMNPQRSTVWXYZbcdfghjklmnpqrstvwxyz0123456789!@#$%^&*()",
    }
}

fn derive_password(counter: u32, kind: &str, password: &str, user: &str, site: &str) -> String {
    let Some(templates) = password_templates(kind) else {
        return format!("cannot find password template {kind}");
    };
    let mut salt = MASTER_PASSWORD_SEED.as_bytes().to_vec();
    salt.extend_from_slice(&(user.len() as u32).to_be_bytes());
    salt.extend_from_slice(user.as_bytes());
    let mut key = [0u8; 64];
    let derived = scrypt::Params::new(15, 8, 2, 64)
        .map_err(|e| e.to_string())
        .and_then(|p| {
            scrypt::scrypt(password.as_bytes(), &salt, &p, &mut key).map_err(|e| e.to_string())
        });
    if let Err(e) = derived {
        return format!("failed to derive password: {e}");
    }
    let mut message = MASTER_PASSWORD_SEED.as_bytes().to_vec();
    message.extend_from_slice(&(site.len() as u32).to_be_bytes());
    message.extend_from_slice(site.as_bytes());
    message.extend_from_slice(&counter.to_be_bytes());
    let Ok(mut mac) = <Hmac<Sha256> as Mac>::new_from_slice(&key) else {
        return "failed to derive password: bad key".into();
    };
    mac.update(&message);
    let seed = mac.finalize().into_bytes();
    let template = templates[usize::from(seed[0]) % templates.len()];
    template
        .bytes()
        .enumerate()
        .map(|(i, class)| {
            let chars = template_characters(class);
            chars[usize::from(seed[i + 1]) % chars.len()] as char
        })
        .collect()
}

fn aes_key(password: &str) -> Aes256 {
    let mut key = [0u8; 32];
    let n = password.len().min(32);
    key[..n].copy_from_slice(&password.as_bytes()[..n]);
    Aes256::new(GenericArray::from_slice(&key))
}

fn encrypt_aes(password: &str, plaintext: &str) -> String {
    if plaintext.is_empty() {
        return String::new();
    }
    let cipher = aes_key(password);
    let mut content = plaintext.as_bytes().to_vec();
    let pad = 16 - content.len() % 16;
    content.extend(std::iter::repeat_n(pad as u8, pad));
    let mut out = random::bytes(16);
    let mut prev = [0u8; 16];
    prev.copy_from_slice(&out);
    for chunk in content.chunks(16) {
        let mut block = [0u8; 16];
        for (i, b) in chunk.iter().enumerate() {
            block[i] = b ^ prev[i];
        }
        let mut ga = GenericArray::from(block);
        cipher.encrypt_block(&mut ga);
        prev.copy_from_slice(&ga);
        out.extend_from_slice(&ga);
    }
    STANDARD.encode(out)
}

fn decrypt_aes(password: &str, crypt64: &str) -> Result<String, String> {
    if crypt64.is_empty() {
        return Ok(String::new());
    }
    let data = STANDARD.decode(crypt64).map_err(|e| e.to_string())?;
    if data.len() < 16 || data.len() % 16 != 0 {
        return Err("crypto/cipher: input not full blocks".into());
    }
    let cipher = aes_key(password);
    let mut out = Vec::with_capacity(data.len() - 16);
    let mut prev: &[u8] = &data[..16];
    for chunk in data[16..].chunks(16) {
        let mut ga = GenericArray::clone_from_slice(chunk);
        cipher.decrypt_block(&mut ga);
        out.extend(ga.iter().zip(prev).map(|(a, b)| a ^ b));
        prev = chunk;
    }
    let pad = usize::from(out.last().copied().unwrap_or(0));
    if pad > out.len() {
        return Err("runtime error: slice bounds out of range".into());
    }
    out.truncate(out.len() - pad);
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// The render's deterministic byte stream as a `rand_core` generator for key
/// generation: one draw from `random` keys a SHA-256 counter stream.
pub(super) struct SeededRng {
    key: Vec<u8>,
    block: u64,
    buf: Vec<u8>,
}

impl SeededRng {
    pub(super) fn new() -> Self {
        SeededRng {
            key: random::bytes(32),
            block: 0,
            buf: Vec::new(),
        }
    }
}

impl rand_core::RngCore for SeededRng {
    fn next_u32(&mut self) -> u32 {
        let mut b = [0u8; 4];
        self.fill_bytes(&mut b);
        u32::from_le_bytes(b)
    }
    fn next_u64(&mut self) -> u64 {
        let mut b = [0u8; 8];
        self.fill_bytes(&mut b);
        u64::from_le_bytes(b)
    }
    fn fill_bytes(&mut self, dest: &mut [u8]) {
        for d in dest.iter_mut() {
            if self.buf.is_empty() {
                let mut h = Sha256::new();
                h.update(&self.key);
                h.update(self.block.to_be_bytes());
                self.block += 1;
                self.buf = h.finalize().to_vec();
            }
            *d = self.buf.pop().unwrap_or(0);
        }
    }
    fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), rand_core::Error> {
        self.fill_bytes(dest);
        Ok(())
    }
}

impl rand_core::CryptoRng for SeededRng {}

/// RSA generation takes seconds; the same seed always yields the same key, so keep
/// them for the life of the process (a plan renders a template more than once).
pub(super) fn rsa_private_key(
    rng: &mut SeededRng,
    bits: usize,
) -> Result<rsa::RsaPrivateKey, String> {
    use std::collections::HashMap;
    use std::sync::{LazyLock, Mutex};
    type Cache = Mutex<HashMap<(Vec<u8>, usize), rsa::RsaPrivateKey>>;
    static CACHE: LazyLock<Cache> = LazyLock::new(|| Mutex::new(HashMap::new()));
    let id = (rng.key.clone(), bits);
    if let Some(key) = CACHE.lock().ok().and_then(|c| c.get(&id).cloned()) {
        return Ok(key);
    }
    tracing::debug!(bits, "generating an RSA key");
    let key = rsa::RsaPrivateKey::new(rng, bits).map_err(|e| e.to_string())?;
    if let Ok(mut c) = CACHE.lock() {
        c.insert(id, key.clone());
    }
    Ok(key)
}

/// PKCS#1 PEM ("RSA PRIVATE KEY"), as Go's x509.MarshalPKCS1PrivateKey + pem.Encode.
pub(super) fn rsa_pem(key: &rsa::RsaPrivateKey) -> Result<String, String> {
    use rsa::pkcs1::EncodeRsaPrivateKey;
    key.to_pkcs1_pem(rsa::pkcs8::LineEnding::LF)
        .map(|p| p.to_string())
        .map_err(|e| e.to_string())
}

/// SEC 1 "EC PRIVATE KEY" with the named-curve parameters and the public key, as Go's
/// x509.MarshalECPrivateKey writes it (Go cannot read the key without the curve).
fn ec_private_key_pem(key: &p256::SecretKey) -> String {
    use p256::elliptic_curve::sec1::ToEncodedPoint;
    const P256_OID: [u8; 10] = [0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07];
    let secret = key.to_bytes();
    let public = key.public_key().to_encoded_point(false);
    let mut body = vec![0x02, 0x01, 0x01, 0x04, 0x20];
    body.extend_from_slice(&secret);
    body.extend_from_slice(&[0xa0, 0x0a]);
    body.extend_from_slice(&P256_OID);
    body.extend_from_slice(&[0xa1, 0x44, 0x03, 0x42, 0x00]);
    body.extend_from_slice(public.as_bytes());
    let mut der = vec![0x30, body.len() as u8];
    der.extend_from_slice(&body);
    pem_encode("EC PRIVATE KEY", &der)
}

/// encoding/pem: base64 in 64-character lines.
fn pem_encode(label: &str, der: &[u8]) -> String {
    let b64 = STANDARD.encode(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for chunk in b64.as_bytes().chunks(64) {
        out.push_str(&String::from_utf8_lossy(chunk));
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

fn gen_private_key(kind: &str) -> R {
    let mut rng = SeededRng::new();
    let pem = match kind {
        "" | "rsa" => {
            random::charge_rsa_key().map_err(|e| fail("genPrivateKey", e))?;
            rsa_private_key(&mut rng, 4096).and_then(|k| rsa_pem(&k))
        }
        "ecdsa" => Ok(ec_private_key_pem(&p256::SecretKey::random(&mut rng))),
        "dsa" => {
            return Err(fail(
                "genPrivateKey",
                "dsa keys are not supported (deprecated, and too slow to generate per plan); use rsa or ecdsa",
            ));
        }
        other => Ok(format!("Unknown type {other}")),
    };
    Ok(s(pem.unwrap_or_else(|e| {
        format!("failed to generate private key: {e}")
    })))
}

pub(super) fn register(m: &mut Reg) {
    m.add("derivePassword", |a| {
        arity("derivePassword", a, 5)?;
        let counter = u32::try_from(int("derivePassword", &a[0])?)
            .map_err(|_| fail("derivePassword", "counter must fit in uint32"))?;
        Ok(s(derive_password(
            counter,
            &string("derivePassword", &a[1])?,
            &string("derivePassword", &a[2])?,
            &string("derivePassword", &a[3])?,
            &string("derivePassword", &a[4])?,
        )))
    });
    m.add("encryptAES", |a| {
        arity("encryptAES", a, 2)?;
        Ok(s(encrypt_aes(
            &string("encryptAES", &a[0])?,
            &string("encryptAES", &a[1])?,
        )))
    });
    m.add("decryptAES", |a| {
        arity("decryptAES", a, 2)?;
        decrypt_aes(&string("decryptAES", &a[0])?, &string("decryptAES", &a[1])?)
            .map(s)
            .map_err(|e| fail("decryptAES", e))
    });
    m.add("genPrivateKey", |a| {
        arity("genPrivateKey", a, 1)?;
        gen_private_key(&string("genPrivateKey", &a[0])?)
    });
    m.add("sha1sum", |a| {
        arity("sha1sum", a, 1)?;
        Ok(s(hex(&Sha1::digest(string("sha1sum", &a[0])?.as_bytes()))))
    });
    m.add("sha256sum", |a| {
        arity("sha256sum", a, 1)?;
        Ok(s(hex(&Sha256::digest(
            string("sha256sum", &a[0])?.as_bytes(),
        ))))
    });
    m.add("adler32sum", |a| {
        arity("adler32sum", a, 1)?;
        Ok(s(
            adler32(string("adler32sum", &a[0])?.as_bytes()).to_string()
        ))
    });
}

#[cfg(test)]
mod tests {
    use crate::sprig::test_util::{err, r};

    const GO_DERIVED: &str = "ZedaFaxcZaso9*";
    const GO_CIPHERTEXT: &str = "+Lbhtdk8ev0ET3qkZUE9j+3BPfFwGuLntrdwDI2jcKw=";

    #[test]
    fn derive_password_matches_master_password() {
        // Reference value computed with Sprig's derivePassword (Go).
        assert_eq!(
            r(r#"{{ derivePassword 1 "long" "password" "user" "example.com" }}"#),
            GO_DERIVED
        );
    }

    #[test]
    fn derive_password_unknown_template() {
        assert_eq!(
            r(r#"{{ derivePassword 1 "nope" "p" "u" "s" }}"#),
            "cannot find password template nope"
        );
    }

    #[test]
    fn aes_round_trip_and_stability() {
        let t = r#"{{ $c := encryptAES "secretkey" "plain text" }}{{ decryptAES "secretkey" $c }}"#;
        assert_eq!(r(t), "plain text");
        assert_eq!(
            r(r#"{{ encryptAES "k" "x" }}"#),
            r(r#"{{ encryptAES "k" "x" }}"#)
        );
        // Produced by Sprig's encryptAES in Go.
        assert_eq!(
            r(&format!(
                "{{{{ decryptAES \"secretkey\" {GO_CIPHERTEXT:?} }}}}"
            )),
            "plain text"
        );
        assert!(err(r#"{{ decryptAES "k" "AAAA" }}"#).contains("decryptAES"));
    }

    #[test]
    fn ecdsa_private_key_is_pem_and_stable() {
        let a = r(r#"{{ genPrivateKey "ecdsa" }}"#);
        assert!(
            a.starts_with("-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEI"),
            "{a}"
        );
        // The named curve (P-256) is present: Go refuses SEC 1 keys without it.
        assert!(
            a.replace('\n', "").contains("oAoGCCqGSM49AwEHoUQDQgAE"),
            "{a}"
        );
        assert_eq!(a, r(r#"{{ genPrivateKey "ecdsa" }}"#));
        assert_eq!(r(r#"{{ genPrivateKey "foo" }}"#), "Unknown type foo");
    }

    #[test]
    fn rsa_private_key_is_pem() {
        let a = r(r#"{{ genPrivateKey "rsa" }}"#);
        assert!(a.starts_with("-----BEGIN RSA PRIVATE KEY-----\n"), "{a}");
    }

    #[test]
    fn hashes_match_known_digests() {
        assert_eq!(
            r(r#"{{ sha1sum "abc" }}"#),
            "a9993e364706816aba3e25717850c26c9cd0d89d"
        );
        assert_eq!(
            r(r#"{{ sha256sum "abc" }}"#),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(r(r#"{{ adler32sum "Wikipedia" }}"#), "300286872");
    }
}
