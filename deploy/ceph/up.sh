#!/usr/bin/env bash
# Start a real, tiny Ceph cluster on loopback for tests: 1 mon, 1 mgr,
# 3 BlueStore OSDs on sparse files, one MDS per file system, TWO CephFS
# file systems each with an erasure-coded (2+1) data pool under <mnt>/ec,
# both mounted with ceph-fuse. Everything lives under $TC_DIR; every daemon
# runs in the foreground of its own session with its PID recorded, so
# deploy/ceph/down.sh stops exactly what this started.
#
#   TC_DIR (/tmp/tessera-ceph)  TC_PORT (13300)  TC_OSD_SIZE (4G)
#   TC_RGW=1: also a RADOS gateway (S3) on 127.0.0.1:$((TC_PORT + 300)) with one
#   user, its keys in $TC_DIR/rgw/{access,secret}.key
# Prints nothing but progress on stderr; on success writes $TC_DIR/env
# (CEPH_CONF, TC_MNT1, TC_MNT2; with TC_RGW=1 TC_S3_URL, TC_S3_ACCESS_KEY_FILE,
# TC_S3_SECRET_KEY_FILE) and exits 0.
set -euo pipefail
DIR=${TC_DIR:-/tmp/tessera-ceph}
PORT=${TC_PORT:-13300}
OSD_SIZE=${TC_OSD_SIZE:-4G}
RGW=${TC_RGW:-0}
RGW_PORT=$((PORT + 300)) # outside the daemons' ms_bind_port range
NOSD=3
say() { echo "ceph-up: $*" >&2; }
die() { say "$*"; exit 1; }

[ "$(id -u)" -eq 0 ] || die "needs root (OSDs on files, FUSE mounts)"
if ! command -v ceph-mon >/dev/null || ! command -v ceph-fuse >/dev/null || ! command -v fusermount >/dev/null || ! command -v getfattr >/dev/null; then
  say "installing Ceph packages"
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 update -qq
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq \
    ceph ceph-mon ceph-osd ceph-mgr ceph-mds ceph-fuse fuse uuid-runtime attr >/dev/null
fi
if [ "$RGW" = 1 ] && ! command -v radosgw >/dev/null; then
  say "installing radosgw"
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq radosgw >/dev/null
fi
if [ -e "$DIR" ] && [ -n "$(ls -A "$DIR" 2>/dev/null)" ]; then
  die "$DIR is not empty: run deploy/ceph/down.sh first"
fi
if ss -ltn 2>/dev/null | grep -q "127.0.0.1:$PORT "; then die "port $PORT is taken"; fi
mkdir -p "$DIR"/{mon,mgr,osd,mds,run,log,pids,crash,mnt1,mnt2}
CONF=$DIR/ceph.conf
FSID=$(uuidgen)
cat > "$CONF" <<CONF
[global]
fsid = $FSID
mon_host = [v2:127.0.0.1:$PORT,v1:127.0.0.1:$((PORT + 1))]
public_addr = 127.0.0.1
ms_bind_ipv6 = false
ms_bind_port_min = $((PORT + 10))
ms_bind_port_max = $((PORT + 299))
auth_cluster_required = cephx
auth_service_required = cephx
auth_client_required = cephx
auth_allow_insecure_global_id_reclaim = false
run_dir = $DIR/run
log_file = $DIR/log/\$cluster-\$name.log
mon_cluster_log_file = $DIR/log/cluster.log
pid_file = $DIR/run/\$name.pid
crash_dir = $DIR/crash
osd_pool_default_size = 2
osd_pool_default_min_size = 1
osd_crush_chooseleaf_type = 0
osd_pool_default_pg_autoscale_mode = off
mon_allow_pool_size_one = true
mon_warn_on_pool_no_redundancy = false
mon_allow_pool_delete = true
mon_data_avail_warn = 2
mon_osd_min_down_reporters = 1
mon_osd_down_out_interval = 60
mgr_initial_modules = iostat
[client]
keyring = $DIR/admin.keyring
[mon]
mon_data = $DIR/mon/\$cluster-\$id
paxos_propose_interval = 0.1
[mgr]
mgr_data = $DIR/mgr/\$cluster-\$id
[osd]
osd_data = $DIR/osd/\$cluster-\$id
bluestore_block_path = $DIR/osd/\$cluster-\$id/block.img
bluestore_block_create = true
bluestore_block_size = $(numfmt --from=iec "$OSD_SIZE")
osd_memory_target = 939524096
bluestore_cache_autotune = false
bluestore_cache_size = 67108864
osd_op_num_shards = 2
[mds]
mds_data = $DIR/mds/\$cluster-\$id
mds_cache_memory_limit = 134217728
CONF
export CEPH_CONF=$CONF

