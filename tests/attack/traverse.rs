//! Issue 35, item 1: a readable file in another user's mode-0700
//! directory is unreadable to everyone else, and a 0777 directory below a
//! 0700 one takes no creates or deletes from them: search permission on
//! every directory on the way, decided in the core for every path (the
//! metadata service decides it before it signs a capability). Each
//! attack runs on a single server and through gateways, over HTTPS (GET,
//! HEAD, COPY, PROPFIND, PUT, DELETE, MOVE) and XRootD (xrdcp, xrdfs stat,
//! ls, rm), anonymously and with a token of another local account; the
//! owner's token is the control.

use crate::topo::{text, upload_file, Shape, Topo, DEV_UID, ORIGINAL};
use tessera_types::Identity;

#[test]
fn private_directories_single() {
    run(Shape::Single);
}

#[test]
fn private_directories_gateways() {
    run(Shape::Cluster);
}

/// `/atk/home` (the dev identity's, 0700) holding `f` (0644) and `open`
/// (0777) holding `g`; `/atk/pub` (0777), where anyone may write.
fn fixture(t: &Topo) {
    let dev = Identity::user(DEV_UID, DEV_UID, "dev", "test");
    t.rt.block_on(async {
        let core = t.core();
        for (d, mode) in [
            ("/atk/home", 0o700),
            ("/atk/home/open", 0o777),
            ("/atk/pub", 0o777),
        ] {
            core.mkdir(&dev, Topo::path(d), mode, false)
                .await
                .expect("mkdir");
        }
    });
    t.put_as(&dev, "/atk/home/f", ORIGINAL);
    t.put_as(&dev, "/atk/home/open/g", ORIGINAL);
}

fn run(shape: Shape) {
    let t = Topo::start(shape);
    fixture(&t);
    let other = t.token_for("nobody", "storage.read:/ storage.modify:/atk", &[], 600);
    let owner = t.token("storage.read:/ storage.modify:/atk", &[], 600);
    let bearer = |tok: &str| format!("Authorization: Bearer {tok}");
    let url = |p: &str| format!("{}{p}", t.https);
    let mut failures = Vec::new();
    let mut check = |what: &str, ok: bool, detail: String| {
        eprintln!(
            "{shape:?} {what}: {}",
            if ok { "refused" } else { "ALLOWED" }
        );
        if !ok {
            failures.push(format!("{shape:?} {what}: {detail}"));
        }
    };
    // HTTPS reads, anonymous and as nobody.
    for (who, extra) in [
        ("anonymous", vec![]),
        ("nobody", vec!["-H", &*bearer(&other)]),
    ] {
        let h: Vec<&str> = extra.iter().map(|s| &**s).collect();
        for (m, args) in [("GET", vec!["-L"]), ("HEAD", vec!["-L", "-I"])] {
            let mut a = h.clone();
            a.extend(args);
            let target = url("/atk/home/f");
            a.push(&target);
            let (code, body) = t.curl(&a);
            check(
                &format!("{who} https {m}"),
                matches!(code, 401 | 403) && body != ORIGINAL,
                format!("{code}"),
            );
        }
        let mut a = h.clone();
        let target = url("/atk/home/open");
        a.extend(["-X", "PROPFIND", "-H", "Depth: 1", &target]);
        let (code, body) = t.curl(&a);
        check(
            &format!("{who} https PROPFIND"),
            matches!(code, 401 | 403) && !String::from_utf8_lossy(&body).contains("/g<"),
            format!("{code}"),
        );
    }
    // HTTPS writes as nobody (the directory below is 0777).
    let file = upload_file(t.dir.path(), "up", 1000);
    let auth = bearer(&other);
    let (code, _) = t.curl(&[
        "-L",
        "-H",
        &auth,
        "-T",
        file.to_str().unwrap(),
        &url("/atk/home/open/new"),
    ]);
    check("nobody https PUT", code == 403, format!("{code}"));
    let (code, _) = t.curl(&["-H", &auth, "-X", "DELETE", &url("/atk/home/open/g")]);
    check("nobody https DELETE", code == 403, format!("{code}"));
    let dest = format!("Destination: {}", url("/atk/pub/stolen"));
    let (code, _) = t.curl(&["-H", &auth, "-X", "COPY", "-H", &dest, &url("/atk/home/f")]);
    check("nobody https COPY out", code == 403, format!("{code}"));
    let (code, _) = t.curl(&[
        "-H",
        &auth,
        "-X",
        "MOVE",
        "-H",
        &dest,
        &url("/atk/home/open/g"),
    ]);
    check("nobody https MOVE out", code == 403, format!("{code}"));
    // XRootD, anonymous (unix read-only) and with nobody's token.
    let down = t.local("down");
    for (who, token) in [("anonymous", None), ("nobody", Some(other.as_str()))] {
        let base = if token.is_some() { &t.xrds } else { &t.xrd };
        let mut c = t.cmd("xrdcp");
        if let Some(tok) = token {
            c.env("BEARER_TOKEN", tok);
        }
        let o = t.run(
            c.args(["--nopbar", "-f"])
                .arg(format!("{base}//atk/home/f"))
                .arg(&down),
        );
        check(
            &format!("{who} xrdcp read"),
            !o.status.success() && text(&o).contains("3010"),
            text(&o),
        );
        for args in [
            vec!["stat", "/atk/home/f"],
            vec!["ls", "/atk/home/open"],
            vec!["rm", "/atk/home/open/g"],
            vec!["mkdir", "/atk/home/open/d"],
        ] {
            let mut c = t.cmd("xrdfs");
            if let Some(tok) = token {
                c.env("BEARER_TOKEN", tok);
            }
            let o = t.run(c.arg(base).args(&args));
            check(
                &format!("{who} xrdfs {}", args[0]),
                !o.status.success() && text(&o).contains("3010"),
                text(&o),
            );
        }
        let mut c = t.cmd("xrdcp");
        if let Some(tok) = token {
            c.env("BEARER_TOKEN", tok);
        }
        let o = t.run(
            c.arg("--nopbar")
                .arg(&file)
                .arg(format!("{base}//atk/home/open/up-{who}")),
        );
        check(&format!("{who} xrdcp write"), !o.status.success(), text(&o));
    }
    assert!(failures.is_empty(), "{failures:#?}");
    // Nothing changed, nothing appeared.
    assert_eq!(t.content("/atk/home/f").as_deref(), Some(ORIGINAL));
    assert_eq!(t.content("/atk/home/open/g").as_deref(), Some(ORIGINAL));
    for p in ["/atk/pub/stolen", "/atk/home/open/new", "/atk/home/open/d"] {
        assert!(
            t.rt.block_on(t.core().stat(&Topo::root(), Topo::path(p)))
                .is_err(),
            "{p} appeared"
        );
    }
    // The owner reads and writes there (the clients and the topology would
    // have).
    let (code, body) = t.curl(&["-L", "-H", &bearer(&owner), &url("/atk/home/f")]);
    assert_eq!((code, body.as_slice()), (200, ORIGINAL));
    let (code, _) = t.curl(&[
        "-L",
        "-H",
        &bearer(&owner),
        "-T",
        file.to_str().unwrap(),
        &url("/atk/home/open/new"),
    ]);
    assert!((200..300).contains(&code), "{code}");
    let mut c = t.cmd("xrdcp");
    c.env("BEARER_TOKEN", &owner);
    let o = t.run(
        c.args(["--nopbar", "-f"])
            .arg(format!("{}//atk/home/f", t.xrds))
            .arg(&down),
    );
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(std::fs::read(&down).unwrap(), ORIGINAL);
}
