//! Replica choice by GeoIP (issue 26): sites with coordinates and no
//! subnets for the clients, a MaxMind City database (written for the test
//! by mmdb-writer from PyPI, in the uproot environment) placing one client
//! address near Tsukuba and another near Hamburg; each client is sent to
//! the site nearest to it, and the Metalink lists the nearest first.

use crate::fed::{federated, get, https_ep, metalink, place};
use crate::reference::Reference;
use crate::{data, fed_view, Env};
use tessera_fed::{FedConfig, SiteCfg};

const WRITE_DB: &str = r#"
import sys
from mmdb_writer import MMDBWriter
from netaddr import IPSet
w = MMDBWriter(ip_version=4, database_type="GeoLite2-City")
w.insert_network(IPSet(["127.0.0.5/32"]), {"location": {"latitude": 35.68, "longitude": 139.69}})
w.insert_network(IPSet(["127.0.0.6/32"]), {"location": {"latitude": 52.52, "longitude": 13.40}})
w.to_db_file(sys.argv[1])
"#;

#[test]
fn clients_go_to_the_nearest_site_by_geoip() {
    let issuer = Env::start();
    let (a, b) = (Reference::start(&issuer), Reference::start(&issuer));
    let body = data(50_000, 44);
    place(&a, "/fed/f", &body);
    place(&b, "/fed/f", &body);
    let py = std::env::var("TESSERA_UPROOT_PYTHON")
        .unwrap_or_else(|_| "/var/tmp/tessera-uproot-venv/bin/python".into());
    let script = issuer.file("geodb.py", WRITE_DB);
    let db = issuer.local("city.mmdb");
    let o = issuer
        .cmd(&py)
        .args([script.to_str().unwrap(), db.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let site = |name: &str, la: f64, lo: f64| SiteCfg {
        name: name.into(),
        latitude: Some(la),
        longitude: Some(lo),
        ..Default::default()
    };
    let fed = FedConfig {
        probe_interval: std::time::Duration::from_millis(600_000),
        geoip_db: Some(db.clone()),
        sites: vec![site("desy", 53.57, 9.88), site("kek", 36.15, 140.1)],
        endpoints: vec![https_ep("a", "desy", &a.url), https_ep("b", "kek", &b.url)],
        views: vec![fed_view("/fed", &["a", "b"], true, "")],
        ..Default::default()
    };
    let (e, cas) = federated(&issuer, fed);
    let url = format!("{}/fed/f", e.url);
    for (from, want) in [("127.0.0.5", &b), ("127.0.0.6", &a)] {
        let (code, to, _) = get(&e, &cas, from, &url, &[]);
        assert_eq!((code, to), (302, format!("{}/fed/f", want.url)), "{from}");
        let (code, _, got) = get(&e, &cas, from, &url, &["-L"]);
        assert!(code == 200 && got == body, "{from}: {code}");
    }
    let (_, doc) = metalink(&e, &cas, "127.0.0.6", &url);
    let (pa, pb) = (
        doc.find(&format!("{}/fed/f", a.url)).expect("a listed"),
        doc.find(&format!("{}/fed/f", b.url)).expect("b listed"),
    );
    assert!(pa < pb, "Hamburg's client: DESY first: {doc}");
    // An address the database does not know: still served.
    assert_eq!(get(&e, &cas, "127.0.0.7", &url, &[]).0, 302);
}
