//! A static file server (for HTTP operator repositories) and the provider binary's
//! author tools (`package create`, `repo index`), for tests that build repositories.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use super::provider_binary;

/// Serves the files of one folder over HTTP/1.0 until dropped.
pub struct FileServer {
    pub url: String,
    stop: Arc<AtomicBool>,
    addr: std::net::SocketAddr,
}

impl FileServer {
    pub fn start(dir: PathBuf) -> FileServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        let addr = listener.local_addr().expect("local addr");
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = stop.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if stopping.load(Ordering::SeqCst) {
                    break;
                }
                if let Ok(stream) = conn {
                    serve_one(&dir, stream);
                }
            }
        });
        FileServer {
            url: format!("http://{addr}/"),
            stop,
            addr,
        }
    }
}

impl Drop for FileServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so the thread sees the flag.
        let _ = TcpStream::connect(self.addr);
    }
}

fn serve_one(dir: &Path, mut stream: TcpStream) {
    let mut request_line = String::new();
    let mut reader = BufReader::new(&stream);
    if reader.read_line(&mut request_line).is_err() {
        return;
    }
    // Drain the headers.
    let mut line = String::new();
    while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
        line.clear();
    }
    let path = request_line
        .split_whitespace()
        .nth(1)
        .unwrap_or("/")
        .trim_start_matches('/')
        .to_string();
    let file = dir.join(&path);
    let response = match (path.contains(".."), std::fs::read(&file)) {
        (false, Ok(body)) => {
            let mut r = format!(
                "HTTP/1.0 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            )
            .into_bytes();
            r.extend(body);
            r
        }
        _ => b"HTTP/1.0 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_vec(),
    };
    let _ = stream.write_all(&response);
}

/// Runs an author-tool subcommand of the provider binary.
pub fn tool(args: &[&str]) -> String {
    let out = Command::new(provider_binary())
        .args(args)
        .env_remove("TF_PLUGIN_MAGIC_COOKIE")
        .output()
        .expect("provider binary runs");
    assert!(
        out.status.success(),
        "{args:?} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}
