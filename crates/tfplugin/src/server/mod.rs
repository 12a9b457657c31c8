//! Running a [`Provider`] as a go-plugin gRPC plugin: handshake, listener,
//! AutoMTLS and the gRPC services Terraform talks to.

mod actions;
mod conn;
mod go_plugin;
mod handshake;
mod rpc;
mod tls;

use std::io::Write;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use tokio::net::TcpListener;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tokio_stream::wrappers::ReceiverStream;
use tonic::transport::Server;

pub use handshake::{
    MAGIC_COOKIE_KEY, MAGIC_COOKIE_VALUE, NotStartedByTerraform, handshake_line,
    started_by_terraform,
};

use crate::proto::plugin::grpc_broker_server::GrpcBrokerServer;
use crate::proto::plugin::grpc_controller_server::GrpcControllerServer;
use crate::proto::plugin::grpc_stdio_server::GrpcStdioServer;
use crate::proto::tfplugin6::provider_server::ProviderServer;
use crate::provider::Provider;
use conn::Conn;

/// How long in-flight RPCs may run on after a shutdown request before the
/// server stops waiting for them; Terraform kills the process soon anyway.
const GRACEFUL_SHUTDOWN_LIMIT: Duration = Duration::from_secs(5);

/// Where and how to listen. [`ServeConfig::from_env`] reads what Terraform
/// passes; tests build one directly.
#[derive(Debug, Clone, Default)]
pub struct ServeConfig {
    /// PEM of the only client certificate to accept (`PLUGIN_CLIENT_CERT`).
    /// `None` serves plain TCP, as old Terraform versions without AutoMTLS expect.
    pub client_cert_pem: Option<String>,
    /// Inclusive port range to try on 127.0.0.1; `None` lets the OS choose.
    pub port_range: Option<(u16, u16)>,
}

impl ServeConfig {
    /// Reads the environment Terraform sets for its plugins. Fails when the
    /// magic cookie is absent or wrong: the binary was not started by Terraform.
    pub fn from_env() -> Result<ServeConfig, NotStartedByTerraform> {
        if !started_by_terraform() {
            return Err(NotStartedByTerraform);
        }
        if let Ok(versions) = std::env::var("PLUGIN_PROTOCOL_VERSIONS")
            && !versions.split(',').any(|v| v.trim() == "6")
        {
            tracing::warn!(
                versions,
                "Terraform did not offer plugin protocol 6; trying anyway"
            );
        }
        let port = |name: &str| {
            std::env::var(name)
                .ok()
                .and_then(|v| v.trim().parse::<u16>().ok())
        };
        let port_range = match (port("PLUGIN_MIN_PORT"), port("PLUGIN_MAX_PORT")) {
            (Some(min), Some(max)) if min <= max => Some((min, max)),
            _ => None,
        };
        let client_cert_pem = std::env::var("PLUGIN_CLIENT_CERT")
            .ok()
            .filter(|s| !s.trim().is_empty());
        Ok(ServeConfig {
            client_cert_pem,
            port_range,
        })
    }
}

/// A started server. Dropping it does not stop it; call [`RunningServer::shutdown`].
pub struct RunningServer {
    pub address: SocketAddr,
    /// DER of the generated server certificate (AutoMTLS only).
    pub server_cert_der: Option<Vec<u8>>,
    shutdown: watch::Sender<bool>,
    task: JoinHandle<anyhow::Result<()>>,
}

impl RunningServer {
    /// The line to print on stdout for go-plugin.
    pub fn handshake_line(&self) -> String {
        handshake_line(self.address, self.server_cert_der.as_deref())
    }
    /// Same as Terraform calling `GRPCController.Shutdown`.
    pub fn shutdown(&self) {
        self.shutdown.send_replace(true);
    }
    /// Waits until the server has stopped (after a shutdown request).
    pub async fn wait(self) -> anyhow::Result<()> {
        self.task.await.context("server task panicked")?
    }
}

/// Runs `provider` as Terraform expects: checks the magic cookie (printing a
/// plain explanation on stderr and returning [`NotStartedByTerraform`] when
/// it is missing), listens, prints the handshake line on stdout and serves
/// until Terraform asks the plugin to shut down.
pub async fn serve<P: Provider>(provider: P) -> anyhow::Result<()> {
    let config = match ServeConfig::from_env() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{}", NotStartedByTerraform::MESSAGE);
            return Err(e.into());
        }
    };
    let server = start(provider, config).await?;
    {
        let mut out = std::io::stdout().lock();
        writeln!(out, "{}", server.handshake_line()).context("writing the handshake line")?;
        out.flush().context("flushing the handshake line")?;
    }
    ignore_interrupts();
    tracing::debug!(address = %server.address, "plugin server started");
    server.wait().await
}

