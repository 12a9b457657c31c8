#!/usr/bin/env bash
# Builds the release archives Terraform (and OpenTofu) install from a registry or a
# filesystem mirror:
#   dist/terraform-provider-kudo_<version>_<os>_<arch>.zip   (binary terraform-provider-kudo_v<version>)
#   dist/terraform-provider-kudo_<version>_manifest.json
#   dist/terraform-provider-kudo_<version>_SHA256SUMS
#
# Usage: scripts/release.sh [--binary PATH] [--out DIR]
#   --binary PATH  package an already built binary instead of `cargo build --release`
#   --out DIR      where to write (default: dist/)
set -euo pipefail
cd "$(dirname "$0")/.."

binary=""
out="dist"
while [ $# -gt 0 ]; do
  case "$1" in
    --binary) binary="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    *) echo "unknown option: $1 (see the comment at the top of $0)" >&2; exit 2 ;;
  esac
done

version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)
[ -n "$version" ] || { echo "cannot read the version from Cargo.toml [workspace.package]" >&2; exit 1; }

case "$(uname -s)" in
  Linux) os=linux ;;
  Darwin) os=darwin ;;
  *) echo "unsupported OS $(uname -s)" >&2; exit 1 ;;
esac
case "$(uname -m)" in
  x86_64 | amd64) arch=amd64 ;;
  aarch64 | arm64) arch=arm64 ;;
  *) echo "unsupported architecture $(uname -m)" >&2; exit 1 ;;
esac

if [ -z "$binary" ]; then
  cargo build --release --locked --bin terraform-provider-kudo
  binary=target/release/terraform-provider-kudo
fi
[ -x "$binary" ] || { echo "no executable at $binary" >&2; exit 1; }

mkdir -p "$out"
name="terraform-provider-kudo_${version}"
zip="$out/${name}_${os}_${arch}.zip"
# Python's zipfile instead of zip(1), which fresh machines may lack. Fixed timestamps
# keep the archive (and its checksum) the same for the same binary.
python3 - "$binary" "$zip" "terraform-provider-kudo_v${version}" <<'PY'
import sys, zipfile
src, dst, inner = sys.argv[1], sys.argv[2], sys.argv[3]
info = zipfile.ZipInfo(inner, date_time=(1980, 1, 1, 0, 0, 0))
info.external_attr = 0o755 << 16
info.compress_type = zipfile.ZIP_DEFLATED
with open(src, "rb") as f, zipfile.ZipFile(dst, "w") as z:
    z.writestr(info, f.read())
PY
cp terraform-registry-manifest.json "$out/${name}_manifest.json"
(cd "$out" && sha256sum "${name}_${os}_${arch}.zip" "${name}_manifest.json" > "${name}_SHA256SUMS")
echo "$zip"
