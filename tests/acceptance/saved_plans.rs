//! Plan in one job, apply in another: `terraform plan -out` in one working folder,
//! `terraform apply PLANFILE` in a second one with a fresh `.terraform`, against an
//! HTTP package repository that moves on in between (a newer version published, a
//! version republished or withdrawn, the repository down) or a package folder edited.
//!
//! The apply installs exactly what the plan resolved or refuses in the provider's own
//! words before writing anything. Terraform plans each change again inside the apply
//! and only from 1.16 on (plugin protocol 6.11) hands that second plan what the first
//! one recorded: with older Terraform the second plan can only resolve again, so the
//! tests of a moved repository skip there (see docs/guides/saved-plans.md).

use std::path::{Path, PathBuf};

use tfplugin::Value;
use tfplugin::proto::tfplugin6 as pb;

use crate::harness::plugin::{Plugin, capabilities, dynamic, errors};
use crate::harness::{Feature, Terraform, TfRun, flat, lacks};
use crate::harness::{FileServer, TestContext, tool, written};
use crate::skip;

/// Why this client cannot hold a moved repository to a saved plan: it does not hand
/// the second plan of the apply what the first plan recorded (Terraform before 1.16,
/// OpenTofu), so that plan can only resolve again. `None` when it can.
fn without_forwarded_private() -> Option<String> {
    lacks(Feature::ForwardedPlannedPrivate)
        .map(|why| format!("{why}: the provider cannot hold a moved repository to the plan"))
}

/// A package folder `name` `version` whose ConfigMap holds `value`; `dependency`: a
/// KudoOperator task on that repository package (any 0.x version).
fn write_package(dir: &Path, name: &str, version: &str, value: &str, dependency: Option<&str>) {
    let (dep_task, dep_step) = match dependency {
        Some(dep) => (
            format!(
                "  - name: dep\n    kind: KudoOperator\n    spec:\n      package: {dep}\n      operatorVersion: \"0.x\"\n"
            ),
            "          - name: dep\n            tasks: [dep]\n".to_string(),
        ),
        None => (String::new(), String::new()),
    };
    std::fs::create_dir_all(dir.join("templates")).expect("package dir");
    std::fs::write(
        dir.join("operator.yaml"),
        format!(
            "apiVersion: kudo.dev/v1beta1\nname: {name}\noperatorVersion: \"{version}\"\nkubernetesVersion: 1.18.0\nmaintainers:\n  - name: tests\n    email: tests@example.com\ntasks:\n{dep_task}  - name: cm\n    kind: Apply\n    spec:\n      resources: [cm.yaml]\nplans:\n  deploy:\n    strategy: serial\n    phases:\n      - name: main\n        strategy: serial\n        steps:\n{dep_step}          - name: cm\n            tasks: [cm]\n"
        ),
    )
    .expect("operator.yaml");
    std::fs::write(
        dir.join("templates/cm.yaml"),
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{{{ .Name }}}}-cm\ndata:\n  value: {value:?}\n"
        ),
    )
    .expect("template");
}

/// Folder A (the test's working folder, where the plan is made), folder B (a fresh
/// one with the same files, where the saved plan is applied), and a repository.
struct TwoFolders {
    ctx: TestContext,
    b: Terraform,
    repo: PathBuf,
    build: PathBuf,
    server: Option<FileServer>,
}

impl TwoFolders {
    fn new(name: &str) -> TwoFolders {
        let ctx = TestContext::new(name);
        let parent = ctx.workdir.parent().expect("work dir parent").to_path_buf();
        let repo = parent.join("repo");
        std::fs::create_dir_all(&repo).expect("repo dir");
        let mut b = ctx.tf.clone();
        b.workdir = parent.join("b");
        std::fs::create_dir_all(&b.workdir).expect("folder b");
        TwoFolders {
            server: Some(FileServer::start(repo.clone())),
            ctx,
            b,
            repo,
            build: parent.join("build"),
        }
    }

