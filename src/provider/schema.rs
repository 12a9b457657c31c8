//! Schemas of the provider block and its resources. Descriptions are the source of
//! the attribute reference in `docs/`; a test keeps the two in step.

use tfplugin::{Attribute, Block, NestedBlock, NestingMode, Schema, Type};

/// `kudo_instance.rollback_on_failure`.
const ROLLBACK_DESCRIPTION: &str = "Whether a failed apply puts the instance back. When the apply of a change to an existing instance fails (a step fails, health is not reached within `timeouts`, the apply is interrupted), the same apply runs the instance and every dependency instance again at the operator version, parameters and plan triggers of its last completed apply (installing that OperatorVersion again if `kudo_operator` removed it), removing objects only the failed change made, and waits for health within the `timeouts` again. The apply still fails, saying what failed and to which version it rolled back; the state records that version, so the next plan shows the change again. A failed create removes what it wrote. CustomResourceDefinitions stay as the failed change made them (a version that became a stored version cannot be taken back): the plan warns when the change creates or alters a CRD. Unset: the provider's `rollback_on_failure`, whose default is `false` (a failed apply leaves the instance as the failure left it).";

pub const OPERATOR: &str = "kudo_operator";
pub const INSTANCE: &str = "kudo_instance";

fn string(name: &str) -> Attribute {
    Attribute::new(name, Type::String)
}

