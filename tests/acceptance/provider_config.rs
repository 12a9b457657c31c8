//! The provider block as Terraform sends it (`ValidateProviderConfig`,
//! `ConfigureProvider`) and what comes back: the diagnostics of a broken block, on the
//! attribute at fault, and the effect of the settings on the calls that follow.
//! How each setting changes installs is tested through Terraform elsewhere
//! (`connection_settings`, `credentials`, `kubernetes_versions`, `offline`).

use std::os::unix::fs::PermissionsExt;

use tfplugin::{AttributePath, Diagnostic, Provider, Value};

use crate::harness::TestContext;
use crate::harness::rpc::{
    KudoProvider, TERRAFORM_VERSION, block_on, configured, on, provider_block, text, value_of,
};

/// `ValidateProviderConfig` and `ConfigureProvider` of `config`: Terraform calls both,
/// and a fully known block must get the same answer from each.
fn refused(config: &Value) -> Vec<Diagnostic> {
    let provider = KudoProvider::new();
    let configured = block_on(provider.configure(config.clone(), TERRAFORM_VERSION.into()));
    if config.is_fully_known() {
        let validated = block_on(provider.validate_provider_config(config.clone()));
        assert_eq!(validated, configured, "validate and configure differ");
    }
    configured
}

/// A block that must be accepted by validation and by `configure`.
#[track_caller]
fn accepted(config: Value) -> KudoProvider {
    let validated = block_on(KudoProvider::new().validate_provider_config(config.clone()));
    assert!(validated.is_empty(), "{}", text(&validated));
    configured(config)
}

/// What importing an instance gets from `provider`: the call that shows whether the
/// provider is offline, and which settings it waits for.
fn import_diagnostics(provider: &KudoProvider) -> Vec<Diagnostic> {
    let resp = block_on(provider.import_resource_state("kudo_instance", "default/web"));
    assert!(resp.imported.is_empty(), "imported {:?}", resp.imported);
    resp.diagnostics
}

/// The sentence of the offline import refusal that names the unknown settings.
fn offline_names(provider: &KudoProvider) -> String {
    let diags = import_diagnostics(provider);
    let offline = diags
        .iter()
        .find(|d| d.summary == "Cannot import before the cluster connection is known")
        .unwrap_or_else(|| panic!("not offline: {}", text(&diags)));
    offline
        .detail
        .split_once("the provider settings ")
        .and_then(|(_, rest)| rest.split_once(" are known only after apply"))
        .map(|(names, _)| names.to_string())
        .unwrap_or_else(|| panic!("no settings named: {}", offline.detail))
}

#[test]
fn host_token_and_insecure_reach_the_cluster() {
    let ctx = TestContext::new("config-connection");
    let connection = ctx.connection();
    // No CA: only `insecure` lets the TLS handshake with the test cluster succeed.
    let provider = accepted(provider_block([
        ("host", Value::string(&connection.host)),
        ("token", Value::opt_string(non_empty(&connection.token))),
        (
            "client_certificate",
            Value::opt_string(non_empty(&connection.client_certificate)),
        ),
        (
            "client_key",
            Value::opt_string(non_empty(&connection.client_key)),
        ),
        ("insecure", Value::bool(true)),
    ]));
    let resp = block_on(
        provider.import_resource_state("kudo_instance", &format!("{}/absent", ctx.namespace)),
    );
    // The cluster answered: the import fails because there is no such instance.
    let diags = text(&resp.diagnostics);
    assert!(!diags.contains("Cannot reach"), "{diags}");
    assert!(
        diags.contains(&format!(
            "There is no Instance absent in namespace {}.",
            ctx.namespace
        )),
        "{diags}"
    );

    // And `host` is the one the provider connects to, as its error says.
    let provider = accepted(provider_block([
        ("host", Value::string("https://127.0.0.1:1")),
        ("token", Value::string("abc")),
        ("insecure", Value::bool(true)),
    ]));
    let diags = text(&import_diagnostics(&provider));
    assert!(
        diags.contains("Cannot reach") && diags.contains("`host` setting (https://127.0.0.1:1)"),
        "{diags}"
    );
}

fn non_empty(s: &str) -> Option<&str> {
    (!s.is_empty()).then_some(s)
}