    fn url(&self) -> String {
        self.server
            .as_ref()
            .map(|s| s.url.clone())
            .unwrap_or_default()
    }

    /// Builds `name` `version` and publishes it (replacing an archive of the same
    /// version), as `package create` and `repo index` do for an author.
    fn publish(&self, name: &str, version: &str, value: &str) {
        let dir = self.build.join(format!("{name}-{version}"));
        let _ = std::fs::remove_dir_all(&dir);
        write_package(&dir, name, version, value, None);
        let repo = self.repo.to_str().expect("utf-8");
        tool(&[
            "package",
            "create",
            dir.to_str().expect("utf-8"),
            "-o",
            repo,
            "--overwrite",
        ]);
        self.reindex();
    }

    fn withdraw(&self, archive: &str) {
        std::fs::remove_file(self.repo.join(archive)).expect("withdraw");
        self.reindex();
    }

    fn reindex(&self) {
        let repo = self.repo.to_str().expect("utf-8");
        tool(&["repo", "index", repo, "--url", &self.url()]);
    }

    /// The same configuration (and `ops/app`, when given) in both folders.
    fn configure(&self, package: &str, app: Option<(&str, Option<&str>)>, instance: bool) {
        let instance = if instance {
            "resource \"kudo_instance\" \"this\" {\n  name      = \"app\"\n  namespace = var.namespace\n  operator  = kudo_operator.this.id\n}\n"
        } else {
            ""
        };
        let main = format!(
            "terraform {{\n  required_providers {{\n    kudo = {{ source = \"kudo/kudo\" }}\n  }}\n}}\nvariable \"namespace\" {{ type = string }}\nprovider \"kudo\" {{\n  repository {{\n    name = \"test\"\n    url  = {url:?}\n  }}\n}}\nresource \"kudo_operator\" \"this\" {{\n  package   = {package:?}\n  namespace = var.namespace\n}}\n{instance}",
            url = self.url()
        );
        for dir in [&self.ctx.workdir, &self.b.workdir] {
            std::fs::write(dir.join("main.tf"), &main).expect("main.tf");
            if let Some((value, dependency)) = app {
                write_package(&dir.join("ops/app"), "app", "1.0.0", value, dependency);
            }
        }
    }

    /// `terraform plan -out` in folder A; the plan file is copied to folder B. Returns
    /// the planned `digest` of the operator.
    fn plan(&self) -> String {
        self.ctx
            .tf
            .run(&["plan", "-input=false", "-no-color", "-out=tfplan"])
            .assert_success();
        std::fs::copy(
            self.ctx.workdir.join("tfplan"),
            self.b.workdir.join("tfplan"),
        )
        .expect("copy the plan");
        let shown = self
            .ctx
            .tf
            .run(&["show", "-json", "tfplan"])
            .assert_success();
        let json = shown.json();
        let operator = json["planned_values"]["root_module"]["resources"]
            .as_array()
            .and_then(|r| r.iter().find(|r| r["address"] == "kudo_operator.this"))
            .cloned()
            .expect("the operator is planned");
        operator["values"]["digest"]
            .as_str()
            .expect("the planned digest is known")
            .to_string()
    }

    /// `terraform apply tfplan` in folder B.
    fn apply(&self) -> TfRun {
        self.b
            .run(&["apply", "-input=false", "-no-color", "tfplan"])
    }

    fn operator_versions(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .ctx
            .kube()
            .list_namespace(&self.ctx.namespace, None)
            .into_iter()
            .filter(|o| o.kind == "OperatorVersion")
            .map(|o| o.name)
            .collect();
        names.sort();
        names
    }

