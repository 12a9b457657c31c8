//! Package archives: reading a `.tgz` safely in memory (no extraction) and creating a
//! reproducible one.

use std::io::Read;
use std::path::Path;

use sha2::{Digest, Sha256};

use crate::error::PackageError;
use crate::load::{Files, MAX_FILES, MAX_TOTAL_BYTES, is_package_file};
use crate::model::Package;

/// Hex sha256 of some bytes (the repository `digest` format).
pub fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// Read the package files of a gzip'd tar. Files may sit at the root or under one
/// top-level folder. Absolute paths, `..`, links, devices and oversize content are
/// rejected; only package files are kept.
pub fn read_tgz(bytes: &[u8], archive_name: &str) -> Result<Files, PackageError> {
    let err = |m: String| PackageError::archive(archive_name, m);
    // Said plainly: read as a tar, no bytes are no entries, which would be reported as
    // a missing operator.yaml (an interrupted download or copy is the usual cause).
    if bytes.is_empty() {
        return Err(err(
            "the archive is empty (0 bytes); make it again with `package create`, or download it again".to_string(),
        ));
    }
    // An HTTP client may already have undone a `Content-Encoding: gzip`, so a plain tar
    // is accepted too.
    let reader: Box<dyn Read + '_> = if bytes.starts_with(&[0x1f, 0x8b]) {
        Box::new(flate2::read::GzDecoder::new(bytes))
    } else {
        Box::new(bytes)
    };
    // Bound decompressed bytes as a whole: a gzip bomb stops here even inside headers.
    let limited = reader.take(MAX_TOTAL_BYTES + 1024 * 1024);
    let mut archive = tar::Archive::new(limited);
    let entries = archive
        .entries()
        .map_err(|e| err(format!("not a gzip'd tar archive: {e}")))?;
    let mut all = Files::new();
    let mut entries_seen = 0usize;
    let mut count = 0usize;
    let mut total = 0u64;
    for entry in entries {
        let mut entry =
            entry.map_err(|e| err(format!("corrupt archive (gzip or tar damaged): {e}")))?;
        entries_seen += 1;
        let raw = entry.path_bytes().into_owned();
        let path = String::from_utf8(raw)
            .map_err(|_| err("an entry has a non-UTF-8 name; rename it".to_string()))?;
        let clean = clean_path(&path).map_err(|m| err(format!("entry {path:?}: {m}")))?;
        let kind = entry.header().entry_type();
        if kind.is_dir() {
            continue;
        }
        if !(kind.is_file() || kind == tar::EntryType::Continuous) {
            return Err(err(format!(
                "entry {path:?} is a {}; package archives may contain only regular files and folders",
                describe(kind)
            )));
        }
        count += 1;
        if count > MAX_FILES {
            return Err(err(format!(
                "more than {MAX_FILES} files; package archives must stay small"
            )));
        }
        let size = entry.header().size().unwrap_or(u64::MAX);
        total = total.saturating_add(size);
        if total > MAX_TOTAL_BYTES {
            return Err(err(format!(
                "content larger than {MAX_TOTAL_BYTES} bytes (at {path:?}); package archives must stay small"
            )));
        }
        if clean.is_empty() {
            continue;
        }
        let mut content = Vec::new();
        entry
            .by_ref()
            .take(MAX_TOTAL_BYTES)
            .read_to_end(&mut content)
            .map_err(|e| err(format!("cannot read entry {path:?}: {e}")))?;
        all.insert(clean, content);
    }
    if entries_seen == 0 {
        return Err(err(
            "the archive is empty (it holds no files); archive the package folder with `package create`".to_string(),
        ));
    }
    strip_top_folder(all).map_err(err)
}

fn describe(kind: tar::EntryType) -> &'static str {
    match kind {
        tar::EntryType::Symlink => "symbolic link",
        tar::EntryType::Link => "hard link",
        tar::EntryType::Char | tar::EntryType::Block => "device",
        tar::EntryType::Fifo => "named pipe",
        _ => "special entry",
    }
}