pub fn provider() -> Schema {
    let repository = Block::new()
        .description("An operator repository (a KUDO `index.yaml`) that `package` names are looked up in.")
        .attribute(string("name").required().description("Name of the repository, used in messages and in `kudo_operator.package` references such as `name/package`."))
        .attribute(string("url").required().description("URL of the repository: an `http(s)://` address or a folder/`file://` path holding `index.yaml`. Other schemes (`ftp://`, `s3://`) are refused, naming the repository."))
        .attribute(
            Attribute::new("priority", Type::Number)
                .optional()
                .description("When several repositories hold a package, the lowest priority wins (default 0); ties go to the first listed."),
        );
    let exec = Block::new()
        .description("A credential plugin that prints the credentials (a client.authentication.k8s.io `ExecCredential`), as cloud clusters use: `aws eks get-token`, `gke-gcloud-auth-plugin`, `kubelogin`. It is run when the provider connects, again shortly before the credential it returned expires (its `status.expirationTimestamp`: a tenth of its lifetime before, from 1 to 10 seconds), so an apply longer than the credential's lifetime goes on, and again when the API server refuses the credential (HTTP 401: revoked before its expiry), the refused request then being sent once more with the new one. Instead of `token`; replaces the kubeconfig user's credentials.")
        .attribute(string("api_version").required().description("The `ExecCredential` version the plugin speaks: `client.authentication.k8s.io/v1` or `client.authentication.k8s.io/v1beta1`."))
        .attribute(string("command").required().description("The plugin to run: a command found on `PATH`, or a path. A plugin that is missing or fails fails the plan with the command and what it wrote on stderr."))
        .attribute(Attribute::new("args", Type::list(Type::String)).optional().description("Arguments of the command."))
        .attribute(Attribute::new("env", Type::map(Type::String)).optional().description("Environment variables set for the command, on top of the provider's environment."));
    let api_version_mapping = Block::new()
        .description("A translation for a third-party kind (for example a CRD group that moved from `v1alpha1` to `v1`): objects written for `from` are applied as `to` when the cluster does not serve `from`. Only `apiVersion` changes.")
        .attribute(string("from").required().description("The API version templates write, as `group/version`."))
        .attribute(string("kind").optional().description("The kind the mapping is for; every kind of `from` when unset."))
        .attribute(string("to").required().description("The API version to apply such objects as, as `group/version`."));
    Schema::new(
        0,
        Block::new()
            .description("Installs KUDO operator packages on a Kubernetes cluster and drives their plans. Connection settings follow the hashicorp/kubernetes provider; with none set, `KUBE_CONFIG_PATH` or `KUBECONFIG` is read.")
            .attribute(string("config_path").optional().description("Path to a kubeconfig file. When neither it nor `config_paths` is set: the `KUBE_CONFIG_PATH` environment variable, then `KUBE_CONFIG_PATHS`, then the first path in `KUBECONFIG`."))
            .attribute(string("config_context").optional().description("Context of the kubeconfig to use instead of its current context."))
            .attribute(string("host").optional().description("URL of the Kubernetes API server, for example `https://127.0.0.1:6443`. Used instead of a kubeconfig."))
            .attribute(string("token").optional().sensitive().description("Bearer token for `host`."))
            .attribute(string("cluster_ca_certificate").optional().description("PEM-encoded CA certificate that signed the API server's certificate."))
            .attribute(string("client_certificate").optional().description("PEM-encoded client certificate for TLS client authentication."))
            .attribute(string("client_key").optional().sensitive().description("PEM-encoded private key of `client_certificate`."))
            .attribute(Attribute::new("config_paths", Type::list(Type::String)).optional().description("Paths to several kubeconfig files, merged as `KUBECONFIG` merges them: the first file to define a cluster, user, context or `current-context` wins. Not together with `config_path`. Defaults to the `KUBE_CONFIG_PATHS` environment variable (paths separated by `:`, `;` on Windows) when neither is set and `KUBE_CONFIG_PATH` is not either."))
            .attribute(Attribute::new("insecure", Type::Bool).optional().description("Skip verification of the API server's certificate. For test clusters only."))
            .attribute(string("tls_server_name").optional().description("Server name the API server's certificate is checked against and sent in TLS SNI, instead of the host name of `host` (or of the kubeconfig's `server`): for a server reached through an address its certificate does not name, such as a tunnel or an IP address."))
            .attribute(string("proxy_url").optional().description("URL of a proxy every request to the API server goes through: `http://host:port`, `https://host:port` or `socks5://host:port` (credentials as `http://user:password@host:port`). Overrides the kubeconfig cluster's `proxy-url`."))
            .attribute(string("request_timeout").optional().description("How long one request to the Kubernetes API server may wait (connecting, the TLS handshake, each answer), and the provider's first contact with the server in all, as a Go duration (`30s`, `2m`). Default `30s`. An address that accepts connections but never answers then fails the plan within this time, naming the server."))
            .attribute(Attribute::new("max_requests_in_flight", Type::Number).optional().description("How many requests the provider may have waiting for the Kubernetes API server at once, from 1 to 256. Default `16`. Refresh, drift checks, plan dry-runs and the objects of one task are sent concurrently up to this bound, so a cluster 50 ms away costs a few round trips rather than one per object; lower it for a small or heavily shared API server, `1` sends one request at a time."))
            .attribute(Attribute::new("translate_api_versions", Type::Bool).optional().description("When a template writes an API version the cluster no longer serves (`policy/v1beta1`, `rbac.authorization.k8s.io/v1beta1`, `apiextensions.k8s.io/v1beta1`, ...), convert the object to a served successor and say so in a plan warning. Default `true`; with `false` such a plan fails, naming the template and the version to write instead. See the API version translation guide."))
            .attribute(Attribute::new("allow_insecure_webhooks", Type::Bool).optional().description("Let Webhook tasks call plain `http://` URLs on other machines. Default `false`: a Webhook task calls `https://` URLs, and `http://` only on this machine (127.0.0.0/8, ::1, `localhost`), because the request carries the instance's parameters and header values read from Secrets. See the webhook tasks guide."))
            .attribute(string("drift").optional().description("What a refresh does when a field this provider applied was changed out of band (`kubectl scale`, `kubectl edit`): `correct` (the default) lists it in `drifted_fields` and plans an update that takes it back; `warn` lists it and warns, planning no change; `ignore` does not look. A `kudo_instance` may set its own. See the drift guide."))
            .attribute(string("crd_upgrade_safety").optional().description("What a plan does when it would change a CustomResourceDefinition the cluster already holds in a way that loses or rejects its objects (a stored version dropped, a served version dropped while objects exist, a field's type changed, a field newly required, an enum or bound narrowed, the scope changed, the conversion webhook removed): `enforce` (the default) fails the plan naming the CRD, version, field, rule and how many objects are affected; `warn` warns and applies; `off` does not check. A `kudo_instance` may set its own. See the upgrading operators guide."))
            .attribute(string("health").optional().description("When an applied object counts as healthy, so that the plan goes on: `kudo` (the default) follows KUDO 0.19 (Deployments, StatefulSets, Jobs, Pods, Services, Namespaces, CRDs and Instances wait for their rollout; DaemonSets and custom resources are done as soon as they exist); `ready` also waits for DaemonSets to roll out on every scheduled node, ReplicaSets, claims to bind, any object whose controller has not yet observed its latest generation, and custom resources by their `Ready`/`Available` conditions, with `health_rule` CEL expressions per kind. A `kudo_instance` may set its own. See the upgrading operators guide."))
            .attribute(Attribute::new("rollback_on_failure", Type::Bool).optional().description("Default of `kudo_instance.rollback_on_failure` for instances that do not set it. Default `false`."))
            .attribute(Attribute::new("show_manifests", Type::Bool).optional().description("Default of `kudo_instance.show_manifests` for instances that do not set it: fill `manifests` so that plans show a line diff of each object that changes. Defaults to the environment variable `KUDO_SHOW_MANIFESTS` (`true` or `1`), else `false`."))
            .block(NestedBlock::new("exec", NestingMode::List, exec).max_items(1))
            .block(NestedBlock::new("repository", NestingMode::List, repository))
            .block(super::drift::ignore_block())
            .block(super::health::rule_block())
            .block(NestedBlock::new("api_version_mapping", NestingMode::List, api_version_mapping)),
    )
}

