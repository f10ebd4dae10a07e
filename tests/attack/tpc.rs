//! Third-party copy as an attacker would use it: anonymously (refused), to
//! reach what only the server can reach (its own loopback and link-local
//! networks: refused for anyone but root unless `tpc_allow` says so), and
//! as a port scanner (every way of failing to reach an endpoint gives the
//! same answer). In both topologies (COPY is served by the metadata
//! service itself).

use crate::topo::{Shape, Topo};
use std::net::TcpListener;

fn copy(t: &Topo, token: Option<&str>, path: &str, headers: &[String]) -> (u16, String) {
    let auth = token.map(|t| format!("Authorization: Bearer {t}"));
    let mut args: Vec<&str> = vec!["-X", "COPY"];
    if let Some(a) = &auth {
        args.extend(["-H", a.as_str()]);
    }
    for h in headers {
        args.extend(["-H", h.as_str()]);
    }
    let url = format!("{}{path}", t.https);
    args.push(&url);
    let (code, body) = t.curl(&args);
    (code, String::from_utf8_lossy(&body).into_owned())
}

#[test]
fn no_anonymous_copies_and_no_loopback_for_users() {
    for shape in [Shape::Single, Shape::Cluster] {
        let t = Topo::start(shape);
        let src = format!("Source: {}/atk/existing", t.https);
        let dst = format!(
            "Destination: {}/atk/elsewhere",
            t.https.replace("localhost", "127.0.0.1")
        );
        // Anonymous: 401, pull or push, nothing made.
        for h in [&src, &dst] {
            let (code, out) = copy(&t, None, "/atk/anon", std::slice::from_ref(h));
            assert_eq!(code, 401, "{shape:?} {h}: {out}");
        }
        // A token holder: this host's own and link-local endpoints are not
        // reachable through the server.
        let tok = t.token("storage.modify:/atk storage.read:/atk", &[], 600);
        for remote in [
            t.https.clone(),
            t.https.replace("localhost", "127.0.0.1"),
            "https://[::1]:1/x".to_string(),
            "http://169.254.169.254/latest/meta-data/".to_string(),
            "http://0.0.0.0:22/".to_string(),
        ] {
            for (dir, path) in [("Source", "/atk/loop"), ("Destination", "/atk/existing")] {
                if dir == "Destination" && remote == t.https {
                    continue; // this server's own name: a WebDAV copy inside it
                }
                let h = format!("{dir}: {remote}/atk/existing");
                let (code, out) = copy(&t, Some(&tok), path, std::slice::from_ref(&h));
                assert_eq!(code, 403, "{shape:?} {h}: {out}");
                assert!(
                    !out.contains("127.") && !out.contains("169.254"),
                    "says no address: {out}"
                );
            }
        }
        assert_eq!(t.content("/atk/anon"), None);
        assert_eq!(t.content("/atk/loop"), None);
    }
}

#[test]
fn failures_to_reach_an_endpoint_all_look_alike() {
    // A test configuration that allows loopback explicitly.
    let t = Topo::start_with(Shape::Single, |c| {
        c.https.tpc_allow = vec!["127.0.0.0/8".into()];
    });
    let tok = t.token("storage.modify:/atk storage.read:/atk", &[], 600);
    // A closed port.
    let closed = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    // An open port that closes at once (not HTTP).
    let rude = TcpListener::bind("127.0.0.1:0").unwrap();
    let rude_port = rude.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for s in rude.incoming() {
            drop(s);
        }
    });
    // An open port that speaks XRootD (not HTTP), and a TLS endpoint with
    // a certificate this server does not trust.
    let xrd_port = crate::raw::addr_of(&t.xrd).port();
    let other = Topo::start(Shape::Single);
    let untrusted = other.https.replace("localhost", "127.0.0.1");
    let mut lines = Vec::new();
    for remote in [
        format!("https://127.0.0.1:{closed}/x"),
        format!("http://127.0.0.1:{closed}/x"),
        format!("http://127.0.0.1:{rude_port}/x"),
        format!("https://127.0.0.1:{rude_port}/x"),
        format!("http://127.0.0.1:{xrd_port}/x"),
        format!("https://127.0.0.1:{xrd_port}/x"),
        format!("{untrusted}/atk/existing"),
    ] {
        for (dir, path) in [("Source", "/atk/probe"), ("Destination", "/atk/existing")] {
            let (code, out) = copy(&t, Some(&tok), path, &[format!("{dir}: {remote}")]);
            assert_eq!(code, 201, "{remote}: {out}");
            let last = out.lines().last().unwrap_or_default().to_string();
            assert!(last.starts_with("failure: "), "{remote}: {out}");
            lines.push((remote.clone(), last));
        }
    }
    let first = lines[0].1.clone();
    for (remote, l) in &lines {
        assert_eq!(l, &first, "{remote} answered differently");
    }
    assert_eq!(t.content("/atk/probe"), None);
}
