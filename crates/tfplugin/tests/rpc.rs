//! The tfplugin6 and go-plugin services over plain TCP (Terraform without AutoMTLS).

use std::sync::atomic::Ordering;
use std::time::Duration;

use crate::common::{TestProvider, plain_channel, plain_client, thing_schema};
use tfplugin::proto::plugin::Empty;
use tfplugin::proto::plugin::grpc_controller_client::GrpcControllerClient;
use tfplugin::proto::tfplugin6 as pb;
use tfplugin::{ServeConfig, Type, Value, start};

const LIMIT: Duration = Duration::from_secs(20);

fn dv(v: &Value, ty: &Type) -> Option<pb::DynamicValue> {
    Some(pb::DynamicValue {
        msgpack: v.to_msgpack(ty).unwrap(),
        json: Vec::new(),
    })
}

async fn plain_server() -> (
    tfplugin::RunningServer,
    std::sync::Arc<std::sync::atomic::AtomicUsize>,
) {
    let provider = TestProvider::default();
    let stops = provider.stops.clone();
    let server = start(provider, ServeConfig::default()).await.unwrap();
    (server, stops)
}

#[tokio::test]
async fn plain_handshake_line_has_no_certificate() {
    let (server, _) = plain_server().await;
    assert_eq!(
        server.handshake_line(),
        format!("1|6|tcp|{}|grpc", server.address)
    );
    assert!(server.server_cert_der.is_none());
    server.shutdown();
}

#[tokio::test]
async fn port_range_is_honoured() {
    let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = probe.local_addr().unwrap().port();
    drop(probe);
    let server = start(
        TestProvider::default(),
        ServeConfig {
            client_cert_pem: None,
            port_range: Some((port, port)),
        },
    )
    .await
    .unwrap();
    assert_eq!(server.address.port(), port);
    server.shutdown();
}

