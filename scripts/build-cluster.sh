#!/usr/bin/env bash
# Builds the test cluster's programs from the Go module proxy: kube-apiserver, kube-scheduler and
# kube-controller-manager (k8s.io/kubernetes, cluster/kube), etcd (cluster/etcd) and kwok
# (simulated nodes and pods). Cached by version under ~/.cache/reins/cluster/<key>/bin, where the
# key hashes the module files, kwok's version and the Go version; prints that bin directory.
# Cold: about 12 minutes on 2 cores with the modules downloaded (the three Kubernetes servers are most of it).
set -euo pipefail
cd "$(dirname "$0")/.."

KWOK_VERSION=v0.8.0
CACHE="${REINS_CACHE:-$HOME/.cache/reins}"
GO_VERSION=1.26.8
# Go from the module proxy (its toolchain module) when this machine has no Go 1.26 or later.
if ! command -v go >/dev/null || ! go version | grep -Eq 'go1\.(2[6-9]|[3-9][0-9])'; then
  toolchain="$CACHE/go-toolchain/go$GO_VERSION"
  if [ ! -x "$toolchain/bin/go" ]; then
    echo "build-cluster: fetching Go $GO_VERSION from the Go module proxy (70 MB)" >&2
    mkdir -p "$CACHE/go-toolchain" && rm -rf "$toolchain.partial" && mkdir "$toolchain.partial"
    curl -fsSL "https://proxy.golang.org/golang.org/toolchain/@v/v0.0.1-go$GO_VERSION.linux-amd64.zip" -o "$toolchain.partial/go.zip"
    python3 -m zipfile -e "$toolchain.partial/go.zip" "$toolchain.partial"
    mv "$toolchain.partial/golang.org/toolchain@v0.0.1-go$GO_VERSION.linux-amd64" "$toolchain" && rm -rf "$toolchain.partial"
    chmod -R u+x "$toolchain/bin" "$toolchain/pkg/tool"
  fi
  export PATH="$toolchain/bin:$PATH" GOROOT="$toolchain"
fi
export GOTOOLCHAIN=local
key=$( (cat scripts/build-cluster.sh cluster/kube/tools.go cluster/kube/go.mod cluster/kube/go.sum cluster/etcd/go.mod cluster/etcd/go.sum cluster/etcd/main.go;
        echo "$KWOK_VERSION"; go version) | sha256sum | cut -c1-16)
bin="$CACHE/cluster/$key/bin"
if [ -x "$bin/kube-apiserver" ] && [ -x "$bin/kube-controller-manager" ] && [ -x "$bin/kube-scheduler" ] && [ -x "$bin/etcd" ] && [ -x "$bin/kwok" ]; then
  echo "$bin"; exit 0
fi
mkdir -p "$bin.partial"
export GOMODCACHE="$CACHE/go/mod" GOCACHE="$CACHE/go/build" GOFLAGS=-mod=readonly CGO_ENABLED=0
start=$(date +%s)
echo "build-cluster: building etcd, kwok $KWOK_VERSION, kube-apiserver, kube-controller-manager and kube-scheduler into $bin (cold: about 12 minutes)" >&2
(cd cluster/etcd && go build -trimpath -ldflags=-s -o "$bin.partial/etcd" .)
# kwok, from its module source with one fix: a command's stdin pipe is closed when the client's
# stdin ends (kwok copies into the pipe and never closes it, so `kubectl exec -i … cat` never ends).
(cd cluster/etcd && go mod download "sigs.k8s.io/kwok@$KWOK_VERSION")
src="$CACHE/cluster/$key/kwok-src"
rm -rf "$src" && cp -r "$GOMODCACHE/sigs.k8s.io/kwok@$KWOK_VERSION" "$src" && chmod -R u+w "$src"
sed -i 's|_, _ = io.Copy(inPipe, opt.In)|_, _ = io.Copy(inPipe, opt.In); _ = inPipe.Close()|' "$src/pkg/utils/exec/exec.go"
grep -q 'inPipe.Close()' "$src/pkg/utils/exec/exec.go" || { echo "build-cluster: kwok's stdin fix did not apply" >&2; exit 1; }
(cd "$src" && GOFLAGS=-mod=mod go build -trimpath -ldflags=-s -o "$bin.partial/kwok" ./cmd/kwok)
rm -rf "$src"
# The version the servers report (go build alone leaves it v0.0.0-master).
K8S_VERSION=$(sed -n 's#^require k8s.io/kubernetes \(v[0-9.]*\)$#\1#p' cluster/kube/go.mod)
minor=$(echo "$K8S_VERSION" | cut -d. -f2)
VERSION_FLAGS="-X k8s.io/component-base/version.gitVersion=$K8S_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean"
(cd cluster/kube && go build -trimpath -ldflags="-s $VERSION_FLAGS" -o "$bin.partial/" \
  k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kube-scheduler)
rm -rf "$bin" && mv "$bin.partial" "$bin"
# Builds of other versions are dropped (a few hundred MB each).
find "$CACHE/cluster" -mindepth 1 -maxdepth 1 -type d ! -name "$key" -exec rm -rf {} +
echo "build-cluster: built in $(( $(date +%s) - start )) s" >&2
echo "$bin"