pub fn operator() -> Schema {
    Schema::new(
        0,
        Block::new()
            .description("A KUDO operator package installed into a namespace: KUDO's `Operator` and `OperatorVersion` objects (`kudo.dev/v1beta1`). The KUDO CRDs are installed when missing.")
            .attribute(string("package").required().description("The operator package: a local folder, a `.tgz` file, an `http(s)` URL of a `.tgz`, `name[@version]` from the provider's repositories, or `cluster:<namespace>/<operatorversion-name>` for an OperatorVersion already in the cluster (what `terraform query` generates for operators `kubectl kudo` installed; its dependencies are resolved from the repositories). Relative paths are resolved from the working directory; use `${path.module}`."))
            .attribute(string("namespace").optional().computed().requires_replace().description("Namespace of the Operator and OperatorVersion objects. Default `default`. It must exist, unless `create_namespace` is set: a namespace known at plan time that does not exist fails the plan. Changing it replaces the resource."))
            .attribute(Attribute::new("create_namespace", Type::Bool).optional().description(CREATE_NAMESPACE_DESCRIPTION))
            .attribute(string("id").computed().description("`<namespace>/<operatorversion-name>`, known at plan time. Pass it to `kudo_instance.operator`."))
            .attribute(string("name").computed().description("The operator's name from `operator.yaml`."))
            .attribute(string("operator_version").computed().description("`operatorVersion` from `operator.yaml`."))
            .attribute(string("app_version").computed().description("`appVersion` from `operator.yaml`, or null when the package has none."))
            .attribute(string("operator_version_name").computed().description("Name of the OperatorVersion object: `<name>-<appVersion>-<operatorVersion>`, or `<name>-<operatorVersion>` without appVersion."))
            .attribute(Attribute::new("dependency_overrides", Type::map(Type::String)).optional().description("Pins or overrides the version of a dependency, by package name: an operatorVersion or range (`\"1.3.2\"`, `\">=1.3.0 <2.0.0\"`, `\"1.x\"`), `\"app=<range>\"` for the appVersion, or both joined by `;`. It replaces what the packages ask for that dependency."))
            .attribute(Attribute::new("dependencies", Type::list(dependency_type())).computed().description("The operators this package installs through KudoOperator tasks, transitively, and those its operator.yaml `dependencies:` list requires (installed as operators only, without instances), resolved at plan time: `package`, `operator_version`, `app_version`, `operator_version_name`, `source` (repository or folder), `required_by` (the package whose task or list asks for it), `constraint` (what was asked: a range, or `provides <group>/<version> <Kind>`) and `enabled` (false when an `enablingParameter` default switches it off)."))
            .attribute(Attribute::new("install_order", Type::list(Type::String)).computed().description("OperatorVersion names in the order they are installed: dependencies before the packages that need them, this package last."))
            .attribute(string("graph").computed().description(GRAPH_DESCRIPTION))
            .attribute(string("digest").computed().description("SHA-256 of the package content as installed; a change of any template or plan changes it and updates the instances that use it.")),
    )
}

