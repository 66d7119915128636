#!/usr/bin/env bash
# Builds the release archives: for each platform, a tar.gz holding the
# static better-compute and bcctl binaries (the version stamped in), the
# systemd units and the README, and SHA256SUMS over the archives.
#
#   VERSION    the version to stamp (default: git describe)
#   PLATFORMS  space-separated GOOS/GOARCH pairs (default: linux/amd64 linux/arm64)
#   DIST       where the archives go (default: dist)
set -euo pipefail
cd "$(dirname "$0")/.."

VERSION=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}
PLATFORMS=${PLATFORMS:-linux/amd64 linux/arm64}
DIST=${DIST:-dist}
GO=${GO:-go}
case "$VERSION" in
*[!A-Za-z0-9._+-]*) echo "release.sh: VERSION $VERSION has characters a file name should not" >&2; exit 1 ;;
esac

rm -rf "$DIST"
mkdir -p "$DIST"
ldflags="-s -w -X github.com/better-compute/vps/internal/version.Stamped=$VERSION"
for platform in $PLATFORMS; do
	os=${platform%/*} arch=${platform#*/}
	name=better-compute_${VERSION}_${os}_${arch}
	dir=$DIST/$name
	mkdir -p "$dir/systemd"
	for cmd in better-compute bcctl; do
		CGO_ENABLED=0 GOOS=$os GOARCH=$arch "$GO" build -trimpath -ldflags "$ldflags" -o "$dir/$cmd" "./cmd/$cmd"
	done
	cp packaging/systemd/*.service "$dir/systemd/"
	cp README.md "$dir/"
	tar -C "$DIST" -czf "$DIST/$name.tar.gz" "$name"
	rm -rf "$dir"
	echo "release.sh: $DIST/$name.tar.gz"
done
(cd "$DIST" && sha256sum ./*.tar.gz | sed 's# \./# #' > SHA256SUMS)
echo "release.sh: $DIST/SHA256SUMS"
