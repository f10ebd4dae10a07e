//! Replica choice by measured latency and by load (issue 26): two sites,
//! real Debian xrootd servers with XrdHttp, each reached through the delay
//! proxy (`benches/src/bin/delay-proxy`, built by `scripts/test`'s `cargo
//! build --workspace --bins`): a near one (5 ms round trip) and a far one
//! (40 ms), the far one listed first. A client at no site is sent to the
//! near one once the probes have measured both; clients in quick
//! succession load the near one until the far one is cheaper, and then
//! some go there; the load is in the metrics.

use crate::fed::{federated, get, https_ep, metric, metrics, place};
use crate::reference::Reference;
use crate::{data, fed_view, Env};
use std::io::BufRead;
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use tessera_fed::{FedConfig, SiteCfg};

/// The delay proxy in front of `to` (a reference's URL); stopped (by PID)
/// on drop. `url` is the reference's URL through it.
struct Delayed {
    child: Child,
    url: String,
}

impl Drop for Delayed {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn delayed(to: &Reference, one_way_ms: f64) -> Delayed {
    let bin = crate::common::workspace_bin("delay-proxy");
    let port = crate::common::spare_ports::<1>()[0];
    let (_, to_port) = to.url.rsplit_once(':').unwrap();
    let mut child = Command::new(bin)
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .args(["--to", &format!("127.0.0.1:{to_port}")])
        .args(["--delay-ms", &one_way_ms.to_string()])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(line.starts_with("delay-proxy ready"), "{line}");
    Delayed {
        child,
        url: format!("https://localhost:{port}"),
    }
}

#[test]
fn clients_go_to_the_lowest_latency_site_until_it_is_loaded() {
    let issuer = Env::start();
    let (near, far) = (Reference::start(&issuer), Reference::start(&issuer));
    let body = data(30_000, 45);
    place(&near, "/fed/f", &body);
    place(&far, "/fed/f", &body);
    let (near_d, far_d) = (delayed(&near, 2.5), delayed(&far, 20.0));
    let site = |name: &str| SiteCfg {
        name: name.into(),
        ..Default::default()
    };
    let fed = FedConfig {
        probe_interval: std::time::Duration::from_millis(200),
        load_capacity: 4,
        sites: vec![site("far"), site("near")],
        endpoints: vec![
            https_ep("far", "far", &far_d.url),
            https_ep("near", "near", &near_d.url),
        ],
        views: vec![fed_view("/fed", &["far", "near"], true, "")],
        ..Default::default()
    };
    let (e, cas) = federated(&issuer, fed);
    // A few probes of each: the first includes the TLS handshake.
    std::thread::sleep(Duration::from_millis(1500));
    let url = format!("{}/fed/f", e.url);
    let (to_near, to_far) = (
        format!("{}/fed/f", near_d.url),
        format!("{}/fed/f", far_d.url),
    );
    let (code, _, got) = get(&e, &cas, "127.0.0.1", &url, &["-L"]);
    assert!(code == 200 && got == body, "{code}");
    let (code, first, _) = get(&e, &cas, "127.0.0.1", &url, &[]);
    assert_eq!((code, first.as_str()), (302, to_near.as_str()));
    // Near costs (5+1)(1 + n/4) ms, far (40+1): past ~24 clients sent to
    // the near site lately, the far one is the cheaper.
    let (mut n, mut f) = (0, 0);
    for _ in 0..45 {
        let (code, to, _) = get(&e, &cas, "127.0.0.1", &url, &[]);
        assert_eq!(code, 302);
        if to == to_near {
            n += 1;
        } else {
            assert_eq!(to, to_far);
            f += 1;
        }
    }
    assert!(n >= 20 && f >= 3, "near {n}, far {f}");
    let load = metric(
        &metrics(&e),
        "tessera_federation_endpoint_load{endpoint=\"near\"",
    );
    assert!(load > 4.0, "near's load {load}");
}