    /// The apply failed in the provider's words, saying each of `expected`, and wrote
    /// nothing.
    #[track_caller]
    fn refused(&self, run: TfRun, expected: &[&str]) {
        let run = run.assert_clean_error();
        let out = flat(&run.output());
        assert!(
            !out.contains("inconsistent final plan") && !out.contains("bug in the provider"),
            "Terraform's own error instead of the provider's:\n{run}"
        );
        for text in expected {
            assert!(
                out.contains(text),
                "the apply does not say {text:?}:\n{run}"
            );
        }
        assert_eq!(written(&self.ctx, "app"), Vec::<String>::new(), "{run}");
    }

    /// Destroys from folder B, where the state is (the context would look in A).
    fn destroy(&self) {
        self.b.destroy(&[]).assert_success();
        self.ctx.mark_cleaned();
    }
}

#[test]
fn a_saved_plan_applies_in_a_fresh_folder_with_its_dependency_tree() {
    let w = TwoFolders::new("saved-plan-tree");
    w.publish("dep", "0.1.0", "first");
    w.configure("./ops/app", Some(("root", Some("dep"))), true);
    w.plan();
    let run = w.apply().assert_success();
    assert_eq!(w.operator_versions(), ["app-1.0.0", "dep-0.1.0"], "{run}");
    // The instance's apply found the tree the operator's apply pinned: its dependency
    // instance runs.
    let instances: Vec<String> = w
        .ctx
        .kube()
        .list_namespace(&w.ctx.namespace, None)
        .into_iter()
        .filter(|o| o.kind == "Instance")
        .map(|o| o.name)
        .collect();
    assert!(
        instances.iter().any(|n| n.contains("dep")),
        "{instances:?}\n{run}"
    );
    w.destroy();
}

#[test]
fn a_version_published_between_plan_and_apply_is_ignored() {
    if let Some(why) = without_forwarded_private() {
        skip!("{why}");
    }
    let w = TwoFolders::new("saved-plan-newer");
    w.publish("app", "1.0.0", "first");
    w.configure("app", None, false);
    w.plan();
    w.publish("app", "2.0.0", "second");
    let run = w.apply().assert_success();
    assert_eq!(w.operator_versions(), ["app-1.0.0"], "{run}");
    w.destroy();
}

#[test]
fn republished_content_fails_the_apply_naming_both_digests() {
    if let Some(why) = without_forwarded_private() {
        skip!("{why}");
    }
    let w = TwoFolders::new("saved-plan-changed");
    w.publish("app", "1.0.0", "first");
    w.configure("app", None, false);
    let digest = w.plan();
    w.publish("app", "1.0.0", "changed");
    w.refused(
        w.apply(),
        &[
            "Planned package changed since the plan",
            "app 1.0.0",
            &digest,
            "Run `terraform plan` again",
        ],
    );
}

#[test]
fn a_withdrawn_version_fails_the_apply() {
    if let Some(why) = without_forwarded_private() {
        skip!("{why}");
    }
    let w = TwoFolders::new("saved-plan-withdrawn");
    w.publish("app", "0.9.0", "older");
    w.publish("app", "1.0.0", "first");
    w.configure("app", None, false);
    let digest = w.plan();
    w.withdraw("app-1.0.0.tgz");
    w.refused(
        w.apply(),
        &[
            "Planned package version withdrawn",
            "app 1.0.0",
            &digest,
            "repository test",
        ],
    );
}

#[test]
fn an_unreachable_repository_fails_the_apply_in_the_providers_words() {
    let mut w = TwoFolders::new("saved-plan-down");
    w.publish("app", "1.0.0", "first");
    w.configure("app", None, false);
    let digest = w.plan();
    w.server = None;
    let run = w.apply();
    if without_forwarded_private().is_none() {
        w.refused(
            run,
            &["Planned package not available", "app 1.0.0", &digest],
        );
    } else {
        // The second plan resolves again and cannot: still the provider's words, and
        // about the repository, not the package.
        w.refused(
            run,
            &[
                "Cannot reach the package repository",
                "no repository could be read",
                "Make the repository reachable",
            ],
        );
    }
}

