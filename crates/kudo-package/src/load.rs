//! Building a package from its files (a folder, or the entries of an archive).

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::error::PackageError;
use crate::model::{Origin, Package};
use crate::parse;

/// Limits that keep a hostile package from exhausting memory.
pub const MAX_FILES: usize = 10_000;
pub const MAX_TOTAL_BYTES: u64 = 64 * 1024 * 1024;

/// Package files keyed by path relative to the package root (`operator.yaml`,
/// `params.yaml`, `templates/...`), `/`-separated.
pub type Files = BTreeMap<String, Vec<u8>>;

/// Is this relative path one the package format uses? Everything else is ignored.
pub(crate) fn is_package_file(rel: &str) -> bool {
    rel == "operator.yaml"
        || rel == "params.yaml"
        || (rel.starts_with("templates/") && rel.ends_with(".yaml"))
}

impl Package {
    /// Read a package folder: `operator.yaml`, optional `params.yaml`, and every `*.yaml`
    /// below `templates/` (subfolders allowed). Other files are ignored. Extensions
    /// (`extends`) are returned unresolved; see [`crate::load`] and [`crate::extend`].
    pub fn load_dir(path: &Path) -> Result<Package, PackageError> {
        let mut files = Files::new();
        collect_dir(path, &mut files)?;
        let label = format!("{}/", path.display().to_string().trim_end_matches('/'));
        Package::from_files(&files, &label, Origin::Dir(path.to_path_buf()))
    }

    /// Build a package from in-memory files. `label` prefixes file names in errors
    /// (e.g. `pkg/` or `pkg.tgz:`).
    pub fn from_files(files: &Files, label: &str, origin: Origin) -> Result<Package, PackageError> {
        let text = |rel: &str| -> Result<Option<String>, PackageError> {
            match files.get(rel) {
                None => Ok(None),
                Some(bytes) => String::from_utf8(bytes.clone()).map(Some).map_err(|_| {
                    PackageError::invalid(
                        &format!("{label}{rel}"),
                        None,
                        "(file)",
                        "not UTF-8 text; save the file as UTF-8",
                    )
                }),
            }
        };
        let op_file = format!("{label}operator.yaml");
        let Some(op_text) = text("operator.yaml")? else {
            return Err(PackageError::Io {
                path: op_file.into(),
                message: "missing: a package needs operator.yaml at its root".to_string(),
                source: None,
            });
        };
        let mut operator = parse::operator_file(&op_file, &op_text)?;
        let (parameters, groups, fields) = match text("params.yaml")? {
            Some(t) => parse::params_file(&format!("{label}params.yaml"), &t)?,
            None => Default::default(),
        };
        if let Some(ext) = &mut operator.extends {
            ext.param_fields = fields;
        }
        let mut templates = BTreeMap::new();
        for rel in files.keys() {
            if let Some(key) = rel.strip_prefix("templates/")
                && rel.ends_with(".yaml")
                && let Some(t) = text(rel)?
            {
                templates.insert(key.to_string(), t);
            }
        }
        tracing::debug!(
            operator = %operator.name,
            version = %operator.operator_version,
            templates = templates.len(),
            parameters = parameters.len(),
            "loaded package"
        );
        Ok(Package {
            operator,
            parameters,
            groups,
            templates,
            origin,
        })
    }
}

/// Read the package files of a folder (bounded in count and size).
pub(crate) fn collect_dir(path: &Path, files: &mut Files) -> Result<(), PackageError> {
    let operator = path.join("operator.yaml");
    if !operator.is_file() {
        let what = if path.is_dir() {
            "no operator.yaml in this folder; a package needs operator.yaml (and usually params.yaml and templates/)"
        } else {
            "not a package folder (it does not exist or is not a directory)"
        };
        return Err(PackageError::Io {
            path: operator,
            message: what.to_string(),
            source: None,
        });
    }
    let mut total = 0u64;
    for name in ["operator.yaml", "params.yaml"] {
        let p = path.join(name);
        if p.is_file() {
            let bytes = read_bounded(&p, &mut total)?;
            files.insert(name.to_string(), bytes);
        }
    }
    let templates = path.join("templates");
    if templates.is_dir() {
        walk(&templates, "templates", files, &mut total)?;
    }
    Ok(())
}

