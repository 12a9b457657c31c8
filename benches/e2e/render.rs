//! Whole-process `render --output-dir` of a package: exec, load, parse and render every
//! template, write the files, exit.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use crate::stats::Sample;

/// Go 1.19 text/template + Sprig v2 configured as KUDO 0.19 configures them, parsing
/// and rendering every template of kafka in one process, on these machines (the figure
/// issue #15 was filed with).
pub const GO_KAFKA_WHOLE_PROCESS_MS: f64 = 34.0;

pub fn measure(provider: &Path, package: &Path, runs: usize) -> Sample {
    let out = tempfile::tempdir().expect("temp dir");
    let once = || {
        let dir = out.path().join("render");
        let _ = std::fs::remove_dir_all(&dir);
        let started = Instant::now();
        let status = Command::new(provider)
            .arg("render")
            .arg(package)
            .arg("--output-dir")
            .arg(&dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("run render");
        let took = started.elapsed();
        assert!(status.success(), "render {} failed", package.display());
        took
    };
    once();
    let mut s = Sample::default();
    for _ in 0..runs {
        s.push(once());
    }
    s
}
