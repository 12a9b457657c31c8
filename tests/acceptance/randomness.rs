//! Template randomness is seeded with a secret the instance keeps, not with the public
//! "namespace/name": a generated password stays the same on every run of one instance,
//! differs when the instance is created again, and cannot be computed from the names.
//! Package: `tests/fixtures/operators/random-secret`.

use std::collections::BTreeMap;

use crate::harness::{PREAMBLE, TestContext, own_operator};

fn config(deploy_token: &str) -> String {
    let package = own_operator("random-secret").display().to_string();
    format!(
        r#"{PREAMBLE}
resource "kudo_operator" "this" {{
  package   = {package:?}
  namespace = var.namespace
}}

resource "kudo_instance" "this" {{
  name      = "db"
  namespace = var.namespace
  operator  = kudo_operator.this.id
  plan_triggers = {{
    deploy = {deploy_token:?}
  }}
}}
"#
    )
}

#[track_caller]
fn password(ctx: &TestContext) -> String {
    let cm = ctx
        .kube()
        .must_get("v1", "ConfigMap", Some(&ctx.namespace), "db-credentials");
    let p = cm["data"]["password"].as_str().unwrap_or_default();
    assert_eq!(p.len(), 24, "{cm:#}");
    p.to_string()
}

/// What anyone could compute: the template rendered with the old, public seed.
fn public_seed_password(namespace: &str) -> String {
    let pkg = own_operator("random-secret");
    let text =
        std::fs::read_to_string(pkg.join("templates/credentials.yaml")).expect("read template");
    let vars = kudo_template::Vars {
        name: "db".into(),
        namespace: namespace.into(),
        params: BTreeMap::new(),
        ..Default::default()
    };
    let rendered = kudo_template::render("credentials.yaml", &text, &vars).expect("render");
    let line = rendered
        .lines()
        .find_map(|l| l.trim().strip_prefix("password: "))
        .expect("password line");
    line.trim_matches('"').to_string()
}

#[test]
fn generated_password_is_stable_per_instance_and_new_when_recreated() {
    let ctx = TestContext::new("randomness");
    ctx.write("main.tf", &config("1"));
    ctx.tf.apply(&[]).assert_success().assert_no_crash();
    let first = password(&ctx);
    assert_ne!(
        first,
        public_seed_password(&ctx.namespace),
        "the password must not follow from namespace and name"
    );

    // The deploy plan runs again: same instance, same password.
    ctx.write("main.tf", &config("2"));
    ctx.tf.apply(&[]).assert_success().assert_no_crash();
    assert_eq!(password(&ctx), first, "a re-run keeps the generated value");
    ctx.tf
        .plan(&["-detailed-exitcode"])
        .assert_success()
        .assert_output_contains("No changes");

    // Created again under the same namespace and name: a new secret seed, a new value.
    ctx.tf
        .apply(&["-replace=kudo_instance.this"])
        .assert_success()
        .assert_no_crash();
    let second = password(&ctx);
    assert_ne!(
        second, first,
        "a re-created instance gets new random values"
    );
    assert_ne!(second, public_seed_password(&ctx.namespace));
}

/// What anyone could compute for the `ADMIN_PASSWORD` output: the old, public seed.
fn public_seed_output(namespace: &str) -> String {
    let vars = kudo_template::Vars {
        name: "db".into(),
        namespace: namespace.into(),
        params: BTreeMap::new(),
        ..Default::default()
    };
    kudo_template::render(
        "operator.yaml outputs.ADMIN_PASSWORD",
        "{{ randAlphaNum 16 }}",
        &vars,
    )
    .expect("render")
}

/// `kudo_instance.this` in a saved plan: (`after`, `after_unknown`).
fn planned_instance(ctx: &TestContext) -> (serde_json::Value, serde_json::Value) {
    ctx.tf
        .plan(&["-out=tfplan"])
        .assert_success()
        .assert_no_crash();
    let json = ctx
        .tf
        .run(&["show", "-json", "tfplan"])
        .assert_success()
        .json();
    let change = json["resource_changes"]
        .as_array()
        .and_then(|all| all.iter().find(|c| c["address"] == "kudo_instance.this"))
        .unwrap_or_else(|| panic!("no change for kudo_instance.this: {json:#}"))["change"]
        .clone();
    (change["after"].clone(), change["after_unknown"].clone())
}

#[track_caller]
fn output_in_state(ctx: &TestContext) -> String {
    let state = ctx.tf.state();
    let value = state
        .resource("kudo_instance.this")
        .and_then(|r| r.pointer("/outputs/ADMIN_PASSWORD"))
        .and_then(serde_json::Value::as_str)
        .unwrap_or_else(|| panic!("no outputs.ADMIN_PASSWORD in state: {:#}", state.0));
    assert_eq!(value.len(), 16, "{value}");
    value.to_string()
}

