//! Federation over HTTPS (issue 26, first part): two sites, each a real
//! Debian xrootd with XrdHttp holding files, under one tesserad view.
//! Clients at each site (curl bound to 127.0.0.2 or 127.0.0.3, mapped to
//! the sites by subnet) are redirected to their own site's replica and
//! read the file through the redirect; Metalink lists every replica in
//! the client's order; a file on one site only, a file on none, a token
//! without read scope on the view; a stopped site leaves the choice within
//! the probe interval.

use crate::reference::Reference;
use crate::{data, fed_endpoint, fed_site, fed_view, Env};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tessera_fed::{EndpointCfg, FedConfig, SiteCfg};

/// Put `body` at `rel` under the reference's exported root (on its disk,
/// as its own user).
pub fn place(r: &Reference, rel: &str, body: &[u8]) {
    crate::common::place_under(&r.dir, rel, body);
}

/// An https endpoint `name` at `site` serving the view `/fed` from `base`
/// (a reference's URL) + `/fed`.
pub fn https_ep(name: &str, site: &str, base: &str) -> EndpointCfg {
    fed_endpoint(name, site, "https", format!("{base}/fed"))
}

/// Sites `a` and `b` (each a name and its clients' subnet) and https
/// endpoints of the same names there, serving `/fed` of the references at
/// `urls`.
pub fn two_sites(a: [&str; 2], b: [&str; 2], urls: [&str; 2]) -> (Vec<SiteCfg>, Vec<EndpointCfg>) {
    let sites = vec![fed_site(a[0], &[a[1]]), fed_site(b[0], &[b[1]])];
    let endpoints = vec![https_ep("a", a[0], urls[0]), https_ep("b", b[0], urls[1])];
    (sites, endpoints)
}

/// A server with federation `fed` that trusts `issuer` (see
/// [`Env::trusting`]), and both CAs in one PEM file ([`cas_pem`]).
pub fn federated(issuer: &Env, fed: FedConfig) -> (Env, PathBuf) {
    let e = Env::trusting(issuer, move |c| c.federation = fed);
    let cas = cas_pem(&e, issuer);
    (e, cas)
}

/// A PROPFIND of `depth` from site a's client (127.0.0.2): (status, body).
pub fn propfind(e: &Env, cas: &Path, url: &str, depth: &str) -> (u16, String) {
    let depth = format!("Depth: {depth}");
    let (code, _, xml) = get(e, cas, "127.0.0.2", url, &["-X", "PROPFIND", "-H", &depth]);
    (code, String::from_utf8_lossy(&xml).into_owned())
}

/// The Metalink document of `url` as the client at `from` gets it:
/// (status, document).
pub fn metalink(e: &Env, cas: &Path, from: &str, url: &str) -> (u16, String) {
    let accept = ["-H", "Accept: application/metalink4+xml"];
    let (code, _, doc) = get(e, cas, from, url, &accept);
    (code, String::from_utf8_lossy(&doc).into_owned())
}