#[test]
fn a_package_folder_edited_between_plan_and_apply_fails_the_apply() {
    if let Some(why) = without_forwarded_private() {
        skip!("{why}");
    }
    let w = TwoFolders::new("saved-plan-edited");
    w.configure("./ops/app", Some(("root", None)), false);
    let digest = w.plan();
    write_package(&w.b.workdir.join("ops/app"), "app", "1.0.0", "edited", None);
    w.refused(
        w.apply(),
        &[
            "Planned package changed since the plan",
            "app 1.0.0",
            &digest,
        ],
    );
}

#[test]
fn each_dependency_of_the_tree_is_held_to_the_plan() {
    if let Some(why) = without_forwarded_private() {
        skip!("{why}");
    }
    let w = TwoFolders::new("saved-plan-deps");
    w.publish("dep", "0.1.0", "first");
    w.configure("./ops/app", Some(("root", Some("dep"))), false);
    w.plan();
    // A newer dependency is ignored...
    w.publish("dep", "0.2.0", "second");
    let run = w.apply().assert_success();
    assert_eq!(w.operator_versions(), ["app-1.0.0", "dep-0.1.0"], "{run}");
    w.destroy();
    // ...and a changed one refused, naming it (a fresh folder B again).
    for name in [
        ".terraform",
        "terraform.tfstate",
        "terraform.tfstate.backup",
    ] {
        let path = w.b.workdir.join(name);
        let _ = std::fs::remove_dir_all(&path);
        let _ = std::fs::remove_file(&path);
    }
    w.plan();
    w.publish("dep", "0.2.0", "changed");
    w.refused(
        w.apply(),
        &["Planned package changed since the plan", "dep 0.2.0"],
    );
}

// Terraform 1.16's side of the same runs, spoken over the plugin protocol by the test
// (only 1.15 is installed here): the first plan in folder A, then in folder B the
// second plan with the first plan's private data (`planned_private`, protocol 6.11),
// held to the first plan as Terraform holds it, and the apply of that second plan.

/// The planned state and private data of a first plan.
struct FirstPlan {
    state: Value,
    private: Vec<u8>,
}

const TERRAFORM: &str = "1.16.0";

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Runtime::new().expect("tokio runtime")
}

fn operator_type() -> tfplugin::Type {
    terraform_provider_kudo::provider::schema::operator().value_type()
}

impl TwoFolders {
    fn provider_config(&self) -> Value {
        let repository = Value::object([
            ("name", Value::string("test")),
            ("url", Value::string(self.url())),
        ]);
        Value::object([("repository", Value::list([repository]))])
    }

    fn operator_config(&self, package: &str) -> Value {
        Value::object([
            ("package", Value::string(package)),
            ("namespace", Value::string(&self.ctx.namespace)),
        ])
    }

    /// `PlanResourceChange` of a create in `dir`, with `planned_private`.
    fn plan_create(
        &self,
        dir: &Path,
        package: &str,
        planned_private: &[u8],
    ) -> Result<FirstPlan, String> {
        let plugin = Plugin::start(dir, &self.ctx.tf.env);
        let ty = operator_type();
        let config = self.operator_config(package);
        runtime().block_on(async {
            let mut client = plugin.configured(&self.provider_config(), TERRAFORM).await;
            let planned = client
                .plan_resource_change(pb::plan_resource_change::Request {
                    type_name: "kudo_operator".into(),
                    prior_state: dynamic(&Value::Null, &ty),
                    proposed_new_state: dynamic(&config, &ty),
                    config: dynamic(&config, &ty),
                    client_capabilities: Some(capabilities()),
                    planned_private: planned_private.to_vec(),
                    ..Default::default()
                })
                .await
                .expect("PlanResourceChange")
                .into_inner();
            let failed = errors(&planned.diagnostics);
            if !failed.is_empty() {
                return Err(failed);
            }
            let state = planned.planned_state.expect("a planned state");
            Ok(FirstPlan {
                state: Value::from_msgpack(&state.msgpack, &ty).expect("planned state"),
                private: planned.planned_private,
            })
        })
    }

