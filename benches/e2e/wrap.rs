//! The benchmark binary doubles as the wrapper Terraform starts instead of the provider:
//! it runs the provider with the same arguments and standard streams, and when the
//! provider exits appends its CPU time and peak RSS (from `getrusage(RUSAGE_CHILDREN)`,
//! microsecond resolution) to a file. `exec`-ing a timer such as GNU time would do the
//! same with a 10 ms clock, too coarse for a provider that works 40 ms per apply.

use std::io::Write;
use std::path::Path;
use std::process::{Command, ExitCode};

/// First argument that turns the benchmark binary into the wrapper.
pub const FLAG: &str = "--wrap-provider";

/// `--wrap-provider RUSAGE_FILE PROVIDER [ARGS...]`.
pub fn run(args: &[String]) -> ExitCode {
    let [rusage_file, provider, rest @ ..] = args else {
        eprintln!("usage: {FLAG} RUSAGE_FILE PROVIDER [ARGS...]");
        return ExitCode::from(2);
    };
    // KUDO_BENCH_PERF=<dir>: run each provider process under `perf record` (call
    // graphs by DWARF), one data file per process, to see where its time goes inside
    // a real Terraform command. The CPU figures then include perf's own overhead.
    let mut command = match std::env::var_os("KUDO_BENCH_PERF") {
        Some(dir) => {
            let out = Path::new(&dir).join(format!("provider-{}.data", std::process::id()));
            // KUDO_BENCH_PERF_FREQ: samples per second (default 2000; a provider process
            // that works 5 ms needs 20000 to show anything).
            let freq = std::env::var("KUDO_BENCH_PERF_FREQ").unwrap_or_else(|_| "2000".into());
            let mut c = Command::new("perf");
            c.args([
                "record",
                "-q",
                "-F",
                &freq,
                "--call-graph",
                "dwarf,16384",
                "-o",
            ])
            .arg(out)
            .arg("--")
            .arg(provider);
            c
        }
        None => Command::new(provider),
    };
    let status = match command.args(rest).status() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("cannot start {provider}: {e}");
            return ExitCode::from(2);
        }
    };
    record(Path::new(rusage_file));
    ExitCode::from(status.code().map_or(1, |c| c as u8))
}

/// Appends `user_seconds system_seconds maxrss_kib` of the finished child, the lines
/// [`crate::terraform::Workspace`] reads.
fn record(path: &Path) {
    // SAFETY: getrusage only writes the struct we pass; zeroed is a valid rusage.
    let usage = unsafe {
        let mut u: libc::rusage = std::mem::zeroed();
        if libc::getrusage(libc::RUSAGE_CHILDREN, &mut u) != 0 {
            return;
        }
        u
    };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    let line = format!(
        "{:.6} {:.6} {}\n",
        secs(usage.ru_utime),
        secs(usage.ru_stime),
        usage.ru_maxrss
    );
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
    {
        let _ = f.write_all(line.as_bytes());
    }
}
