#!/usr/bin/env bash
# Builds the podman sandbox image localhost/reins-sandbox:1 offline, from what is on this host:
# busybox-static (sh and the usual tools), plus bash and socat and the shared libraries they and
# the host's node need, copied with their ldd closure. node itself is bind-mounted read-only from
# the host at run time (/usr/local/bin/node), so the image stays small (~15 MB) and builds in
# about a second. Needs: podman, busybox-static, bash, socat.
#   scripts/build-image.sh [--force] [IMAGE]
set -euo pipefail

force=0
image="localhost/reins-sandbox:1"
for arg in "$@"; do
  case "$arg" in
    --force) force=1 ;;
    -h|--help) sed -n '2,8p' "$0"; exit 0 ;;
    *) image="$arg" ;;
  esac
done

for tool in podman busybox socat bash; do
  command -v "$tool" >/dev/null || { echo "build-image: $tool is missing (apt-get install -y podman busybox-static socat bash)" >&2; exit 1; }
done
busybox_bin="$(command -v busybox)"
if ! (ldd "$busybox_bin" 2>&1 || true) | grep -q "not a dynamic executable"; then
  echo "build-image: $busybox_bin is not static (apt-get install -y busybox-static)" >&2
  exit 1
fi

# Bumped whenever what goes into the image changes: an image built by an older recipe is rebuilt.
recipe=2
if [[ $force -eq 0 ]] && podman image exists "$image" 2>/dev/null; then
  built="$(podman image inspect --format '{{index .Labels "reins.dev/image-recipe"}}' "$image" 2>/dev/null || true)"
  if [[ "$built" == "$recipe" ]]; then
    echo "build-image: $image already exists (use --force to rebuild)" >&2
    exit 0
  fi
  echo "build-image: $image was built by an older recipe; rebuilding" >&2
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
root="$work/rootfs"
mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,usr/local/bin,etc,tmp,workspace,home/sandbox,proc,sys,dev,run,root}
chmod 1777 "$root/tmp"

cp "$busybox_bin" "$root/bin/busybox"
for applet in $("$busybox_bin" --list); do
  [[ -e "$root/bin/$applet" ]] || ln -s busybox "$root/bin/$applet"
done

copy_with_libs() {
  local bin="$1" dest="$2"
  mkdir -p "$root$(dirname "$dest")"
  cp -L "$bin" "$root$dest"
  ldd "$bin" | grep -oE '/[^ ]+' | while read -r lib; do
    [[ -e "$root$lib" ]] && continue
    mkdir -p "$root$(dirname "$lib")"
    cp -L "$lib" "$root$lib"
  done
}
rm -f "$root/bin/bash"
copy_with_libs "$(command -v bash)" /bin/bash
copy_with_libs "$(command -v socat)" /usr/bin/socat
# Libraries for the host's node, which is bind-mounted at /usr/local/bin/node.
if command -v node >/dev/null; then
  ldd "$(readlink -f "$(command -v node)")" | grep -oE '/[^ ]+' | while read -r lib; do
    [[ -e "$root$lib" ]] && continue
    mkdir -p "$root$(dirname "$lib")"
    cp -L "$lib" "$root$lib"
  done
fi

# glibc's own libraries the harnesses' native executables link against (Claude Code's executable
# needs librt, libpthread, libdl and libm; the node OpenClaw runs on needs libdl and libpthread).
libc_dir="$(dirname "$(ldd "$(command -v bash)" | grep -oE '/[^ ]*/libc\.so\.6' | head -1)")"
for name in libc.so.6 libm.so.6 librt.so.1 libpthread.so.0 libdl.so.2 libutil.so.1 libresolv.so.2 libgcc_s.so.1 libstdc++.so.6; do
  lib="$libc_dir/$name"
  [[ -e "$lib" && ! -e "$root$lib" ]] || continue
  mkdir -p "$root$libc_dir"
  cp -L "$lib" "$root$lib"
done

cat >"$root/etc/passwd" <<'PASSWD'
root:x:0:0:root:/root:/bin/sh
sandbox:x:1000:1000:sandbox:/home/sandbox:/bin/sh
nobody:x:65534:65534:nobody:/nonexistent:/bin/false
PASSWD
cat >"$root/etc/group" <<'GROUP'
root:x:0:
sandbox:x:1000:
nogroup:x:65534:
GROUP
echo "sandbox" >"$root/etc/hostname"
chown 1000:1000 "$root/workspace" "$root/home/sandbox"

tar -C "$root" --numeric-owner -cf "$work/rootfs.tar" .
podman import \
  --change 'ENV PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin' \
  --change 'ENV HOME=/home/sandbox' \
  --change 'WORKDIR /workspace' \
  --change "LABEL reins.dev/image-recipe=$recipe" \
  "$work/rootfs.tar" "$image" >/dev/null
size="$(du -sh "$work/rootfs.tar" | cut -f1)"
echo "build-image: built $image ($size)" >&2
