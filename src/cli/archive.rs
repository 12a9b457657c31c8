//! `package create` and `repo index`: publishing packages the way KUDO repositories
//! expect (`kubectl kudo package create`, `kubectl kudo repo index`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use kudo_package::{LoadContext, Severity};

use super::args::Flag;

const CREATE_FLAGS: &[Flag] = &[
    Flag::value("--output").short("-o"),
    Flag::switch("--overwrite"),
];
const INDEX_FLAGS: &[Flag] = &[Flag::value("--url")];

/// `package create DIR [-o OUT] [--overwrite]`. OUT is a folder (default: the current
/// one) or a file name ending in `.tgz`.
pub fn create(argv: &[String]) -> ExitCode {
    if super::wants_help(argv) {
        super::print_out(&format!("{}\n", super::usage()));
        return ExitCode::SUCCESS;
    }
    let (parsed, dir) =
        match super::parse_with_one("package create", argv, CREATE_FLAGS, "package folder") {
            Ok(r) => r,
            Err(code) => return code,
        };
    let dir = dir.as_str();
    if !Path::new(dir).is_dir() {
        return super::usage_error(
            "package create",
            &format!("{dir} is not a folder; give the package folder to archive"),
        );
    }
    // Extensions are verified with their base resolved (from a sibling folder), as
    // they will be installed; the archive itself holds only this folder.
    let pkg = match kudo_package::load_unverified(dir, &LoadContext::default()) {
        Ok(p) => p,
        Err(e) => return fail(&format!("cannot load the package: {e}")),
    };
    // Like KUDO, refuse to publish a package that would fail to install.
    let findings = kudo_plan::verify(&pkg);
    for f in &findings {
        eprintln!("{f}");
    }
    if findings.iter().any(|f| f.severity == Severity::Error) {
        return fail(&format!(
            "{dir} does not pass `package verify`; fix the errors above first"
        ));
    }
    let dir = Path::new(dir);
    let target = target_path(parsed.value("--output"), &kudo_package::tgz_file_name(&pkg));
    if target.exists() && !parsed.has("--overwrite") {
        return fail(&format!(
            "{} already exists; pass --overwrite to replace it",
            target.display()
        ));
    }
    let bytes = match kudo_package::create_tgz(dir) {
        Ok(b) => b,
        Err(e) => return fail(&format!("cannot create the archive: {e}")),
    };
    let write = target
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| std::fs::write(&target, &bytes));
    if let Err(e) = write {
        return fail(&format!(
            "cannot write {}: {e}; check that the folder is writable",
            target.display()
        ));
    }
    super::print_out(&format!(
        "{} sha256:{}\n",
        target.display(),
        kudo_package::sha256_hex(&bytes)
    ));
    ExitCode::SUCCESS
}

fn target_path(output: Option<&str>, file_name: &str) -> PathBuf {
    match output {
        Some(o) if o.ends_with(".tgz") || o.ends_with(".tar.gz") => PathBuf::from(o),
        Some(o) => Path::new(o).join(file_name),
        None => PathBuf::from(file_name),
    }
}

/// `repo index DIR [--url BASE]`: `DIR/index.yaml` for every `.tgz` in DIR.
pub fn index(argv: &[String]) -> ExitCode {
    if super::wants_help(argv) {
        super::print_out(&format!("{}\n", super::usage()));
        return ExitCode::SUCCESS;
    }
    let (parsed, dir) =
        match super::parse_with_one("repo index", argv, INDEX_FLAGS, "repository folder") {
            Ok(r) => r,
            Err(code) => return code,
        };
    let dir = dir.as_str();
    let dir = Path::new(dir);
    let text = match kudo_package::index_dir(dir, parsed.value("--url")) {
        Ok(t) => t,
        Err(e) => return fail(&format!("cannot index {}: {e}", dir.display())),
    };
    let target = dir.join("index.yaml");
    if let Err(e) = std::fs::write(&target, &text) {
        return fail(&format!("cannot write {}: {e}", target.display()));
    }
    // Count what went in, so an empty folder is noticed.
    let count = kudo_package::parse_index(&text, &target.display().to_string())
        .map(|i| i.entries.values().map(Vec::len).sum::<usize>())
        .unwrap_or(0);
    super::print_out(&format!(
        "wrote {} ({count} package{})\n",
        target.display(),
        if count == 1 { "" } else { "s" }
    ));
    ExitCode::SUCCESS
}

fn fail(message: &str) -> ExitCode {
    eprintln!("error: {message}");
    ExitCode::FAILURE
}