/// `create_namespace` of `kudo_operator` and `kudo_instance`.
pub const CREATE_NAMESPACE_DESCRIPTION: &str = "Whether the apply creates `namespace` when it does not exist, as `kubectl kudo install --create-namespace` and helm_release's `create_namespace` do; the plan then lists it (`Namespace <name>`) in the instance's `preview.create`. Default `false`: a namespace that does not exist fails the plan. A namespace created so is labelled `app.kubernetes.io/managed-by: terraform-provider-kudo` and annotated (`namespace-users.kudo.dev/...`) with each resource that set `create_namespace` for it; destroy deletes it only when no other such resource is left and nothing is in it but what Kubernetes puts in every namespace (the `kube-root-ca.crt` ConfigMap, the `default` ServiceAccount, events), so the last of several resources sharing it removes it. A namespace that existed before, or that still holds other objects, stays, with a warning saying why. Creating a namespace needs a cluster-scoped right that credentials limited to one namespace lack: the plan then fails as the apply would.";

/// `summary` of `kudo_instance`.
pub const SUMMARY_DESCRIPTION: &str = "What the pending apply does, in a few lines to read first: for the instance and each dependency instance below it, the KUDO plan it runs (also when it stays `deploy`) with its strategy and how many objects it creates, updates and deletes, then a line per phase with its strategy and steps (`zk runs plan deploy (serial), its run #2: 0 to create, 1 to update, 0 to delete`, `  phase zookeeper (parallel): deploy`); a managed object a refresh found deleted adds `<object>: deleted, will be re-created`; a dependency instance left alone or removed says so. Known at plan time when `plan_steps` is (unknown otherwise). After the apply it describes that apply, until the next plan that runs something: the run number (how many applies ran a KUDO plan of this instance through the provider) makes each such plan's summary differ from the last, so it is always shown, and a refresh never changes it.";

/// `graph` of `kudo_operator` and `kudo_dependencies`.
pub const GRAPH_DESCRIPTION: &str = "The dependency tree as a Mermaid flowchart (GitHub and GitLab draw ```mermaid blocks in pull requests and READMEs): every instance with its package, version and where the package comes from, an arrow from parent to child labelled with the KudoOperator task and what it asks for, subtrees an `enablingParameter` default switches off drawn dashed, and operators installed without an instance (operator.yaml `dependencies:`) as hexagons. The same text as `terraform-provider-kudo resolve --format mermaid` prints for the same package, repositories and overrides; known when `dependencies` is.";

pub fn dependency_type() -> Type {
    Type::object([
        ("package", Type::String),
        ("operator_version", Type::String),
        ("app_version", Type::String),
        ("operator_version_name", Type::String),
        ("source", Type::String),
        ("required_by", Type::String),
        ("constraint", Type::String),
        ("enabled", Type::Bool),
    ])
}

pub fn child_type() -> Type {
    Type::object([
        ("name", Type::String),
        ("operator", Type::String),
        ("operator_version", Type::String),
        ("enabled", Type::Bool),
        ("parameters", Type::map(Type::String)),
        ("parent", Type::String),
    ])
}

pub fn object_type() -> Type {
    Type::object([
        ("api_version", Type::String),
        ("kind", Type::String),
        ("namespace", Type::String),
        ("name", Type::String),
        ("uid", Type::String),
    ])
}

/// The `kudo_instance` schema version: 1 since `objects` is a map, 2 since every
/// attribute keys objects as `objects` does and the preview covers dependency
/// instances (see `instance::upgrade`).
pub const INSTANCE_VERSION: i64 = 2;