#[test]
fn a_random_output_is_planned_with_the_instance_seed() {
    let ctx = TestContext::new("randomness-outputs");
    ctx.write("main.tf", &config("1"));

    // A create draws its seed in the apply: the plan cannot know the value yet, and
    // must not promise the guessable one.
    let (after, unknown) = planned_instance(&ctx);
    assert!(
        after.pointer("/outputs/ADMIN_PASSWORD").is_none()
            && unknown.pointer("/outputs/ADMIN_PASSWORD") == Some(&serde_json::Value::Bool(true)),
        "planned outputs: {:#} (unknown: {:#})",
        after["outputs"],
        unknown["outputs"]
    );
    ctx.tf.apply(&["tfplan"]).assert_success().assert_no_crash();
    let created = output_in_state(&ctx);
    assert_ne!(
        created,
        public_seed_output(&ctx.namespace),
        "the output must not follow from namespace and name"
    );

    // An existing instance has its seed at plan time: the plan shows what the apply keeps.
    ctx.write("main.tf", &config("2"));
    let (after, _) = planned_instance(&ctx);
    assert_eq!(
        after
            .pointer("/outputs/ADMIN_PASSWORD")
            .and_then(serde_json::Value::as_str),
        Some(created.as_str()),
        "planned outputs: {:#}",
        after["outputs"]
    );
    ctx.tf.apply(&["tfplan"]).assert_success().assert_no_crash();
    assert_eq!(output_in_state(&ctx), created);
    ctx.tf
        .plan(&["-detailed-exitcode"])
        .assert_success()
        .assert_output_contains("No changes");
}

/// The render seed the state keeps for `kudo_instance.this`, in the private data of the
/// resource (`terraform.tfstate`, base64 JSON), if any.
fn recorded_seed(ctx: &TestContext) -> Option<String> {
    let path = ctx.workdir.join("terraform.tfstate");
    let text =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    let state: serde_json::Value = serde_json::from_str(&text).expect("state JSON");
    let private = state["resources"]
        .as_array()
        .and_then(|all| all.iter().find(|r| r["type"] == "kudo_instance"))
        .and_then(|r| r["instances"][0]["private"].as_str())?;
    let bytes = crate::harness::connection::base64_decode(private).expect("base64 private");
    let private: serde_json::Value = serde_json::from_slice(&bytes).expect("private JSON");
    private["render_seed"].as_str().map(str::to_string)
}

/// A created instance draws a secret seed of its own (64 hex digits, new on every
/// create); an imported one keeps rendering as KUDO did, with no seed drawn for it.
#[test]
fn a_created_instance_draws_a_seed_and_an_imported_one_stays_unseeded() {
    let ctx = TestContext::new("randomness-seed");
    ctx.write("main.tf", &config("1"));
    ctx.tf.apply(&[]).assert_success().assert_no_crash();
    let first = recorded_seed(&ctx).expect("a created instance has a seed");
    assert!(
        first.len() == 64 && first.chars().all(|c| c.is_ascii_hexdigit()),
        "{first}"
    );
    ctx.tf
        .apply(&["-replace=kudo_instance.this"])
        .assert_success()
        .assert_no_crash();
    let second = recorded_seed(&ctx).expect("a re-created instance has a seed");
    assert_eq!(second.len(), 64, "{second}");
    assert_ne!(second, first, "each create draws a new seed");

    // Forgotten and imported: the cluster does not hold the seed, so none is recorded
    // and none is drawn; a run renders with KUDO's own seed.
    ctx.tf
        .run(&["state", "rm", "kudo_instance.this"])
        .assert_success();
    let id = format!("{}/db", ctx.namespace);
    ctx.tf
        .import("kudo_instance.this", &id, &[])
        .assert_success();
    assert_eq!(recorded_seed(&ctx), None);
    ctx.write("main.tf", &config("2"));
    ctx.tf.apply(&[]).assert_success().assert_no_crash();
    assert_eq!(recorded_seed(&ctx), None, "no seed drawn for an update");
    assert_eq!(password(&ctx), public_seed_password(&ctx.namespace));
}

/// Standard base64 with padding.
fn base64_encode(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | (u32::from(*b) << (16 - 8 * i)));
        for i in 0..4 {
            match i <= chunk.len() {
                true => out.push(char::from(ALPHABET[(n >> (18 - 6 * i)) as usize & 63])),
                false => out.push('='),
            }
        }
    }
    out
}

/// Replaces the private data of `kudo_instance.this` in `terraform.tfstate` with
/// `private`, as an older provider version (or a damaged file) would have left it.
fn write_private(ctx: &TestContext, private: &[u8]) {
    let path = ctx.workdir.join("terraform.tfstate");
    let text =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    let mut state: serde_json::Value = serde_json::from_str(&text).expect("state JSON");
    let resources = state["resources"].as_array_mut().expect("resources");
    let instance = resources
        .iter_mut()
        .find(|r| r["type"] == "kudo_instance")
        .expect("kudo_instance in the state");
    instance["instances"][0]["private"] = serde_json::Value::String(base64_encode(private));
    std::fs::write(&path, state.to_string()).expect("write the state");
}

/// Private data written by older provider versions, which held only the seed, is
/// read as what it holds; private data that is not the provider's at all is read as
/// empty, and plans and applies go on.
#[test]
fn older_and_damaged_private_data_is_read_as_what_it_holds() {
    assert_eq!(base64_encode(b"hi"), "aGk=");
    let ctx = TestContext::new("randomness-private");
    ctx.write("main.tf", &config("1"));
    ctx.tf.apply(&[]).assert_success().assert_no_crash();
    let seed = recorded_seed(&ctx).expect("a created instance has a seed");
    let first = password(&ctx);

    write_private(&ctx, format!(r#"{{"render_seed":"{seed}"}}"#).as_bytes());
    ctx.write("main.tf", &config("2"));
    ctx.tf.apply(&[]).assert_success().assert_no_crash();
    assert_eq!(password(&ctx), first, "the older layout's seed is used");
    assert_eq!(recorded_seed(&ctx).as_deref(), Some(seed.as_str()));

    write_private(&ctx, b"not json");
    ctx.tf.plan(&[]).assert_success().assert_no_crash();
}
