//! Installing the provider as users without our dev override do: from the archives
//! `scripts/release.sh` builds, through `terraform init -plugin-dir` (a filesystem
//! mirror in the "packed" layout), under the registry host of the client in use:
//! `registry.terraform.io` for Terraform, `registry.opentofu.org` for OpenTofu, which
//! is where each expands the short `source = "kudo/kudo"`.

use std::process::Command;

use crate::harness::{TestContext, is_opentofu, provider_binary, repo_root};

#[test]
fn release_archive_installs_from_a_plugin_dir_and_applies() {
    let mut ctx = TestContext::new("mirror");
    ctx.use_example("quickstart");
    let base = ctx
        .workdir
        .parent()
        .expect("work dir has a parent")
        .to_path_buf();
    let dist = base.join("dist");
    let release = Command::new("bash")
        .arg(repo_root().join("scripts/release.sh"))
        .arg("--binary")
        .arg(provider_binary())
        .arg("--out")
        .arg(&dist)
        .output()
        .expect("run scripts/release.sh");
    assert!(
        release.status.success(),
        "release.sh failed:\n{}\n{}",
        String::from_utf8_lossy(&release.stdout),
        String::from_utf8_lossy(&release.stderr)
    );
    let zips: Vec<_> = std::fs::read_dir(&dist)
        .expect("read dist")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "zip"))
        .collect();
    assert_eq!(zips.len(), 1, "release.sh wrote {zips:?}");

    // Packed layout: <dir>/<hostname>/<namespace>/<type>/<archive as released>.
    let mirror = base.join("mirror");
    let address = if is_opentofu() {
        "registry.opentofu.org/kudo/kudo"
    } else {
        "registry.terraform.io/kudo/kudo"
    };
    let provider_dir = mirror.join(address);
    std::fs::create_dir_all(&provider_dir).expect("mirror dir");
    let zip = &zips[0];
    let file_name = zip.file_name().expect("zip has a name");
    std::fs::copy(zip, provider_dir.join(file_name)).expect("copy archive");

    // No dev override: Terraform must install and lock the provider itself.
    let plain = base.join("plain.tfrc");
    std::fs::write(&plain, "").expect("write empty CLI config");
    ctx.tf.set_env("TF_CLI_CONFIG_FILE", &plain);
    let mirror_arg = format!("-plugin-dir={}", mirror.display());
    let init = ctx
        .tf
        .run(&["init", "-input=false", "-no-color", &mirror_arg])
        .assert_success();
    assert!(
        init.stdout.contains("Installing kudo/kudo v"),
        "init did not install the provider from the mirror:\n{init}"
    );
    let lock = std::fs::read_to_string(ctx.workdir.join(".terraform.lock.hcl"))
        .expect("init wrote a lock file");
    assert!(
        lock.contains(&format!("provider \"{address}\"")),
        "lock file: {lock}"
    );

    ctx.tf
        .plan(&[])
        .assert_success()
        .assert_no_crash()
        .assert_output_contains("kudo_instance.web will be created");
    ctx.tf.apply(&[]).assert_success().assert_no_crash();
    assert_eq!(
        ctx.tf.state().attr_str("kudo_instance.web", "status"),
        "COMPLETE"
    );
    assert!(
        ctx.kube().instance(&ctx.namespace, "web").is_some(),
        "the Instance is in the cluster"
    );
}
