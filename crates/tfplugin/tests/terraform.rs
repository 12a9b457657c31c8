//! End to end with a real Terraform CLI: the example provider is planned,
//! applied, replaced and destroyed through `dev_overrides`.
//! Skips (with a message) when no terraform binary is found: set
//! `TF_ACC_TERRAFORM_PATH` or put `terraform` on PATH.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common::echo_provider_binary;

fn find_terraform() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("TF_ACC_TERRAFORM_PATH") {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join("terraform"))
        .find(|p| p.is_file())
}

fn scratch_dir() -> PathBuf {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    let dir = std::env::temp_dir().join(format!("tfplugin-e2e-{}-{nanos}", std::process::id()));
    std::fs::create_dir_all(dir.join("bin")).unwrap();
    std::fs::create_dir_all(dir.join("work")).unwrap();
    dir
}

fn terraform(tf: &Path, dir: &Path, args: &[&str]) -> Output {
    let out = Command::new(tf)
        .args(args)
        .current_dir(dir.join("work"))
        .env("TF_CLI_CONFIG_FILE", dir.join("cli.tfrc"))
        .env("TF_LOG", "DEBUG")
        .env("CHECKPOINT_DISABLE", "1")
        .env("TF_IN_AUTOMATION", "1")
        .env_remove("TF_LOG_PROVIDER")
        .output()
        .unwrap();
    let ok = out.status.success();
    assert!(
        ok,
        "terraform {args:?} failed\nstdout:\n{}\nstderr (tail):\n{}",
        String::from_utf8_lossy(&out.stdout),
        tail(&String::from_utf8_lossy(&out.stderr), 60)
    );
    out
}

fn tail(s: &str, n: usize) -> String {
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

fn write_config(dir: &Path, input: &str) {
    let tf = format!(
        r#"
terraform {{
  required_providers {{
    echo = {{ source = "registry.terraform.io/tfplugin/echo" }}
  }}
}}
provider "echo" {{
  prefix = "p"
}}
resource "echo_thing" "a" {{
  input = "{input}"
}}
data "echo_data" "d" {{
  input = echo_thing.a.id
}}
output "out" {{
  value = data.echo_data.d.output
}}
"#
    );
    std::fs::write(dir.join("work/main.tf"), tf).unwrap();
}

#[test]
fn terraform_plans_applies_and_destroys_with_the_example_provider() {
    let Some(tf) = find_terraform() else {
        eprintln!(
            "SKIPPED: no terraform found (set TF_ACC_TERRAFORM_PATH or add terraform to PATH)"
        );
        return;
    };
    let dir = scratch_dir();
    std::fs::copy(
        echo_provider_binary(),
        dir.join("bin/terraform-provider-echo"),
    )
    .unwrap();
    std::fs::write(
        dir.join("cli.tfrc"),
        format!(
            "provider_installation {{\n  dev_overrides {{\n    \"registry.terraform.io/tfplugin/echo\" = \"{}\"\n  }}\n  direct {{}}\n}}\n",
            dir.join("bin").display()
        ),
    )
    .unwrap();

    write_config(&dir, "hello");
    let plan = terraform(&tf, &dir, &["plan", "-no-color", "-input=false"]);
    let plan_out = String::from_utf8_lossy(&plan.stdout);
    assert!(
        plan_out.contains("echo_thing.a will be created"),
        "{plan_out}"
    );
    assert!(plan_out.contains("(known after apply)"), "{plan_out}");

    let apply = terraform(
        &tf,
        &dir,
        &["apply", "-auto-approve", "-no-color", "-input=false"],
    );
    let apply_out = String::from_utf8_lossy(&apply.stdout);
    assert!(
        apply_out.contains("Apply complete! Resources: 1 added, 0 changed, 0 destroyed."),
        "{apply_out}"
    );
    assert!(apply_out.contains(r#"out = "echo-hello""#), "{apply_out}");
    let log = String::from_utf8_lossy(&apply.stderr);
    assert!(
        log.contains("configuring client automatic mTLS"),
        "AutoMTLS was not used"
    );
    assert!(
        log.contains("echo provider configured"),
        "provider log lines missing from TF_LOG output"
    );
    assert!(
        log.contains("echo_thing applied"),
        "provider log lines missing from TF_LOG output"
    );

    write_config(&dir, "world");
    let replace = terraform(
        &tf,
        &dir,
        &["apply", "-auto-approve", "-no-color", "-input=false"],
    );
    let replace_out = String::from_utf8_lossy(&replace.stdout);
    assert!(replace_out.contains("forces replacement"), "{replace_out}");
    assert!(
        replace_out.contains("1 added, 0 changed, 1 destroyed"),
        "{replace_out}"
    );

    // A second plan must be empty: read/plan are consistent with apply.
    let again = terraform(
        &tf,
        &dir,
        &["plan", "-no-color", "-input=false", "-detailed-exitcode"],
    );
    assert_eq!(again.status.code(), Some(0));

    let destroy = terraform(
        &tf,
        &dir,
        &["destroy", "-auto-approve", "-no-color", "-input=false"],
    );
    assert!(String::from_utf8_lossy(&destroy.stdout).contains("Resources: 1 destroyed"));
    let _ = std::fs::remove_dir_all(&dir);
}