/// Normalise a tar path; refuse anything that could point outside the package.
fn clean_path(path: &str) -> Result<String, String> {
    if path.starts_with('/') || path.starts_with('\\') || path.contains(":\\") {
        return Err("absolute paths are not allowed in a package archive".to_string());
    }
    let mut parts = Vec::new();
    for part in path.split(['/', '\\']) {
        match part {
            "" | "." => {}
            ".." => return Err("`..` is not allowed in a package archive".to_string()),
            p => parts.push(p),
        }
    }
    Ok(parts.join("/"))
}

fn strip_top_folder(all: Files) -> Result<Files, String> {
    let prefix = if all.contains_key("operator.yaml") {
        String::new()
    } else {
        let mut tops = all
            .keys()
            .filter(|k| k.ends_with("/operator.yaml") && k.matches('/').count() == 1);
        match (tops.next(), tops.next()) {
            (Some(one), None) => one.trim_end_matches("operator.yaml").to_string(),
            (Some(_), Some(_)) => {
                return Err(
                    "several top-level folders contain operator.yaml; an archive holds one package"
                        .to_string(),
                );
            }
            (None, _) => {
                return Err(
                    "no operator.yaml at the root or in a single top-level folder; archive the package folder"
                        .to_string(),
                );
            }
        }
    };
    Ok(all
        .into_iter()
        .filter_map(|(k, v)| {
            let rel = k.strip_prefix(&prefix)?.to_string();
            is_package_file(&rel).then_some((rel, v))
        })
        .collect())
}

/// Load a package from `.tgz` bytes.
pub fn package_from_tgz(
    bytes: &[u8],
    archive_name: &str,
    origin: crate::model::Origin,
) -> Result<Package, PackageError> {
    let files = read_tgz(bytes, archive_name)?;
    Package::from_files(&files, &format!("{archive_name}:"), origin)
}

/// A reproducible `.tgz` of a package folder: only package files, sorted, at the archive
/// root, mode 0644, zero mtime/uid/gid, fixed gzip header.
pub fn create_tgz(dir: &Path) -> Result<Vec<u8>, PackageError> {
    // Loading first guarantees we never publish a package that does not parse.
    Package::load_dir(dir)?;
    let mut files = Files::new();
    crate::load::collect_dir(dir, &mut files)?;
    let mut tar = tar::Builder::new(Vec::new());
    tar.mode(tar::HeaderMode::Deterministic);
    for (rel, content) in &files {
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(tar::EntryType::Regular);
        header.set_mode(0o644);
        header.set_mtime(0);
        header.set_uid(0);
        header.set_gid(0);
        header.set_size(content.len() as u64);
        tar.append_data(&mut header, rel, content.as_slice())
            .map_err(|e| PackageError::io(dir.join(rel), e))?;
    }
    let tar_bytes = tar.into_inner().map_err(|e| PackageError::io(dir, e))?;
    let mut gz = flate2::GzBuilder::new()
        .mtime(0)
        .operating_system(255)
        .write(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut gz, &tar_bytes).map_err(|e| PackageError::io(dir, e))?;
    gz.finish().map_err(|e| PackageError::io(dir, e))
}

/// KUDO's archive name: `<name>-<operatorVersion>.tgz` or
/// `<name>-<appVersion>_<operatorVersion>.tgz`.
pub fn tgz_file_name(pkg: &Package) -> String {
    let op = &pkg.operator;
    match &op.app_version {
        Some(app) => format!("{}-{}_{}.tgz", op.name, app, op.operator_version),
        None => format!("{}-{}.tgz", op.name, op.operator_version),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clean_paths() {
        assert_eq!(clean_path("./a/b.yaml").unwrap(), "a/b.yaml");
        assert!(clean_path("/etc/passwd").is_err());
        assert!(clean_path("a/../../x").is_err());
    }

    #[test]
    fn top_folder_is_stripped() {
        let mut f = Files::new();
        f.insert("pkg/operator.yaml".into(), b"x".to_vec());
        f.insert("pkg/templates/a.yaml".into(), b"y".to_vec());
        f.insert("pkg/README.md".into(), b"z".to_vec());
        let out = strip_top_folder(f).unwrap();
        assert_eq!(
            out.keys().collect::<Vec<_>>(),
            ["operator.yaml", "templates/a.yaml"]
        );
    }
}
