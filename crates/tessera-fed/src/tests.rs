//! The federation's choices without servers: views, sites, order, write
//! targets, configuration refusals.

use super::*;

fn fed() -> Federation {
    let cfg = FedConfig {
        sites: vec![
            SiteCfg {
                name: "a".into(),
                subnets: vec!["127.0.0.2/32".into()],
                ..Default::default()
            },
            SiteCfg {
                name: "b".into(),
                subnets: vec!["127.0.0.3".into(), "10.0.0.0/8".into()],
                ..Default::default()
            },
        ],
        endpoints: vec![
            EndpointCfg {
                name: "ea".into(),
                site: "a".into(),
                kind: "https".into(),
                url: "https://localhost:1/x".into(),
                ..Default::default()
            },
            EndpointCfg {
                name: "eb".into(),
                site: "b".into(),
                kind: "https".into(),
                url: "https://localhost:2/y/".into(),
                ..Default::default()
            },
        ],
        views: vec![ViewCfg {
            path: "/fed/".into(),
            endpoints: vec!["ea".into(), "eb".into()],
            public: true,
            write: "closest".into(),
        }],
        ..Default::default()
    };
    Federation::new(cfg, None).unwrap()
}

fn rep(e: &str, s: &str) -> Replica {
    Replica {
        endpoint: e.into(),
        site: s.into(),
        url: format!("u-{e}"),
        size: None,
        root: None,
        get_only: false,
    }
}

#[test]
fn views_sites_and_order() {
    let f = fed();
    let v = f.view_of("/fed/d/f").unwrap();
    assert_eq!((v.path(), v.rel.as_str()), ("/fed", "/d/f"));
    assert!(f.view_of("/federal/f").is_none());
    assert_eq!(f.site_of("10.1.2.3".parse().unwrap()).as_deref(), Some("b"));
    let both = vec![rep("ea", "a"), rep("eb", "b")];
    let at = |ip: &str| {
        f.order(both.clone(), ip.parse().unwrap())[0]
            .endpoint
            .clone()
    };
    assert_eq!(at("127.0.0.2"), "ea");
    assert_eq!(at("127.0.0.3"), "eb");
    // A site down leaves the choice.
    let ea = Arc::clone(&f.topo().endpoints[0]);
    for _ in 0..2 {
        ea.note(Err("refused"), 2);
    }
    assert_eq!(at("127.0.0.2"), "eb");
    ea.note(Ok(Duration::from_millis(3)), 2);
    assert_eq!(at("127.0.0.2"), "ea");
    // Writes: the client's site's endpoint.
    let n = f.view_of("/fed/n").unwrap();
    let ask = WriteAsk {
        may_replace: true,
        if_none_match: false,
    };
    let rt = tokio::runtime::Runtime::new().unwrap();
    let w = |ip: &str| {
        rt.block_on(f.write_url(&n, ip.parse().unwrap(), ask))
            .unwrap()
    };
    assert_eq!(w("127.0.0.2"), "https://localhost:1/x/n");
    assert_eq!(w("127.0.0.3"), "https://localhost:2/y/n");
}

#[test]
fn bad_configs_are_refused() {
    let mut c = fed().config();
    c.endpoints[0].kind = "s3".into();
    assert!(Federation::new(c.clone(), None).is_err());
    // An XRootD endpoint must serve the view under the view's path.
    c.endpoints[0].kind = "root".into();
    c.endpoints[0].url = "root://h:1094//elsewhere".into();
    assert!(Federation::new(c.clone(), None).is_err());
    c.endpoints[0].url = "root://h:1094//fed".into();
    Federation::new(c.clone(), None).expect("same path");
    c.endpoints[0].kind = "https".into();
    c.endpoints[0].url = "https://localhost:1/x".into();
    c.views[0].endpoints.push("nope".into());
    assert!(Federation::new(c, None).is_err());
}

#[test]
fn endpoints_change_at_run_time() {
    let f = fed();
    let ea = Arc::clone(&f.topo().endpoints[0]);
    ea.note(Ok(Duration::from_millis(7)), 2);
    // Another endpoint joins the view; the unchanged ones keep their health.
    let cfg = f
        .reconfigure(|c| {
            c.endpoints.push(EndpointCfg {
                name: "ec".into(),
                site: "a".into(),
                url: "https://localhost:3/z".into(),
                ..Default::default()
            });
            c.views[0].endpoints.push("ec".into());
            Ok(())
        })
        .unwrap();
    assert_eq!(cfg.endpoints.len(), 3);
    assert!(Arc::ptr_eq(&ea, &f.topo().endpoints[0]));
    let ls = f.endpoints();
    assert_eq!(
        ls[2].views,
        vec!["/fed".to_string(), "/PerSite/ec".to_string()]
    );
    assert_eq!(ls[0].health.latency_ms, 7.0);
    // A refused change changes nothing.
    assert!(f
        .reconfigure(|c| {
            c.views[0].endpoints.push("nope".into());
            Ok(())
        })
        .is_err());
    assert_eq!(f.endpoints().len(), 3);
    // Disabled: out of every choice.
    f.reconfigure(|c| {
        c.endpoints[0].disabled = true;
        Ok(())
    })
    .unwrap();
    assert!(!f.health("ea").unwrap().up);
    let both = vec![rep("ea", "a"), rep("eb", "b")];
    assert_eq!(
        f.order(both, "127.0.0.2".parse().unwrap())[0].endpoint,
        "eb"
    );
    // A request keeps the federation it started with.
    let before = f.view_of("/PerSite/ec/x").unwrap();
    f.reconfigure(|c| {
        c.views[0].endpoints.retain(|e| e != "ec");
        c.endpoints.retain(|e| e.name != "ec");
        Ok(())
    })
    .unwrap();
    assert_eq!(before.path(), "/PerSite/ec");
    assert!(f.view_of("/PerSite/ec/x").is_none());
}