    /// Terraform 1.16's `apply tfplan` in folder B: the second plan, checked against
    /// `first` (every value known in the first plan unchanged, else Terraform's
    /// "inconsistent final plan"), then `ApplyResourceChange` of the second plan.
    /// Returns the new state, or the errors of the step that failed.
    fn apply_in_b(&self, package: &str, first: &FirstPlan) -> Result<Value, String> {
        let dir = self.b.workdir.clone();
        let second = self.plan_create(&dir, package, &first.private)?;
        if second.state != first.state {
            return Err(format!(
                "Terraform: Provider produced inconsistent final plan: {:?} became {:?}",
                first.state, second.state
            ));
        }
        let plugin = Plugin::start(&dir, &self.ctx.tf.env);
        let ty = operator_type();
        let config = self.operator_config(package);
        runtime().block_on(async {
            let mut client = plugin.configured(&self.provider_config(), TERRAFORM).await;
            let applied = client
                .apply_resource_change(pb::apply_resource_change::Request {
                    type_name: "kudo_operator".into(),
                    prior_state: dynamic(&Value::Null, &ty),
                    planned_state: dynamic(&second.state, &ty),
                    config: dynamic(&config, &ty),
                    planned_private: second.private.clone(),
                    ..Default::default()
                })
                .await
                .expect("ApplyResourceChange")
                .into_inner();
            let failed = errors(&applied.diagnostics);
            if !failed.is_empty() {
                return Err(failed);
            }
            let state = applied.new_state.expect("a new state");
            Ok(Value::from_msgpack(&state.msgpack, &ty).expect("new state"))
        })
    }

    /// Removes what `state` installed (`ApplyResourceChange` of a destroy).
    fn destroy_state(&self, state: &Value) {
        let plugin = Plugin::start(&self.b.workdir, &self.ctx.tf.env);
        let ty = operator_type();
        runtime().block_on(async {
            let mut client = plugin.configured(&self.provider_config(), TERRAFORM).await;
            let destroyed = client
                .apply_resource_change(pb::apply_resource_change::Request {
                    type_name: "kudo_operator".into(),
                    prior_state: dynamic(state, &ty),
                    planned_state: dynamic(&Value::Null, &ty),
                    ..Default::default()
                })
                .await
                .expect("ApplyResourceChange")
                .into_inner();
            assert_eq!(errors(&destroyed.diagnostics), "");
        });
        assert_eq!(written(&self.ctx, "app"), Vec::<String>::new());
    }

    /// The apply failed in the provider's words saying each of `expected` (never an
    /// inconsistent second plan), and wrote nothing.
    #[track_caller]
    fn refused_by_provider(&self, result: Result<Value, String>, expected: &[&str]) {
        let text = match result {
            Ok(state) => panic!("applied instead of refusing: {state:?}"),
            Err(text) => text,
        };
        assert!(!text.starts_with("Terraform:"), "{text}");
        for needle in expected {
            assert!(text.contains(needle), "does not say {needle:?}:\n{text}");
        }
        assert_eq!(written(&self.ctx, "app"), Vec::<String>::new(), "{text}");
    }

    fn first_plan(&self, package: &str) -> FirstPlan {
        self.plan_create(&self.ctx.workdir, package, &[])
            .unwrap_or_else(|e| panic!("first plan: {e}"))
    }
}

fn digest_of(plan: &FirstPlan) -> String {
    plan.state
        .get("digest")
        .as_str()
        .expect("digest")
        .to_string()
}