pub fn instance() -> Schema {
    Schema::new(
        INSTANCE_VERSION,
        Block::new()
            .description("An instance of a KUDO operator: KUDO's `Instance` object plus everything its plans create. Create runs the `deploy` plan; parameter changes run the plan their trigger names (else `update`, else `deploy`); destroy removes every object the instance created.")
            .attribute(string("name").required().requires_replace().description("Name of the Instance object; also `.Name` in templates. Changing it replaces the instance."))
            .attribute(string("namespace").optional().computed().requires_replace().description("Namespace of the instance and its namespaced objects. It must exist, unless `create_namespace` is set: a namespace known at plan time that does not exist fails the plan. Default `default`. Changing it replaces the instance."))
            .attribute(Attribute::new("create_namespace", Type::Bool).optional().description(CREATE_NAMESPACE_DESCRIPTION))
            .attribute(string("operator").required().description("The `id` of a `kudo_operator` (`<namespace>/<operatorversion-name>`); referencing it orders the two. Changing it to another version upgrades the instance."))
            .attribute(Attribute::new("parameters", Type::map(Type::String)).optional().description("Parameter values, as strings, over the package's defaults. Names must be declared in the package's `params.yaml`; required parameters without a default must be set. Changing a parameter the package declares `immutable` (here or in the other parameter maps) replaces the instance, with a warning naming it."))
            .attribute(Attribute::new("sensitive_parameters", Type::map(Type::String)).optional().sensitive().description("Parameter values Terraform must not show, such as passwords: like `parameters`, but hidden in plans, left out of `effective_parameters`, and stored in a Secret `<name>-kudo-sensitive` (owned by the Instance, named in its `kudo.dev/sensitive-parameters-secret` annotation) instead of the Instance's `spec.parameters`. A name may not be in both maps; an `outputs` template that would reveal one is an error."))
            .attribute(Attribute::new("parameters_wo", Type::map(Type::String)).optional().write_only().description("Parameter values Terraform sends but never stores (a write-only attribute: Terraform 1.11+ / OpenTofu 1.11+), such as passwords from an ephemeral variable. Not in the state, the plan file or the Instance object; kept, like `sensitive_parameters`, in the Secret `<name>-kudo-sensitive`. They are taken when the instance is created and whenever `parameters_wo_version` changes; other changes run with the values the instance already has. A name may not also be in `parameters` or `sensitive_parameters`."))
            .attribute(string("parameters_wo_version").optional().description("Any number or string; change it to send `parameters_wo` again: the apply then stores the configured values and runs the plan their change calls for (the parameters' `trigger`, else `update`, else `deploy`), even when the values are the same."))
            .attribute(Attribute::new("delete_volumes_on_destroy", Type::Bool).optional().description("Whether destroy also deletes the PersistentVolumeClaims that the instance's StatefulSets created from their `volumeClaimTemplates` (named `<template>-<statefulset>-<ordinal>`), and waits until they are gone. Default `false`: they are kept, as Kubernetes keeps them, and destroy warns naming each one."))
            .attribute(string("crd_deletion").optional().description("What destroy and pruning do with a CustomResourceDefinition the instance rendered. `when-unused` (the default when unset): delete it once no other instance uses it and no custom resource of it is left that this instance does not manage; otherwise it stays and a warning names what keeps it. `keep`: never delete it. Either way no other instance's custom resources are lost. Cluster-scoped objects of other kinds are always kept while another instance uses them."))
            .attribute(Attribute::new("plan_triggers", Type::map(Type::String)).optional().description("Runs a named plan, like `kubectl kudo plan trigger`: adding an entry `<plan> = \"<token>\"`, or changing its token, runs that plan on the next apply (for example `backup = timestamp()`-style tokens you change on purpose). Entries present when the instance is created are recorded, not run. Only one plan runs per apply, so change one entry at a time and not together with `parameters`."))
            .attribute(Attribute::new("allow_downgrade", Type::Bool).optional().description("Let a change run the instance, or a dependency instance it already has, at an older operator version, with a warning. Default `false`: such a plan fails naming both versions, as `kubectl kudo upgrade` refuses a version that is not newer."))
            .attribute(Attribute::new("rollback_on_failure", Type::Bool).optional().description(ROLLBACK_DESCRIPTION))
            .attribute(string("crd_upgrade_safety").optional().description("`enforce`, `warn` or `off`: what a plan does when this instance would change an existing CustomResourceDefinition unsafely, as the provider's `crd_upgrade_safety` (which applies when this is unset)."))
            .attribute(string("health").optional().description("`kudo` or `ready`: when an applied object counts as healthy, as the provider's `health` (which applies when this is unset)."))
            .attribute(string("id").computed().description("`<namespace>/<name>`."))
            .attribute(string("drift").optional().description("What a refresh does when a field this instance's apply set was changed out of band: `correct`, `warn` or `ignore`, as the provider's `drift` (which applies when this is unset)."))
            .attribute(Attribute::new("show_manifests", Type::Bool).optional().description("Whether to fill `manifests`, so that plans show a line diff of each object that changes. Unset: the provider's `show_manifests`, whose default is `false`, which keeps plans short. Turning it on or off runs no plan."))
            .attribute(string("status").computed().description("Status of the last plan that ran: `COMPLETE` after a successful apply. A refresh that finds managed objects missing or re-created, or (with `drift = \"correct\"`) fields changed out of band, reports `DRIFTED`, and the next plan repairs it."))
            .attribute(string("summary").computed().description(SUMMARY_DESCRIPTION))
            .attribute(string("last_plan").computed().description("Name of the plan the last apply ran; during `terraform plan`, the plan the apply will run."))
            .attribute(Attribute::new("effective_parameters", Type::map(Type::String)).computed().description("Every parameter's value as the templates see it: `parameters` over the package defaults. Parameters set in `sensitive_parameters` are left out, so that this attribute need not be hidden as a whole. Unknown in the plan of a create (a new instance, or the new half of a replacement): the apply records it, and the plan shows `parameters`, what the configuration sets, rather than every default of the package; an update's plan shows the values that change."))
            .attribute(Attribute::new("objects", Type::map(object_type())).computed().description("Objects the instance manages, keyed `Kind namespace/name` (`Kind name` for cluster-scoped objects; outside the core group the kind is qualified by its group, as kubectl writes it: `StatefulSet.apps zk/zk-zookeeper`), each with `api_version`, `kind`, `namespace` (empty for cluster-scoped objects), `name` and `uid` (the object's `metadata.uid` in the cluster, refreshed on every read; null when the object is gone). In a plan that runs a KUDO plan, the objects the run leaves are known (for packages whose tasks name every object they write: Apply, Delete, Toggle and Dummy tasks; unknown with Pipe, KudoOperator or Webhook tasks, or when the dry-run cannot be made), each keeping its `uid` unless the run creates it (new, or deleted since the last apply: unknown). An object deleted after the plan and created again by the apply keeps the planned `uid` in the state until the next refresh reads the new one. A map rather than a list so that plans of instances with thousands of objects stay fast: use `values(...)` for a list."))
            .attribute(Attribute::new("outputs", Type::map(Type::String)).computed().description("Values the package declares under `outputs:` in `operator.yaml` (name -> template), rendered with the instance's variables; known at plan time when the parameters are, so other instances can use them, e.g. `parameters = { ZK_URI = kudo_instance.zk.outputs.CONNECTION }`."))
            .attribute(Attribute::new("preview", super::preview::preview_type()).computed().description("What the pending apply will do, for the instance and every dependency instance below it, checked by a server-side dry-run at plan time: `create`, `update` and `delete`, maps keyed as `objects` is (`Kind namespace/name`, the kind qualified by its group outside the core group: `StatefulSet.apps ns/zk`) to the apiVersion the object is applied (or was recorded) as (new objects, managed objects whose rendered content changes or that drifted, objects a Delete task or pruning removes); `dependencies`, by dependency instance name: `action` (`create`, `run`, `leave` or `remove`), `plan` (the plan it runs, null when none), `reason`, `parent` and its own `create`, `update` and `delete` (unknown when they cannot be known before the apply, with a warning). What the API server would refuse anywhere in the tree fails the plan instead. Unknown when the cluster cannot be reached or the dry-run cannot be completed (a warning says why); after an apply it describes that apply."))
            .attribute(Attribute::new("manifests", Type::map(Type::String)).computed().description("With `show_manifests = true`: every object the instance manages after the apply, as the package renders it (patches applied; KUDO's labels and annotations and whatever the API server defaults are left out), keyed `Kind namespace/name` (`Kind name` for cluster-scoped objects) and written as YAML with sorted keys, so a plan shows exactly the lines that change. A Secret, or an object whose YAML contains a `sensitive_parameters` or `parameters_wo` value, is the whole entry `(sensitive value)`. Objects that templates do not render (dependency Instances, a webhook's answers) are left out. Unknown while the plan cannot reach the cluster; null when `show_manifests` is off."))
            .attribute(string("operator_digest").computed().description("`digest` of the operator package the instance last ran with."))
            .attribute(Attribute::new("children", Type::list(child_type())).computed().description("Dependency instances this instance creates through KudoOperator tasks, transitively, parents before children, known at plan time from the tree `kudo_operator` resolved: `name` (Instance name), `operator` and `operator_version` (the package version chosen), `enabled` (false when an `enablingParameter` switches the subtree off; it is then removed), `parameters` (rendered from the task's `parameterFile` with the parent's values) and `parent` (the Instance whose task creates it)."))
            .attribute(Attribute::new("plan_status", super::plan_status::plan_status_type()).computed().description("KUDO's status tree of the last plan run, as the Instance records it: `name`, `status` (`COMPLETE`, `IN_PROGRESS`, `ERROR`, `FATAL_ERROR`, ...), `message`, `last_updated` (RFC 3339) and `phases`, each with `name`, `status`, `message` and `steps` (`name`, `status`, `message`: a failed step's message names the task and what went wrong). Refreshed on every read. A plan that runs a KUDO plan shows the status its successful run leaves (that plan, its phases and steps `COMPLETE`, messages empty) with only `last_updated` unknown; a failed apply records what the run reached."))
            .attribute(Attribute::new("plan_steps", Type::list(super::plan_status::plan_steps_type())).computed().description("What the pending apply runs, in order, before anything runs: for the instance and for each dependency instance that runs a plan (see `preview.dependencies`), `instance`, `plan` and its `strategy`, and `phases`, each with its `name`, `strategy` (`serial` or `parallel`) and `steps` (step names in order). After the apply, `plan_status` reports the same plan, phases and steps with their status. Unknown while the plan itself is (values or the dependency tree known only at apply, or the cluster cannot be asked); when nothing is planned it keeps describing the last apply."))
            .attribute(Attribute::new("drifted_fields", Type::list(super::drift::drifted_field_type())).computed().description("Fields of managed objects that differ from what the last apply set, found by the last refresh for the instance and its dependency instances (empty after the refresh that follows an apply taking them back): `instance` (the instance whose object it is: this one or a dependency instance below it), `object` (keyed as `objects` is), `field` (dotted path, `spec.replicas`), `applied` and `live` values (JSON; strings as they are; null when absent; `(sensitive value)` for Secrets and for values that contain a sensitive parameter), and `diff`: when both values are strings and one has several lines, a unified line diff of the changed lines with one line of context (`-` applied, `+` live) instead of the two values, which are then null; else null. Only fields this provider sends count: what the API server defaults or another manager adds is never drift. Filled with `drift` `correct` or `warn`; `drift_ignore` rules (the provider's and this resource's) leave fields out. A plan keeps it as the refresh found it (`summary` shows each field the apply takes back), and so does the apply, until the next refresh."))
            .block(super::timeouts::block())
            .block(super::drift::ignore_block())
            .block(super::health::rule_block()),
    )
}

