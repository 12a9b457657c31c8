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
///
/// A package is its folder: a symbolic link may point anywhere inside it, but not out
/// of it (the package would read differently on another machine, and an archive made
/// from it could not hold the link), and only regular files and folders may sit in
/// `templates/` (reading a named pipe would block, a device is never a template). The
/// same rules as an archive's, so a folder and its `.tgz` load alike.
pub(crate) fn collect_dir(path: &Path, files: &mut Files) -> Result<(), PackageError> {
    let operator = path.join("operator.yaml");
    let root = path.canonicalize().ok().filter(|r| r.is_dir());
    let Some(root) = root else {
        return Err(PackageError::Io {
            path: operator,
            message: "not a package folder (it does not exist or is not a directory)".to_string(),
            source: None,
        });
    };
    if entry_kind(&root, &operator, "operator.yaml")? != Kind::File {
        let mut message = "no operator.yaml in this folder; a package needs operator.yaml (and usually params.yaml and templates/)".to_string();
        message.push_str(&subpackage_hint(path));
        return Err(PackageError::Io {
            path: operator,
            message,
            source: None,
        });
    }
    let mut total = 0u64;
    for name in ["operator.yaml", "params.yaml"] {
        let p = path.join(name);
        if entry_kind(&root, &p, name)? == Kind::File {
            let bytes = read_bounded(&p, &mut total)?;
            files.insert(name.to_string(), bytes);
        }
    }
    let templates = path.join("templates");
    if entry_kind(&root, &templates, "templates")? == Kind::Dir {
        walk(&root, &templates, "templates", files, &mut total)?;
    }
    Ok(())
}

/// How many package subfolders a hint names before it says how many more there are.
const HINTED_SUBFOLDERS: usize = 10;

/// For a folder that is not a package: `; did you mean "<folder>/operator"?` naming each
/// direct subfolder that holds an operator.yaml (a repository checkout keeps its package
/// in `operator/`), written as `folder` was given so it can be pasted into `package`.
/// Empty when there is none or the folder cannot be listed: the error stands without it.
fn subpackage_hint(folder: &Path) -> String {
    let Ok(entries) = std::fs::read_dir(folder) else {
        return String::new();
    };
    let mut found: Vec<String> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("operator.yaml").is_file())
        .map(|p| p.display().to_string())
        .collect();
    found.sort();
    let more = found.len().saturating_sub(HINTED_SUBFOLDERS);
    found.truncate(HINTED_SUBFOLDERS);
    let quoted: Vec<String> = found.iter().map(|p| format!("{p:?}")).collect();
    match (quoted.as_slice(), more) {
        ([], _) => String::new(),
        ([one], _) => format!("; did you mean {one}? (that subfolder holds an operator.yaml)"),
        (many, 0) => format!(
            "; did you mean one of its subfolders that hold an operator.yaml: {}?",
            many.join(", ")
        ),
        (many, more) => format!(
            "; did you mean one of its subfolders that hold an operator.yaml: {} (and {more} more)?",
            many.join(", ")
        ),
    }
}

/// What an entry of the package folder is, after following a symbolic link that stays
/// inside the folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    File,
    Dir,
    /// Absent, or a link to nothing under a name the package format does not use.
    Missing,
}

/// Classify `path` (`rel` inside the package whose canonical folder is `root`). A link
/// out of the package, a link to nothing under a package file's name, and anything
/// that is neither a regular file nor a folder are errors.
fn entry_kind(root: &Path, path: &Path, rel: &str) -> Result<Kind, PackageError> {
    let refuse = |message: String| PackageError::Io {
        path: path.to_path_buf(),
        message,
        source: None,
    };
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Kind::Missing),
        Err(e) => return Err(PackageError::io(path, e)),
    };
    let meta = if meta.file_type().is_symlink() {
        let target = std::fs::read_link(path)
            .map(|t| t.display().to_string())
            .unwrap_or_default();
        match path.canonicalize() {
            Err(_) if is_package_file(rel) || rel == "templates" => {
                return Err(refuse(format!(
                    "symbolic link to {target}, which does not exist; make {rel} a file of the package"
                )));
            }
            Err(_) => return Ok(Kind::Missing),
            Ok(resolved) if !resolved.starts_with(root) => {
                return Err(refuse(format!(
                    "symbolic link to {}, outside the package folder {}; a package must hold its own files (copy it into the package)",
                    resolved.display(),
                    root.display()
                )));
            }
            Ok(_) => std::fs::metadata(path).map_err(|e| PackageError::io(path, e))?,
        }
    } else {
        meta
    };
    if meta.is_file() {
        Ok(Kind::File)
    } else if meta.is_dir() {
        Ok(Kind::Dir)
    } else {
        Err(refuse(format!(
            "{rel} is a {}, not a regular file; a package holds only regular files and folders",
            special_kind(&meta.file_type())
        )))
    }
}

