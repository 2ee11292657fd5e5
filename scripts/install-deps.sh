#!/usr/bin/env bash
# Installs the Debian bookworm packages blosc2fs needs to build, test and run,
# skipping the ones already present (so a second run costs nothing).
set -euo pipefail
source "$(dirname "$0")/apt.sh"
packages=(
  build-essential cmake pkg-config clang libclang-rt-14-dev
  fuse3 liburing-dev libnuma-dev libspdlog-dev nlohmann-json3-dev libmsgpack-cxx-dev libsystemd-dev libgtest-dev
  liblz4-dev libzstd-dev zlib1g-dev libzfp-dev libopenjp2-7-dev libpng-dev libcurl4-openssl-dev libexpat1-dev nginx-light lighttpd apache2 caddy
  python3-numpy python3-msgpack python3-venv vim nano attr systemd groff-base debootstrap
  shared-mime-info libglib2.0-bin dbus tumbler time
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "installing: ${missing[*]}"
  if [[ $(id -u) -ne 0 ]]; then
    echo "blosc2fs: need root to install packages: ${missing[*]}" >&2
    exit 1
  fi
  apt_get update -qq
  apt_get install -y -qq --no-install-recommends "${missing[@]}"
fi
