//! Author tools, run by a person: `terraform-provider-kudo <command>`.
//!
//! Each command lives in its own module and returns an [`ExitCode`]: 0 success, 1 the
//! command ran and found problems (verify errors, templates that fail), 2 the command
//! line itself is wrong. Results go to stdout, problems to stderr, so that
//! `render ... > all.yaml` keeps only manifests.

mod api_versions;
mod archive;
mod args;
mod render;
mod resolve;
mod verify;

use std::io::Write;
use std::process::ExitCode;

const BIN: &str = "terraform-provider-kudo";

/// Exit code for a wrong command line (unknown command or flag, missing argument).
const USAGE_EXIT: u8 = 2;

fn usage() -> String {
    format!(
        "{BIN} {version}

This is a Terraform plugin; Terraform starts it by itself. Run by hand with a
command, it offers tools for KUDO operator authors:

  package verify PATH [--extended]
      Check a package (folder or .tgz) with KUDO's verify rules.
  render PATH [-p KEY=VALUE]... [--name N] [--namespace NS] [--plan P]
         [--phase PH] [--step S] [--pipe KEY=VALUE]... [--output-dir OUT]
      Render every template as KUDO would and print the manifests.
  package create DIR [-o OUT] [--overwrite]
      Write a reproducible <name>-<version>.tgz of a package folder.
  repo index DIR [--url BASE]
      Write DIR/index.yaml for the .tgz packages in DIR, with digests.
  resolve ...
      Resolve KudoOperator dependencies (see `{BIN} resolve --help`).
  version
      Print the version.
  help
      Print this text.

PATH is a package folder, a .tgz file or an http(s) URL of a .tgz.
See docs/cli.md for details and examples.",
        version = env!("CARGO_PKG_VERSION")
    )
}

pub fn run(args: &[String]) -> ExitCode {
    let words: Vec<&str> = args.iter().skip(1).map(String::as_str).collect();
    match words.as_slice() {
        ["version" | "--version" | "-V", ..] => {
            print_out(&format!("{BIN} {}\n", env!("CARGO_PKG_VERSION")));
            ExitCode::SUCCESS
        }
        ["help" | "--help" | "-h", ..] => {
            print_out(&format!("{}\n", usage()));
            ExitCode::SUCCESS
        }
        ["package", "verify", ..] => verify::run(&args[3..]),
        ["package", "create", ..] => archive::create(&args[3..]),
        ["repo", "index", ..] => archive::index(&args[3..]),
        ["render", ..] => render::run(&args[2..]),
        // Hook for the dependency resolver: `resolve::run` is the only function to fill in.
        ["resolve", ..] => resolve::run(&args[2..]),
        [_, ..] => {
            eprintln!(
                "{BIN}: unknown command {:?}\n\n{}",
                words.join(" "),
                usage()
            );
            ExitCode::from(USAGE_EXIT)
        }
        [] => {
            eprintln!("{}", usage());
            ExitCode::from(USAGE_EXIT)
        }
    }
}

/// A wrong command line: the message, a pointer to help, exit 2.
/// Parses `argv` against `flags` and requires exactly one positional argument,
/// described by `what` in the message when it is missing. On a usage problem the user
/// has been told and the exit code to end with is returned.
fn parse_with_one(
    command: &str,
    argv: &[String],
    flags: &[args::Flag],
    what: &str,
) -> Result<(args::Parsed, String), ExitCode> {
    let parsed = args::parse(argv, flags).map_err(|e| usage_error(command, &e))?;
    match parsed.positional.as_slice() {
        [one] => {
            let one = one.clone();
            Ok((parsed, one))
        }
        _ => Err(usage_error(command, &format!("expects exactly one {what}"))),
    }
}

fn usage_error(command: &str, message: &str) -> ExitCode {
    eprintln!("{BIN} {command}: {message}\nRun `{BIN} help` for the usage.");
    ExitCode::from(USAGE_EXIT)
}

/// Writes results to stdout. A closed pipe (`render ... | head`) is not an error worth
/// a panic, which `print!` would raise.
fn print_out(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
}

/// `true` when `--help`/`-h` is among a command's arguments: print usage and stop.
fn wants_help(args: &[String]) -> bool {
    args.iter().any(|a| a == "--help" || a == "-h")
}
