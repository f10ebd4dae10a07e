#!/usr/bin/env bash
# The shipped Prometheus rules pass `promtool check rules` and the Grafana
# dashboard is valid JSON. promtool comes from Debian's prometheus package,
# unpacked under /var/tmp (not installed: no service is started). That
# every metric they use is exported is checked by the xrootd test suite
# (tessera-server/tests/xrootd/dashboards.rs).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
dir=/var/tmp/tessera-promtool
if [ ! -x "$dir/usr/bin/promtool" ]; then
  rm -rf "$dir" && mkdir -p "$dir/deb"
  if ! (cd "$dir/deb" && apt-get download -qq prometheus 2>/dev/null); then
    # No package lists yet (a fresh machine): fetch them, then retry.
    apt-get -o DPkg::Lock::Timeout=600 update -qq
    (cd "$dir/deb" && apt-get download -qq prometheus)
  fi
  dpkg-deb -x "$dir"/deb/prometheus_*.deb "$dir"
fi
"$dir/usr/bin/promtool" check rules deploy/prometheus/alerts.yml
python3 -m json.tool deploy/grafana/tessera.json >/dev/null
echo "dashboards: rules and dashboard ok"
