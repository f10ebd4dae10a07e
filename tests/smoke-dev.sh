#!/usr/bin/env bash
# Smoke test of the dev default as a user meets it: start `tesserad --dev`
# (ports 0), drive it with the `tessera` CLI and curl, stop it by PID.
set -euo pipefail
bin=${TESSERA_BIN_DIR:?set TESSERA_BIN_DIR to the folder with tesserad and tessera}
work=$(mktemp -d)
pid=
cleanup() {
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then kill -TERM "$pid"; wait "$pid" || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
"$bin/tesserad" serve --dev --data-dir "$work/data" --admin-addr 127.0.0.1:0 --metrics-addr 127.0.0.1:0 \
  --xrootd-addr 127.0.0.1:0 --https-addr 127.0.0.1:0 > "$work/out" 2> "$work/err" &
pid=$!
for _ in $(seq 100); do grep -q '^tesserad ready' "$work/out" && break; sleep 0.1; done
line=$(grep '^tesserad ready' "$work/out")
admin=$(sed -E 's/.*admin=([^ ]+).*/\1/' <<<"$line")
metrics=$(sed -E 's/.*metrics=([^ ]+).*/\1/' <<<"$line")
xrootd=$(sed -E 's/.*xrootd=([^ ]+).*/\1/' <<<"$line")
https=$(sed -E 's/.*https=([^ ]+).*/\1/' <<<"$line")
grep -q "CA certificate:    $work/data/dev/ca.pem" "$work/out"
openssl x509 -in "$work/data/dev/ca.pem" -noout -subject | grep -q "Tessera development CA"
export TESSERA_ADMIN=$admin TESSERA_TOKEN_FILE=$work/data/dev/admin.token
t="$bin/tessera"
"$t" mkdir -p /data/run1
"$t" touch /data/run1/f.root
"$t" quota set --path /data --uid 1000 --max-bytes 10G --max-inodes 1000 >/dev/null
"$t" quota ls -m /data | grep -q 'uid=1000 .*maxbytes=10000000000 maxfiles=1000'
[ "$("$t" ls /data/run1)" = "f.root" ]
"$t" acl set 'u:1000:rwx,z:!d' /data/run1
"$t" acl ls -m /data/run1 | grep -q 'list=sys.acl entries=u:1000:rwx,z:!d'
if "$t" acl set 'q:1:r' /data/run1 2>/dev/null; then echo "accepted a bad ACL"; exit 1; fi
curl -sf "http://$metrics/healthz" | grep -q ok
curl -sf "http://$metrics/readyz" | grep -q ready
curl -sf "http://$metrics/metrics" > "$work/metrics"
grep -q '^tessera_namespace_inodes 3$' "$work/metrics"
grep -q 'tessera_requests_total{protocol="grpc",op="mkdir",code="ok"} 1' "$work/metrics"
grep -q 'tessera_quota_limit_inodes{node="/data"} ' "$work/metrics" || true
# The access log is written by a thread of its own: allow it a moment.
in_log() { for _ in $(seq 50); do grep "$@" "$work/data/logs/access.log" >/dev/null 2>&1 && return 0; sleep 0.1; done; return 1; }
in_log -q '"op":"mkdir"'
# xrdcp as the banner says: root:// and roots:// with the dev CA directory
export X509_CERT_DIR=$work/data/dev/certificates
head -c 100000 /dev/urandom > "$work/up"
xrdcp --nopbar --cksum adler32 "$work/up" "root://$xrootd//data/run1/up"
xrdcp --nopbar --cksum adler32 "roots://localhost:${xrootd##*:}//data/run1/up" "$work/down"
cmp "$work/up" "$work/down"
xrdfs "root://$xrootd" ls -l /data/run1 | grep -q ' 100000 .*/data/run1/up$'
for op in open_write open_read; do
  # keys come in a fixed order: op, path, ..., sec.prot
  in_log -E "\"op\":\"$op\",\"path\":\"/data/run1/up\",.*\"sec.prot\":\"xroot\""
done
# curl over https with the dev CA and a dev token, as the banner says;
# without a credential https clients may only read: a write asks for one
# (401 with a Bearer and a Basic challenge)
code=$(curl -sS --cacert "$work/data/dev/ca.pem" -o /dev/null -D "$work/hdr" -w '%{http_code}' -T "$work/up" "https://localhost:${https##*:}/data/run1/anon.bin")
[ "$code" = 401 ]
grep -qi '^www-authenticate: bearer' "$work/hdr"
tok=$("$t" token issue --data-dir "$work/data" --sub smoke --group /cms --scope 'storage.read:/ storage.modify:/data')
"$t" token inspect -m "$tok" | grep -q 'sub=smoke'
"$t" token inspect -m "$tok" | grep -q 'wlcg.groups=.*/cms'
curl -sSf --cacert "$work/data/dev/ca.pem" -H "Authorization: Bearer $tok" -T "$work/up" "https://localhost:${https##*:}/data/run1/put.bin" >/dev/null
curl -sSf --cacert "$work/data/dev/ca.pem" "https://localhost:${https##*:}/data/run1/put.bin" -o "$work/down2"
cmp "$work/up" "$work/down2"
# a wrong credential is refused
echo wrong-secret-wrong-secret > "$work/bad"; chmod 600 "$work/bad"
if "$t" --token-file "$work/bad" ls / 2>/dev/null; then echo "accepted a bad credential"; exit 1; fi
# SIGTERM: clean exit
kill -TERM "$pid"; wait "$pid"; pid=
grep -q '^tesserad stopped' "$work/out"

# The same server from a configuration file (not dev mode).
mkdir -p "$work/conf"
head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$work/conf/admin.token"
chmod 600 "$work/conf/admin.token"
cat > "$work/conf/tesserad.toml" <<CONF
role = "all"
data_dir = "$work/conf/data"
[listen]
admin = "127.0.0.1:0"
metrics = "127.0.0.1:0"
[meta]
durability = "sync"
[admin]
token_file = "$work/conf/admin.token"
CONF
"$bin/tesserad" check-config "$work/conf/tesserad.toml" | grep -q ': ok$'
echo 'unknown_key = 1' >> "$work/conf/bad.toml"
if "$bin/tesserad" check-config "$work/conf/bad.toml" 2>/dev/null; then echo "accepted an unknown key"; exit 1; fi
"$bin/tesserad" serve --config "$work/conf/tesserad.toml" > "$work/out2" 2> "$work/err2" &
pid=$!
for _ in $(seq 100); do grep -q '^tesserad ready' "$work/out2" && break; sleep 0.1; done
admin=$(sed -E 's/.*admin=([^ ]+).*/\1/' <<<"$(grep '^tesserad ready' "$work/out2")")
"$t" --admin "$admin" --token-file "$work/conf/admin.token" mkdir -p /from/config
"$t" --admin "$admin" --token-file "$work/conf/admin.token" ns stat -m | grep -q '^inodes=2 '
kill -TERM "$pid"; wait "$pid"; pid=
echo "smoke-dev: ok"
