//! terraform-provider-kudo: KUDO operator packages driven by Terraform.
//!
//! The layers live in their own crates (see `docs/design/interfaces.md`); this crate
//! holds the Terraform resources (`provider`) and the author tools (`cli`).

pub mod cli;
pub mod provider;

use std::process::ExitCode;

/// Serve the provider over go-plugin/tfplugin6 until Terraform shuts it down.
pub fn run_plugin() -> ExitCode {
    tfplugin::init_logging();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        // A run nests the futures of every level of a dependency tree (each level's own
        // is boxed, but polling goes through all of them), and a stack overflow aborts
        // the process mid-apply: room for deep trees beyond the 2 MiB default.
        .thread_stack_size(8 * 1024 * 1024)
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("terraform-provider-kudo: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(tfplugin::serve(provider::KudoProvider::new())) {
        Ok(()) => ExitCode::SUCCESS,
        // `serve` has already explained itself on stderr (for example when run by hand).
        Err(_) => ExitCode::FAILURE,
    }
}