/// Two repositories offering package `lifecycle`: the one listed first in 0.1.0, the
/// one with the lower `priority` in 0.2.0.
#[test]
fn the_repository_with_the_lower_priority_is_searched_first() {
    let dir = tempfile::tempdir().expect("temp dir");
    let fixtures = crate::harness::repo_root().join("tests/fixtures/operators");
    for (repo, package) in [("first", "lifecycle-v1"), ("preferred", "lifecycle-v2")] {
        crate::harness::copy_dir(
            &fixtures.join(package),
            &dir.path().join(repo).join("lifecycle"),
        );
    }
    let repository = |name: &str, priority: i64| {
        Value::object([
            ("name", Value::string(name)),
            (
                "url",
                Value::string(dir.path().join(name).display().to_string()),
            ),
            ("priority", Value::int(priority)),
        ])
    };
    let provider = accepted(provider_block([(
        "repository",
        Value::list([repository("first", 5), repository("preferred", 4)]),
    )]));
    let config = value_of("kudo_package", [("source", Value::string("lifecycle"))]);
    let (state, diags) = block_on(provider.read_data_source("kudo_package", config));
    assert!(diags.is_empty(), "{}", text(&diags));
    assert_eq!(state.get("operator_version").as_str(), Some("0.2.0"));
}

#[test]
fn half_a_client_certificate_is_an_error_naming_the_attribute() {
    let diags = refused(&provider_block([(
        "client_certificate",
        Value::string("PEM"),
    )]));
    assert!(!diags.is_empty(), "accepted");
    assert!(diags[0].detail.contains("client_key"), "{}", text(&diags));
    assert_eq!(
        diags[0].attribute,
        Some(AttributePath::attribute("client_key"))
    );
}

/// Translation on by default and mappings read: accepted here; what they do to the
/// objects written is `kubernetes_versions::legacy_api_versions_are_converted_and_announced`,
/// `translation_off_fails_the_plan_naming_template_and_version` and
/// `an_api_version_mapping_translates_a_custom_resource`.
#[test]
fn translation_settings_and_mappings_are_accepted() {
    accepted(provider_block(Vec::<(String, Value)>::new()));
    accepted(provider_block([
        ("translate_api_versions", Value::bool(false)),
        (
            "api_version_mapping",
            Value::list([Value::object([
                ("from", Value::string("example.com/v1alpha1")),
                ("kind", Value::string("Widget")),
                ("to", Value::string("example.com/v1")),
            ])]),
        ),
    ]));
}

#[test]
fn a_mapping_without_a_group_names_the_attribute() {
    let diags = refused(&provider_block([(
        "api_version_mapping",
        Value::list([Value::object([
            ("from", Value::string("v1alpha1")),
            ("to", Value::string("example.com/v1")),
        ])]),
    )]));
    assert!(!diags.is_empty(), "accepted");
    assert!(
        diags[0].detail.contains("group/version"),
        "{}",
        text(&diags)
    );
    assert_eq!(
        diags[0].attribute,
        Some(
            AttributePath::attribute("api_version_mapping")
                .index(0)
                .attr("from")
        )
    );
}

fn exec_block(api_version: &str, command: &str) -> Value {
    Value::list([Value::object([
        ("api_version", Value::string(api_version)),
        ("command", Value::string(command)),
        (
            "args",
            Value::list([Value::string("eks"), Value::string("get-token")]),
        ),
        ("env", Value::map([("AWS_PROFILE", Value::string("ops"))])),
    ])])
}

