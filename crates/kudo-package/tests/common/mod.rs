//! Test helpers: a tiny HTTP server on 127.0.0.1 and raw tar building.
#![allow(dead_code)]

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

pub fn repo_fixtures() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures"))
}

/// Serves `files` (path -> bytes) until the test process ends; counts GETs per path.
pub struct Server {
    pub base: String,
    pub hits: Arc<Mutex<HashMap<String, usize>>>,
    files: Arc<Mutex<HashMap<String, Vec<u8>>>>,
}

impl Server {
    pub fn start() -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        let files: Arc<Mutex<HashMap<String, Vec<u8>>>> = Arc::default();
        let hits: Arc<Mutex<HashMap<String, usize>>> = Arc::default();
        let (f, h) = (files.clone(), hits.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let mut reader = BufReader::new(stream.try_clone().expect("clone"));
                let mut request_line = String::new();
                if reader.read_line(&mut request_line).is_err() {
                    continue;
                }
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).is_err() || line == "\r\n" || line.is_empty() {
                        break;
                    }
                }
                let path = request_line
                    .split_whitespace()
                    .nth(1)
                    .unwrap_or("/")
                    .to_string();
                *h.lock().unwrap().entry(path.clone()).or_default() += 1;
                let body = f.lock().unwrap().get(&path).cloned();
                let response = match body {
                    Some(b) => {
                        let mut r = format!(
                            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                            b.len()
                        )
                        .into_bytes();
                        r.extend(b);
                        r
                    }
                    None => {
                        b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                            .to_vec()
                    }
                };
                let _ = stream.write_all(&response);
            }
        });
        Server {
            base: format!("http://{addr}"),
            hits,
            files,
        }
    }

    pub fn put(&self, path: &str, bytes: Vec<u8>) {
        self.files.lock().unwrap().insert(path.to_string(), bytes);
    }

    pub fn hits(&self, path: &str) -> usize {
        self.hits.lock().unwrap().get(path).copied().unwrap_or(0)
    }
}

/// One raw tar entry; the name is written as-is (no validation), so tests can build
/// hostile archives.
pub struct Entry<'a> {
    pub name: &'a str,
    pub kind: tar::EntryType,
    pub data: &'a [u8],
    pub link: Option<&'a str>,
    /// Size written in the header when it must lie about the data.
    pub claimed_size: Option<u64>,
}

pub fn file<'a>(name: &'a str, data: &'a [u8]) -> Entry<'a> {
    Entry {
        name,
        kind: tar::EntryType::Regular,
        data,
        link: None,
        claimed_size: None,
    }
}

pub fn raw_tgz(entries: &[Entry<'_>]) -> Vec<u8> {
    let mut tar_bytes = Vec::new();
    for e in entries {
        let mut header = tar::Header::new_old();
        {
            let old = header.as_old_mut();
            old.name[..e.name.len()].copy_from_slice(e.name.as_bytes());
            if let Some(l) = e.link {
                old.linkname[..l.len()].copy_from_slice(l.as_bytes());
            }
        }
        header.set_entry_type(e.kind);
        header.set_mode(0o644);
        header.set_size(e.claimed_size.unwrap_or(e.data.len() as u64));
        header.set_cksum();
        tar_bytes.extend_from_slice(header.as_bytes());
        tar_bytes.extend_from_slice(e.data);
        let pad = (512 - e.data.len() % 512) % 512;
        tar_bytes.extend(std::iter::repeat_n(0u8, pad));
    }
    tar_bytes.extend(std::iter::repeat_n(0u8, 1024));
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&tar_bytes).unwrap();
    gz.finish().unwrap()
}

pub const OPERATOR: &str = "name: demo\noperatorVersion: 0.1.0\ntasks:\n  - name: app\n    kind: Apply\n    spec:\n      resources: [cm.yaml]\nplans:\n  deploy:\n    strategy: serial\n    phases:\n      - name: main\n        strategy: serial\n        steps:\n          - name: app\n            tasks: [app]\n";
pub const TEMPLATE: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}\n";
