//! Author tools, run by a person: `terraform-provider-kudo <command>`.

use std::process::ExitCode;

pub fn run(args: &[String]) -> ExitCode {
    match args.get(1).map(String::as_str) {
        Some("version" | "--version" | "-V") => {
            println!("terraform-provider-kudo {}", env!("CARGO_PKG_VERSION"));
            ExitCode::SUCCESS
        }
        _ => {
            eprintln!(
                "terraform-provider-kudo {}\n\nThis is a Terraform plugin; Terraform starts it by itself.\nCommands for operator authors:\n  version",
                env!("CARGO_PKG_VERSION")
            );
            ExitCode::FAILURE
        }
    }
}
