//! The patch engine as a table: each row is a target, a patch and what must come out,
//! following the strategic merge patch rules of `kubectl patch --type=strategic` /
//! Kustomize (see the crate docs for the exact list).

use kube_merge::{PatchError, json_patch, patch_object, strategic_merge};
use serde_json::{Value, json};

fn deployment(containers: Value) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
           "spec": {"template": {"spec": {"containers": containers}}}})
}

fn base_container() -> Value {
    json!({"name": "app", "image": "app:1", "command": ["run"],
           "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
           "ports": [{"containerPort": 80, "name": "http"}, {"containerPort": 9090, "name": "metrics"}],
           "volumeMounts": [{"name": "data", "mountPath": "/data"}],
           "readinessProbe": {"httpGet": {"path": "/ready", "port": 80}}})
}

fn image2() -> Value {
    let mut c = base_container();
    c["image"] = json!("app:2");
    c
}

struct Case {
    name: &'static str,
    target: Value,
    patch: Value,
    want: Value,
}

fn cases() -> Vec<Case> {
    let sidecar = json!({"name": "side", "image": "side:1"});
    vec![
        Case {
            name: "a partial container changes only what it states",
            target: deployment(json!([base_container(), sidecar.clone()])),
            patch: deployment(json!([{"name": "app", "command": ["run", "--fast"]}])),
            want: {
                let mut c = base_container();
                c["command"] = json!(["run", "--fast"]);
                deployment(json!([c, sidecar.clone()]))
            },
        },
        Case {
            name: "a container repeated in full merges to itself plus the change (old packages)",
            target: deployment(json!([base_container()])),
            patch: deployment(json!([image2()])),
            want: deployment(json!([image2()])),
        },
        Case {
            name: "a new container is appended",
            target: deployment(json!([base_container()])),
            patch: deployment(json!([sidecar.clone()])),
            want: deployment(json!([base_container(), sidecar.clone()])),
        },
        Case {
            name: "env merges by name, a new variable is appended",
            target: deployment(json!([base_container()])),
            patch: deployment(
                json!([{"name": "app", "env": [{"name": "B", "value": "20"}, {"name": "C", "value": "3"}]}]),
            ),
            want: {
                let mut c = base_container();
                c["env"] = json!([{"name": "A", "value": "1"}, {"name": "B", "value": "20"}, {"name": "C", "value": "3"}]);
                deployment(json!([c]))
            },
        },
        Case {
            name: "container ports merge by containerPort",
            target: deployment(json!([base_container()])),
            patch: deployment(
                json!([{"name": "app", "ports": [{"containerPort": 9090, "name": "prom"}]}]),
            ),
            want: {
                let mut c = base_container();
                c["ports"][1]["name"] = json!("prom");
                deployment(json!([c]))
            },
        },
        Case {
            name: "Service ports merge by port",
            target: json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
                           "spec": {"ports": [{"port": 80, "targetPort": 8080}, {"port": 443}]}}),
            patch: json!({"spec": {"ports": [{"port": 80, "targetPort": 9000}]}}),
            want: json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
                         "spec": {"ports": [{"port": 80, "targetPort": 9000}, {"port": 443}]}}),
        },
        Case {
            name: "$patch: delete removes the item with that key",
            target: deployment(json!([base_container(), sidecar.clone()])),
            patch: deployment(json!([{"name": "side", "$patch": "delete"}])),
            want: deployment(json!([base_container()])),
        },
        Case {
            name: "$patch: delete on a mapping deletes the field",
            target: deployment(json!([base_container()])),
            patch: deployment(json!([{"name": "app", "readinessProbe": {"$patch": "delete"}}])),
            want: {
                let mut c = base_container();
                c.as_object_mut().map(|m| m.remove("readinessProbe"));
                deployment(json!([c]))
            },
        },
        Case {
            name: "$patch: replace as a list item replaces the whole list",
            target: deployment(json!([base_container(), sidecar.clone()])),
            patch: deployment(json!([{"$patch": "replace"}, {"name": "only", "image": "o:1"}])),
            want: deployment(json!([{"name": "only", "image": "o:1"}])),
        },
        Case {
            name: "$patch: replace on a mapping replaces it",
            target: deployment(json!([base_container()])),
            patch: deployment(
                json!([{"name": "app", "readinessProbe": {"$patch": "replace", "exec": {"command": ["ok"]}}}]),
            ),
            want: {
                let mut c = base_container();
                c["readinessProbe"] = json!({"exec": {"command": ["ok"]}});
                deployment(json!([c]))
            },
        },
        Case {
            name: "$setElementOrder orders the merged items",
            target: deployment(json!([base_container(), sidecar.clone()])),
            patch: json!({"spec": {"template": {"spec": {
                "$setElementOrder/containers": [{"name": "init"}, {"name": "side"}, {"name": "app"}],
                "containers": [{"name": "init", "image": "i:1"}]}}}}),
            want: deployment(
                json!([{"name": "init", "image": "i:1"}, sidecar.clone(), base_container()]),
            ),
        },
        Case {
            name: "$deleteFromPrimitiveList removes scalars",
            target: json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "finalizers": ["a", "b"]}}),
            patch: json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}}),
            want: json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "finalizers": ["b"]}}),
        },
        Case {
            name: "lists without a merge key are replaced (args, tolerations)",
            target: json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                           "spec": {"tolerations": [{"key": "a"}], "containers": [{"name": "c", "args": ["x", "y"]}]}}),
            patch: json!({"spec": {"tolerations": [{"key": "b"}], "containers": [{"name": "c", "args": ["z"]}]}}),
            want: json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                         "spec": {"tolerations": [{"key": "b"}], "containers": [{"name": "c", "args": ["z"]}]}}),
        },
        Case {
            name: "null deletes a field",
            target: deployment(json!([base_container()])),
            patch: json!({"spec": {"template": {"spec": {"containers": [{"name": "app", "command": null}]}}}}),
            want: {
                let mut c = base_container();
                c.as_object_mut().map(|m| m.remove("command"));
                deployment(json!([c]))
            },
        },
        Case {
            name: "a custom resource merges as a JSON merge patch: lists are replaced",
            target: json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "labels": {"a": "1"}},
                           "spec": {"size": 1, "color": "red", "containers": [{"name": "x", "image": "1"}, {"name": "y"}]}}),
            patch: json!({"metadata": {"labels": {"b": "2"}}, "spec": {"size": 3, "color": null, "containers": [{"name": "x", "image": "2"}]}}),
            want: json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "labels": {"a": "1", "b": "2"}},
                         "spec": {"size": 3, "containers": [{"name": "x", "image": "2"}]}}),
        },
    ]
}

