//! Generates the gRPC server stubs from the protocol files in `/proto`.
//! protoc comes from `protoc-bin-vendored`, so no system protoc is needed.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let protoc = protoc_bin_vendored::protoc_bin_path()?;
    let include = protoc_bin_vendored::include_path()?;
    // SAFETY: build scripts are single-threaded; prost-build reads PROTOC from the env.
    unsafe {
        std::env::set_var("PROTOC", protoc);
    }
    let include_str = include.to_str().ok_or("protoc include path is not UTF-8")?;
    let protos = [
        "../../proto/tfplugin6/tfplugin6.proto",
        "../../proto/plugin/grpc_controller.proto",
        "../../proto/plugin/grpc_stdio.proto",
        "../../proto/plugin/grpc_broker.proto",
    ];
    for p in &protos {
        println!("cargo:rerun-if-changed={p}");
    }
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .compile_protos(&protos, &["../../proto", include_str])?;
    Ok(())
}
