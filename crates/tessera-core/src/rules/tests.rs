use super::*;
use std::sync::Arc;
use tessera_types::{TokenGrant, X509Subject};

fn rule(id: u64, action: &str, subject: &str) -> AccessRule {
    AccessRule {
        id,
        action: action.into(),
        subject: subject.into(),
        ..Default::default()
    }
}

fn user(name: &str, groups: &[&str]) -> Identity {
    let mut who = Identity::user(1000, 1000, name, "xroot");
    who.group_names = groups.iter().map(|g| g.to_string()).collect();
    who
}

const HOME: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(10, 1, 2, 3));
const AWAY: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(192, 0, 2, 9));

fn p(s: &str) -> NsPath {
    NsPath::parse(s).unwrap()
}

fn action(a: &Admit) -> &'static str {
    match a {
        Admit::Go => "go",
        Admit::Wait { action, .. } => action,
        Admit::Redirect { .. } => "redirect",
    }
}

#[test]
fn bans_name_users_groups_hosts_tokens_and_fqans() {
    let mut tok = user("tok", &[]);
    tok.token = Some(Arc::new(TokenGrant {
        issuer: "https://iam.example".into(),
        subject: "abc".into(),
        scopes: Vec::new(),
        expires: 0,
    }));
    let mut cert = user("cms001", &[]);
    cert.x509 = Some(Arc::new(X509Subject {
        dn: "/CN=x".into(),
        fqans: vec!["/cms/higgs/Role=NULL/Capability=NULL".into()],
        limited: false,
    }));
    let cases: &[(&str, &Identity, IpAddr, bool)] = &[
        ("user:alice", &user("alice", &[]), AWAY, true),
        ("user:alice", &user("bob", &[]), AWAY, false),
        ("group:atlas", &user("bob", &["atlas"]), AWAY, true),
        ("host:10.1.0.0/16", &user("bob", &[]), HOME, true),
        ("host:10.1.0.0/16", &user("bob", &[]), AWAY, false),
        ("host:192.0.2.9", &user("bob", &[]), AWAY, true),
        ("issuer:https://iam.example", &tok, AWAY, true),
        ("subject:abc", &tok, AWAY, true),
        ("subject:abc", &user("abc", &[]), AWAY, false),
        ("fqan:/cms", &cert, AWAY, true),
        ("fqan:/cms/higgs", &cert, AWAY, true),
        ("fqan:/cm", &cert, AWAY, false),
        ("all", &user("bob", &[]), AWAY, true),
    ];
    for (subject, who, peer, banned) in cases {
        let mut r = rule(1, "ban", subject);
        r.wait_secs = 30;
        let rules = Rules::new(vec![r]);
        let a = rules.admit(who, *peer, Op::OpenRead, Some(&p("/x")), 100);
        if *banned {
            assert!(
                matches!(&a, Admit::Wait { secs: 30, action: "ban", why } if why.contains("rule 1")),
                "{subject}: {a:?}"
            );
        } else {
            assert_eq!(a, Admit::Go, "{subject}");
        }
    }
}

#[test]
fn allow_lists_stalls_redirects_paths_writes_and_expiry() {
    let alice = user("alice", &["atlas"]);
    let bob = user("bob", &[]);
    // An allow list of users: only alice passes; no wait given: the default.
    let rules = Rules::new(vec![rule(1, "allow", "user:alice")]);
    assert_eq!(rules.admit(&alice, AWAY, Op::OpenRead, None, 0), Admit::Go);
    let a = rules.admit(&bob, AWAY, Op::OpenRead, None, 0);
    assert_eq!(action(&a), "allow");
    assert!(matches!(
        a,
        Admit::Wait {
            secs: DEFAULT_WAIT_SECS,
            ..
        }
    ));
    // A ban wins over an allow.
    let rules = Rules::new(vec![
        rule(1, "allow", "user:alice"),
        rule(2, "ban", "group:atlas"),
    ]);
    assert_eq!(
        action(&rules.admit(&alice, AWAY, Op::OpenRead, None, 0)),
        "ban"
    );
    // Writes under /atlas stalled; reads and other paths go.
    let mut stall = rule(3, "stall", "all");
    stall.path = "/atlas".into();
    stall.writes_only = true;
    stall.wait_secs = 5;
    let mut redirect = rule(4, "redirect", "all");
    redirect.path = "/cms".into();
    redirect.target = "other.example:1094".into();
    let rules = Rules::new(vec![stall, redirect]);
    let w = |op, path: &str| rules.admit(&bob, AWAY, op, Some(&p(path)), 0);
    assert_eq!(action(&w(Op::OpenWrite, "/atlas/f")), "stall");
    assert_eq!(w(Op::OpenRead, "/atlas/f"), Admit::Go);
    assert_eq!(w(Op::OpenWrite, "/atlasx/f"), Admit::Go, "whole components");
    assert_eq!(
        w(Op::OpenRead, "/cms/f"),
        Admit::Redirect {
            to: "other.example:1094".into(),
            why: "redirected by access rule 4".into()
        }
    );
    assert_eq!(
        rules.admit(&bob, AWAY, Op::OpenRead, None, 0),
        Admit::Go,
        "no path"
    );
    // Expired rules do nothing.
    let mut ban = rule(5, "ban", "user:bob");
    ban.expires_at = 50;
    let rules = Rules::new(vec![ban]);
    assert_eq!(
        action(&rules.admit(&bob, AWAY, Op::OpenRead, None, 49)),
        "ban"
    );
    assert_eq!(rules.admit(&bob, AWAY, Op::OpenRead, None, 50), Admit::Go);
}

#[test]
fn bad_rules_are_refused_before_they_are_stored() {
    for (action, subject, target) in [
        ("ban", "users:alice", ""),
        ("ban", "user:", ""),
        ("ban", "host:not-an-address", ""),
        ("ban", "fqan:cms", ""),
        ("block", "user:alice", ""),
        ("redirect", "all", ""),
    ] {
        let mut r = rule(0, action, subject);
        r.target = target.into();
        assert!(check(&r).is_err(), "{action} {subject}");
    }
    let mut r = rule(0, "redirect", "all");
    r.target = "h:1094".into();
    check(&r).unwrap();
}
