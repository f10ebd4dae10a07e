# Shared by scripts/dev and scripts/test: install what the build needs.
# Idempotent: only missing packages are installed.

set -euo pipefail

repo_root() { cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd; }

# Debian packages the build needs (RocksDB, protoc, bindgen's libclang).
BUILD_PACKAGES=(build-essential pkg-config libclang-dev librocksdb-dev libsnappy-dev liblz4-dev
  libzstd-dev libbz2-dev zlib1g-dev protobuf-compiler libisal-dev libcephfs-dev librados-dev)

need_root() {
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null; then echo sudo; else
      echo "tessera: installing packages needs root (or sudo)" >&2; exit 1; fi
  fi
}

apt_install() {
  local missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  local s; s=$(need_root)
  echo "tessera: installing ${missing[*]}" >&2
  $s env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 update -qq
  $s env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq \
    --no-install-recommends "${missing[@]}" >&2
}

ensure_rust() {
  if [ -x "$HOME/.cargo/bin/cargo" ]; then export PATH="$HOME/.cargo/bin:$PATH"; fi
  if ! command -v cargo >/dev/null; then
    apt_install cargo rustc
  fi
  local v; v=$(rustc --version | awk '{print $2}')
  if [ "$(printf '%s\n' 1.88.0 "$v" | sort -V | head -1)" != 1.88.0 ]; then
    echo "tessera: rustc $v is older than 1.88 (the workspace MSRV); install a newer toolchain" >&2
    exit 1
  fi
}

ensure_build_deps() {
  apt_install "${BUILD_PACKAGES[@]}"
  ensure_rust
  local arch; arch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)
  export ROCKSDB_LIB_DIR="${ROCKSDB_LIB_DIR:-/usr/lib/$arch}" ROCKSDB_INCLUDE_DIR="${ROCKSDB_INCLUDE_DIR:-/usr/include}"
}

# Benchmarks: the best wall time, in seconds, of each of the commands
# named (functions or programs taking no arguments) over ${repeat:-3}
# rounds, one space-separated figure per command. The commands run in
# turn within each round (reference first), so that a machine whose speed
# drifts over minutes does not favour whichever ran first. A command that
# fails stops the benchmark.
best_of_each() {
  local -a best=()
  local i t0 t1 d
  for _ in $(seq "${repeat:-3}"); do
    for i in $(seq 0 $(($# - 1))); do
      local cmd=${*:i+1:1}
      sync
      t0=$(date +%s.%N)
      "$cmd" >/dev/null 2>&1 || { echo "failed: $cmd" >&2; return 1; }
      t1=$(date +%s.%N)
      d=$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')
      best[i]=$(awk -v d="$d" -v b="${best[i]:-}" 'BEGIN { print (b == "" || d < b) ? d : b }')
    done
  done
  echo "${best[*]}"
}