/// `list "kudo_instance"` (`terraform query`, Terraform 1.14+): the `config` block.
pub fn instance_list() -> Schema {
    Schema::new(
        0,
        Block::new()
            .description("Finds KUDO Instances in the cluster, whoever created them (this provider, `kubectl kudo install` or KUDO's controller), for `terraform query`; `-generate-config-out` writes a `kudo_instance` block and an `import` block for each. Dependency instances (created by another instance's KudoOperator task) are left out: they come with their parent.")
            .attribute(string("namespace").optional().description("Only Instances in this namespace. Unset: every namespace."))
            .attribute(string("operator").optional().description("Only instances of this operator (its `name` in operator.yaml, e.g. `zookeeper`)."))
            .attribute(string("label_selector").optional().description("Only Instances whose labels match this Kubernetes label selector, e.g. `team=data,tier!=test`.")),
    )
}

/// `list "kudo_operator"` (Terraform 1.14+): the operators (OperatorVersions) in the
/// cluster, for `terraform query`.
pub fn operator_list() -> Schema {
    Schema::new(
        0,
        Block::new()
            .description("Finds KUDO operators (OperatorVersions) in the cluster, whoever installed them, for `terraform query`; `-generate-config-out` writes a `kudo_operator` block whose `package` is `cluster:<namespace>/<operatorversion-name>` (the cluster does not record where a package came from) and an `import` block for each. Operators that another listed operator installs as a dependency are left out: they come with it.")
            .attribute(string("namespace").optional().description("Only operators in this namespace. Unset: every namespace."))
            .attribute(string("operator").optional().description("Only this operator (its `name` in operator.yaml, e.g. `zookeeper`)."))
            .attribute(string("label_selector").optional().description("Only OperatorVersions whose labels match this Kubernetes label selector.")),
    )
}

