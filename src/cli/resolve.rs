//! `resolve`: hook for the dependency resolver (`crates/kudo-resolve`).
//!
//! To wire it: replace the body of [`run`] with argument parsing (see `args.rs` and
//! `render.rs` for the pattern) and a call into `kudo_resolve`; print the decisions to
//! stdout and exit 1 when the constraints cannot be met. `mod.rs` already routes
//! `terraform-provider-kudo resolve ...` here with the arguments after `resolve`.

use std::process::ExitCode;

pub fn run(argv: &[String]) -> ExitCode {
    if super::wants_help(argv) {
        super::print_out("resolve: dependency resolution is not part of this build yet.\n");
        return ExitCode::SUCCESS;
    }
    eprintln!(
        "{}: `resolve` is not available in this build yet; the dependency resolver is still being written.",
        super::BIN
    );
    ExitCode::FAILURE
}
