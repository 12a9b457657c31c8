//! go-plugin's own services that every gRPC plugin serves next to the
//! application service.

use std::pin::Pin;

use futures_util::Stream;
use tokio::sync::watch;
use tonic::{Request, Response, Status, Streaming};

use crate::proto::plugin::grpc_broker_server::GrpcBroker;
use crate::proto::plugin::grpc_controller_server::GrpcController;
use crate::proto::plugin::grpc_stdio_server::GrpcStdio;
use crate::proto::plugin::{ConnInfo, Empty, StdioData};

type BoxStream<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send + 'static>>;

/// `GRPCController.Shutdown`: go-plugin's graceful stop when Terraform is done
/// with the plugin.
pub(crate) struct Controller {
    shutdown: watch::Sender<bool>,
}

impl Controller {
    pub(crate) fn new(shutdown: watch::Sender<bool>) -> Self {
        Controller { shutdown }
    }
}

#[tonic::async_trait]
impl GrpcController for Controller {
    async fn shutdown(&self, _request: Request<Empty>) -> Result<Response<Empty>, Status> {
        tracing::debug!("Shutdown called by Terraform");
        self.shutdown.send_replace(true);
        Ok(Response::new(Empty {}))
    }
}

/// `GRPCStdio.StreamStdio`: our stdout/stderr are not redirected, so there is
/// nothing to forward; the stream stays open until shutdown so the host does
/// not treat the plugin as gone.
pub(crate) struct Stdio {
    shutdown: watch::Receiver<bool>,
}

impl Stdio {
    pub(crate) fn new(shutdown: watch::Receiver<bool>) -> Self {
        Stdio { shutdown }
    }
}

#[tonic::async_trait]
impl GrpcStdio for Stdio {
    type StreamStdioStream = BoxStream<StdioData>;

    async fn stream_stdio(
        &self,
        _request: Request<()>,
    ) -> Result<Response<Self::StreamStdioStream>, Status> {
        let stream = futures_util::stream::unfold(self.shutdown.clone(), |mut rx| async move {
            let _ = rx.wait_for(|stop| *stop).await;
            None
        });
        Ok(Response::new(Box::pin(stream)))
    }
}

/// `GRPCBroker.StartStream`: go-plugin's client always opens it; Terraform
/// never asks for extra connections, so incoming messages are read and
/// dropped until the host closes the stream or we shut down.
pub(crate) struct Broker {
    shutdown: watch::Receiver<bool>,
}

impl Broker {
    pub(crate) fn new(shutdown: watch::Receiver<bool>) -> Self {
        Broker { shutdown }
    }
}

#[tonic::async_trait]
impl GrpcBroker for Broker {
    type StartStreamStream = BoxStream<ConnInfo>;

    async fn start_stream(
        &self,
        request: Request<Streaming<ConnInfo>>,
    ) -> Result<Response<Self::StartStreamStream>, Status> {
        let state = (request.into_inner(), self.shutdown.clone());
        let stream = futures_util::stream::unfold(state, |(mut incoming, mut rx)| async move {
            loop {
                tokio::select! {
                    msg = incoming.message() => match msg {
                        Ok(Some(info)) => tracing::debug!(service_id = info.service_id, "ignoring broker request"),
                        _ => return None,
                    },
                    _ = rx.wait_for(|stop| *stop) => return None,
                }
            }
        });
        Ok(Response::new(Box::pin(stream)))
    }
}