#[test]
fn terraform_1_16_installs_the_planned_version_though_a_newer_one_was_published() {
    let w = TwoFolders::new("saved-plan-611-newer");
    w.publish("app", "1.0.0", "first");
    w.configure("app", None, false);
    let first = w.first_plan("app");
    w.publish("app", "2.0.0", "second");
    // What Terraform 1.15 gets: a second plan without the first one's record resolves
    // again, and differs (Terraform then stops with "inconsistent final plan").
    let unpinned = w.plan_create(&w.b.workdir, "app", &[]).expect("plans");
    assert_eq!(
        unpinned.state.get("operator_version_name").as_str(),
        Some("app-2.0.0")
    );
    let state = w
        .apply_in_b("app", &first)
        .expect("applies the planned version");
    assert_eq!(
        state.get("operator_version_name").as_str(),
        Some("app-1.0.0")
    );
    assert_eq!(w.operator_versions(), ["app-1.0.0"]);
    w.destroy_state(&state);
}

#[test]
fn terraform_1_16_refuses_republished_content_naming_both_digests() {
    let w = TwoFolders::new("saved-plan-611-changed");
    w.publish("app", "1.0.0", "first");
    w.configure("app", None, false);
    let first = w.first_plan("app");
    w.publish("app", "1.0.0", "changed");
    w.refused_by_provider(
        w.apply_in_b("app", &first),
        &[
            "Planned package changed since the plan",
            "app 1.0.0",
            &digest_of(&first),
            "now has content digest",
            "Run `terraform plan` again",
        ],
    );
}

#[test]
fn terraform_1_16_refuses_a_withdrawn_version() {
    let w = TwoFolders::new("saved-plan-611-withdrawn");
    w.publish("app", "0.9.0", "older");
    w.publish("app", "1.0.0", "first");
    w.configure("app", None, false);
    let first = w.first_plan("app");
    w.withdraw("app-1.0.0.tgz");
    w.refused_by_provider(
        w.apply_in_b("app", &first),
        &[
            "Planned package version withdrawn",
            "app 1.0.0",
            &digest_of(&first),
            "repository test",
        ],
    );
}

#[test]
fn terraform_1_16_refuses_when_the_repository_is_down() {
    let mut w = TwoFolders::new("saved-plan-611-down");
    w.publish("app", "1.0.0", "first");
    w.configure("app", None, false);
    let first = w.first_plan("app");
    w.server = None;
    w.refused_by_provider(
        w.apply_in_b("app", &first),
        &[
            "Planned package not available",
            "app 1.0.0",
            &digest_of(&first),
        ],
    );
}

#[test]
fn terraform_1_16_refuses_a_package_folder_edited_after_the_plan() {
    let w = TwoFolders::new("saved-plan-611-edited");
    w.configure("./ops/app", Some(("root", None)), false);
    let first = w.first_plan("./ops/app");
    write_package(&w.b.workdir.join("ops/app"), "app", "1.0.0", "edited", None);
    w.refused_by_provider(
        w.apply_in_b("./ops/app", &first),
        &[
            "Planned package changed since the plan",
            "app 1.0.0",
            &digest_of(&first),
        ],
    );
}

#[test]
fn terraform_1_16_holds_each_dependency_of_the_tree_to_the_plan() {
    let w = TwoFolders::new("saved-plan-611-deps");
    w.publish("dep", "0.1.0", "first");
    w.configure("./ops/app", Some(("root", Some("dep"))), false);
    let first = w.first_plan("./ops/app");
    w.publish("dep", "0.2.0", "second");
    let state = w
        .apply_in_b("./ops/app", &first)
        .expect("applies the planned tree");
    assert_eq!(w.operator_versions(), ["app-1.0.0", "dep-0.1.0"]);
    w.destroy_state(&state);
    // Planned with dep 0.2.0, which is then republished with other content.
    let second = w.first_plan("./ops/app");
    w.publish("dep", "0.2.0", "changed");
    w.refused_by_provider(
        w.apply_in_b("./ops/app", &second),
        &["Planned package changed since the plan", "dep 0.2.0"],
    );
    // And withdrawn: named as such.
    w.withdraw("dep-0.2.0.tgz");
    w.refused_by_provider(
        w.apply_in_b("./ops/app", &second),
        &["Planned package version withdrawn", "dep 0.2.0"],
    );
}
