#!/usr/bin/env bash
# Round trips of one `terraform apply` (create), counted as waves: kube-sim delays every
# request by 50 ms and logs it; scripts/request-waves.py groups the requests that arrive
# together (one wave = one round trip on the critical path). By hand, never in CI; the
# release-build figures are scripts/bench.sh --latency 50's (docs/benchmarks.md).
#
# Usage: scripts/apply-waves.sh zookeeper|kafka|tree [PROVIDER_DIR]
#   PROVIDER_DIR holds the terraform-provider-kudo binary to measure (default:
#   target/debug, built first). Prints the apply's requests and waves, then the same
#   counted to the end of a no-change `terraform plan` after it; the wave list is kept in
#   target/apply-waves/<scenario>/waves.txt.
# Needs ../shared/fixtures (zookeeper, kafka) and Terraform (scripts/install-terraform.sh).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
scenario="${1:?usage: scripts/apply-waves.sh zookeeper|kafka|tree [PROVIDER_DIR]}"
provider_dir="${2:-}"
(cd "$repo" && cargo build -p kube-sim --bin kube-sim >&2)
if [[ -z "$provider_dir" ]]; then
  (cd "$repo" && cargo build --bin terraform-provider-kudo >&2)
  provider_dir="$repo/target/debug"
fi
provider_dir="$(cd "$provider_dir" && pwd)"
terraform="${TF_ACC_TERRAFORM_PATH:-$(bash "$repo/scripts/install-terraform.sh")}"
fixtures="$repo/../shared/fixtures/operators"
out="$repo/target/apply-waves/$scenario"
rm -rf "$out"
mkdir -p "$out/tf"

instance() { # name, extra attribute lines
  printf 'resource "kudo_instance" "%s" {\n  name      = "%s"\n  namespace = "default"\n  operator  = kudo_operator.op.id\n%s}\n' "$1" "$1" "${2:-}"
}
provider_extra=""
case "$scenario" in
  zookeeper) package="$fixtures/zookeeper"; instances="$(instance zookeeper)" ;;
  kafka)
    package="$fixtures/kafka"
    instances="$(instance kafka '  parameters = { ZOOKEEPER_URI = "zk-zookeeper-0.zk-hs:2181" }
')"
    ;;
  tree)
    # KEP-29's aa twice: bb (ee, gg) and cc below each, ten instances.
    package="$repo/tests/fixtures/deps/kep29/aa"
    provider_extra="  repository {
    name = \"kep29\"
    url  = \"$repo/tests/fixtures/deps/kep29\"
  }
"
    instances="$(instance aa1; instance aa2)"
    ;;
  *) echo "unknown scenario $scenario" >&2; exit 2 ;;
esac

echo '[{"latencyMs": 50}]' >"$out/faults.json"
KUBE_SIM_LOG=debug "$repo/target/debug/kube-sim" --kubeconfig-out "$out/kubeconfig" \
  --faults "$out/faults.json" 2>"$out/sim.log" >/dev/null &
sim=$!
trap 'kill $sim 2>/dev/null || true' EXIT
for _ in $(seq 100); do [[ -s "$out/kubeconfig" ]] && break; sleep 0.1; done
if [[ "$scenario" == kafka ]]; then
  # kafka's TLS Pipe task reads these from its pod (kube-sim's exec emulation); the
  # request is the log's first wave, left out of the counts below.
  server=$(awk '/server:/ {print $2; exit}' "$out/kubeconfig")
  token=$(awk '/token:/ {print $2; exit}' "$out/kubeconfig")
  curl -sk -X POST -H "Authorization: Bearer $token" "$server/_sim/exec-files" \
    -d '[{"namespace":"default","path":"/tmp/tls.key","content":""},{"namespace":"default","path":"/tmp/tls.crt","content":""}]' >/dev/null
fi
cat >"$out/cli.tfrc" <<EOT
provider_installation {
  dev_overrides { "kudo/kudo" = "$provider_dir" }
  direct {}
}
EOT
cat >"$out/tf/main.tf" <<EOT
terraform {
  required_providers {
    kudo = { source = "kudo/kudo" }
  }
}
provider "kudo" {
  config_path = "$out/kubeconfig"
$provider_extra}
resource "kudo_operator" "op" {
  package   = "$package"
  namespace = "default"
}
$instances
EOT
cd "$out/tf"
export TF_CLI_CONFIG_FILE="$out/cli.tfrc"
"$terraform" apply -auto-approve -no-color >"$out/apply.log" 2>&1 || { tail -20 "$out/apply.log"; exit 1; }
waves() { python3 "$repo/scripts/request-waves.py" "$out/sim.log" | grep -v '/_sim/' ; }
waves >"$out/waves.txt"
applied=$(grep -c '^ *[0-9]* +' "$out/waves.txt")
requests=$(grep -o ' ; \|| ' "$out/waves.txt" | wc -l)
echo "$scenario: terraform apply: $requests requests, $applied waves (50 ms each)"
"$terraform" plan -no-color >"$out/plan.log" 2>&1
planned=$(waves | grep -c '^ *[0-9]* +')
echo "$scenario: and a no-change terraform plan after it: $((planned - applied)) waves"
