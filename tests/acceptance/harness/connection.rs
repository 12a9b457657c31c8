//! The test cluster's connection as provider settings (`host`, `token`, PEM texts),
//! read from whatever kubeconfig the harness uses: kube-sim's (token, CA as data) or a
//! real cluster's (`KUDO_TEST_KUBECONFIG`; a kube-apiserver run by hand typically gives
//! client certificate files).

use std::path::{Path, PathBuf};

use serde_json::Value;

/// What the provider block needs; empty strings for what the kubeconfig does not set
/// (the provider reads an empty setting as unset).
#[derive(Debug, Clone, Default)]
pub struct Connection {
    pub host: String,
    pub token: String,
    pub cluster_ca_certificate: String,
    pub client_certificate: String,
    pub client_key: String,
    pub insecure: bool,
}

impl Connection {
    /// The current context's cluster and user of the kubeconfig at `path`.
    #[track_caller]
    pub fn from_kubeconfig(path: &Path) -> Connection {
        let text = std::fs::read_to_string(path)
            .unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
        let doc =
            kudo_yaml::to_json(&text).unwrap_or_else(|e| panic!("parse {}: {e}", path.display()));
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let named = |list: &str, name: &str, field: &str| -> Value {
            doc[list]
                .as_array()
                .and_then(|items| items.iter().find(|i| i["name"] == name))
                .map(|i| i[field].clone())
                .unwrap_or_else(|| panic!("{}: no {list} entry {name:?}", path.display()))
        };
        let current = doc["current-context"]
            .as_str()
            .unwrap_or_else(|| panic!("{}: no current-context", path.display()));
        let context = named("contexts", current, "context");
        let cluster = named(
            "clusters",
            context["cluster"].as_str().unwrap_or_default(),
            "cluster",
        );
        let user = named(
            "users",
            context["user"].as_str().unwrap_or_default(),
            "user",
        );
        // `<name>-data` holds base64 PEM; `<name>` a file path relative to the kubeconfig.
        let pem = |obj: &Value, name: &str| -> String {
            if let Some(data) = obj[format!("{name}-data")].as_str() {
                let bytes = base64_decode(data)
                    .unwrap_or_else(|| panic!("{}: {name}-data is not base64", path.display()));
                return String::from_utf8(bytes)
                    .unwrap_or_else(|e| panic!("{}: {name}-data: {e}", path.display()));
            }
            match obj[name].as_str() {
                Some(file) => {
                    let file: PathBuf = dir.join(file);
                    std::fs::read_to_string(&file)
                        .unwrap_or_else(|e| panic!("read {}: {e}", file.display()))
                }
                None => String::new(),
            }
        };
        Connection {
            host: cluster["server"]
                .as_str()
                .unwrap_or_else(|| panic!("{}: cluster without server", path.display()))
                .to_string(),
            token: user["token"].as_str().unwrap_or_default().to_string(),
            cluster_ca_certificate: pem(&cluster, "certificate-authority"),
            client_certificate: pem(&user, "client-certificate"),
            client_key: pem(&user, "client-key"),
            insecure: cluster["insecure-skip-tls-verify"] == true,
        }
    }

    /// `TF_VAR_<prefix><setting>` for each setting, for configurations that declare
    /// variables `host`, `token`, `cluster_ca_certificate`, `client_certificate`,
    /// `client_key` and `insecure` (with `prefix`, e.g. `cluster_`).
    pub fn tf_vars(&self, prefix: &str) -> Vec<(String, String)> {
        [
            ("host", self.host.clone()),
            ("token", self.token.clone()),
            (
                "cluster_ca_certificate",
                self.cluster_ca_certificate.clone(),
            ),
            ("client_certificate", self.client_certificate.clone()),
            ("client_key", self.client_key.clone()),
            ("insecure", self.insecure.to_string()),
        ]
        .into_iter()
        .map(|(k, v)| (format!("TF_VAR_{prefix}{k}"), v))
        .collect()
    }
}

/// Standard base64 (padding optional, whitespace ignored); `None` on other bytes.
pub fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let value = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let mut out = Vec::with_capacity(text.len() / 4 * 3);
    let (mut acc, mut bits) = (0u32, 0u32);
    for c in text
        .bytes()
        .filter(|c| !c.is_ascii_whitespace() && *c != b'=')
    {
        acc = (acc << 6) | value(c)?;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Some(out)
}

#[test]
fn base64_decodes_with_and_without_padding() {
    assert_eq!(base64_decode("aGk=").as_deref(), Some(&b"hi"[..]));
    assert_eq!(base64_decode("aGVsbG8").as_deref(), Some(&b"hello"[..]));
    assert_eq!(base64_decode("a?"), None);
}
