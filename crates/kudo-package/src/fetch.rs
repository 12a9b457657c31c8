//! Downloads: an http(s) client on rustls (aws-lc-rs) with a size cap, and a cache of
//! archives keyed by their sha256 so that plan and apply read the same bytes.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use crate::error::PackageError;
use crate::load::MAX_TOTAL_BYTES;
use crate::source::LoadContext;
use crate::tgz::sha256_hex;

/// Download through the cache: a cached `<digest>.tgz` is used when the digest is
/// known; a fresh download is stored under its own digest.
pub(crate) fn fetch_cached(
    url: &str,
    digest: Option<&str>,
    ctx: &LoadContext,
) -> Result<Vec<u8>, PackageError> {
    if let (Some(dir), Some(d)) = (&ctx.cache_dir, digest) {
        let cached = dir.join(format!("{d}.tgz"));
        if let Ok(bytes) = std::fs::read(&cached) {
            if sha256_hex(&bytes) == d {
                tracing::debug!(%url, path = %cached.display(), "package from cache");
                return Ok(bytes);
            }
            tracing::warn!(path = %cached.display(), "cached archive is corrupt; downloading again");
        }
    }
    let bytes = http_get(url)?;
    if let Some(dir) = &ctx.cache_dir {
        let d = sha256_hex(&bytes);
        // Only verified or pinned-less content is cached under its real digest, so a
        // mismatching download never poisons the cache entry of the expected digest.
        if let Err(e) = store(dir, &d, &bytes) {
            tracing::warn!(dir = %dir.display(), error = %e, "cannot write package cache");
        }
    }
    Ok(bytes)
}

fn store(dir: &Path, digest: &str, bytes: &[u8]) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let tmp = dir.join(format!(".{digest}.{}.tmp", std::process::id()));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, dir.join(format!("{digest}.tgz")))
}

fn agent() -> ureq::Agent {
    let crypto = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    ureq::Agent::config_builder()
        .timeout_global(Some(Duration::from_secs(60)))
        .http_status_as_error(false)
        .tls_config(
            ureq::tls::TlsConfig::builder()
                .provider(ureq::tls::TlsProvider::Rustls)
                .unversioned_rustls_crypto_provider(crypto)
                .build(),
        )
        .build()
        .new_agent()
}

/// GET a URL with a size limit; non-2xx is an error naming the URL and status.
pub fn http_get(url: &str) -> Result<Vec<u8>, PackageError> {
    tracing::debug!(%url, "GET");
    let mut resp = agent()
        .get(url)
        .call()
        .map_err(|e| PackageError::source(url, format!("download failed: {e}")))?;
    let status = resp.status();
    if !status.is_success() {
        return Err(PackageError::source(
            url,
            format!("download failed with HTTP status {status}; check the URL"),
        ));
    }
    resp.body_mut()
        .with_config()
        .limit(MAX_TOTAL_BYTES)
        .read_to_vec()
        .map_err(|e| {
            PackageError::source(
                url,
                format!("download failed or exceeded {MAX_TOTAL_BYTES} bytes: {e}"),
            )
        })
}
