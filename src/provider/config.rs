//! The provider block: how to reach the cluster and which repositories to search.

use tfplugin::{AttributePath, Diagnostic, Value};

use kudo_engine::cluster::ConnectionSettings;

/// A `repository` block.
#[derive(Debug, Clone, PartialEq)]
pub struct RepositoryConfig {
    pub name: String,
    pub url: String,
    pub priority: i64,
}

#[derive(Debug, Clone, Default)]
pub struct ProviderConfig {
    pub connection: ConnectionSettings,
    pub repositories: Vec<RepositoryConfig>,
}

fn optional_string(config: &Value, name: &str, diags: &mut Vec<Diagnostic>) -> Option<String> {
    let v = config.get(name);
    if !v.is_known() {
        diags.push(
            Diagnostic::error(
                "Provider setting not known yet",
                format!("`{name}` depends on a value that is only known after apply. Connection settings must be known when Terraform plans; set it from a variable or a data source instead."),
            )
            .with_attribute(AttributePath::attribute(name)),
        );
        return None;
    }
    v.as_str().map(str::to_string).filter(|s| !s.is_empty())
}

/// Reads the provider block. Unknown values are errors: the cluster is needed while
/// planning, before any resource exists.
pub fn parse(config: &Value) -> Result<ProviderConfig, Vec<Diagnostic>> {
    let mut diags = Vec::new();
    let connection = ConnectionSettings {
        config_path: optional_string(config, "config_path", &mut diags),
        config_context: optional_string(config, "config_context", &mut diags),
        host: optional_string(config, "host", &mut diags),
        token: optional_string(config, "token", &mut diags),
        cluster_ca_certificate: optional_string(config, "cluster_ca_certificate", &mut diags),
        client_certificate: optional_string(config, "client_certificate", &mut diags),
        client_key: optional_string(config, "client_key", &mut diags),
        insecure: config.get("insecure").as_bool().unwrap_or(false),
    };
    if connection.client_certificate.is_some() != connection.client_key.is_some() {
        diags.push(
            Diagnostic::error(
                "Incomplete client certificate",
                "`client_certificate` and `client_key` go together: set both or neither.",
            )
            .with_attribute(AttributePath::attribute("client_key")),
        );
    }
    let mut repositories = Vec::new();
    for (i, block) in config
        .get("repository")
        .as_slice()
        .unwrap_or_default()
        .iter()
        .enumerate()
    {
        let path = AttributePath::attribute("repository").index(i as i64);
        let name = block.get("name").as_str().unwrap_or_default().to_string();
        let url = block.get("url").as_str().unwrap_or_default().to_string();
        if !block.get("name").is_known() || !block.get("url").is_known() {
            diags.push(
                Diagnostic::error(
                    "Repository not known yet",
                    "A repository's `name` and `url` must be known when Terraform plans.",
                )
                .with_attribute(path),
            );
            continue;
        }
        if repositories
            .iter()
            .any(|r: &RepositoryConfig| r.name == name)
        {
            diags.push(
                Diagnostic::error(
                    "Duplicate repository name",
                    format!("Two `repository` blocks are named {name:?}; give each a unique name."),
                )
                .with_attribute(path.attr("name")),
            );
        }
        let priority = block.get("priority").as_i64().unwrap_or(0);
        repositories.push(RepositoryConfig {
            name,
            url,
            priority,
        });
    }
    if diags.iter().any(Diagnostic::is_error) {
        return Err(diags);
    }
    Ok(ProviderConfig {
        connection,
        repositories,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_connection_and_repositories() {
        let config = Value::object([
            ("host", Value::string("https://127.0.0.1:6443")),
            ("token", Value::string("abc")),
            ("insecure", Value::bool(true)),
            (
                "repository",
                Value::list([Value::object([
                    ("name", Value::string("community")),
                    ("url", Value::string("http://127.0.0.1:8080/")),
                    ("priority", Value::int(5)),
                ])]),
            ),
        ]);
        let parsed = parse(&config).expect("valid config");
        assert_eq!(
            parsed.connection.host.as_deref(),
            Some("https://127.0.0.1:6443")
        );
        assert!(parsed.connection.insecure);
        assert_eq!(parsed.repositories[0].priority, 5);
    }

    #[test]
    fn half_a_client_certificate_is_an_error_naming_the_attribute() {
        let config = Value::object([("client_certificate", Value::string("PEM"))]);
        let diags = parse(&config).expect_err("must fail");
        assert!(diags[0].detail.contains("client_key"));
        assert_eq!(
            diags[0].attribute,
            Some(AttributePath::attribute("client_key"))
        );
    }

    #[test]
    fn unknown_connection_setting_is_an_error() {
        let config = Value::object([("host", Value::Unknown)]);
        let diags = parse(&config).expect_err("must fail");
        assert!(diags[0].detail.contains("`host`"));
    }
}