/// The `exec` block's command is run with its `args` and `env` when the provider first
/// needs the cluster; a failing plugin's stderr is in the error, which shows them.
/// (`tls_server_name` and `proxy_url` are `connection_settings`'s tests.)
#[test]
fn the_exec_block_runs_its_command_with_args_and_env() {
    let dir = tempfile::tempdir().expect("temp dir");
    let plugin = dir.path().join("token-plugin");
    std::fs::write(
        &plugin,
        "#!/bin/sh\necho \"called with [$*] profile [$AWS_PROFILE]\" >&2\nexit 3\n",
    )
    .expect("write the plugin");
    std::fs::set_permissions(&plugin, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let provider = accepted(provider_block([
        ("host", Value::string("https://127.0.0.1:1")),
        (
            "exec",
            exec_block(
                "client.authentication.k8s.io/v1beta1",
                &plugin.display().to_string(),
            ),
        ),
        ("tls_server_name", Value::string("kubernetes")),
        ("proxy_url", Value::string("http://127.0.0.1:1")),
    ]));
    let diags = import_diagnostics(&provider);
    let all = text(&diags);
    assert!(
        diags
            .iter()
            .any(|d| d.summary == "Cannot get credentials for the Kubernetes cluster"),
        "{all}"
    );
    assert!(
        all.contains("called with [eks get-token] profile [ops]"),
        "{all}"
    );
    assert!(all.contains(&plugin.display().to_string()), "{all}");

    // An exec block's part not known yet (the cluster's name from a module).
    let unknown_arg = Value::list([Value::object([
        (
            "api_version",
            Value::string("client.authentication.k8s.io/v1"),
        ),
        ("command", Value::string("aws")),
        ("args", Value::list([Value::string("eks"), Value::Unknown])),
    ])]);
    let provider = configured(provider_block([("exec", unknown_arg)]));
    assert_eq!(offline_names(&provider), "`exec`");
}

#[test]
fn exec_mistakes_name_the_attribute() {
    let cases = [
        (
            provider_block([(
                "exec",
                exec_block("client.authentication.k8s.io/v1alpha1", "aws"),
            )]),
            "Invalid exec api_version",
            "api_version",
        ),
        (
            provider_block([("exec", exec_block("client.authentication.k8s.io/v1", " "))]),
            "Missing exec command",
            "command",
        ),
        (
            provider_block([
                ("exec", exec_block("client.authentication.k8s.io/v1", "aws")),
                ("token", Value::string("t")),
            ]),
            "Conflicting credentials",
            "exec",
        ),
        (
            provider_block([
                ("config_path", Value::string("/a")),
                ("config_paths", Value::list([Value::string("/b")])),
            ]),
            "Conflicting kubeconfig settings",
            "config_paths",
        ),
    ];
    for (config, summary, attribute) in cases {
        let diags = refused(&config);
        assert!(!diags.is_empty(), "{summary}: accepted");
        assert_eq!(diags[0].summary, summary, "{}", text(&diags));
        let path = format!("{:?}", diags[0].attribute);
        assert!(path.contains(attribute), "{summary}: {path}");
    }
}

#[test]
fn unknown_connection_settings_make_the_session_offline() {
    for name in [
        "config_path",
        "config_context",
        "host",
        "token",
        "cluster_ca_certificate",
        "client_certificate",
        "client_key",
        "insecure",
        "tls_server_name",
        "proxy_url",
        "config_paths",
        "exec",
    ] {
        let config = provider_block([(name, Value::Unknown)]);
        let diags = refused(&config);
        assert!(diags.is_empty(), "{name} unknown refused: {}", text(&diags));
        assert_eq!(offline_names(&configured(config)), format!("`{name}`"));
    }
    let provider = configured(provider_block([
        ("host", Value::Unknown),
        ("token", Value::Unknown),
        ("cluster_ca_certificate", Value::Unknown),
    ]));
    assert_eq!(
        offline_names(&provider),
        "`host`, `token` and `cluster_ca_certificate`"
    );
    // Known settings: the import tries the cluster (nothing listens on port 1).
    let provider = configured(provider_block([(
        "host",
        Value::string("https://127.0.0.1:1"),
    )]));
    let diags = text(&import_diagnostics(&provider));
    assert!(
        diags.contains("Cannot reach") && !diags.contains("known only after apply"),
        "{diags}"
    );
}

#[test]
fn half_a_client_certificate_is_not_an_error_while_the_other_half_is_unknown() {
    let config = provider_block([
        ("client_certificate", Value::string("PEM")),
        ("client_key", Value::Unknown),
    ]);
    let diags = refused(&config);
    assert!(
        diags.is_empty(),
        "the key may be known at apply: {}",
        text(&diags)
    );
    assert_eq!(offline_names(&configured(config)), "`client_key`");
}

/// A broken provider block, and the attribute its diagnostic must name.
type Broken = (&'static str, Value, AttributePath);

/// Broken connection settings and repositories.
fn broken_connections() -> Vec<Broken> {
    let repository = |name: Value, url: Value| Value::object([("name", name), ("url", url)]);
    let gv = |s: &str| Value::string(s);
    vec![
        (
            "no requests in flight",
            provider_block([("max_requests_in_flight", Value::int(0))]),
            AttributePath::attribute("max_requests_in_flight"),
        ),
        (
            "a fraction of a request in flight",
            provider_block([(
                "max_requests_in_flight",
                Value::float(2.5).unwrap_or(Value::Null),
            )]),
            AttributePath::attribute("max_requests_in_flight"),
        ),
        (
            "certificate without key",
            provider_block([("client_certificate", gv("PEM"))]),
            AttributePath::attribute("client_key"),
        ),
        (
            "key without certificate",
            provider_block([("client_key", gv("PEM"))]),
            AttributePath::attribute("client_key"),
        ),
        (
            "repository name unknown",
            provider_block([(
                "repository",
                Value::list([repository(Value::Unknown, gv("http://x/"))]),
            )]),
            AttributePath::attribute("repository").index(0),
        ),
        (
            "repository url unknown",
            provider_block([(
                "repository",
                Value::list([repository(gv("a"), Value::Unknown)]),
            )]),
            AttributePath::attribute("repository").index(0),
        ),
        (
            "unsupported repository scheme",
            provider_block([(
                "repository",
                Value::list([repository(gv("mirror"), gv("ftp://example.com/kudo"))]),
            )]),
            AttributePath::attribute("repository").index(0).attr("url"),
        ),
        (
            "duplicate repository",
            provider_block([(
                "repository",
                Value::list([
                    repository(gv("a"), gv("http://x/")),
                    repository(gv("a"), gv("http://y/")),
                ]),
            )]),
            AttributePath::attribute("repository").index(1).attr("name"),
        ),
    ]
}

/// Broken `api_version_mapping` blocks.
fn broken_mappings() -> Vec<Broken> {
    let mapping = |from: Value, kind: Value, to: Value| {
        provider_block([(
            "api_version_mapping",
            Value::list([Value::object([("from", from), ("kind", kind), ("to", to)])]),
        )])
    };
    let gv = |s: &str| Value::string(s);
    let mapping_attr = |name: &str| {
        AttributePath::attribute("api_version_mapping")
            .index(0)
            .attr(name)
    };
    vec![
        (
            "mapping from missing",
            mapping(Value::Null, Value::Null, gv("example.com/v1")),
            mapping_attr("from"),
        ),
        (
            "mapping from blank",
            mapping(gv("  "), Value::Null, gv("example.com/v1")),
            mapping_attr("from"),
        ),
        (
            "mapping to missing",
            mapping(gv("example.com/v1beta1"), Value::Null, Value::Null),
            mapping_attr("to"),
        ),
        (
            "mapping from without group",
            mapping(gv("v1beta1"), Value::Null, gv("example.com/v1")),
            mapping_attr("from"),
        ),
        (
            "mapping to with spaces",
            mapping(
                gv("example.com/v1beta1"),
                Value::Null,
                gv("example.com/ v1"),
            ),
            mapping_attr("to"),
        ),
        (
            "mapping to with two slashes",
            mapping(gv("example.com/v1beta1"), Value::Null, gv("a/b/c")),
            mapping_attr("to"),
        ),
        (
            "mapping from unknown",
            mapping(Value::Unknown, Value::Null, gv("example.com/v1")),
            mapping_attr("from"),
        ),
        (
            "mapping kind unknown",
            mapping(
                gv("example.com/v1beta1"),
                Value::Unknown,
                gv("example.com/v1"),
            ),
            mapping_attr("kind"),
        ),
    ]
}

/// Broken provider blocks, table-driven: each must be refused with a diagnostic
/// on the attribute at fault. docs/testing.md ("Bad input, counted") counts the
/// rows.
#[test]
fn every_broken_provider_block_names_the_attribute() {
    let rows: Vec<Broken> = broken_connections()
        .into_iter()
        .chain(broken_mappings())
        .collect();
    let mut problems = Vec::new();
    for (what, config, attribute) in &rows {
        let diags = refused(config);
        if diags.is_empty() {
            problems.push(format!("{what}: accepted"));
        } else if on(&diags, attribute).is_none() {
            problems.push(format!(
                "{what}: no diagnostic on {attribute}: {}",
                text(&diags)
            ));
        }
    }
    println!("bad_input: {} broken provider blocks", rows.len());
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
