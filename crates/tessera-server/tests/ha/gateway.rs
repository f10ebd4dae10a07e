//! Two data gateways of a highly available metadata service (issue 27):
//! each names both metadata nodes (`cluster.mgm`, `cluster.mgm_xrootd`,
//! comma-separated), registers with the active one, and after a `kill -9`
//! of that node registers with the new active one: uploads through the
//! metadata service's address are sent to a gateway (their own counters
//! say they wrote them) before and after the takeover.

use super::{check, pair_with, spare_ports, xrdcp};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A gateway process, stopped (by its PID) on drop.
struct Gateway {
    child: Child,
    metrics: String,
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn gateway(root: &Path, name: &str, secret: &Path, mgm: &str, mgm_xrootd: &str) -> Gateway {
    let [admin, metrics, xrootd] = spare_ports::<3>();
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    let cfg = root.join(format!("{name}.toml"));
    std::fs::write(
        &cfg,
        format!(
            "role = \"gateway\"\ndata_dir = \"{}\"\n\
             [listen]\nadmin = \"127.0.0.1:{admin}\"\nmetrics = \"127.0.0.1:{metrics}\"\n\
             xrootd = \"127.0.0.1:{xrootd}\"\n\
             [cluster]\nsecret_file = \"{}\"\nmgm = \"{mgm}\"\nmgm_xrootd = \"{mgm_xrootd}\"\n",
            dir.display(),
            secret.display()
        ),
    )
    .unwrap();
    let log = std::fs::File::create(root.join(format!("{name}.log"))).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_tesserad"))
        .args(["serve", "--config"])
        .arg(&cfg)
        .stdout(Stdio::piped())
        .stderr(log)
        .spawn()
        .unwrap();
    use std::io::BufRead;
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let ready = lines.next().expect("ready line").expect("utf8");
    assert!(ready.starts_with("tesserad ready"), "{ready}");
    std::thread::spawn(move || for _ in lines {});
    Gateway {
        child,
        metrics: format!("127.0.0.1:{metrics}"),
    }
}

/// File bytes the gateways wrote (their own counters).
fn written(gs: &[Gateway]) -> f64 {
    gs.iter()
        .map(|g| {
            let o = Command::new("curl")
                .args(["-s", "-m", "2"])
                .arg(format!("http://{}/metrics", g.metrics))
                .output()
                .unwrap();
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .filter(|l| l.starts_with("tessera_written_bytes_total"))
                .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
                .sum::<f64>()
        })
        .sum()
}

/// Upload through `via` until a gateway has written one more file (they
/// register within seconds): the names acknowledged.
fn through_gateway(g: &[Gateway], src: &Path, via: &str, tag: &str) -> Vec<String> {
    let (before, t) = (written(g), Instant::now());
    let mut acked = Vec::new();
    for n in 0.. {
        let name = format!("/data/{tag}-{n}");
        if xrdcp(src, &format!("root://{via}/{name}")) {
            acked.push(name);
        }
        if written(g) > before {
            return acked;
        }
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "no upload went through the gateway ({tag})"
        );
        std::thread::sleep(Duration::from_millis(300));
    }
    unreachable!()
}

#[test]
#[ignore = "needs the loopback Ceph cluster of deploy/ceph/up.sh"]
fn two_gateways_follow_the_active_node() {
    let root = tempfile::tempdir_in("/var/tmp").unwrap();
    let secret = root.path().join("cluster.secret");
    std::fs::write(&secret, "a-cluster-secret-of-this-test-0123456789\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
    let extra = format!("[cluster]\nsecret_file = \"{}\"\n", secret.display());
    let (mut a, b) = pair_with(root.path(), "gw", &extra);
    let (mgm, mgm_xrootd) = (
        format!("{},{}", a.admin, b.admin),
        format!("{},{}", a.xrootd, b.xrootd),
    );
    let g = [
        gateway(root.path(), "gw1", &secret, &mgm, &mgm_xrootd),
        gateway(root.path(), "gw2", &secret, &mgm, &mgm_xrootd),
    ];
    let src = root.path().join("src");
    std::fs::write(&src, vec![5u8; 30_000]).unwrap();
    let mut acked = through_gateway(&g, &src, &b.xrootd, "before");
    a.kill9();
    b.until_active(Duration::from_secs(10));
    acked.extend(through_gateway(&g, &src, &b.xrootd, "after"));
    check(&format!("root://{}", b.xrootd), &acked, 30_000);
}
