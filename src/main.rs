//! `terraform-provider-kudo`: a Terraform plugin when Terraform starts it, and a small
//! tool for operator authors when a person runs it with a subcommand.

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    // Terraform starts plugins with no arguments; anything else is a person using the
    // author tools, whose output goes to stdout like any CLI.
    if args.len() <= 1 || tfplugin::started_by_terraform() {
        return terraform_provider_kudo::run_plugin();
    }
    terraform_provider_kudo::cli::run(&args)
}
