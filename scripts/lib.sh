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

# uproot (PyPI) for the analysis-read tests: a virtual environment on
# Debian's /usr/bin/python3 made with --system-site-packages, so that it
# sees python3-xrootd; made once and reused (only when uproot is missing).
UPROOT_VERSION=5.7.7
MMDB_WRITER_VERSION=0.2.7
# xrootdlib: the monitoring test's collector decodes the XRootD monitoring
# stream with it (an independent decoder of XrdXrootdMonData.hh).
XROOTDLIB_VERSION=0.3.0
ensure_uproot() {
  apt_install python3-venv python3-xrootd
  local v=/var/tmp/tessera-uproot-venv
  # mmdb-writer: the federation's GeoIP test writes its MaxMind database.
  if ! "$v/bin/python" -c "import uproot, mmdb_writer, xrootdlib.structs.XrdXrootdMon, sys; sys.exit(uproot.__version__ != '$UPROOT_VERSION')" 2>/dev/null; then
    rm -rf "$v"
    /usr/bin/python3 -m venv --system-site-packages "$v"
    "$v/bin/pip" install -q --disable-pip-version-check "uproot==$UPROOT_VERSION" "mmdb-writer==$MMDB_WRITER_VERSION" "xrootdlib==$XROOTDLIB_VERSION"
  fi
  export TESSERA_UPROOT_PYTHON="$v/bin/python"
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

# Benchmarks: make $1 an empty directory on a file system of its own when
# /var/tmp is on ext4: a sparse ext4 image of $2 MiB under /var/tmp, with a
# journal or without one as /var/tmp's has, loop-mounted with direct I/O.
# Runs then start alike whatever ran before: on ext4 without a journal,
# every create skips the inodes of its group freed in the last minutes (a
# previous run's files, a test suite's temporary files); after a mass
# delete that scan cost both servers 3-5x their CPU for 1,000 small
# uploads. Call it in a private mount namespace (unshare -m): the mount,
# and the image's space, go with the run. Elsewhere, or without loop
# devices, $1 stays a plain directory under /var/tmp (said).
bench_fs() {
  local dir=$1 mib=$2 img="$1.img" dev loop journal=() mounted=""
  rm -rf "$dir"
  mkdir -p "$dir"
  dev=$(df --output=source /var/tmp | tail -1)
  dev=${dev##*/}
  if ! compgen -G "/proc/fs/jbd2/$dev-*" >/dev/null; then journal=(-O ^has_journal); fi
  # Direct I/O on the loop device: its writes go to the disk, not through
  # a second page cache (an fsync then costs what it costs on /var/tmp).
  if [ -d "/proc/fs/ext4/$dev" ] && truncate -s "${mib}M" "$img" 2>/dev/null &&
    mkfs.ext4 -q -F "${journal[@]}" -E assume_storage_prezeroed=1 "$img" 2>/dev/null &&
    loop=$(losetup --direct-io=on --sector-size 4096 -f --show "$img" 2>/dev/null) &&
    { mount "$loop" "$dir" 2>/dev/null || { losetup -d "$loop"; false; }; }; then
    mounted=1
    losetup -d "$loop" # detached when the mount goes
  fi
  rm -f "$img" # a mounted image stays, held by its loop device
  if [ -n "$mounted" ]; then
    echo "# data on a new ext4 file system ($([ ${#journal[@]} -eq 0 ] && echo with || echo without) a journal, as /var/tmp's), $mib MiB"
  else
    echo "# data on /var/tmp's own file system"
  fi
}

# Benchmarks: the machine alone, for the bulk rows to read against. Sets
# limit_send (seconds to send the page-cached file $1 over a loopback
# socket: iperf3 -F, the kernel's copies and nothing else) and
# limit_write (seconds to write $1's bytes into directory $2 and fsync
# them: dd conv=fsync, the durable write every acknowledged upload is).
# Best of ${repeat:-3}, in the network namespace the benchmark made.
machine_limits() { # file dir
  local f=$1 dir=$2 port=5299 out s w
  limit_send="" limit_write=""
  cat "$f" >/dev/null
  for _ in $(seq "${repeat:-3}"); do
    iperf3 -s -1 -B 127.0.0.1 -p "$port" >/dev/null 2>&1 &
    local sp=$!
    for _ in $(seq 50); do
      out=$(iperf3 -c 127.0.0.1 -p "$port" -F "$f" -n "$(stat -c %s "$f")" -J 2>/dev/null) && break
      sleep 0.1
    done
    wait "$sp" 2>/dev/null || true
    s=$(python3 -c 'import json, sys; print(json.load(sys.stdin)["end"]["sum_received"]["seconds"])' <<<"$out")
    sync
    local t0 t1
    t0=$(date +%s.%N)
    dd if="$f" of="$dir/limit.bin" bs=4M conv=fsync status=none
    t1=$(date +%s.%N)
    rm -f "$dir/limit.bin"
    w=$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')
    limit_send=$(awk -v d="$s" -v b="$limit_send" 'BEGIN { print (b == "" || d < b) ? d : b }')
    limit_write=$(awk -v d="$w" -v b="$limit_write" 'BEGIN { print (b == "" || d < b) ? d : b }')
  done
}
