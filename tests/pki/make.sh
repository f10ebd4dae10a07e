#!/usr/bin/env bash
# A grid PKI for the X.509 tests, made with openssl and voms-proxy-fake
# (Debian voms-clients) as a site's would be: `tests/pki/make.sh DIR`.
# DIR/certificates  hashed CA directory (<hash>.0, <hash>.r0 CRL,
#                   .signing_policy/.namespaces files that must not break it)
# DIR/vomsdir/cms/voms.example.org.lsc
# DIR/grid-mapfile, DIR/vorolemap
# DIR/host.{pem,key}     the server's certificate (CN=localhost)
# DIR/<name>.pem         proxies and certificates (key inside, as
#                        X509_USER_PROXY files are):
#   alice-voms   RFC 3820 proxy of alice with VOMS /cms/Role=production + /cms/higgs
#   alice-plain  RFC 3820 proxy of alice, no VOMS
#   alice-legacy legacy Globus proxy of alice
#   alice-limited limited proxy of alice (with VOMS)
#   alice-expired a proxy that ended an hour ago
#   alice-forged  VOMS AC signed by a VOMS server the vomsdir does not list
#   alice-acexpired VOMS AC that ended (proxy still valid)
#   alice-cert   alice's own certificate and key (no proxy)
#   bob-voms     proxy of bob, whose certificate the CRL revokes
#   carol-plain  proxy of carol, unmapped (not in the grid-mapfile)
#   mallory-plain proxy of a certificate from a CA nobody trusts
#   dave-expired  proxy of a certificate that expired
# Idempotent: an existing DIR/done is kept.
set -euo pipefail
final=${1:?usage: make.sh DIR}
[ -f "$final/done" ] && exit 0
final=$(realpath -m "$final")
d=$final.tmp.$$
rm -rf "$d"; mkdir -p "$d/ca" "$d/certificates" "$d/vomsdir/cms" "$d/bad"
cd "$d"
cat > ca/ca.cnf <<CNF
[ca]
default_ca = tca
[tca]
dir = $d/ca
database = \$dir/index.txt
serial = \$dir/serial
crlnumber = \$dir/crlnumber
new_certs_dir = \$dir
default_md = sha256
policy = any
default_crl_days = 30
copy_extensions = none
[any]
domainComponent = optional
organizationalUnitName = optional
commonName = supplied
[req]
distinguished_name = dn
[dn]
[v3ca]
basicConstraints = critical,CA:true
keyUsage = critical,keyCertSign,cRLSign
subjectKeyIdentifier = hash
[user]
basicConstraints = critical,CA:false
keyUsage = critical,digitalSignature,keyEncipherment
extendedKeyUsage = clientAuth,serverAuth
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
[host]
basicConstraints = critical,CA:false
keyUsage = critical,digitalSignature,keyEncipherment
extendedKeyUsage = serverAuth,clientAuth
subjectAltName = DNS:localhost,IP:127.0.0.1
CNF
touch ca/index.txt; echo 1000 > ca/serial; echo 1000 > ca/crlnumber
q() { "$@" >/dev/null 2>&1 || { echo "make.sh: failed: $*" >&2; "$@"; exit 1; }; }
q openssl req -x509 -new -nodes -newkey rsa:2048 -keyout ca/ca.key -out ca/ca.pem -days 60 \
  -subj "/DC=org/DC=tessera/CN=Tessera Test CA" -config ca/ca.cnf -extensions v3ca
