//! How many API requests Terraform's apply, update and destroy of zookeeper and kafka
//! make, from kube-sim's counters: printed for `docs/benchmarks.md`, not asserted.
//! Skipped on a real cluster (nothing counts its requests).

use std::collections::BTreeMap;

use crate::harness::TestContext;
use crate::skip;

/// `after - before` summed by verb (`"get"`, `"list"`, `"watch"`, ...).
fn by_verb(before: &BTreeMap<String, u64>, after: &BTreeMap<String, u64>) -> BTreeMap<String, u64> {
    let mut verbs = BTreeMap::new();
    for (key, n) in after {
        let made = n - before.get(key).copied().unwrap_or(0);
        let verb = key.split(' ').next().unwrap_or_default().to_string();
        *verbs.entry(verb).or_insert(0) += made;
    }
    verbs.retain(|_, n| *n > 0);
    verbs
}

#[test]
fn requests_of_zookeeper_and_kafka_through_terraform() {
    if crate::harness::cluster::real_kubeconfig().is_some() {
        skip!("counts kube-sim's requests");
    }
    if crate::harness::fixture_operator("zookeeper").is_none()
        || crate::harness::fixture_operator("kafka").is_none()
    {
        skip!("../shared/fixtures/operators zookeeper or kafka not found");
    }
    let ctx = TestContext::new("requests");
    let Some(sim) = ctx.sim() else {
        skip!("counts kube-sim's requests");
    };
    for path in ["/tmp/tls.key", "/tmp/tls.crt"] {
        sim.add_exec_file(kube_sim::ExecFile {
            namespace: ctx.namespace.clone(),
            pod: None,
            selector: None,
            path: path.to_string(),
            content: String::new(),
        });
    }
    let apply = ["apply", "-input=false", "-no-color", "-auto-approve"];
    let destroy = ["destroy", "-input=false", "-no-color", "-auto-approve"];
    // (step, zookeeper CPUS and kafka mirror maker to configure first, command)
    let steps = [
        ("apply", Some(("250m", false)), &apply),
        ("update", Some(("300m", true)), &apply),
        ("destroy", None, &destroy),
    ];
    for (name, config, args) in steps {
        if let Some((cpus, mirror_maker)) = config {
            ctx.write(
                "main.tf",
                &crate::faults::zookeeper_and_kafka(cpus, mirror_maker),
            );
        }
        let before = sim.request_counts();
        ctx.tf.run(args).assert_success();
        let verbs = by_verb(&before, &sim.request_counts());
        eprintln!(
            "[requests] terraform {name}: {} requests {verbs:?}",
            verbs.values().sum::<u64>()
        );
    }
    ctx.mark_cleaned();
}
