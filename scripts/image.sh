#!/usr/bin/env bash
# Builds the container image of the one binary (packaging/Dockerfile) with
# podman, or docker when podman is missing.
#
#   IMAGE    the image's name (default: better-compute:VERSION)
#   VERSION  the version to stamp (default: git describe)
set -euo pipefail
cd "$(dirname "$0")/.."

VERSION=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}
IMAGE=${IMAGE:-better-compute:$VERSION}
GO=${GO:-go}
engine=$(command -v podman || command -v docker || true)
[ -n "$engine" ] || { echo "image.sh: neither podman nor docker is installed" >&2; exit 1; }

ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
CGO_ENABLED=0 "$GO" build -trimpath -ldflags "-s -w -X github.com/better-compute/vps/internal/version.Stamped=$VERSION" \
	-o "$ctx/better-compute" ./cmd/better-compute
cp /etc/ssl/certs/ca-certificates.crt "$ctx/"
cp packaging/Dockerfile "$ctx/"
"$engine" build -q -t "$IMAGE" "$ctx"
echo "image.sh: $IMAGE"