pub const INSTANCE_PARAMETERS: &str = "kudo_instance_parameters";

/// `ephemeral "kudo_instance_parameters"` (Terraform 1.10+): an instance's parameter
/// values, sensitive ones included, for use without storing them.
pub fn instance_parameters() -> Schema {
    Schema::new(
        0,
        Block::new()
            .description("Every parameter value of an existing KUDO instance as its templates see it, sensitive and write-only ones included, for other providers and instances (a database password for a SQL provider's configuration or a `parameters_wo` entry) without storing it: an ephemeral resource's values never reach the state or the plan file. Terraform 1.10+ / OpenTofu 1.11+.")
            .attribute(string("name").required().description("Name of the Instance."))
            .attribute(string("namespace").optional().description("Namespace of the Instance. Default `default`."))
            .attribute(Attribute::new("values", Type::map(Type::String)).computed().sensitive().description("Every declared parameter's value: the package defaults, the Instance's `spec.parameters` over them, and the values kept in the `<name>-kudo-sensitive` Secret (`sensitive_parameters`, `parameters_wo`) over those.")),
    )
}

pub const PLAN_ACTION: &str = "kudo_plan";

/// `action "kudo_plan"` (Terraform 1.14+): runs a named plan of an existing instance,
/// as `kubectl kudo plan trigger` does.
pub fn plan_action() -> Schema {
    Schema::new(
        0,
        Block::new()
            .description("Runs a named plan of an existing KUDO instance (`backup`, `restore`, ...), as `kubectl kudo plan trigger` does, from `terraform apply -invoke=action.kudo_plan.<name>` or a resource's `lifecycle { action_trigger { ... } }`. Terraform 1.14+.")
            .attribute(string("instance").required().description("The Instance, as `<namespace>/<name>` (a `kudo_instance`'s `id`) or `<name>` in namespace `default`."))
            .attribute(string("plan").required().description("The plan to run, as operator.yaml names it under `plans:`."))
            .attribute(Attribute::new("parameters", Type::map(Type::String)).optional().description("Parameter values set on the Instance before the plan runs, such as mysql's `BACKUP_FILE`. Only parameters whose `trigger` in params.yaml is this plan: the others configure the instance and belong in `kudo_instance.parameters`."))
            .attribute(string("timeout").optional().description("How long the plan may take, as a duration such as `30m` or `1h30m`. Default `20m`, as `kudo_instance`'s update timeout.")),
    )
}

