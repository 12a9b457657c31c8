//! The connection settings the provider shares with hashicorp/kubernetes besides the
//! credentials: `proxy_url` (every request through an HTTP CONNECT proxy),
//! `tls_server_name` (the name the server's certificate is checked against) and
//! `config_paths` (several kubeconfig files merged).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::harness::{TestContext, flat, serial_operator_yaml};

/// An HTTP proxy on 127.0.0.1 that tunnels `CONNECT host:port` requests, counting
/// them; it runs until the test process ends.
struct Proxy {
    url: String,
    tunnels: Arc<AtomicUsize>,
}

impl Proxy {
    fn start() -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the proxy");
        let url = format!("http://{}", listener.local_addr().expect("proxy address"));
        let tunnels = Arc::new(AtomicUsize::new(0));
        let count = tunnels.clone();
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let count = count.clone();
                std::thread::spawn(move || tunnel(client, &count));
            }
        });
        Proxy { url, tunnels }
    }

    fn tunnels(&self) -> usize {
        self.tunnels.load(Ordering::SeqCst)
    }
}

/// Serves one proxy connection: `CONNECT target HTTP/1.1`, headers, then bytes both
/// ways until either side closes.
fn tunnel(client: TcpStream, count: &AtomicUsize) {
    let Ok(reader_side) = client.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(reader_side);
    let mut request = String::new();
    if reader.read_line(&mut request).is_err() {
        return;
    }
    let mut header = String::new();
    while reader.read_line(&mut header).is_ok_and(|n| n > 2) {
        header.clear();
    }
    let mut client = client;
    let target = match request.split_whitespace().collect::<Vec<_>>().as_slice() {
        ["CONNECT", target, _] => target.to_string(),
        _ => {
            let _ = client.write_all(b"HTTP/1.1 405 Method Not Allowed\r\n\r\n");
            return;
        }
    };
    let Ok(server) = TcpStream::connect(&target) else {
        let _ = client.write_all(b"HTTP/1.1 502 Bad Gateway\r\n\r\n");
        return;
    };
    count.fetch_add(1, Ordering::SeqCst);
    if client
        .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
        .is_err()
    {
        return;
    }
    let (Ok(mut server_out), Ok(mut client_out)) = (server.try_clone(), client.try_clone()) else {
        return;
    };
    // Whatever the reader buffered past the headers belongs to the tunnel.
    let buffered = reader.buffer().to_vec();
    let _ = server_out.write_all(&buffered);
    let mut server_in = server;
    let upstream = std::thread::spawn(move || {
        let _ = std::io::copy(&mut reader, &mut server_out);
        let _ = server_out.shutdown(std::net::Shutdown::Write);
    });
    let mut buf = [0u8; 16 * 1024];
    loop {
        match server_in.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if client_out.write_all(&buf[..n]).is_err() {
                    break;
                }
            }
        }
    }
    let _ = client_out.shutdown(std::net::Shutdown::Both);
    let _ = upstream.join();
}

/// A provider block from the harness's kubeconfig (`config_path`) plus `extra`
/// settings, and an operator of a one-ConfigMap package.
fn config_with(extra: &str) -> String {
    format!(
        r#"terraform {{
  required_providers {{
    kudo = {{
      source = "kudo/kudo"
    }}
  }}
}}

variable "namespace" {{
  type = string
}}

provider "kudo" {{
{extra}
}}

resource "kudo_operator" "app" {{
  package   = "${{path.module}}/operator"
  namespace = var.namespace
}}

resource "kudo_instance" "app" {{
  name      = "app"
  namespace = var.namespace
  operator  = kudo_operator.app.id
}}
"#
    )
}

fn write_package(ctx: &TestContext) {
    ctx.write(
        "operator/operator.yaml",
        &serial_operator_yaml("settings-app", "0.1.0", &["config"]),
    );
    ctx.write(
        "operator/templates/config.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}-config\ndata:\n  a: b\n",
    );
}

// Every request goes through `proxy_url`: the apply and the destroy work with the
// proxy tunnelling to the API server.
#[test]
fn proxy_url_sends_every_request_through_the_proxy() {
    let ctx = TestContext::new("proxy-url");
    let proxy = Proxy::start();
    write_package(&ctx);
    ctx.write(
        "main.tf",
        &config_with(&format!("  proxy_url = {:?}", proxy.url)),
    );
    ctx.tf.apply(&[]).assert_success();
    let after_apply = proxy.tunnels();
    assert!(after_apply > 0, "nothing went through the proxy");
    ctx.kube()
        .must_get("v1", "ConfigMap", Some(&ctx.namespace), "app-config");
    ctx.tf.destroy(&[]).assert_success();
    ctx.mark_cleaned();
    assert!(
        proxy.tunnels() > after_apply,
        "the destroy bypassed the proxy"
    );
}

// The API server's certificate names `localhost` (and 127.0.0.1): checked against
// `tls_server_name = "localhost"` it is trusted; against a name it does not hold, the
// plan fails saying the certificate is not trusted.
#[test]
fn tls_server_name_is_what_the_certificate_is_checked_against() {
    let ctx = TestContext::new("tls-server-name");
    write_package(&ctx);
    ctx.write(
        "main.tf",
        &config_with(r#"  tls_server_name = "localhost""#),
    );
    ctx.tf
        .plan(&[])
        .assert_success()
        .assert_output_contains("Plan: 2 to add");
    ctx.write(
        "main.tf",
        &config_with(r#"  tls_server_name = "not-the-api-server.example.com""#),
    );
    let run = ctx.tf.plan(&[]).assert_clean_error();
    let out = flat(&run.output());
    assert!(out.contains("its TLS certificate is not trusted"), "{run}");
    assert!(
        out.contains(r#"certificate not valid for name "not-the-api-server.example.com""#),
        "{run}"
    );
    ctx.mark_cleaned();
}

// `config_paths` merges kubeconfigs: a context only the second file has is found, and
// the first file's current-context is used when none is named.
#[test]
fn config_paths_merge_several_kubeconfigs() {
    let mut ctx = TestContext::new("config-paths");
    write_package(&ctx);
    let harness = ctx.cluster.kubeconfig.display().to_string();
    // A first file that sets nothing the harness's file sets, only another context
    // (of an address where nothing listens) and no current-context.
    ctx.write(
        "other.kubeconfig",
        "apiVersion: v1\nkind: Config\nclusters:\n- name: elsewhere\n  cluster:\n    server: https://127.0.0.1:1\ncontexts:\n- name: elsewhere\n  context:\n    cluster: elsewhere\n    user: nobody\nusers:\n- name: nobody\n  user:\n    token: none\n",
    );
    ctx.tf.remove_env("KUBE_CONFIG_PATH");
    let other = ctx.workdir.join("other.kubeconfig").display().to_string();
    ctx.write(
        "main.tf",
        &config_with(&format!("  config_paths = [{other:?}, {harness:?}]")),
    );
    ctx.tf
        .plan(&[])
        .assert_success()
        .assert_output_contains("Plan: 2 to add");
    ctx.write(
        "main.tf",
        &config_with(&format!(
            "  config_paths    = [{other:?}, {harness:?}]\n  config_context  = \"elsewhere\"\n  request_timeout = \"2s\""
        )),
    );
    let run = ctx.tf.plan(&[]).assert_clean_error();
    assert!(
        flat(&run.output()).contains("https://127.0.0.1:1"),
        "the first file's context was not used: {run}"
    );
    ctx.mark_cleaned();
}
