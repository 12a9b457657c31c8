#!/usr/bin/env bash
# Installs Mermaid (the library GitHub and GitLab draw ```mermaid blocks with) and jsdom
# from the npm registry, pinned by tests/mermaid/package-lock.json, for the test that
# parses `resolve --format mermaid` output (tests/acceptance/cli.rs). No browser is
# downloaded: Mermaid's parser runs under Node with jsdom as its DOM.
#
#   scripts/install-mermaid.sh      # installs if needed, prints the folder to use
#
# Result: .tools/mermaid/ (package.json, lock, check.mjs, node_modules/), about 170 MB.
# Idempotent: a second run with the same lock file only checks and exits.
# Environment:
#   KUDO_TOOLS_DIR   where to install (default: <repo>/.tools)
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tools_dir="${KUDO_TOOLS_DIR:-$repo_root/.tools}"
src="$repo_root/tests/mermaid"
dest="$tools_dir/mermaid"

for tool in node npm; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "install-mermaid: '$tool' not found; Node.js 20+ with npm is needed" >&2
    exit 1
  fi
done

mkdir -p "$dest"
# The checker itself is always refreshed; the packages only when the lock changed.
cp "$src/check.mjs" "$dest/check.mjs"
if ! cmp -s "$src/package-lock.json" "$dest/package-lock.json" || [[ ! -d "$dest/node_modules/mermaid" ]]; then
  echo "install-mermaid: installing mermaid and jsdom into $dest" >&2
  cp "$src/package.json" "$src/package-lock.json" "$dest/"
  (cd "$dest" && npm ci --omit=dev --no-audit --no-fund --loglevel=error >&2)
fi
echo "$dest"
