//! Provider start-up: from exec to the go-plugin handshake line on stdout, the way
//! Terraform starts it, with and without AutoMTLS (`PLUGIN_CLIENT_CERT`).

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::stats::Sample;

/// Terraform's plugin handshake cookie (the provider refuses to start without it).
const COOKIE: (&str, &str) = (
    "TF_PLUGIN_MAGIC_COOKIE",
    "d602bf8f470bc67ca7faa0386276bbdd4330efaf76d1a219cb4d6991ca9872b2",
);

/// A client certificate like the one Terraform generates for each plugin it starts.
fn client_cert_pem() -> String {
    let key = rcgen::KeyPair::generate().expect("client key");
    let params = rcgen::CertificateParams::new(vec!["localhost".to_string()]).expect("params");
    params.self_signed(&key).expect("self-signed").pem()
}

/// One start: the time until the handshake line is read; the process is then killed.
fn start_once(provider: &Path, cert: Option<&str>) -> Duration {
    let mut cmd = Command::new(provider);
    cmd.env(COOKIE.0, COOKIE.1)
        .env("PLUGIN_PROTOCOL_VERSIONS", "6")
        .env_remove("PLUGIN_CLIENT_CERT")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    if let Some(pem) = cert {
        cmd.env("PLUGIN_CLIENT_CERT", pem);
    }
    let started = Instant::now();
    let mut child = cmd.spawn().expect("start the provider");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("read the handshake line");
    let took = started.elapsed();
    assert!(
        line.starts_with("1|6|tcp|"),
        "unexpected handshake line {line:?}"
    );
    if cert.is_some() {
        assert_eq!(
            line.trim_end().split('|').count(),
            6,
            "no server certificate in {line:?}"
        );
    }
    let _ = child.kill();
    let _ = child.wait();
    took
}

/// `(plain, AutoMTLS)` start-up times over `runs` starts each, interleaved so that
/// machine load affects both alike.
pub fn measure(provider: &Path, runs: usize) -> (Sample, Sample) {
    let cert = client_cert_pem();
    let (mut plain, mut mtls) = (Sample::default(), Sample::default());
    // One unmeasured start of each warms the page cache.
    start_once(provider, None);
    start_once(provider, Some(&cert));
    for _ in 0..runs {
        plain.push(start_once(provider, None));
        mtls.push(start_once(provider, Some(&cert)));
    }
    (plain, mtls)
}