/// A listener on a free local port, and the port.
async fn listen() -> (tokio::net::TcpListener, u16) {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    (l, port)
}

#[test]
fn an_endpoints_own_limits_hold() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        // Takes connections, never answers.
        let (l, port) = listen().await;
        let mut c = fed().config();
        c.endpoints[0].url = format!("http://127.0.0.1:{port}/x");
        c.endpoints[0].timeout = Some(std::time::Duration::from_millis(500));
        c.endpoints[0].max_parallel = 1;
        let f = Federation::new(c, None).unwrap();
        let e = Arc::clone(&f.topo().endpoints[0]);
        let t = Instant::now();
        let long = Duration::from_secs(5);
        let (r1, r2) = tokio::join!(e.lookup("/a", None, long), e.lookup("/b", None, long));
        // Its own deadline, not the caller's; the second waited for the
        // one slot and had no time left when it came (one deadline in all,
        // not two).
        assert!(r1.unwrap_err().contains("no answer"));
        let r2 = r2.unwrap_err();
        assert!(
            r2.contains("slots busy") || r2.contains("no answer"),
            "{r2}"
        );
        assert!(
            t.elapsed() < Duration::from_millis(550),
            "{:?}",
            t.elapsed()
        );
        drop(l);
    });
}

/// Endpoints as near as each other share the clients by load; load never
/// takes a client away from its own site's endpoint.
#[test]
fn load_spreads_clients_over_endpoints_as_near() {
    let mut c = fed().config();
    c.load_capacity = 2;
    c.endpoints[1].site = "a".into();
    let f = Federation::new(c, None).unwrap();
    let (ea, eb) = (
        Arc::clone(&f.topo().endpoints[0]),
        Arc::clone(&f.topo().endpoints[1]),
    );
    ea.note(Ok(Duration::from_millis(2)), 2);
    eb.note(Ok(Duration::from_millis(3)), 2);
    let both = vec![rep("ea", "a"), rep("eb", "a")];
    let mut to_a = 0;
    for _ in 0..20 {
        let r = f.order(both.clone(), "127.0.0.1".parse().unwrap())[0]
            .endpoint
            .clone();
        f.sent(&r);
        to_a += usize::from(r == "ea");
    }
    // (2+1)(1 + a/2) = (3+1)(1 + b/2) with a + b = 20: a ≈ 11.7.
    assert!((11..=13).contains(&to_a), "{to_a} of 20 to the faster one");
    let h = f.health("ea").unwrap();
    assert!(h.load > 5.0 && h.load <= to_a as f64 / 2.0, "{h:?}");
    // Lookups in flight count too.
    let before = f.health("eb").unwrap().load;
    let busy = eb.start_lookup();
    assert!((f.health("eb").unwrap().load - before - 0.5).abs() < 0.01);
    drop(busy);
    assert!(f.health("eb").unwrap().load <= before);
    // A client at a site goes to its site's endpoint however loaded.
    let mut c = f.config();
    c.endpoints[1].site = "b".into();
    f.reconfigure(|x| {
        *x = c;
        Ok(())
    })
    .unwrap();
    for _ in 0..50 {
        f.sent("eb");
    }
    let one = vec![rep("ea", "a"), rep("eb", "b")];
    assert_eq!(f.order(one, "127.0.0.3".parse().unwrap())[0].endpoint, "eb");
}

#[test]
fn an_endpoint_of_a_private_view_is_private_under_per_site() {
    let f = fed();
    assert!(f.view_of("/PerSite/ea/x").unwrap().public, "public views");
    f.reconfigure(|c| {
        c.views.push(ViewCfg {
            path: "/private".into(),
            endpoints: vec!["eb".into()],
            public: false,
            write: String::new(),
        });
        Ok(())
    })
    .unwrap();
    assert!(!f.view_of("/private/x").unwrap().public);
    assert!(
        !f.view_of("/PerSite/eb/x").unwrap().public,
        "eb is in a private view: private in /PerSite too"
    );
    assert!(f.view_of("/PerSite/ea/x").unwrap().public);
}

/// Issue 35, item 10: an endpoint's answer is read up to
/// `client::MAX_BODY`, no further: a 20 MiB PROPFIND answer is an error,
/// not 20 MiB held per request.
#[test]
fn an_endpoints_answer_is_read_within_a_bound() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let (l, port) = listen().await;
        let server = tokio::spawn(async move {
            let (mut s, _) = l.accept().await.unwrap();
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf).await;
            let len = 20 << 20;
            let head = format!("HTTP/1.1 207 Multi-Status\r\nContent-Length: {len}\r\n\r\n");
            let _ = s.write_all(head.as_bytes()).await;
            let chunk = vec![b' '; 1 << 20];
            for _ in 0..20 {
                if s.write_all(&chunk).await.is_err() {
                    break;
                }
            }
        });
        let base = Base::parse(&format!("http://127.0.0.1:{port}/x")).unwrap();
        let r = crate::client::request(
            &base,
            "PROPFIND",
            "/",
            &[("Depth", "1")],
            Vec::new(),
            None,
            Duration::from_secs(10),
        )
        .await;
        let e = r.err().expect("an answer over the bound is refused");
        assert!(e.contains("length limit"), "{e}");
        server.abort();
    });
}
