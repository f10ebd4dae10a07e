//! Federation over XRootD (issue 26): a tesserad view over two Debian
//! xrootd servers (the sites), each holding the file under the view's own
//! path. xrdcp and xrdfs ask tesserad and are redirected to the client's
//! site's replica (the two sites hold different bytes under the same
//! name, so the bytes say which one answered); uproot reads a ROOT file's
//! branches through the view; xrdfs lists a directory spread over both
//! sites as one; a stopped site leaves the choice within the probe
//! interval; a file on no site is not found.

use crate::update::Reference;
use crate::{fed_endpoint, fed_site, fed_view, Env};
use std::time::{Duration, Instant};
use tessera_fed::FedConfig;

fn place(r: &Reference, rel: &str, body: &[u8]) {
    crate::common::place_under(&r.dir, rel, body);
}

#[test]
fn xrootd_clients_are_redirected_to_their_sites_replica() {
    let (a, b) = (Reference::start(), Reference::start());
    place(&a, "/fed/f", b"the bytes at site a\n");
    place(&b, "/fed/f", b"the bytes at site b\n");
    let (pa, pb) = (a.port, b.port);
    let e = Env::start_with(move |c| {
        c.federation = FedConfig {
            probe_interval: Duration::from_millis(300),
            probe_failures: 1,
            timeout: Duration::from_millis(1000),
            sites: vec![
                fed_site("a", &["127.0.0.1/32"]),
                fed_site("b", &["127.0.0.9/32"]),
            ],
            endpoints: vec![
                fed_endpoint("xa", "a", "root", format!("root://127.0.0.1:{pa}//fed")),
                fed_endpoint("xb", "b", "root", format!("root://127.0.0.1:{pb}//fed")),
            ],
            views: vec![fed_view("/fed", &["xa", "xb"], true, "closest")],
            ..Default::default()
        }
    });
    let url = format!("{}//fed/f", e.url);
    let fetch = || {
        let out = e.local("got");
        e.ok("xrdcp", &["-f", "-s", &url, out.to_str().unwrap()]);
        std::fs::read_to_string(&out).unwrap()
    };
    assert_eq!(fetch(), "the bytes at site a\n");
    // An analysis read through the view: uproot (its XRootD source) reads
    // branches of a ROOT file the sites hold, redirected like xrdcp.
    let py = crate::uproot::python();
    let script = e.local("w.py");
    std::fs::write(&script, crate::uproot::SCRIPT).unwrap();
    let local = e.local("t.root");
    let out = e.ok(&py, &[script.to_str().unwrap(), local.to_str().unwrap()]);
    assert!(out.contains("written"), "{out}");
    let root_file = std::fs::read(&local).unwrap();
    place(&a, "/fed/t.root", &root_file);
    place(&b, "/fed/t.root", &root_file);
    let read = e.local("r.py");
    std::fs::write(&read, crate::uproot::READ).unwrap();
    let via = format!("{}//fed/t.root", e.url);
    let out = e.ok(
        &py,
        &[
            read.to_str().unwrap(),
            local.to_str().unwrap(),
            "xrootd",
            &via,
        ],
    );
    assert!(out.contains(&format!("ok {via}")), "{out}");
    let st = e.ok("xrdfs", &[&e.url, "stat", "/fed/f"]);
    assert!(st.contains("Size:   20"), "{st}");
    let none = e.fails("xrdfs", &[&e.url, "stat", "/fed/none"]);
    assert!(
        none.contains("3011") || none.contains("No such file"),
        "{none}"
    );
    // A directory spread over both sites listed as one (kXR_dirlist, with
    // and without kXR_dstat), sizes and subdirectories from the sites.
    place(&a, "/fed/d/x1", b"1");
    place(&a, "/fed/d/both", b"22");
    place(&b, "/fed/d/x2 y", b"333");
    place(&b, "/fed/d/both", b"22");
    place(&b, "/fed/d/sub/deep", b"4");
    let ls = e.ok("xrdfs", &[&e.url, "ls", "/fed/d"]);
    let names: Vec<&str> = ls.lines().map(str::trim).collect();
    assert_eq!(
        names,
        ["/fed/d/both", "/fed/d/sub", "/fed/d/x1", "/fed/d/x2 y"],
        "{ls}"
    );
    let long = e.ok("xrdfs", &[&e.url, "ls", "-l", "/fed/d"]);
    let line = |n: &str| {
        long.lines()
            .find(|l| l.ends_with(n))
            .unwrap_or_else(|| panic!("{n} in {long}"))
            .to_string()
    };
    assert!(line("/fed/d/sub").starts_with('d'), "{long}");
    assert!(line("/fed/d/x2 y").contains(" 3 "), "{long}");
    let none = e.fails("xrdfs", &[&e.url, "ls", "/fed/nodir"]);
    assert!(none.contains("3011") || none.contains("No such"), "{none}");
    // kXR_locate names every replica, the client's site first.
    let loc = e.ok("xrdfs", &[&e.url, "locate", "/fed/f"]);
    let (ia, ib) = (
        loc.find(&format!(":{pa}"))
            .unwrap_or_else(|| panic!("{loc}")),
        loc.find(&format!(":{pb}"))
            .unwrap_or_else(|| panic!("{loc}")),
    );
    assert!(ia < ib, "{loc}");
    // What views do not serve is refused with the reason (as HTTPS's 405),
    // not answered "no such file".
    for args in [
        vec!["rm", "/fed/f"],
        vec!["mkdir", "/fed/newdir"],
        vec!["query", "checksum", "/fed/f"],
        vec!["mv", "/fed/f", "/fed/g"],
    ] {
        let mut a = vec![e.url.as_str()];
        a.extend(&args);
        let err = e.fails("xrdfs", &a);
        assert!(
            err.contains("not served on the federated view"),
            "{args:?}: {err}"
        );
    }
    // A write into the view goes to the client's site (policy: closest),
    // with a token that may create there; without one it is refused.
    let up = e.local("up");
    std::fs::write(&up, b"written through the view\n").unwrap();
    let t = crate::tokens::token(&e, "storage.read:/ storage.create:/fed", 600);
    let to = format!("{}//fed/new?authz=Bearer%20{t}", e.url);
    e.ok("xrdcp", &["-f", "-s", up.to_str().unwrap(), &to]);
    assert_eq!(
        std::fs::read(a.dir.join("data/fed/new")).unwrap(),
        b"written through the view\n"
    );
    assert!(!b.dir.join("data/fed/new").exists());
    let no = e.fails(
        "xrdcp",
        &[
            "-f",
            "-s",
            up.to_str().unwrap(),
            &format!("{}//fed/new2", e.url),
        ],
    );
    assert!(no.contains("3010") || no.contains("need a token"), "{no}");
    // Site a stops: its clients go to b within the probe interval.
    drop(a);
    let start = Instant::now();
    loop {
        let out = e.local("got2");
        let o = e.run("xrdcp", &["-f", "-s", &url, out.to_str().unwrap()]);
        if o.status.success() && std::fs::read_to_string(&out).unwrap() == "the bytes at site b\n" {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "still not site b"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// A private view (issue 36): a gsi login (a certificate the server
/// verified) is sent to the replica as a token holder is; a login without
/// credentials is refused with the reason, for the file and its listing.
#[test]
fn private_views_take_gsi_logins() {
    let a = Reference::start();
    place(&a, "/pv/f", b"private bytes\n");
    let pa = a.port;
    let p = crate::pki();
    let q = p.clone();
    let e = Env::start_with(move |c| {
        crate::gsi::grid(c, &q);
        c.federation = FedConfig {
            sites: vec![fed_site("a", &["127.0.0.0/8"])],
            endpoints: vec![fed_endpoint(
                "xa",
                "a",
                "root",
                format!("root://127.0.0.1:{pa}//pv"),
            )],
            views: vec![fed_view("/pv", &["xa"], false, "")],
            ..Default::default()
        }
    });
    let root = e.url.replace("127.0.0.1", "localhost");
    let url = format!("{root}//pv/f");
    let out = e.local("got");
    let out = out.to_str().unwrap();
    let no = e.fails("xrdcp", &["-f", "-s", &url, out]);
    assert!(no.contains("needs a token or a certificate"), "{no}");
    let no = e.fails("xrdfs", &[&root, "ls", "/pv"]);
    assert!(no.contains("needs a token or a certificate"), "{no}");
    crate::run_ok(
        crate::gsi::with(&e, &p, "alice-voms.pem", "xrdcp")
            .env("XrdSecPROTOCOL", "gsi,unix")
            .args(["-f", "-s", &url, out]),
        "xrdcp with alice's proxy",
    );
    assert_eq!(std::fs::read(out).unwrap(), b"private bytes\n");
    let o = crate::gsi::with(&e, &p, "alice-voms.pem", "xrdfs")
        .args([&root, "ls", "/pv"])
        .output()
        .unwrap();
    let ls = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success() && ls.contains("/pv/f"), "{ls}");
}