#[test]
fn strategic_merge_table() {
    let all = cases();
    println!("patch cases: {}", all.len());
    for case in all {
        let mut got = case.target.clone();
        patch_object(&mut got, &case.patch).unwrap_or_else(|e| panic!("{}: {e}", case.name));
        assert_eq!(got, case.want, "{}", case.name);
    }
}

#[test]
fn json_6902_operations() {
    let mut obj = deployment(json!([base_container()]));
    json_patch(
        &mut obj,
        &json!([
            {"op": "replace", "path": "/spec/template/spec/containers/0/image", "value": "app:3"},
            {"op": "add", "path": "/spec/template/spec/containers/0/args", "value": ["-v"]},
            {"op": "remove", "path": "/spec/template/spec/containers/0/env/0"},
            {"op": "test", "path": "/metadata/name", "value": "web"}
        ]),
    )
    .expect("operations apply");
    let c = &obj["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(c["image"], "app:3");
    assert_eq!(c["args"], json!(["-v"]));
    assert_eq!(c["env"], json!([{"name": "B", "value": "2"}]));

    // All or nothing: a failing test leaves the object as it was.
    let before = obj.clone();
    let err = json_patch(
        &mut obj,
        &json!([{"op": "replace", "path": "/metadata/name", "value": "x"},
                {"op": "test", "path": "/kind", "value": "Pod"}]),
    )
    .expect_err("test fails");
    assert!(matches!(err, PatchError::Json6902Apply { .. }), "{err}");
    assert_eq!(obj, before);

    let err =
        json_patch(&mut obj, &json!([{"op": "frobnicate", "path": "/a"}])).expect_err("bad op");
    assert!(
        err.to_string().contains("not a list of operations"),
        "{err}"
    );
}

#[test]
fn bad_patches_say_where() {
    let target = deployment(json!([base_container()]));
    let cases: [(Value, &str); 4] = [
        (
            deployment(json!([{"image": "x"}])),
            ".spec.template.spec.containers: item 0 has no \"name\"",
        ),
        (deployment(json!(["app"])), "item 0 is not a mapping"),
        (
            deployment(json!([{"name": "app", "$patch": "remove"}])),
            "containers[name=app]: unknown directive `$patch: remove`",
        ),
        (json!({"$patch": "delete"}), "would delete the whole object"),
    ];
    for (patch, want) in cases {
        let mut got = target.clone();
        let err = strategic_merge(&mut got, &patch, true).expect_err(want);
        assert!(err.to_string().contains(want), "{err} / {want}");
        assert_eq!(got, target, "a failed patch changes nothing");
    }
}