h=$(openssl x509 -in ca/ca.pem -noout -hash)
cp ca/ca.pem "certificates/$h.0"
echo "access_id_CA X509 '/DC=org/DC=tessera/CN=Tessera Test CA'" > "certificates/$h.signing_policy"
echo "TO Issuer \"/DC=org/DC=tessera/CN=Tessera Test CA\"" > "certificates/$h.namespaces"
# cert NAME SUBJECT EXT [openssl ca options]
cert() {
  local n=$1 subj=$2 ext=$3; shift 3
  q openssl req -new -nodes -newkey rsa:2048 -keyout "$n.key" -out "$n.csr" -subj "$subj" -config ca/ca.cnf
  q openssl ca -batch -config ca/ca.cnf -keyfile ca/ca.key -cert ca/ca.pem -in "$n.csr" -out "$n.crt" \
    -extensions "$ext" -notext "$@"
  chmod 600 "$n.key"; rm -f "$n.csr"
}
cert host "/DC=org/DC=tessera/OU=Hosts/CN=localhost" host -days 30
cp host.crt host.pem
cert alice "/DC=org/DC=tessera/OU=Users/CN=Alice Smith" user -days 30
cert bob "/DC=org/DC=tessera/OU=Users/CN=Bob Jones" user -days 30
cert carol "/DC=org/DC=tessera/OU=Users/CN=Carol White" user -days 30
cert dave "/DC=org/DC=tessera/OU=Users/CN=Dave Old" user -startdate 20200101000000Z -enddate 20200201000000Z
cert voms "/DC=org/DC=tessera/OU=Services/CN=voms.example.org" user -days 30
q openssl ca -batch -config ca/ca.cnf -keyfile ca/ca.key -cert ca/ca.pem -revoke bob.crt
q openssl ca -batch -config ca/ca.cnf -keyfile ca/ca.key -cert ca/ca.pem -gencrl -out "certificates/$h.r0"
# A CA nobody trusts, with a VOMS server and a user of its own.
q openssl req -x509 -new -nodes -newkey rsa:2048 -keyout bad/ca.key -out bad/ca.pem -days 60 \
  -subj "/DC=org/DC=tessera/CN=Tessera Test CA" -config ca/ca.cnf -extensions v3ca
bcert() {
  q openssl req -new -nodes -newkey rsa:2048 -keyout "$1.key" -out "$1.csr" -subj "$2" -config ca/ca.cnf
  q openssl x509 -req -in "$1.csr" -CA bad/ca.pem -CAkey bad/ca.key -CAcreateserial -out "$1.crt" \
    -days 30 -extfile ca/ca.cnf -extensions user
  chmod 600 "$1.key"; rm -f "$1.csr"
}
bcert mallory "/DC=org/DC=tessera/OU=Users/CN=Mallory"
bcert fakevoms "/DC=org/DC=tessera/OU=Services/CN=voms.example.org"
printf '%s\n%s\n' "/DC=org/DC=tessera/OU=Services/CN=voms.example.org" "/DC=org/DC=tessera/CN=Tessera Test CA" \
  > vomsdir/cms/voms.example.org.lsc
cat > grid-mapfile <<MAP
"/DC=org/DC=tessera/OU=Users/CN=Alice Smith" daemon
"/DC=org/DC=tessera/OU=Users/CN=Bob Jones" daemon
"/DC=org/DC=tessera/OU=Users/CN=Mallory" daemon
"/DC=org/DC=tessera/OU=Users/CN=Dave Old" daemon
MAP
cat > vorolemap <<MAP
"*" "/cms/Role=production" bin
MAP
# proxy NAME USER [voms-proxy-fake options]
proxy() {
  local n=$1 u=$2; shift 2
  q voms-proxy-fake -certdir certificates -cert "$u.crt" -key "$u.key" -out "$n.pem" -bits 2048 "$@"
  chmod 600 "$n.pem"
}
VOMS=(-voms cms -uri voms.example.org:15002 -fqan /cms/Role=production/Capability=NULL
  -fqan /cms/higgs/Role=NULL/Capability=NULL)
proxy alice-voms alice -rfc -hours 4 -hostcert voms.crt -hostkey voms.key "${VOMS[@]}"
proxy alice-plain alice -rfc -hours 4
proxy alice-legacy alice -proxyver 2 -hours 4
proxy alice-limited alice -rfc -limited -hours 4 -hostcert voms.crt -hostkey voms.key "${VOMS[@]}"
proxy alice-expired alice -rfc -hours 1 -pastproxy 3:00
proxy alice-forged alice -rfc -hours 4 -hostcert fakevoms.crt -hostkey fakevoms.key "${VOMS[@]}"
proxy alice-acexpired alice -rfc -hours 4 -hostcert voms.crt -hostkey voms.key "${VOMS[@]}" -vomslife 1 -pastac 2:00
proxy bob-voms bob -rfc -hours 4 -hostcert voms.crt -hostkey voms.key "${VOMS[@]}"
proxy carol-plain carol -rfc -hours 4
proxy mallory-plain mallory -rfc -hours 4 -certdir bad
cat alice.crt alice.key > alice-cert.pem; chmod 600 alice-cert.pem
# dave's certificate expired: voms-proxy-fake refuses to sign with it, so
# his "proxy" is the certificate itself.
cat dave.crt dave.key > dave-expired.pem; chmod 600 dave-expired.pem
touch done
# Paths inside are to the final directory.
sed -i "s|$d|$final|g" ca/ca.cnf
rm -rf "$final"; mv "$d" "$final"
