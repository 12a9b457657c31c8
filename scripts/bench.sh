#!/usr/bin/env bash
# End-to-end benchmark (issue #15): builds the release provider and runs
# benches/e2e against real Terraform and kube-sim with instant readiness, printing
# Markdown tables for docs/benchmarks.md. Run by hand; CI never runs it.
#
# Usage: scripts/bench.sh [--runs N] [--startup-runs N] [--only PART]... [--objects N]...
#                        [--latency MS]... [--kubeconfig PATH] [--kubectl-up-to N] [--micro]
#   PART: startup, render, zookeeper, kafka, graph, parallel, baseline (default: all),
#         configmaps<N>: one instance whose package renders N ConfigMaps
#         (configmaps1000, configmaps10000, ...; never in the default set)
#   --objects N      the same as --only configmaps<N>
#   --latency MS     run every Terraform scenario once per value (repeatable: --latency 0
#                    --latency 20 --latency 50) with kube-sim delaying every request by MS,
#                    and print the network wait and round trips on the critical path
#   --kubeconfig P   run the scenarios named (configmaps<N>, or any --only) against that
#                    cluster instead of kube-sim, each run in a fresh namespace; configmaps
#                    runs are compared with kubectl apply/diff --server-side of the same
#                    objects (kubectl on PATH)
#   --kubectl-up-to N  time kubectl only beside configmaps runs of at most N objects
#   configmaps<N> runs also plan and apply a change of every object; with two sizes a
#   table shows how each command grows (create, no-change plan, changing plan, update,
#   destroy) and each command's peak provider RSS; each of their runs is followed by the
#   same N objects server-side applied directly (kube-rs, 16 in flight, no Terraform) on
#   the same kind of target, and a table gives terraform apply / that floor
#   --micro          also run the in-process benches of kudo-resolve and kudo-template
# Needs terraform on PATH (or TF_ACC_TERRAFORM_PATH).
# KUDO_BENCH_REQUESTS=1 prints kube-sim's requests by verb and resource for each plan, apply and
# no-change plan.
# KUDO_BENCH_PROCESSES=1 prints each provider process's CPU time and peak RSS.
# KUDO_BENCH_PROVIDER=<binary> measures another build of the provider (before/after).
# KUDO_BENCH_PERF=<dir> runs every provider process under `perf record` (KUDO_BENCH_PERF_FREQ
# samples per second, default 2000), one file each
# (then read with `perf report -i <dir>/provider-<pid>.data`); timings are then perf's.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

micro=false
args=()
for a in "$@"; do
  case "$a" in
    --micro) micro=true ;;
    -h | --help)
      sed -n '2,33p' "$0"
      exit 0
      ;;
    *) args+=("$a") ;;
  esac
done

cargo bench -p terraform-provider-kudo --bench e2e -- "${args[@]}"
if [[ "$micro" == true ]]; then
  cargo bench -p kudo-resolve
  cargo bench -p kudo-template
fi
