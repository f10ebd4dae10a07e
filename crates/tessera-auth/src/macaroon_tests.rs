use super::*;
use crate::users;

fn daemon() -> Identity {
    let u = users::user_by_name("daemon").unwrap();
    users::local_identity(&u, None, "https")
}

fn p(s: &str) -> NsPath {
    NsPath::parse(s).unwrap()
}

#[test]
fn issued_then_verified_within_its_caveats() {
    let m = Macaroons::new(b"cluster secret", "tessera");
    let body = br#"{"caveats": ["activity:DOWNLOAD,UPLOAD"], "validity": "PT30M"}"#;
    let (mac, secs) = m.issue(&daemon(), &p("/data/run1"), body).unwrap();
    assert_eq!(secs, 1800);
    let who = m.verify(&mac, "https").unwrap();
    assert_eq!((who.uid, who.name.as_str()), (1, "daemon"));
    let g = who.token.unwrap();
    assert!(g.allows(Access::Read, &p("/data/run1/f")));
    assert!(g.allows(Access::Create, &p("/data/run1/f")));
    assert!(!g.allows(Access::Modify, &p("/data/run1/f")));
    assert!(!g.allows(Access::Read, &p("/data/run2/f")));
    // Another service's secret, a changed byte, a caveat dropped.
    let other = Macaroons::new(b"another secret", "tessera");
    assert!(other.verify(&mac, "https").is_err());
    let mut raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(&mac)
        .unwrap();
    let at = raw.len() / 2;
    raw[at] ^= 1;
    let bad = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&raw);
    assert!(m.verify(&bad, "https").is_err());
}

#[test]
fn never_wider_than_the_requester() {
    let m = Macaroons::new(b"s", "t");
    // A read-only grant (a limited proxy's) asks for uploads: refused;
    // for downloads and uploads: downloads only.
    let mut who = daemon();
    who.token = Some(Arc::new(TokenGrant {
        issuer: tessera_types::LIMITED_PROXY.into(),
        subject: "dn".into(),
        scopes: vec![ScopeGrant {
            access: Access::Read,
            path: p("/"),
            dir_only: false,
        }],
        expires: u64::MAX,
    }));
    assert!(m
        .issue(&who, &p("/d"), br#"{"caveats":["activity:UPLOAD"]}"#)
        .is_err());
    let (mac, _) = m
        .issue(
            &who,
            &p("/d"),
            br#"{"caveats":["activity:DOWNLOAD,UPLOAD"]}"#,
        )
        .unwrap();
    let g = m.verify(&mac, "https").unwrap().token.unwrap();
    assert!(g.allows(Access::Read, &p("/d/x")) && !g.allows(Access::Create, &p("/d/x")));
    // Neither root nor anonymous clients get one; unknown caveats and
    // activities refuse.
    assert!(m.issue(&Identity::root("https"), &p("/"), b"").is_err());
    assert!(m
        .issue(&Identity::read_only_anonymous("https"), &p("/"), b"")
        .is_err());
    assert!(m
        .issue(&daemon(), &p("/"), br#"{"caveats":["ip:1.2.3.4"]}"#)
        .is_err());
    assert!(m
        .issue(&daemon(), &p("/"), br#"{"caveats":["activity:FLY"]}"#)
        .is_err());
    assert!(m
        .issue(&daemon(), &p("/a"), br#"{"caveats":["path:/b"]}"#)
        .is_err());
    // Validity is capped.
    let (_, secs) = m
        .issue(&daemon(), &p("/"), br#"{"validity":"P30D"}"#)
        .unwrap();
    assert_eq!(secs, MAX_VALIDITY);
}

#[test]
fn expired_macaroons_are_refused() {
    let m = Macaroons::new(b"s", "t");
    let (mac, _) = m
        .issue(
            &daemon(),
            &p("/"),
            br#"{"caveats":["before:2020-01-01T00:00:00Z"]}"#,
        )
        .unwrap();
    let e = m.verify(&mac, "https").unwrap_err();
    assert!(e.to_string().contains("expired"), "{e}");
}

#[test]
fn durations_and_times() {
    assert_eq!(iso_duration("PT60M"), Some(3600));
    assert_eq!(iso_duration("PT1H30M"), Some(5400));
    assert_eq!(iso_duration("P1DT1S"), Some(86_401));
    assert_eq!(iso_duration("PT"), None);
    assert_eq!(iso_duration("60"), None);
    assert_eq!(iso_duration("PT5X"), None);
    let t = 1_796_425_200;
    assert_eq!(parse_rfc3339(&rfc3339(t)), Some(t));
    assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
}
