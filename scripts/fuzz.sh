#!/usr/bin/env bash
# Builds the libFuzzer targets in fuzz/ with a stable toolchain and runs each for a
# while, starting from its committed corpus (fuzz/corpus/<target>/).
#
#   scripts/fuzz.sh                 # every target, 60 s each (what CI runs)
#   scripts/fuzz.sh 3600 yaml       # one target for an hour
#   FUZZ_BUILD_ONLY=1 scripts/fuzz.sh
#
# No nightly is needed: cargo-fuzz's instrumentation is `-C passes=sancov-module` plus
# LLVM options, all stable flags; only sanitizers (`-Z sanitizer`) would need nightly,
# and these targets are pure Rust, where the panic and the limits below are the
# findings. libfuzzer-sys compiles libFuzzer itself, so a C++ compiler must be present.
#
# Runs never write into fuzz/corpus: new inputs go to a scratch copy under the target
# directory. A crash, hang (-timeout) or memory blow-up (-rss_limit_mb) fails the run
# and leaves the input in $FUZZ_OUT/artifacts/<target>/; reproduce it with
# `<binary> <file>`. To grow the committed corpus, merge by hand:
#   <binary> -merge=1 fuzz/corpus/<target> <scratch dir>
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root"

seconds="${1:-60}"
shift || true
all_targets=(template yaml package_files package_tgz package_dir codec)
if [ "$#" -gt 0 ]; then
  targets=("$@")
else
  targets=("${all_targets[@]}")
fi

if ! command -v c++ >/dev/null 2>&1 && ! command -v g++ >/dev/null 2>&1 && ! command -v clang++ >/dev/null 2>&1; then
  echo "fuzz: no C++ compiler (c++, g++ or clang++); libFuzzer needs one (apt-get install g++)" >&2
  exit 1
fi

host="$(rustc -vV | sed -n 's/^host: //p')"
target_dir="${CARGO_TARGET_DIR:-$repo_root/target}"
out="${FUZZ_OUT:-$target_dir/fuzz-runs}"

# The flags cargo-fuzz passes with `--sanitizer none`. `--target` keeps them off build
# scripts and proc macros, which run on the host and must not be instrumented.
export RUSTFLAGS="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing"
export CARGO_TARGET_DIR="$target_dir"
cargo build --manifest-path fuzz/Cargo.toml --release --target "$host" --bins
bin_dir="$target_dir/$host/release"

if [ -n "${FUZZ_BUILD_ONLY:-}" ]; then
  echo "fuzz: built into $bin_dir"
  exit 0
fi

failed=()
for t in "${targets[@]}"; do
  scratch="$out/corpus/$t"
  artifacts="$out/artifacts/$t"
  mkdir -p "$scratch" "$artifacts"
  if [ -d "fuzz/corpus/$t" ]; then
    cp -R "fuzz/corpus/$t/." "$scratch/"
  fi
  echo "==> fuzz $t for ${seconds}s"
  # -timeout: one input running 10 s is a hang; -rss_limit_mb: a blow-up;
  # -malloc_limit_mb: a single huge allocation, caught before it is made.
  if ! "$bin_dir/$t" "$scratch" \
      -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=1024 \
      -artifact_prefix="$artifacts/" -print_final_stats=1 ${FUZZ_ARGS:-} \
      2>"$out/$t.log"; then
    tail -n 40 "$out/$t.log" >&2
    failed+=("$t")
  else
    grep -E '^stat::number_of_executed_units|^#[0-9]+.*DONE' "$out/$t.log" | tail -n 2 || true
  fi
done

if [ "${#failed[@]}" -gt 0 ]; then
  echo "fuzz: failed: ${failed[*]} (inputs in $out/artifacts/)" >&2
  exit 1
fi
echo "fuzz: all targets ran ${seconds}s without a finding"
