//! Generated protobuf/gRPC code (from `/proto`, see `build.rs`).
//! Public so tests and tools can drive a server with the generated clients.
#![allow(missing_docs, clippy::all, clippy::pedantic)]

pub mod tfplugin6 {
    tonic::include_proto!("tfplugin6");
}

/// go-plugin's own services (package `plugin`).
pub mod plugin {
    tonic::include_proto!("plugin");
}
