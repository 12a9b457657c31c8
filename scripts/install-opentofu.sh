#!/usr/bin/env bash
# Installs the OpenTofu CLI into the project-local tools folder from the Go module proxy:
# OpenTofu is published as a Go module, so `go mod download` brings its source and
# `go build ./cmd/tofu` builds `tofu` with its dependencies from the same proxy.
#
#   scripts/install-opentofu.sh          # installs if needed, prints the binary's path
#
# Result: .tools/bin/tofu. The build (about 3.5 minutes on 2 cores) is kept in a cache
# outside the checkout, so another clone on the same machine (CI's fresh clone) reuses
# it; a second run only checks the version and exits.
# Environment:
#   KUDO_TOOLS_DIR     where to install (default: <repo>/.tools)
#   KUDO_CACHE_DIR     where builds are cached (default: $XDG_CACHE_HOME or ~/.cache,
#                      then terraform-provider-kudo)
#   OPENTOFU_VERSION   the release to build (default below; its module hash must be
#                      given in OPENTOFU_SUM when it is not the pinned one)
#   GO                 the Go toolchain to use (default: go; OpenTofu 1.12 needs Go 1.26)
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tools_dir="${KUDO_TOOLS_DIR:-$repo_root/.tools}"
cache_root="${KUDO_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/terraform-provider-kudo}"
# Pinned so every machine runs the same OpenTofu; bump deliberately, with its hash.
pinned_version="1.12.6"
# The module's hash as `go mod download -json` reports it (the go.sum "h1:" form). The
# checksum database is not reachable from these machines, so the script checks the
# downloaded source against this pin itself; OpenTofu's own go.sum then pins every
# dependency it builds with.
pinned_sum="h1:0VT4P8pMmGcCUnQ9JDrJ+Qg2d35Vzm4FFd/9+H7oF98="
version="${OPENTOFU_VERSION:-$pinned_version}"
if [[ "$version" == "$pinned_version" ]]; then
  sum="${OPENTOFU_SUM:-$pinned_sum}"
else
  sum="${OPENTOFU_SUM:?install-opentofu: OPENTOFU_VERSION=$version needs OPENTOFU_SUM (its module hash)}"
fi
go="${GO:-go}"
module="github.com/opentofu/opentofu"

cached="$cache_root/opentofu-$version/tofu"
installed="$tools_dir/bin/tofu"

# The banner is "OpenTofu vX.Y.Z" with no "-dev" marker when built as below. Without
# TF_CLI_CONFIG_FILE: a variable naming a missing file makes OpenTofu print a warning
# on stdout before the banner.
runs_as_release() {
  [[ -x "$1" ]] && env -u TF_CLI_CONFIG_FILE "$1" version 2>/dev/null | grep -qx "OpenTofu v$version"
}

if ! runs_as_release "$cached"; then
  if ! command -v "$go" >/dev/null 2>&1; then
    echo "install-opentofu: '$go' not found; OpenTofu $version builds with Go 1.26 or newer" >&2
    exit 1
  fi
  echo "install-opentofu: building OpenTofu $version from the Go module proxy (a few minutes)" >&2
  # GOTOOLCHAIN=local: build with the Go on this machine or fail saying so, rather than
  # fetching another toolchain. GOSUMDB=off: see pinned_sum above.
  export GOTOOLCHAIN=local GOSUMDB=off GOFLAGS=-mod=readonly CGO_ENABLED=0
  info="$("$go" mod download -json "$module@v$version")" || {
    echo "install-opentofu: the Go module proxy did not give $module@v$version:" >&2
    echo "$info" >&2
    exit 1
  }
  got_sum="$(printf '%s\n' "$info" | sed -n 's/^[[:space:]]*"Sum": "\(.*\)",*$/\1/p')"
  src="$(printf '%s\n' "$info" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",*$/\1/p')"
  if [[ "$got_sum" != "$sum" ]]; then
    echo "install-opentofu: $module@v$version has hash '$got_sum', expected '$sum'; refusing to build it" >&2
    exit 1
  fi
  mkdir -p "$(dirname "$cached")"
  tmp="$cached.tmp.$$"
  # version.dev=no: a release banner ("OpenTofu v1.12.6", not "-dev"), as OpenTofu's
  # own release builds set it.
  (cd "$src" && "$go" build -trimpath -ldflags "-s -w -X $module/version.dev=no" -o "$tmp" ./cmd/tofu) >&2
  mv -f "$tmp" "$cached"
  if ! runs_as_release "$cached"; then
    echo "install-opentofu: the built $cached does not report OpenTofu v$version:" >&2
    "$cached" version >&2 || true
    exit 1
  fi
fi

mkdir -p "$(dirname "$installed")"
# A copy, not a link: the tools folder stays usable if the cache is cleared.
if ! cmp -s "$cached" "$installed" 2>/dev/null; then
  cp -f "$cached" "$installed.tmp.$$"
  mv -f "$installed.tmp.$$" "$installed"
fi
echo "$installed"
