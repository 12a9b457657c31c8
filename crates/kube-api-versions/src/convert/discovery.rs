//! `discovery.k8s.io/v1beta1` EndpointSlice -> `discovery.k8s.io/v1`.
//!
//! v1beta1 kept an endpoint's place in `topology` (a label map); v1 has `nodeName` and
//! `zone` fields and keeps the map only as `deprecatedTopology`, which the v1 API
//! ignores on write.

use serde_json::{Map, Value};

use super::{ConvertError, Cx};

const HOSTNAME: &str = "kubernetes.io/hostname";
const ZONE: &str = "topology.kubernetes.io/zone";

pub(super) fn endpoint_slice(
    cx: &mut Cx,
    root: &mut Map<String, Value>,
) -> Result<(), ConvertError> {
    let mut lost = false;
    let endpoints = cx.objects(root, "endpoints", "endpoints")?;
    let mut error = None;
    for (i, endpoint) in endpoints.into_iter().enumerate() {
        let topology = match endpoint.remove("topology") {
            None | Some(Value::Null) => continue,
            Some(Value::Object(map)) => map,
            Some(other) => {
                error = Some(format!(
                    "endpoints[{i}].topology must be an object, not {}",
                    super::type_name(&other)
                ));
                break;
            }
        };
        for (label, field) in [(HOSTNAME, "nodeName"), (ZONE, "zone")] {
            if let Some(Value::String(v)) = topology.get(label) {
                super::set_default(endpoint, field, Value::String(v.clone()));
            }
        }
        lost |= topology.keys().any(|k| k != HOSTNAME && k != ZONE);
        endpoint.insert("deprecatedTopology".to_string(), Value::Object(topology));
    }
    if let Some(message) = error {
        return Err(cx.err(message));
    }
    if lost {
        cx.note(
            "endpoints[].topology moved to deprecatedTopology, which discovery.k8s.io/v1 \
             ignores on write; kubernetes.io/hostname and topology.kubernetes.io/zone are \
             carried as nodeName and zone, other labels are lost",
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::convert;
    use serde_json::json;

    // EndpointSlice discovery.k8s.io/v1beta1 (Endpoint.topology): kubernetes.io/docs/reference/generated/kubernetes-api/v1.24/#endpoint-v1beta1-discovery-k8s-io;
    // v1 (nodeName, zone, deprecatedTopology): kubernetes.io/docs/reference/generated/kubernetes-api/v1.36/#endpoint-v1-discovery-k8s-io
    #[test]
    fn topology_becomes_node_name_zone_and_deprecated_topology() {
        let slice = json!({
            "apiVersion": "discovery.k8s.io/v1beta1",
            "kind": "EndpointSlice",
            "metadata": {"name": "external-db-1", "labels": {"kubernetes.io/service-name": "external-db"}},
            "addressType": "IPv4",
            "ports": [{"name": "pg", "port": 5432, "protocol": "TCP"}],
            "endpoints": [{
                "addresses": ["10.1.2.3"],
                "conditions": {"ready": true},
                "topology": {
                    "kubernetes.io/hostname": "node-1",
                    "topology.kubernetes.io/zone": "us-west2-a",
                    "topology.kubernetes.io/region": "us-west2"
                }
            }]
        });
        let out = convert(&slice, "discovery.k8s.io/v1").unwrap();
        let ep = &out.object["endpoints"][0];
        assert_eq!(ep["nodeName"], "node-1");
        assert_eq!(ep["zone"], "us-west2-a");
        assert_eq!(ep["deprecatedTopology"], slice["endpoints"][0]["topology"]);
        assert!(ep.get("topology").is_none());
        assert_eq!(out.notes.len(), 1);
    }
}