# Start a daemon in the foreground of its own session; record its PID.
start() { # name cmd...
  local name=$1; shift
  setsid "$@" -f > "$DIR/log/$name.out" 2>&1 < /dev/null &
  echo $! > "$DIR/pids/$name"
}

say "mon"
ceph-authtool --create-keyring "$DIR/mon.keyring" --gen-key -n mon. --cap mon 'allow *' >/dev/null
ceph-authtool --create-keyring "$DIR/admin.keyring" --gen-key -n client.admin \
  --cap mon 'allow *' --cap osd 'allow *' --cap mds 'allow *' --cap mgr 'allow *' >/dev/null
ceph-authtool "$DIR/mon.keyring" --import-keyring "$DIR/admin.keyring" >/dev/null
monmaptool --create --fsid "$FSID" --addv a "[v2:127.0.0.1:$PORT,v1:127.0.0.1:$((PORT + 1))]" "$DIR/monmap" >/dev/null
ceph-mon --mkfs -i a --monmap "$DIR/monmap" --keyring "$DIR/mon.keyring" 2>/dev/null
start mon.a ceph-mon -i a
for _ in $(seq 100); do ceph --connect-timeout 2 -s >/dev/null 2>&1 && break; sleep 0.2; done
ceph --connect-timeout 5 -s >/dev/null || die "mon did not come up (see $DIR/log)"

say "mgr"
mkdir -p "$DIR/mgr/ceph-x"
ceph auth get-or-create mgr.x mon 'allow profile mgr' osd 'allow *' mds 'allow *' > "$DIR/mgr/ceph-x/keyring"
start mgr.x ceph-mgr -i x

say "$NOSD osds"
builders=()
for i in $(seq 0 $((NOSD - 1))); do
  (
    uuid=$(uuidgen)
    key=$(ceph-authtool --gen-print-key)
    id=$(echo "{\"cephx_secret\":\"$key\"}" | ceph osd new "$uuid" -i - 2>/dev/null)
    d=$DIR/osd/ceph-$id
    mkdir -p "$d"
    ceph-authtool --create-keyring "$d/keyring" --name "osd.$id" --add-key "$key" >/dev/null
    ceph-osd -i "$id" --mkfs --osd-uuid "$uuid" >/dev/null 2>&1 || { echo "mkfs osd.$id failed" >&2; exit 1; }
    setsid ceph-osd -i "$id" -f > "$DIR/log/osd.$id.out" 2>&1 < /dev/null &
    echo $! > "$DIR/pids/osd.$id"
  ) &
  builders+=($!)
done
# Wait for the OSD builders only (the daemons are children too).
for b in "${builders[@]}"; do wait "$b" || die "an OSD failed to build (see $DIR/log)"; done

say "mds"
for m in a b; do
  mkdir -p "$DIR/mds/ceph-$m"
  ceph auth get-or-create "mds.$m" mon 'allow profile mds' osd 'allow rwx' mds 'allow *' mgr 'allow profile mds' \
    > "$DIR/mds/ceph-$m/keyring"
  start "mds.$m" ceph-mds -i "$m"
done

say "pools and file systems"
out=$(ceph 2>&1 <<CMDS
osd erasure-code-profile set ec21 k=2 m=1 crush-failure-domain=osd
osd pool create fs1_meta 8 8 replicated
osd pool create fs1_data 8 8 replicated
osd pool create fs1_ec 8 8 erasure ec21
osd pool set fs1_ec allow_ec_overwrites true
osd pool set fs1_ec min_size 2
fs new fs1 fs1_meta fs1_data
fs add_data_pool fs1 fs1_ec
fs set fs1 standby_count_wanted 0
osd pool create fs2_meta 8 8 replicated
osd pool create fs2_data 8 8 replicated
osd pool create fs2_ec 8 8 erasure ec21
osd pool set fs2_ec allow_ec_overwrites true
osd pool set fs2_ec min_size 2
fs new fs2 fs2_meta fs2_data
fs add_data_pool fs2 fs2_ec
osd pool create tessera-ha 8 8 replicated
fs set fs2 standby_count_wanted 0
CMDS
)
if grep -q '^Error' <<<"$out"; then die "pool/fs setup failed: $(grep '^Error' <<<"$out")"; fi

