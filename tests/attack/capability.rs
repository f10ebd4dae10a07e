//! Capabilities (scale-out only): a redirect URL that leaks is worth
//! nothing to another client; a write capability opens once; an expired
//! or altered one opens nothing. Over XRootD (a raw client, so the
//! redirect can be looked at instead of followed) and HTTPS (curl without
//! `-L`); the other client connects from 127.0.0.2.

use crate::raw::{addr_of, handle, Raw, OK, OPEN_NEW};
use crate::topo::{upload_file, Shape, Topo};
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

const THIEF: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(127, 0, 0, 2));
const TTL: u64 = 3;

fn cluster() -> Topo {
    Topo::start_with(Shape::Cluster, |c| c.cluster.cap_ttl_secs = TTL)
}

#[test]
fn xrootd_capabilities_are_bound_single_use_and_short_lived() {
    let t = cluster();
    let tok = t.token("storage.modify:/atk", &[], 600);
    let mgm = addr_of(&t.xrd);
    let mut client = Raw::login(mgm, None, "alice");
    let redirect = |c: &mut Raw, name: &str| {
        let r = c.open(
            &format!("/atk/{name}?authz=Bearer%20{tok}"),
            OPEN_NEW,
            0o644,
        );
        let (port, _host, cgi) = r.redirect();
        (SocketAddr::from(([127, 0, 0, 1], port)), cgi)
    };
    let (gw, cgi) = redirect(&mut client, "leak");
    assert!(cgi.contains("tessera.cap="), "{cgi}");
    // Another client with the leaked redirect: refused, nothing written.
    let mut thief = Raw::login(gw, Some(THIEF), "eve");
    let r = thief.open(&format!("/atk/leak?{cgi}"), OPEN_NEW, 0o644);
    assert_eq!(r.errnum(), 3010, "{}", r.text());
    assert!(r.text().contains("another client"), "{}", r.text());
    assert_eq!(t.content("/atk/leak"), None);
    // The client it was granted to: one open.
    let mut at_gw = Raw::login(gw, None, "alice");
    let fh = handle(&at_gw.open(&format!("/atk/leak?{cgi}"), OPEN_NEW, 0o644));
    assert_eq!(at_gw.write(fh, 0, b"the owner's bytes").status, OK);
    assert_eq!(at_gw.close(fh).status, OK);
    assert_eq!(
        t.content("/atk/leak").as_deref(),
        Some(&b"the owner's bytes"[..])
    );
    let again = at_gw.open(&format!("/atk/leak?{cgi}"), OPEN_NEW, 0o644);
    assert_eq!(again.errnum(), 3010, "a second open: {}", again.text());
    assert!(again.text().contains("already used"), "{}", again.text());
    // Altered: refused.
    let (_, cgi2) = redirect(&mut client, "altered");
    let flipped = flip_last_hex(&cgi2);
    let r = at_gw.open(&format!("/atk/altered?{flipped}"), OPEN_NEW, 0o644);
    assert_eq!(r.errnum(), 3010, "{}", r.text());
    // For another path: refused.
    let r = at_gw.open(&format!("/atk/other?{cgi2}"), OPEN_NEW, 0o644);
    assert_eq!(r.errnum(), 3010, "{}", r.text());
    // Expired: refused.
    std::thread::sleep(Duration::from_secs(TTL + 2));
    let r = at_gw.open(&format!("/atk/altered?{cgi2}"), OPEN_NEW, 0o644);
    assert_eq!(r.errnum(), 3010, "{}", r.text());
    assert!(r.text().contains("expired"), "{}", r.text());
    for p in ["/atk/altered", "/atk/other"] {
        assert_eq!(t.content(p), None, "{p}");
    }
}

#[test]
fn https_capabilities_are_bound_single_use_and_short_lived() {
    let t = cluster();
    let tok = t.token("storage.modify:/atk", &[], 600);
    let auth = format!("Authorization: Bearer {tok}");
    let file = upload_file(t.dir.path(), "f", 10_000);
    let f = file.to_str().unwrap();
    let headers = t.local("headers");
    let location = |name: &str| -> String {
        let url = format!("{}/atk/{name}", t.https);
        let (code, _) = t.curl(&["-D", headers.to_str().unwrap(), "-H", &auth, "-T", f, &url]);
        assert_eq!(code, 307, "the metadata service redirects");
        let h = std::fs::read_to_string(&headers).unwrap();
        h.lines()
            .find_map(|l| {
                l.strip_prefix("location: ")
                    .or_else(|| l.strip_prefix("Location: "))
            })
            .expect("Location")
            .trim()
            .to_string()
    };
    let leaked = location("hleak");
    let (code, _) = t.curl(&["--interface", "127.0.0.2", "-T", f, &leaked]);
    assert_eq!(code, 403, "another client");
    assert_eq!(t.content("/atk/hleak"), None);
    assert_eq!(t.curl(&["-T", f, &leaked]).0, 201, "the client it was for");
    assert_eq!(t.curl(&["-T", f, &leaked]).0, 403, "a second use");
    let other = location("hlate");
    std::thread::sleep(Duration::from_secs(TTL + 2));
    assert_eq!(t.curl(&["-T", f, &other]).0, 403, "expired");
    assert_eq!(t.content("/atk/hlate"), None);
}

/// The CGI with the last hex digit of the capability changed.
fn flip_last_hex(cgi: &str) -> String {
    let mut s: Vec<char> = cgi.chars().collect();
    let i = s.iter().rposition(|c| c.is_ascii_hexdigit()).expect("hex");
    s[i] = if s[i] == '0' { '1' } else { '0' };
    s.into_iter().collect()
}