#[tokio::test]
async fn schema_metadata_and_capabilities() {
    let (server, _) = plain_server().await;
    let mut c = plain_client(server.address).await;
    let s = c
        .get_provider_schema(pb::get_provider_schema::Request {})
        .await
        .unwrap()
        .into_inner();
    assert!(s.resource_schemas.contains_key("test_thing"));
    assert_eq!(s.resource_schemas["test_thing"].version, 1);
    assert!(s.data_source_schemas.contains_key("test_info"));
    let caps = s.server_capabilities.unwrap();
    assert!(caps.plan_destroy);
    // Advertised because no RPC relies on GetProviderSchema having been called:
    // `configure_plan_apply_read` serves a fresh process without it.
    assert!(caps.get_provider_schema_optional);

    let m = c
        .get_metadata(pb::get_metadata::Request {})
        .await
        .unwrap()
        .into_inner();
    assert_eq!(m.resources[0].type_name, "test_thing");
    assert_eq!(m.data_sources[0].type_name, "test_info");

    let ids = c
        .get_resource_identity_schemas(pb::get_resource_identity_schemas::Request {})
        .await
        .unwrap()
        .into_inner();
    assert!(ids.identity_schemas.is_empty() && ids.diagnostics.is_empty());
    let f = c
        .get_functions(pb::get_functions::Request {})
        .await
        .unwrap()
        .into_inner();
    assert!(f.functions.is_empty());
    let eph = c
        .open_ephemeral_resource(pb::open_ephemeral_resource::Request {
            type_name: "x".into(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(eph.diagnostics.len(), 1);
    server.shutdown();
}

/// A fresh process serves configure, plan, apply and read without being asked for its
/// schema first (what `get_provider_schema_optional` promises Terraform).
#[tokio::test]
async fn configure_plan_apply_read() {
    let (server, _) = plain_server().await;
    let mut c = plain_client(server.address).await;
    let pty = Type::object([("endpoint", Type::String)]);

    let bad = c
        .configure_provider(pb::configure_provider::Request {
            terraform_version: "1.11.4".into(),
            config: dv(&Value::object([("endpoint", Value::string("bad"))]), &pty),
            client_capabilities: None,
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(bad.diagnostics[0].summary, "Bad endpoint");

    let ty = thing_schema().value_type();
    let config = Value::object([
        ("name", Value::string("a")),
        ("labels", Value::string_map([("k", "v")])),
    ]);
    let plan = c
        .plan_resource_change(pb::plan_resource_change::Request {
            type_name: "test_thing".into(),
            prior_state: dv(&Value::Null, &ty),
            proposed_new_state: dv(&config, &ty),
            config: dv(&config, &ty),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert!(plan.diagnostics.is_empty(), "{:?}", plan.diagnostics);
    let planned = Value::from_msgpack(&plan.planned_state.unwrap().msgpack, &ty).unwrap();
    assert_eq!(planned.get("id"), &Value::Unknown);
    assert_eq!(plan.planned_private, b"plan-private");

    let applied = c
        .apply_resource_change(pb::apply_resource_change::Request {
            type_name: "test_thing".into(),
            prior_state: None,
            planned_state: dv(&planned, &ty),
            config: dv(&config, &ty),
            planned_private: plan.planned_private.clone(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    let state = Value::from_msgpack(&applied.new_state.unwrap().msgpack, &ty).unwrap();
    assert_eq!(state.get("id").as_str(), Some("id-a"));
    assert_eq!(state.get("labels").get("k").as_str(), Some("v"));

    // Renaming requires replacement.
    let renamed = state.clone().with("name", Value::string("b"));
    let plan2 = c
        .plan_resource_change(pb::plan_resource_change::Request {
            type_name: "test_thing".into(),
            prior_state: dv(&state, &ty),
            proposed_new_state: dv(&renamed, &ty),
            config: dv(&renamed.clone().with("id", Value::Null), &ty),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        plan2.requires_replace,
        vec![tfplugin::AttributePath::attribute("name").to_proto()]
    );

    let read = c
        .read_resource(pb::read_resource::Request {
            type_name: "test_thing".into(),
            current_state: dv(&state, &ty),
            private: b"p".to_vec(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        Value::from_msgpack(&read.new_state.unwrap().msgpack, &ty).unwrap(),
        state
    );
    assert_eq!(read.private, b"p");

    // Destroy: planned null in, new state null out.
    let destroyed = c
        .apply_resource_change(pb::apply_resource_change::Request {
            type_name: "test_thing".into(),
            prior_state: dv(&state, &ty),
            planned_state: dv(&Value::Null, &ty),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(destroyed.new_state.unwrap().msgpack, vec![0xc0]);
    server.shutdown();
}

#[tokio::test]
async fn upgrade_state_from_json() {
    let (server, _) = plain_server().await;
    let mut c = plain_client(server.address).await;
    let r = c
        .upgrade_resource_state(pb::upgrade_resource_state::Request {
            type_name: "test_thing".into(),
            version: 0,
            raw_state: Some(pb::RawState {
                json: br#"{"name":"a","id":"x","obsolete":true}"#.to_vec(),
                flatmap: Default::default(),
            }),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(r.diagnostics.is_empty(), "{:?}", r.diagnostics);
    let v = Value::from_msgpack(
        &r.upgraded_state.unwrap().msgpack,
        &thing_schema().value_type(),
    )
    .unwrap();
    assert_eq!(v.get("id").as_str(), Some("x"));
    server.shutdown();
}

#[tokio::test]
async fn errors_become_diagnostics() {
    let (server, _) = plain_server().await;
    let mut c = plain_client(server.address).await;
    let unknown = c
        .read_resource(pb::read_resource::Request {
            type_name: "nope".into(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert!(unknown.diagnostics[0].detail.contains("nope"));

    let garbage = c
        .validate_resource_config(pb::validate_resource_config::Request {
            type_name: "test_thing".into(),
            config: Some(pb::DynamicValue {
                msgpack: vec![0xa1, b'x'],
                json: Vec::new(),
            }),
            client_capabilities: None,
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        garbage.diagnostics[0].summary,
        "Invalid value received from Terraform"
    );

    // The provider returns a value that does not fit the data source schema.
    let ty = Type::object([("value", Type::String)]);
    let wrong = c
        .read_data_source(pb::read_data_source::Request {
            type_name: "test_info".into(),
            config: dv(&Value::object([("value", Value::Null)]), &ty),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        wrong.diagnostics[0].summary,
        "Provider produced an invalid value"
    );
    assert!(wrong.state.is_none());
    server.shutdown();
}

#[tokio::test]
async fn health_stop_and_shutdown() {
    let (server, stops) = plain_server().await;
    let ch = plain_channel(server.address).await;

    let mut health = tonic_health::pb::health_client::HealthClient::new(ch.clone());
    let status = health
        .check(tonic_health::pb::HealthCheckRequest {
            service: "plugin".into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        status.status,
        tonic_health::pb::health_check_response::ServingStatus::Serving as i32
    );

    let mut c = pb::provider_client::ProviderClient::new(ch.clone());
    let r = c
        .stop_provider(pb::stop_provider::Request {})
        .await
        .unwrap()
        .into_inner();
    assert_eq!(r.error, "");
    assert_eq!(stops.load(Ordering::SeqCst), 1);

    // An open stdio stream must not keep the server from shutting down.
    let mut stdio = tfplugin::proto::plugin::grpc_stdio_client::GrpcStdioClient::new(ch.clone());
    let mut stream = stdio.stream_stdio(()).await.unwrap().into_inner();

    let mut ctl = GrpcControllerClient::new(ch);
    ctl.shutdown(Empty {}).await.unwrap();
    tokio::time::timeout(LIMIT, server.wait())
        .await
        .expect("server stops after Shutdown")
        .unwrap();
    let end = tokio::time::timeout(LIMIT, stream.message())
        .await
        .expect("stdio stream ends");
    assert!(matches!(end, Ok(None) | Err(_)));
}

#[tokio::test]
async fn write_only_attributes_are_flagged_refused_for_old_clients_and_never_returned() {
    let server = start(crate::common::FeatureProvider, ServeConfig::default())
        .await
        .unwrap();
    let mut c = plain_client(server.address).await;
    let schema = c
        .get_provider_schema(pb::get_provider_schema::Request {})
        .await
        .unwrap()
        .into_inner();
    let attrs = &schema.resource_schemas["test_secret"]
        .block
        .as_ref()
        .unwrap()
        .attributes;
    let wo = attrs.iter().find(|a| a.name == "password_wo").unwrap();
    assert!(wo.write_only && wo.optional && !wo.computed);
    assert!(
        attrs
            .iter()
            .find(|a| a.name == "name")
            .is_some_and(|a| !a.write_only)
    );

    let ty = crate::common::secret_schema().value_type();
    let config = Value::object([
        ("name", Value::string("a")),
        ("password_wo", Value::string("hunter2")),
    ]);
    let validate = |caps: Option<pb::ClientCapabilities>| pb::validate_resource_config::Request {
        type_name: "test_secret".into(),
        config: dv(&config, &ty),
        client_capabilities: caps,
    };
    // Terraform before 1.11 sends no capability: the provider is told so.
    let old = c
        .validate_resource_config(validate(None))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(old.diagnostics.len(), 1, "{:?}", old.diagnostics);
    let new = c
        .validate_resource_config(validate(Some(pb::ClientCapabilities {
            deferral_allowed: false,
            write_only_attributes_allowed: true,
            ..Default::default()
        })))
        .await
        .unwrap()
        .into_inner();
    assert!(new.diagnostics.is_empty(), "{:?}", new.diagnostics);

    let plan = c
        .plan_resource_change(pb::plan_resource_change::Request {
            type_name: "test_secret".into(),
            prior_state: dv(&Value::Null, &ty),
            proposed_new_state: dv(&config, &ty),
            config: dv(&config, &ty),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    let planned = Value::from_msgpack(&plan.planned_state.unwrap().msgpack, &ty).unwrap();
    assert_eq!(planned.get("password_wo"), &Value::Null);
    assert_eq!(planned.get("name").as_str(), Some("a"));
}

#[tokio::test]
async fn functions_are_listed_and_called_with_typed_arguments() {
    let server = start(crate::common::FeatureProvider, ServeConfig::default())
        .await
        .unwrap();
    let mut c = plain_client(server.address).await;
    let listed = c
        .get_functions(pb::get_functions::Request {})
        .await
        .unwrap()
        .into_inner();
    let double = &listed.functions["double"];
    assert_eq!(double.parameters[0].name, "n");
    assert_eq!(
        double.r#return.as_ref().unwrap().r#type,
        b"\"number\"".to_vec()
    );
    let schema = c
        .get_provider_schema(pb::get_provider_schema::Request {})
        .await
        .unwrap()
        .into_inner();
    assert!(schema.functions.contains_key("double"));
    let meta = c
        .get_metadata(pb::get_metadata::Request {})
        .await
        .unwrap()
        .into_inner();
    assert_eq!(meta.functions[0].name, "double");

    let call = |name: &str, args: Vec<Value>| pb::call_function::Request {
        name: name.into(),
        arguments: args.iter().map(|a| dv(a, &Type::Number).unwrap()).collect(),
    };
    let ok = c
        .call_function(call("double", vec![Value::int(21)]))
        .await
        .unwrap()
        .into_inner();
    assert!(ok.error.is_none(), "{:?}", ok.error);
    let result = Value::from_msgpack(&ok.result.unwrap().msgpack, &Type::Number).unwrap();
    assert_eq!(result.as_i64(), Some(42));

    let refused = c
        .call_function(call("double", vec![Value::int(-1)]))
        .await
        .unwrap()
        .into_inner();
    let e = refused.error.unwrap();
    assert_eq!(
        (e.text.as_str(), e.function_argument),
        ("n must not be negative", Some(0))
    );

    let arity = c
        .call_function(call("double", vec![]))
        .await
        .unwrap()
        .into_inner();
    assert!(arity.error.unwrap().text.contains("takes 1 arguments"));
    let unknown = c
        .call_function(call("triple", vec![Value::int(1)]))
        .await
        .unwrap()
        .into_inner();
    assert!(
        unknown
            .error
            .unwrap()
            .text
            .contains("no function \"triple\"")
    );
}