#[cfg(test)]
mod tests {
    use super::super::{config, dependencies_data, instance, operator, package_data};
    use super::*;

    /// Every model names exactly the attributes and nested blocks of its schema: a model
    /// that missed one would drop it when a value is decoded and encoded again, which
    /// no answer over the protocol shows.
    #[test]
    fn every_model_names_every_attribute_of_its_schema() {
        let pairs: [(&str, Schema, &[&str]); 5] = [
            ("provider", provider(), config::ConfigModel::ATTRIBUTES),
            (OPERATOR, operator(), operator::OperatorModel::ATTRIBUTES),
            (INSTANCE, instance(), instance::InstanceModel::ATTRIBUTES),
            (
                package_data::NAME,
                package_data::schema(),
                package_data::PackageModel::ATTRIBUTES,
            ),
            (
                dependencies_data::NAME,
                dependencies_data::schema(),
                dependencies_data::DependenciesModel::ATTRIBUTES,
            ),
        ];
        for (name, schema, model) in pairs {
            let mut names: Vec<&str> = schema
                .block
                .attributes
                .iter()
                .map(|a| a.name.as_str())
                .chain(schema.block.blocks.iter().map(|b| b.type_name.as_str()))
                .collect();
            names.sort_unstable();
            let mut model = model.to_vec();
            model.sort_unstable();
            assert_eq!(names, model, "{name}");
        }
    }
}
