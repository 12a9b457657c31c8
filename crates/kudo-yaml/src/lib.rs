//! YAML loading the way Kubernetes reads manifests.
//!
//! Kubernetes (sigs.k8s.io/yaml on top of yaml.v2) resolves plain scalars with YAML 1.1
//! rules: `0755` is octal 493, `yes`/`on`/`y` are booleans, `~` is null. Generic YAML
//! crates follow YAML 1.2, which would silently change the meaning of real operator
//! packages, so this crate builds its own tree from `saphyr-parser` events and resolves
//! scalars itself.
//!
//! * [`to_json`] / [`to_json_documents`]: what Kubernetes would see.
//! * [`parse_nodes`]: a tree keeping each scalar's text, style and position, for callers
//!   that must keep literal text (parameter defaults) or report positions.
//! * [`to_yaml`]: block YAML in yaml.v2's output style (sorted keys).

mod emit;
mod error;
mod gofloat;
mod json;
mod node;
mod resolve;

pub use emit::{View, YamlTree, to_yaml};
pub use error::YamlError;
pub use gofloat::format_float_g;
pub use node::{Node, NodeValue, Scalar, ScalarStyle, parse_nodes};
pub use resolve::{Resolved, resolve_plain};

/// Parse one YAML document with YAML 1.1 scalar rules as Kubernetes (sigs.k8s.io/yaml +
/// yaml.v2) does. An empty input is `null`; more than one document is an error.
pub fn to_json(text: &str) -> Result<serde_json::Value, YamlError> {
    let docs = parse_nodes(text)?;
    match docs.as_slice() {
        [] => Ok(serde_json::Value::Null),
        [one] => one.to_json(),
        [_, second, ..] => Err(YamlError {
            line: second.line,
            column: second.column,
            message: "expected a single YAML document but found several (`---`); \
                      split the file or use to_json_documents"
                .to_string(),
        }),
    }
}

/// All documents of a stream (`---` separated). Documents that are entirely empty are
/// kept as `null` so that indexes match the source.
pub fn to_json_documents(text: &str) -> Result<Vec<serde_json::Value>, YamlError> {
    parse_nodes(text)?.iter().map(Node::to_json).collect()
}