/// Tesserad `e`'s metrics, as Prometheus scrapes them.
pub fn metrics(e: &Env) -> String {
    let m = e.server.as_ref().unwrap().metrics_addr;
    let o = e.run("curl", &["-s", &format!("http://{m}/metrics")]);
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The value of the first line of the metrics `text` that starts with
/// `name`.
pub fn metric(text: &str, name: &str) -> f64 {
    text.lines()
        .find(|l| l.starts_with(name))
        .and_then(|l| l.rsplit(' ').next()?.parse().ok())
        .unwrap_or_else(|| panic!("{name} in the metrics: {text}"))
}

/// Both CAs (tesserad's and the sites', the issuer's) in one PEM file, as
/// curl takes them.
pub fn cas_pem(e: &Env, issuer: &Env) -> std::path::PathBuf {
    let cas = e.local("cas.pem");
    let mut both = std::fs::read(&e.ca).unwrap();
    both.extend(std::fs::read(&issuer.ca).unwrap());
    std::fs::write(&cas, both).unwrap();
    cas
}

/// Both CAs in one hashed directory, as davix and gfal2 take them.
pub fn cas_dir(e: &Env, issuer: &Env) -> std::path::PathBuf {
    let dir = e.local("capath");
    std::fs::create_dir_all(&dir).unwrap();
    for d in [&e.ca_dir, &issuer.ca_dir] {
        for f in std::fs::read_dir(d).unwrap().flatten() {
            std::fs::copy(f.path(), dir.join(f.file_name())).unwrap();
        }
    }
    dir
}

/// curl from source address `from`: (status, Location, body).
pub fn get(e: &Env, cas: &Path, from: &str, url: &str, extra: &[&str]) -> (u16, String, Vec<u8>) {
    let (hdr, out) = (e.local("fed.hdr"), e.local("fed.out"));
    let mut args = vec![
        "-4",
        "-sS",
        "--interface",
        from,
        "--cacert",
        cas.to_str().unwrap(),
        "-D",
        hdr.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "-w",
        "%{http_code}",
    ];
    args.extend_from_slice(extra);
    args.push(url);
    let o = e.run("curl", &args);
    let code = String::from_utf8_lossy(&o.stdout)
        .trim()
        .parse()
        .unwrap_or(0);
    let headers = std::fs::read_to_string(&hdr).unwrap_or_default();
    let location = headers
        .lines()
        .filter_map(|l| l.split_once(':'))
        .filter(|(k, _)| k.eq_ignore_ascii_case("location"))
        .map(|(_, v)| v.trim().to_string())
        .next_back()
        .unwrap_or_default();
    (code, location, std::fs::read(&out).unwrap_or_default())
}

#[test]
fn a_view_sends_each_client_to_its_sites_replica() {
    let issuer = Env::start();
    let (a, b) = (Reference::start(&issuer), Reference::start(&issuer));
    let body = data(300_000, 26);
    place(&a, "/fed/f", &body);
    place(&b, "/fed/f", &body);
    place(&b, "/fed/only-b", b"b's own");
    // A directory spread over both sites.
    place(&a, "/fed/d/x1", b"1");
    place(&a, "/fed/d/both", b"22");
    place(&b, "/fed/d/x2", b"333");
    place(&b, "/fed/d/both", b"22");
    place(&b, "/fed/d/sub/y", b"4");
    let (sites, endpoints) = two_sites(
        ["site-a", "127.0.0.2/32"],
        ["site-b", "127.0.0.3/32"],
        [&a.url, &b.url],
    );
    let fed = FedConfig {
        probe_interval: Duration::from_millis(300),
        probe_failures: 1,
        timeout: Duration::from_millis(1000),
        sites,
        endpoints,
        views: vec![fed_view("/fed", &["a", "b"], true, "closest")],
        ..Default::default()
    };
    // curl trusts both CAs: tesserad's, and the sites' (the issuer's).
    let (e, cas) = federated(&issuer, fed);
    let url = |p: &str| format!("{}/fed{p}", e.url);
    // Each client to its own site, and the bytes through the redirect.
    for (from, want) in [("127.0.0.2", &a), ("127.0.0.3", &b)] {
        let (code, to, _) = get(&e, &cas, from, &url("/f"), &[]);
        assert_eq!(code, 302, "{from}");
        assert_eq!(to, format!("{}/fed/f", want.url), "{from}");
        let (code, _, got) = get(&e, &cas, from, &url("/f"), &["-L"]);
        assert!(code == 200 && got == body, "{from}: {code}");
    }
    // Metalink: every replica, the client's site first, with the size.
    let (code, doc) = metalink(&e, &cas, "127.0.0.3", &url("/f"));
    assert_eq!(code, 200, "{doc}");
    let (pb, pa) = (
        doc.find(&format!("{}/fed/f", b.url)).expect("b listed"),
        doc.find(&format!("{}/fed/f", a.url)).expect("a listed"),
    );
    assert!(pb < pa, "the client's site first: {doc}");
    assert!(doc.contains("<size>300000</size>"), "{doc}");
    // Listings merged: the union of both sites' names (davix-ls and a
    // PROPFIND of depth 1 and 0).
    let capath = cas_dir(&e, &issuer);
    let (code, xml) = propfind(&e, &cas, &url("/d"), "1");
    assert_eq!(code, 207, "{xml}");
    assert!(
        xml.contains(
            "<D:href>/fed/d/sub/</D:href><D:propstat><D:prop><D:resourcetype><D:collection/>"
        ),
        "{xml}"
    );
    assert!(
        xml.contains("<D:href>/fed/d/x2</D:href>") && xml.contains("<D:getcontentlength>3<"),
        "{xml}"
    );
    let ls = e.run(
        "davix-ls",
        &["--capath", capath.to_str().unwrap(), &url("/d/")],
    );
    let names: Vec<String> = String::from_utf8_lossy(&ls.stdout)
        .lines()
        .map(|l| l.trim().trim_end_matches('/').to_string())
        .collect();
    for n in ["x1", "x2", "both", "sub"] {
        assert!(
            names.iter().any(|x| x == n),
            "{n} in {names:?} ({})",
            String::from_utf8_lossy(&ls.stderr)
        );
    }
    assert_eq!(
        names.iter().filter(|x| *x == "both").count(),
        1,
        "{names:?}"
    );
    // gfal-ls and rclone (its WebDAV backend) list the same directory.
    let o = e
        .cmd("gfal-ls")
        .env("X509_CERT_DIR", &capath)
        .arg(url("/d/"))
        .output()
        .unwrap();
    let gfal: Vec<String> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| l.trim().to_string())
        .collect();
    let rc = e.run(
        "rclone",
        &[
            "lsf",
            "--ca-cert",
            cas.to_str().unwrap(),
            "--webdav-url",
            &url("/d"),
            ":webdav:",
        ],
    );
    let rclone: Vec<String> = String::from_utf8_lossy(&rc.stdout)
        .lines()
        .map(|l| l.trim().trim_end_matches('/').to_string())
        .collect();
    for n in ["x1", "x2", "both", "sub"] {
        assert!(
            gfal.iter().any(|x| x == n),
            "gfal-ls: {n} in {gfal:?} ({})",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(
            rclone.iter().any(|x| x == n),
            "rclone: {n} in {rclone:?} ({})",
            String::from_utf8_lossy(&rc.stderr)
        );
    }
    let (code, xml) = propfind(&e, &cas, &url("/d"), "0");
    assert_eq!((code, xml.matches("<D:response>").count()), (207, 1));
    let (code, _, _) = get(&e, &cas, "127.0.0.2", &url("/nodir/"), &["-X", "PROPFIND"]);
    assert_eq!(code, 404);
    let t = crate::tokens::token(&issuer, "storage.read:/elsewhere");
    // A write into the view goes, by redirect, to the client's site (the
    // view's policy: closest), with a token that may create there.
    let up = e.local("up.bin");
    let bytes = data(5000, 9);
    std::fs::write(&up, &bytes).unwrap();
    let auth = format!("Authorization: Bearer {}", e.token.as_ref().unwrap());
    let put = |from: &str, extra: &[&str]| {
        let mut args = vec!["-T", up.to_str().unwrap()];
        args.extend_from_slice(extra);
        get(&e, &cas, from, &url("/new"), &args)
    };
    let (code, to, _) = put("127.0.0.2", &["-H", &auth]);
    assert_eq!((code, to), (307, format!("{}/fed/new", a.url)));
    let (code, _, _) = put("127.0.0.2", &["-L", "-H", &auth]);
    assert!((200..300).contains(&code), "{code}");
    assert!(std::fs::read(a.dir.join("data/fed/new")).unwrap() == bytes);
    assert_eq!(
        put("127.0.0.3", &["-H", &auth]).1,
        format!("{}/fed/new", b.url)
    );
    assert_eq!(put("127.0.0.2", &[]).0, 401, "no token");
    let reader = format!("Authorization: Bearer {t}");
    assert_eq!(put("127.0.0.2", &["-H", &reader]).0, 403, "no create scope");
    // Each endpoint's own view: no aggregation, whatever the client's site.
    let (code, to, _) = get(
        &e,
        &cas,
        "127.0.0.2",
        &format!("{}/PerSite/b/f", e.url),
        &[],
    );
    assert_eq!((code, to), (302, format!("{}/fed/f", b.url)));
    // On one site only; on none.
    let (code, to, _) = get(&e, &cas, "127.0.0.2", &url("/only-b"), &[]);
    assert_eq!((code, to), (302, format!("{}/fed/only-b", b.url)));
    assert_eq!(get(&e, &cas, "127.0.0.2", &url("/none"), &[]).0, 404);
    // A token that may not read the view is refused before any redirect.
    let auth = format!("Authorization: Bearer {t}");
    let (code, to, _) = get(&e, &cas, "127.0.0.2", &url("/f"), &["-H", &auth]);
    assert_eq!((code, to.as_str()), (403, ""));
    // An analysis read through the view: uproot's HTTP source follows
    // the redirect for every request it makes.
    let py = std::env::var("TESSERA_UPROOT_PYTHON")
        .unwrap_or_else(|_| "/var/tmp/tessera-uproot-venv/bin/python".into());
    let script = e.file("analysis.py", UPROOT);
    let local = e.local("t.root");
    let o = e
        .cmd(&py)
        .args([script.to_str().unwrap(), "write", local.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let root_file = std::fs::read(&local).unwrap();
    place(&a, "/fed/t.root", &root_file);
    place(&b, "/fed/t.root", &root_file);
    let o = e
        .cmd(&py)
        .env("SSL_CERT_FILE", &cas)
        .args([
            script.to_str().unwrap(),
            "read",
            local.to_str().unwrap(),
            &url("/t.root"),
        ])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success() && out.contains("ok 200000"),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // Site a stops: its clients go to b within the probe interval.
    drop(a);
    let start = Instant::now();
    loop {
        let (code, to, _) = get(&e, &cas, "127.0.0.2", &url("/f"), &[]);
        if code == 302 && to == format!("{}/fed/f", b.url) {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "still sent to {to} ({code})"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // The metrics say so, and how lookups were answered.
    let text = metrics(&e);
    let value = |name: &str| metric(&text, name);
    let up = "tessera_federation_endpoint_up{endpoint=";
    assert_eq!(value(&format!("{up}\"a\",site=\"site-a\"}}")), 0.0);
    assert_eq!(value(&format!("{up}\"b\",site=\"site-b\"}}")), 1.0);
    assert!(value("tessera_federation_lookups_cached") >= 1.0);
    assert!(value("tessera_federation_lookups_asked") >= 3.0);
}

/// Writes a ROOT file (`write OUT`), or reads three branches of one over
/// https in steps and compares them with the local file's (`read LOCAL URL`).
const UPROOT: &str = r#"
import sys
import numpy as np
import uproot
if sys.argv[1] == "write":
    with uproot.recreate(sys.argv[2]) as f:
        f.mktree("t", {"a": np.float64, "b": np.int32, "c": np.float32})
        for i in range(0, 200_000, 20_000):
            k = np.arange(i, i + 20_000)
            f["t"].extend({"a": k * 0.5, "b": (k * 3).astype(np.int32), "c": (k % 7).astype(np.float32)})
else:
    want = uproot.open(sys.argv[2])["t"].arrays(["a", "c"], library="np")
    t = uproot.open(sys.argv[3], handler=uproot.source.http.HTTPSource)["t"]
    got = {"a": [], "c": []}
    for chunk in t.iterate(["a", "c"], step_size=50_000, library="np"):
        for k in got:
            got[k].append(chunk[k])
    for k in got:
        assert (np.concatenate(got[k]) == want[k]).all(), k
    print("ok", len(want["a"]))
"#;

/// A client that fails over by Metalink (davix) reads the file from the
/// next replica when the one it was sent to is gone and the probes have
/// not noticed yet.
#[test]
fn metalink_clients_fail_over_to_the_next_replica() {
    let issuer = Env::start();
    let (a, b) = (Reference::start(&issuer), Reference::start(&issuer));
    let body = data(200_000, 27);
    place(&a, "/fed/f", &body);
    place(&b, "/fed/f", &body);
    let (sites, endpoints) = two_sites(
        ["here", "127.0.0.1/32"],
        ["there", "127.0.0.9/32"],
        [&a.url, &b.url],
    );
    let fed = FedConfig {
        // Slow probes: the stopped site stays the first choice.
        probe_interval: Duration::from_millis(600_000),
        sites,
        endpoints,
        views: vec![fed_view("/fed", &["a", "b"], true, "")],
        ..Default::default()
    };
    let e = Env::trusting(&issuer, move |c| c.federation = fed);
    // Both CAs in one directory, as davix takes them.
    let cas = cas_dir(&e, &issuer);
    let url = format!("{}/fed/f", e.url);
    let (code, to, _) = get(&e, &e.ca, "127.0.0.1", &url, &[]);
    assert_eq!((code, to), (302, format!("{}/fed/f", a.url)));
    drop(a);
    let out = e.local("got");
    let o = e.run(
        "davix-get",
        &[
            "--capath",
            cas.to_str().unwrap(),
            "--metalink",
            "failover",
            &url,
            out.to_str().unwrap(),
        ],
    );
    assert!(
        o.status.success(),
        "davix-get: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(std::fs::read(&out).unwrap() == body, "the bytes, from b");
}

/// An endpoint that takes connections and never answers holds no lookup
/// back: a client at a site with the file is answered as soon as its own
/// site's endpoint says so, a client elsewhere `settle` after the first
/// endpoint that has it, and both well before the stuck one's deadline.
#[test]
fn a_stuck_endpoint_delays_no_answer() {
    let issuer = Env::start();
    let a = Reference::start(&issuer);
    place(&a, "/fed/f", b"here");
    place(&a, "/fed/g", b"here too");
    // Connections complete in the backlog; nothing ever answers.
    let stuck = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let stuck_at = format!("https://localhost:{}", stuck.local_addr().unwrap().port());
    let fed = FedConfig {
        probe_interval: Duration::from_millis(600_000),
        timeout: Duration::from_millis(3000),
        settle: Duration::from_millis(20),
        sites: vec![
            fed_site("site-a", &["127.0.0.2/32"]),
            fed_site("slow", &["127.0.0.3/32"]),
        ],
        endpoints: vec![
            https_ep("a", "site-a", &a.url),
            https_ep("stuck", "slow", &stuck_at),
        ],
        views: vec![fed_view("/fed", &["a", "stuck"], true, "")],
        ..Default::default()
    };
    let (e, cas) = federated(&issuer, fed);
    for (from, path) in [("127.0.0.2", "/fed/f"), ("127.0.0.1", "/fed/g")] {
        let t = Instant::now();
        let (code, to, _) = get(&e, &cas, from, &format!("{}{path}", e.url), &[]);
        let took = t.elapsed();
        assert_eq!((code, to), (302, format!("{}{path}", a.url)), "{from}");
        assert!(took < Duration::from_millis(1500), "{from}: {took:?}");
    }
    drop(stuck);
}

/// A private view's endpoints are not public one by one under
/// `/PerSite` either (issue 35): without a token every way of asking about
/// a file there (GET, HEAD, a PROPFIND listing, Metalink) is 401, before
/// any endpoint is asked; with one it is served.
#[test]
fn a_private_view_stays_private_under_per_site() {
    let issuer = Env::start();
    let a = Reference::start(&issuer);
    place(&a, "/priv/f", b"secret bytes");
    let fed = crate::private_view("/priv", format!("{}/priv", a.url), "127.0.0.2/32");
    let (e, cas) = federated(&issuer, fed);
    let auth = format!("Authorization: Bearer {}", e.token.as_ref().unwrap());
    for url in [format!("{}/priv", e.url), format!("{}/PerSite/a", e.url)] {
        let asks: [&[&str]; 5] = [
            &[],
            &["-I"],
            &["-X", "PROPFIND", "-H", "Depth: 1"],
            &["-H", "Accept: application/metalink4+xml"],
            &["-X", "PROPFIND", "-H", "Depth: 0"],
        ];
        for (i, extra) in asks.iter().enumerate() {
            let target = if i >= 2 {
                url.clone()
            } else {
                format!("{url}/f")
            };
            let (code, to, body) = get(&e, &cas, "127.0.0.2", &target, extra);
            assert_eq!(
                (code, to.as_str()),
                (401, ""),
                "{target} {extra:?}: {}",
                String::from_utf8_lossy(&body)
            );
            assert!(!String::from_utf8_lossy(&body).contains("/f<"), "{target}");
        }
        let (code, to, _) = get(&e, &cas, "127.0.0.2", &format!("{url}/f"), &["-H", &auth]);
        assert_eq!((code, to), (302, format!("{}/priv/f", a.url)), "{url}");
    }
}