/// What a file that is neither a regular file, a folder nor a link is, in words.
pub(crate) fn special_kind(kind: &std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_fifo() {
            return "named pipe";
        }
        if kind.is_socket() {
            return "socket";
        }
        if kind.is_block_device() || kind.is_char_device() {
            return "device";
        }
    }
    let _ = kind;
    "special file"
}

fn walk(
    root: &Path,
    dir: &Path,
    rel: &str,
    files: &mut Files,
    total: &mut u64,
) -> Result<(), PackageError> {
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
        // Sub-folders are walked, linked folders are not (no loops); every other entry
        // is judged, whatever its name: a link out of the package or a special file in
        // templates/ is a mistake even where the loader would not read it.
        if file_type.is_dir() {
            walk(root, &path, &child, files, total)?;
        } else if entry_kind(root, &path, &child)? == Kind::File && is_package_file(&child) {
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

    /// A repository checkout given as the package: the error names the subfolders that
    /// are packages, as given (so `.` gives `./operator`), and none when there is none.
    #[test]
    fn a_folder_without_operator_yaml_names_its_package_subfolders() {
        let repo = tempfile::tempdir().expect("tempdir");
        let no_hint = collect_dir(repo.path(), &mut Files::new()).expect_err("no package");
        assert!(!no_hint.to_string().contains("did you mean"), "{no_hint}");
        for sub in ["operator", "other"] {
            std::fs::create_dir_all(repo.path().join(sub)).expect("mkdir");
            std::fs::write(repo.path().join(sub).join("operator.yaml"), "name: x\n")
                .expect("write");
            std::fs::create_dir_all(repo.path().join("docs")).expect("mkdir");
            let given = repo.path().join(".");
            let e = collect_dir(&given, &mut Files::new()).expect_err("no package");
            let shown = |s: &str| format!("{:?}", given.join(s).display().to_string());
            let expected = match sub {
                "operator" => format!(
                    "did you mean {}? (that subfolder holds an operator.yaml)",
                    shown("operator")
                ),
                _ => format!(
                    "did you mean one of its subfolders that hold an operator.yaml: {}, {}?",
                    shown("operator"),
                    shown("other")
                ),
            };
            assert!(e.to_string().contains(&expected), "{e}");
            assert!(!e.to_string().contains("docs"), "{e}");
        }
    }

    // A deep template path is a key of OperatorVersion.spec.templates longer than YAML's
    // implicit-key limit (1024); the cluster layer sends such an apply as YAML with an
    // explicit key (kudo-engine cluster/apply_body.rs), so the package loads as it is.
    #[test]
    fn a_template_path_longer_than_yamls_key_limit_loads() {
        let op = "apiVersion: kudo.dev/v1beta1\nname: long\noperatorVersion: 0.1.0\nkudoVersion: 0.19.0\nkubernetesVersion: 1.20.0\nmaintainers:\n  - name: t\n    email: t@example.com\nurl: https://example.com\ntasks: []\nplans: {}\n";
        let deep = format!("templates/{}/cm.yaml", vec!["d".repeat(200); 6].join("/"));
        let files: Files = BTreeMap::from([
            ("operator.yaml".to_string(), op.as_bytes().to_vec()),
            (deep.clone(), b"apiVersion: v1\nkind: ConfigMap\n".to_vec()),
        ]);
        let pkg = Package::from_files(&files, "", crate::Origin::Memory).expect("loads");
        let key = deep.strip_prefix("templates/").expect("below templates/");
        assert!(key.len() > 1024);
        assert!(
            pkg.templates.contains_key(key),
            "{:?}",
            pkg.templates.keys()
        );
    }
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
        // Inside the package, the size limit still holds for a linked file.
        std::fs::remove_file(dir.path().join("templates/link.yaml")).expect("rm");
        huge_file(&dir.path().join("big.log"));
        std::os::unix::fs::symlink("../big.log", dir.path().join("templates/link.yaml"))
            .expect("link");
        let err = Package::load_dir(dir.path()).expect_err("must be refused");
        assert!(err.to_string().contains("package too large"), "{err}");
    }

    /// A folder whose loading must fail with both texts in the message.
    fn refused(dir: &Path, texts: &[&str]) {
        let message = Package::load_dir(dir)
            .expect_err("must be refused")
            .to_string();
        for t in texts {
            assert!(message.contains(t), "{t:?} not in: {message}");
        }
    }

    #[test]
    fn links_out_of_the_package_are_refused() {
        let outside = tempfile::tempdir().expect("tempdir");
        let target = outside.path().join("cm.yaml");
        std::fs::write(&target, "a: 1\n").expect("write");
        let root = outside.path().canonicalize().expect("canonical");
        // A template, operator.yaml itself, params.yaml, the templates folder, and a
        // file the loader would not even read: each link leaves the package.
        let dir = package_folder();
        std::os::unix::fs::symlink(&target, dir.path().join("templates/cm.yaml")).expect("link");
        refused(
            dir.path(),
            &[
                "templates/cm.yaml",
                "outside the package folder",
                &root.display().to_string(),
            ],
        );
        let dir = package_folder();
        std::os::unix::fs::symlink(&target, dir.path().join("params.yaml")).expect("link");
        refused(dir.path(), &["params.yaml", "outside the package folder"]);
        let dir = package_folder();
        std::fs::remove_dir(dir.path().join("templates")).expect("rmdir");
        std::os::unix::fs::symlink(outside.path(), dir.path().join("templates")).expect("link");
        refused(dir.path(), &["templates", "outside the package folder"]);
        let dir = package_folder();
        std::os::unix::fs::symlink(&target, dir.path().join("templates/notes.txt")).expect("link");
        refused(dir.path(), &["notes.txt", "outside the package folder"]);
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(outside.path().join("operator.yaml"), "name: x\n").expect("write");
        std::os::unix::fs::symlink(
            outside.path().join("operator.yaml"),
            dir.path().join("operator.yaml"),
        )
        .expect("link");
        refused(dir.path(), &["operator.yaml", "outside the package folder"]);
    }

    #[test]
    fn links_inside_the_package_are_followed() {
        let dir = package_folder();
        std::fs::create_dir(dir.path().join("shared")).expect("mkdir");
        std::fs::write(dir.path().join("shared/cm.yaml"), "a: 1\n").expect("write");
        std::os::unix::fs::symlink("../shared/cm.yaml", dir.path().join("templates/cm.yaml"))
            .expect("link");
        let pkg = Package::load_dir(dir.path()).expect("loads");
        assert_eq!(
            pkg.templates.get("cm.yaml").map(String::as_str),
            Some("a: 1\n")
        );
        // A link to nothing under a template's name is an error; under another name the
        // loader never reads it.
        std::os::unix::fs::symlink("gone.txt", dir.path().join("templates/other.txt"))
            .expect("link");
        Package::load_dir(dir.path()).expect("a dangling link to a non-template is ignored");
        std::os::unix::fs::symlink("gone.yaml", dir.path().join("templates/x.yaml")).expect("link");
        refused(dir.path(), &["templates/x.yaml", "which does not exist"]);
    }

    fn fifo(path: &Path) {
        let status = std::process::Command::new("mkfifo")
            .arg(path)
            .status()
            .expect("mkfifo runs");
        assert!(status.success(), "mkfifo {}", path.display());
    }

    #[test]
    fn special_files_are_refused_without_reading_them() {
        // Reading a named pipe would block for ever; the loader must not open it.
        let dir = package_folder();
        fifo(&dir.path().join("templates/pipe.yaml"));
        refused(
            dir.path(),
            &["templates/pipe.yaml", "is a named pipe, not a regular file"],
        );
        let dir = package_folder();
        std::fs::create_dir(dir.path().join("templates/sub")).expect("mkdir");
        fifo(&dir.path().join("templates/sub/notes"));
        refused(dir.path(), &["templates/sub/notes", "not a regular file"]);
        let dir = package_folder();
        fifo(&dir.path().join("params.yaml"));
        refused(dir.path(), &["params.yaml", "not a regular file"]);
    }

    #[test]
    fn oversize_params_yaml_is_refused() {
        let dir = package_folder();
        huge_file(&dir.path().join("params.yaml"));
        let err = Package::load_dir(dir.path()).expect_err("must be refused");
        assert!(err.to_string().contains("params.yaml"), "{err}");
    }
}
