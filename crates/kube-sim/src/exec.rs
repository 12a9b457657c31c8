//! Pod exec over WebSocket (`v4.channel.k8s.io` / `v5.channel.k8s.io`), answering
//! `cat`/`tar` commands from files registered through the admin endpoint.

use futures_util::{SinkExt, StreamExt};
use hyper_util::rt::TokioIo;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::Role;
use tracing::warn;

use crate::selectors::LabelSelector;

/// A file whose content exec commands in matching pods return.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ExecFile {
    pub namespace: String,
    /// Pod name; when absent, `selector` chooses pods by label.
    #[serde(default)]
    pub pod: Option<String>,
    #[serde(default)]
    pub selector: Option<String>,
    pub path: String,
    pub content: String,
}

impl ExecFile {
    pub fn matches(&self, namespace: &str, pod: &serde_json::Value) -> bool {
        if self.namespace != namespace {
            return false;
        }
        match (&self.pod, &self.selector) {
            (Some(name), _) => pod["metadata"]["name"].as_str() == Some(name.as_str()),
            (None, Some(sel)) => LabelSelector::parse(sel).is_ok_and(|s| s.matches(pod)),
            (None, None) => true,
        }
    }
}

/// The result of running a command: stdout bytes, or an error message and exit code.
pub enum Outcome {
    Stdout(Vec<u8>),
    Failed { stderr: String, exit_code: i32 },
}

/// Runs `command` against the files visible in the pod.
pub fn run(command: &[String], files: &[ExecFile]) -> Outcome {
    let find = |path: &str| files.iter().find(|f| f.path == path);
    let args: Vec<&str> = command.iter().map(String::as_str).collect();
    // `sh -c "cat /x"` is how many callers wrap commands.
    let words: Vec<String> = match args.as_slice() {
        ["sh" | "/bin/sh" | "bash" | "/bin/bash", "-c", script] => {
            script.split_whitespace().map(str::to_string).collect()
        }
        _ => command.to_vec(),
    };
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    match words.as_slice() {
        ["cat", paths @ ..] if !paths.is_empty() => {
            let mut out = Vec::new();
            for p in paths {
                match find(p) {
                    Some(f) => out.extend_from_slice(f.content.as_bytes()),
                    None => {
                        return Outcome::Failed {
                            stderr: format!("cat: {p}: No such file or directory\n"),
                            exit_code: 1,
                        };
                    }
                }
            }
            Outcome::Stdout(out)
        }
        ["tar", flags, "-", path] if flags.contains('c') => tar_file(files, path, path),
        ["tar", flags, "-", "-C", dir, path] if flags.contains('c') => tar_file(
            files,
            &format!("{}/{path}", dir.trim_end_matches('/')),
            path,
        ),
        ["true"] => Outcome::Stdout(Vec::new()),
        _ => Outcome::Failed {
            stderr: format!("kube-sim: command not supported: {}\n", command.join(" ")),
            exit_code: 127,
        },
    }
}

/// `full` is where the file is looked up, `entry` the name it gets inside the archive.
fn tar_file(files: &[ExecFile], full: &str, entry: &str) -> Outcome {
    match files.iter().find(|f| f.path == full) {
        Some(f) => Outcome::Stdout(tar_one(entry.trim_start_matches('/'), f.content.as_bytes())),
        None => Outcome::Failed {
            stderr: format!("tar: {entry}: Cannot stat: No such file or directory\n"),
            exit_code: 2,
        },
    }
}

/// A ustar archive holding one regular file.
fn tar_one(name: &str, data: &[u8]) -> Vec<u8> {
    let mut header = [0u8; 512];
    let name_bytes = name.as_bytes();
    let n = name_bytes.len().min(100);
    header[..n].copy_from_slice(&name_bytes[..n]);
    let octal = |buf: &mut [u8], v: u64| {
        let s = format!("{:0width$o}\0", v, width = buf.len() - 1);
        buf.copy_from_slice(s.as_bytes());
    };
    octal(&mut header[100..108], 0o644);
    octal(&mut header[108..116], 0);
    octal(&mut header[116..124], 0);
    octal(&mut header[124..136], data.len() as u64);
    octal(&mut header[136..148], 0);
    header[156] = b'0';
    header[257..263].copy_from_slice(b"ustar\0");
    header[263..265].copy_from_slice(b"00");
    header[148..156].copy_from_slice(b"        ");
    let sum: u64 = header.iter().map(|b| u64::from(*b)).sum();
    let s = format!("{sum:06o}\0 ");
    header[148..156].copy_from_slice(s.as_bytes());
    let mut out = header.to_vec();
    out.extend_from_slice(data);
    out.resize(out.len().div_ceil(512) * 512, 0);
    out.extend_from_slice(&[0u8; 1024]);
    out
}

/// Speaks the channel protocol on an upgraded connection: stdout (1), stderr (2), then a
/// `Status` on the error channel (3).
pub async fn serve(upgraded: hyper::upgrade::Upgraded, outcome: Outcome) {
    let mut ws = WebSocketStream::from_raw_socket(TokioIo::new(upgraded), Role::Server, None).await;
    let frame = |ch: u8, data: &[u8]| {
        let mut v = Vec::with_capacity(data.len() + 1);
        v.push(ch);
        v.extend_from_slice(data);
        Message::Binary(v.into())
    };
    let status = match &outcome {
        Outcome::Stdout(_) => json!({"metadata": {}, "status": "Success"}),
        Outcome::Failed { exit_code, .. } => json!({
            "metadata": {}, "status": "Failure",
            "message": format!("command terminated with non-zero exit code: error executing command, exit status {exit_code}"),
            "reason": "NonZeroExitCode",
            "details": {"causes": [{"reason": "ExitCode", "message": exit_code.to_string()}]},
        }),
    };
    let mut frames = Vec::new();
    match outcome {
        Outcome::Stdout(data) => {
            for chunk in data.chunks(32 * 1024) {
                frames.push(frame(1, chunk));
            }
        }
        Outcome::Failed { stderr, .. } => frames.push(frame(2, stderr.as_bytes())),
    }
    frames.push(frame(3, status.to_string().as_bytes()));
    for f in frames {
        if let Err(e) = ws.send(f).await {
            warn!(error = %e, "exec websocket send");
            return;
        }
    }
    let _ = ws.close(None).await;
    // Drain until the client closes so the close handshake completes.
    while let Some(Ok(_)) = ws.next().await {}
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file() -> ExecFile {
        ExecFile {
            namespace: "ns".into(),
            pod: Some("p".into()),
            selector: None,
            path: "/out/data.txt".into(),
            content: "abc".into(),
        }
    }

    #[test]
    fn tar_with_directory_holds_the_relative_entry() {
        let cmd: Vec<String> = ["tar", "cf", "-", "-C", "/out", "data.txt"]
            .map(String::from)
            .to_vec();
        let Outcome::Stdout(bytes) = run(&cmd, &[file()]) else {
            panic!("tar failed");
        };
        assert_eq!(&bytes[..8], b"data.txt");
        assert_eq!(&bytes[512..515], b"abc");
        assert_eq!(bytes.len() % 512, 0);
    }

    #[test]
    fn sh_wrapped_cat_reads_the_file() {
        let cmd: Vec<String> = ["sh", "-c", "cat /out/data.txt"].map(String::from).to_vec();
        assert!(matches!(run(&cmd, &[file()]), Outcome::Stdout(b) if b == b"abc"));
    }
}