fn walk(dir: &Path, rel: &str, files: &mut Files, total: &mut u64) -> Result<(), PackageError> {
    let mut entries = std::fs::read_dir(dir)
        .map_err(|e| PackageError::io(dir, e))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| PackageError::io(dir, e))?;
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let path = entry.path();
        let Some(name) = entry.file_name().to_str().map(str::to_string) else {
            tracing::warn!(path = %path.display(), "skipping file with a non-UTF-8 name");
            continue;
        };
        let child = format!("{rel}/{name}");
        let file_type = entry.file_type().map_err(|e| PackageError::io(&path, e))?;
        if file_type.is_dir() {
            walk(&path, &child, files, total)?;
        } else if is_package_file(&child) && path.is_file() {
            if files.len() >= MAX_FILES {
                return Err(too_large(path));
            }
            let bytes = read_bounded(&path, total)?;
            files.insert(child, bytes);
        }
    }
    Ok(())
}

fn too_large(path: PathBuf) -> PackageError {
    PackageError::Io {
        path,
        message: format!(
            "package too large (limit {MAX_FILES} files, {MAX_TOTAL_BYTES} bytes); remove unneeded templates"
        ),
        source: None,
    }
}

/// Read a package file, adding its size to `total` and failing once the package
/// exceeds [`MAX_TOTAL_BYTES`]. The limit is checked before and while reading: a file
/// (or a symbolic link to one, say `/proc/kcore` or a multi-GB log) must not be
/// loaded whole into memory just to be refused, and a size that changes while reading
/// (a growing file, `/proc` entries reporting 0) is bounded too.
fn read_bounded(path: &Path, total: &mut u64) -> Result<Vec<u8>, PackageError> {
    let file = std::fs::File::open(path).map_err(|e| PackageError::io(path, e))?;
    let claimed = file
        .metadata()
        .map_err(|e| PackageError::io(path, e))?
        .len();
    let room = MAX_TOTAL_BYTES.saturating_sub(*total);
    if claimed > room {
        return Err(too_large(path.to_path_buf()));
    }
    let mut bytes = Vec::new();
    file.take(room.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| PackageError::io(path, e))?;
    *total = total.saturating_add(bytes.len() as u64);
    if *total > MAX_TOTAL_BYTES {
        return Err(too_large(path.to_path_buf()));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn package_folder() -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("tempdir");
        let op = "name: big\noperatorVersion: 0.1.0\nplans: {}\n";
        std::fs::write(dir.path().join("operator.yaml"), op).expect("write");
        std::fs::create_dir(dir.path().join("templates")).expect("mkdir");
        dir
    }

    /// A sparse file larger than the whole package limit: refused by its size, before
    /// its bytes are read (reading it would take 64 MB; a link to /proc/kcore, far more).
    fn huge_file(path: &Path) {
        let f = std::fs::File::create(path).expect("create");
        f.set_len(MAX_TOTAL_BYTES + 1).expect("set_len");
    }

    #[test]
    fn oversize_template_is_refused_before_reading() {
        let dir = package_folder();
        let big = dir.path().join("templates/big.yaml");
        huge_file(&big);
        let err = Package::load_dir(dir.path()).expect_err("must be refused");
        let message = err.to_string();
        assert!(message.contains("big.yaml"), "{message}");
        assert!(message.contains("package too large"), "{message}");
    }

    #[test]
    fn symlink_to_an_oversize_file_is_refused() {
        let dir = package_folder();
        let outside = tempfile::tempdir().expect("tempdir");
        let big = outside.path().join("huge.log");
        huge_file(&big);
        std::os::unix::fs::symlink(&big, dir.path().join("templates/link.yaml")).expect("link");
        let err = Package::load_dir(dir.path()).expect_err("must be refused");
        assert!(err.to_string().contains("link.yaml"), "{err}");
    }

    #[test]
    fn oversize_params_yaml_is_refused() {
        let dir = package_folder();
        huge_file(&dir.path().join("params.yaml"));
        let err = Package::load_dir(dir.path()).expect_err("must be refused");
        assert!(err.to_string().contains("params.yaml"), "{err}");
    }
}