/// Terraform forwards Ctrl-C to the whole process group, then stops the
/// provider itself via StopProvider and Shutdown; dying on SIGINT would cut
/// an apply short and lose state, so the signal is only logged.
fn ignore_interrupts() {
    tokio::spawn(async {
        while tokio::signal::ctrl_c().await.is_ok() {
            tracing::debug!("interrupt received; waiting for Terraform to stop the provider");
        }
    });
}

/// Binds, prepares TLS and starts serving in the background.
pub async fn start<P: Provider>(provider: P, config: ServeConfig) -> anyhow::Result<RunningServer> {
    let listener = bind(config.port_range).await?;
    let address = listener
        .local_addr()
        .context("reading the listener address")?;
    let (tls, server_cert_der) = match &config.client_cert_pem {
        Some(pem) => {
            let (cfg, der) = tls::server_config(pem)?;
            (Some(tokio_rustls::TlsAcceptor::from(cfg)), Some(der))
        }
        None => (None, None),
    };
    let (shutdown_tx, shutdown_rx) = watch::channel(false);

    let (conn_tx, conn_rx) = mpsc::channel::<Conn>(16);
    tokio::spawn(accept_loop(listener, tls, conn_tx, shutdown_rx.clone()));
    let incoming =
        tokio_stream::StreamExt::map(ReceiverStream::new(conn_rx), Ok::<_, std::io::Error>);

    let (health_reporter, health_service) = tonic_health::server::health_reporter();
    health_reporter
        .set_service_status("plugin", tonic_health::ServingStatus::Serving)
        .await;

    let provider_service = ProviderServer::new(rpc::ProviderService::new(Arc::new(provider)))
        .max_decoding_message_size(usize::MAX)
        .max_encoding_message_size(usize::MAX);
    let controller = GrpcControllerServer::new(go_plugin::Controller::new(shutdown_tx.clone()));
    let stdio = GrpcStdioServer::new(go_plugin::Stdio::new(shutdown_rx.clone()));
    let broker = GrpcBrokerServer::new(go_plugin::Broker::new(shutdown_rx.clone()));

    let router = Server::builder()
        .add_service(health_service)
        .add_service(controller)
        .add_service(stdio)
        .add_service(broker)
        .add_service(provider_service);

    let mut signal_rx = shutdown_rx.clone();
    let mut limit_rx = shutdown_rx;
    let task = tokio::spawn(async move {
        let serving = router.serve_with_incoming_shutdown(incoming, async move {
            let _ = signal_rx.wait_for(|stop| *stop).await;
            tracing::debug!("shutdown requested");
        });
        let limit = async move {
            let _ = limit_rx.wait_for(|stop| *stop).await;
            tokio::time::sleep(GRACEFUL_SHUTDOWN_LIMIT).await;
        };
        tokio::select! {
            r = serving => r.context("gRPC server failed"),
            () = limit => {
                tracing::warn!("RPCs still running after shutdown request; exiting anyway");
                Ok(())
            }
        }
    });
    Ok(RunningServer {
        address,
        server_cert_der,
        shutdown: shutdown_tx,
        task,
    })
}

async fn bind(range: Option<(u16, u16)>) -> anyhow::Result<TcpListener> {
    let Some((min, max)) = range else {
        return TcpListener::bind(("127.0.0.1", 0))
            .await
            .context("binding 127.0.0.1:0");
    };
    // go-plugin takes the first free port of the range, in order.
    for port in min..=max {
        if let Ok(l) = TcpListener::bind(("127.0.0.1", port)).await {
            return Ok(l);
        }
    }
    anyhow::bail!(
        "no free port on 127.0.0.1 between PLUGIN_MIN_PORT={min} and PLUGIN_MAX_PORT={max}"
    )
}

async fn accept_loop(
    listener: TcpListener,
    tls: Option<tokio_rustls::TlsAcceptor>,
    conns: mpsc::Sender<Conn>,
    mut shutdown: watch::Receiver<bool>,
) {
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            _ = shutdown.wait_for(|stop| *stop) => return,
        };
        let (tcp, peer) = match accepted {
            Ok(a) => a,
            Err(e) => {
                tracing::warn!(error = %e, "accepting a connection failed");
                continue;
            }
        };
        let _ = tcp.set_nodelay(true);
        let conns = conns.clone();
        match &tls {
            None => {
                if conns.send(Conn::Plain(tcp)).await.is_err() {
                    return;
                }
            }
            Some(acceptor) => {
                // Handshake off the accept loop so one slow client cannot block others.
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    match acceptor.accept(tcp).await {
                        Ok(stream) => {
                            let _ = conns.send(Conn::Tls(Box::new(stream))).await;
                        }
                        Err(e) => tracing::warn!(%peer, error = %e, "TLS handshake refused"),
                    }
                });
            }
        }
    }
}
