//! `package verify PATH [--extended]`: KUDO's `kubectl kudo package verify`.
//!
//! KUDO printed warnings and errors and failed with "found N package verification
//! errors". Here every finding is one `error: <file>: <message>` or `warning: ...` line
//! on stdout (easy to grep and to read in CI logs), then a summary on stderr.

use std::process::ExitCode;

use kudo_package::{LoadContext, Severity};

use super::args::Flag;

const FLAGS: &[Flag] = &[Flag::switch("--extended")];

pub fn run(argv: &[String]) -> ExitCode {
    if super::wants_help(argv) {
        super::print_out(&format!("{}\n", super::usage()));
        return ExitCode::SUCCESS;
    }
    let (parsed, path) = match super::parse_with_one(
        "package verify",
        argv,
        FLAGS,
        "PATH (a package folder or .tgz)",
    ) {
        Ok(r) => r,
        Err(code) => return code,
    };
    let path = path.as_str();
    // Unverified: `load` would stop at the first error, and verify must list them all.
    let pkg = match kudo_package::load_unverified(path, &LoadContext::default()) {
        Ok(p) => p,
        Err(e) => {
            // The package does not even parse; that is a verification error too.
            super::print_out(&format!("error: {e}\n"));
            eprintln!("{path}: found 1 package verification error");
            return ExitCode::FAILURE;
        }
    };
    let mut findings = kudo_package::verify(&pkg);
    if parsed.has("--extended") {
        findings.extend(kudo_package::verify_extended(&pkg));
        // Keep errors first, as each list is, after merging the two lists.
        findings.sort_by_key(|f| f.severity);
    }
    let text: String = findings.iter().map(|f| format!("{f}\n")).collect();
    super::print_out(&text);
    let errors = findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .count();
    let warnings = findings.len() - errors;
    if errors > 0 {
        eprintln!(
            "{path}: found {errors} package verification error{} and {warnings} warning{}",
            plural(errors),
            plural(warnings)
        );
        ExitCode::FAILURE
    } else {
        eprintln!(
            "{path}: package is valid ({warnings} warning{})",
            plural(warnings)
        );
        ExitCode::SUCCESS
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}