say "waiting for 2 active MDS and clean PGs"
for _ in $(seq 300); do
  act=$(ceph fs dump -f json 2>/dev/null | grep -o '"state": *"up:active"' | wc -l || true)
  [ "$act" -ge 2 ] && break
  sleep 0.2
done
[ "${act:-0}" -ge 2 ] || die "the MDS did not become active"
for _ in $(seq 300); do
  st=$(ceph pg stat 2>/dev/null || true)
  if [[ $st =~ ([0-9]+)\ pgs:\ ([0-9]+)\ active\+clean ]] && [ "${BASH_REMATCH[1]}" = "${BASH_REMATCH[2]}" ]; then break; fi
  sleep 0.2
done

say "mounting"
for n in 1 2; do
  setsid ceph-fuse -n client.admin --client_fs=fs$n "$DIR/mnt$n" -f > "$DIR/log/fuse$n.out" 2>&1 < /dev/null &
  echo $! > "$DIR/pids/client.mnt$n"
done
for n in 1 2; do
  for _ in $(seq 100); do mountpoint -q "$DIR/mnt$n" && break; sleep 0.1; done
  mountpoint -q "$DIR/mnt$n" || die "mnt$n not mounted"
  mkdir -p "$DIR/mnt$n/ec"
  setfattr -n ceph.dir.layout.pool -v "fs${n}_ec" "$DIR/mnt$n/ec"
done

for _ in $(seq 300); do ceph health 2>/dev/null | grep -q HEALTH_OK && break; sleep 0.2; done
ceph health | grep -q HEALTH_OK || { ceph health detail >&2; die "cluster not healthy"; }
cat > "$DIR/env" <<ENV
export CEPH_CONF=$CONF
export TC_DIR=$DIR
export TC_MNT1=$DIR/mnt1/ec
export TC_MNT2=$DIR/mnt2/ec
ENV
if [ "$RGW" = 1 ]; then
  say "radosgw on 127.0.0.1:$RGW_PORT"
  if ss -ltn 2>/dev/null | grep -q "127.0.0.1:$RGW_PORT "; then die "port $RGW_PORT is taken"; fi
  R=$DIR/rgw
  mkdir -p "$R"
  # Pools radosgw makes get 8 PGs, not 32 (the mon creates them with its
  # default): the PG budget per OSD holds.
  ceph config set global osd_pool_default_pg_num 8
  ceph config set global osd_pool_default_pgp_num 8
  cat >> "$CONF" <<RGWCONF
[client.rgw.a]
keyring = $R/keyring
rgw_data = $R
rgw_frontends = beast endpoint=127.0.0.1:$RGW_PORT
rgw_thread_pool_size = 64
RGWCONF
  ceph auth get-or-create client.rgw.a mon 'allow rw' osd 'allow rwx' mgr 'allow rw' > "$R/keyring"
  # Not under pids/: down.sh stops it first, by this PID, before the cluster.
  setsid radosgw -n client.rgw.a -f > "$DIR/log/rgw.a.out" 2>&1 < /dev/null &
  echo $! > "$DIR/rgw.pid"
  for _ in $(seq 300); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$RGW_PORT/")" = 200 ] && break
    sleep 0.1
  done
  [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$RGW_PORT/")" = 200 ] || die "radosgw did not answer"
  access=$(od -An -N10 -tx1 /dev/urandom | tr -d ' \n' | tr a-f A-F)
  secret=$(od -An -N20 -tx1 /dev/urandom | tr -d ' \n')
  radosgw-admin user create --uid=tessera --display-name=tessera \
    --access-key="$access" --secret-key="$secret" >/dev/null
  umask 077
  echo "$access" > "$R/access.key"
  echo "$secret" > "$R/secret.key"
  cat >> "$DIR/env" <<ENV
export TC_S3_URL=http://127.0.0.1:$RGW_PORT
export TC_S3_ACCESS_KEY_FILE=$R/access.key
export TC_S3_SECRET_KEY_FILE=$R/secret.key
ENV
fi
say "up: $(ceph -s --format json 2>/dev/null | grep -o '"status":"[A-Z_]*"' | head -1); source $DIR/env"
