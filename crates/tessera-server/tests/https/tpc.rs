//! WLCG HTTP third-party copy, pull mode, between two tesserad instances:
//! with curl as FTS would send it, and with gfal-copy.

use crate::{adler32, data, Env};

/// A and B; B drives the copies, as root by a token of A's issuer (which
/// gfal-copy also presents to A, where it reads as the dev identity).
fn pair() -> (Env, Env) {
    let a = Env::start();
    let b = Env::trusting(&a, |_| {});
    (a, b)
}

/// gfal2 checks the CA of both ends: a hashed CA directory with both
/// (each dev CA has its own subject, so their hashed names differ).
fn both_cas(a: &Env, b: &Env) -> std::path::PathBuf {
    let both = b.local("cas");
    std::fs::create_dir_all(&both).unwrap();
    for e in [a, b] {
        for entry in std::fs::read_dir(&e.ca_dir).unwrap() {
            let p = entry.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            if name.ends_with(".0") {
                std::fs::write(both.join(name), std::fs::read(&p).unwrap()).unwrap();
            }
        }
    }
    both
}

#[test]
fn pull_with_curl_markers_and_failures() {
    let (a, b) = pair();
    let body = data(9_000_001, 4);
    let f = a.file("src", &body);
    let src = format!("{}/tpc/src.bin", a.url);
    assert_eq!(a.curl(&["-T", f.to_str().unwrap(), &src]).0, 201);
    // B has no /in/deeper yet: the pull makes the parents, as a PUT does.
    let dst = format!("{}/in/deeper/dst.bin", b.url);
    let (code, out) = b.copy(
        &dst,
        &[
            &format!("Source: {src}"),
            "Credential: none",
            "TransferHeaderX-Test: forwarded",
        ],
    );
    assert_eq!(code, 201, "{out}");
    assert!(
        out.contains("Perf Marker") && out.contains("Stripe Bytes Transferred: 9000001"),
        "{out}"
    );
    assert_eq!(out.lines().last(), Some("success: Created"), "{out}");
    // The copy and its checksum are complete when success is reported.
    let (code, got) = b.curl(&[&dst]);
    assert!(code == 200 && got == body);
    let o = b.curl_ok(&["-I", "-H", "Want-Digest: adler32", &dst]);
    assert!(
        o.contains(&format!("digest: adler32={}", adler32(&body))),
        "{o}"
    );
    // Overwrite: F on an existing file: 412.
    assert_eq!(
        b.copy(&dst, &[&format!("Source: {src}"), "Overwrite: F"]).0,
        412
    );
    // An unsupported credential type: 400; delegation (`gridsite`) is
    // refused naming macaroons as the way.
    assert_eq!(
        b.copy(&dst, &[&format!("Source: {src}"), "Credential: x509"])
            .0,
        400
    );
    let (code, why) = b.copy(&dst, &[&format!("Source: {src}"), "Credential: gridsite"]);
    assert!(code == 400 && why.contains("macaroon"), "{code} {why}");
    // A stream count out of range: 400.
    let (code, _) = b.copy(
        &dst,
        &[&format!("Source: {src}"), "X-Number-Of-Streams: 101"],
    );
    assert_eq!(code, 400);
    // A missing source: 201, then a failure line, and nothing left.
    let gone = format!("{}/in/never.bin", b.url);
    let (code, out) = b.copy(&gone, &[&format!("Source: {}/tpc/missing", a.url)]);
    assert_eq!(code, 201);
    assert!(
        out.lines()
            .last()
            .is_some_and(|l| l.starts_with("failure: ") && l.contains("404")),
        "{out}"
    );
    assert_eq!(b.curl(&[&gone]).0, 404);
    // A source B does not trust: failure, nothing left.
    let c = Env::start();
    let cu = format!("{}/x", c.url);
    assert_eq!(c.curl(&["-T", f.to_str().unwrap(), &cu]).0, 201);
    let (_, out) = b.copy(&gone, &[&format!("Source: {cu}")]);
    assert!(out.contains("failure: "), "untrusted CA");
    assert_eq!(b.curl(&[&gone]).0, 404);
}

#[test]
fn gfal_copy_pull_between_two_servers() {
    let (a, b) = pair();
    let body = data(3_333_333, 5);
    let f = a.file("src", &body);
    let src = format!("{}/g/src.bin", a.url);
    assert_eq!(a.curl(&["-T", f.to_str().unwrap(), &src]).0, 201);
    assert_eq!(b.curl(&["-X", "MKCOL", &format!("{}/g", b.url)]).0, 201);
    let dst = format!("{}/g/dst.bin", b.url);
    let both = both_cas(&a, &b);
    let o = b
        .cmd("gfal-copy")
        .env("X509_CERT_DIR", &both)
        .env("BEARER_TOKEN", b.token.as_ref().unwrap())
        .args(["--copy-mode", "pull", "-K", "ADLER32", &src, &dst])
        .output()
        .unwrap();
    let listing: Vec<String> = std::fs::read_dir(&both)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        o.status.success(),
        "gfal-copy pull: {}\nCA dir: {listing:?}",
        crate::common::out_err(&o)
    );
    assert!(b.curl(&[&dst]).1 == body);
}

#[test]
fn push_with_curl_and_gfal_copy() {
    let (a, b) = pair();
    // gfal-copy hands B's token on to A (TransferHeaderAuthorization),
    // where it acts as the dev identity: A's /p lets it write.
    a.rt.block_on(a.core().mkdir(&Env::root(), Env::path("/p"), 0o777, false))
        .unwrap();
    let body = data(5_000_003, 6);
    let f = b.file("src", &body);
    // B holds the file and pushes it to A (B trusts A's CA).
    let src = format!("{}/p/src.bin", b.url);
    assert_eq!(b.curl(&["-T", f.to_str().unwrap(), &src]).0, 201);
    let dst = format!("{}/p/dst.bin", a.url);
    let (code, out) = b.copy(&src, &[&format!("Destination: {dst}"), "Credential: none"]);
    assert_eq!(code, 201, "{out}");
    assert_eq!(out.lines().last(), Some("success: Created"), "{out}");
    assert!(a.curl(&[&dst]).1 == body);
    // A destination that refuses (its parent is a file): a failure line,
    // and nothing at the destination.
    let (_, out) = b.copy(&src, &[&format!("Destination: {dst}/child")]);
    assert!(
        out.lines()
            .last()
            // The 409, or the broken pipe when the refusal closes the
            // connection before the whole body was sent.
            .is_some_and(|l| l.starts_with("failure: ")),
        "{out}"
    );
    assert_eq!(a.curl(&[&format!("{dst}/child")]).0, 409);
    // gfal-copy in push mode.
    let both = both_cas(&a, &b);
    let dst2 = format!("{}/p/dst2.bin", a.url);
    crate::run_ok(
        b.cmd("gfal-copy")
            .env("X509_CERT_DIR", &both)
            .env("BEARER_TOKEN", b.token.as_ref().unwrap())
            .args(["--copy-mode", "push", "-K", "ADLER32", &src, &dst2]),
        "gfal-copy push",
    );
    assert!(a.curl(&[&dst2]).1 == body);
}

#[test]
fn multi_stream_pull_reads_ranges_in_parallel() {
    let (a, b) = pair();
    let body = data(30_000_017, 8);
    let f = a.file("src", &body);
    let src = format!("{}/ms/src.bin", a.url);
    assert_eq!(a.curl(&["-T", f.to_str().unwrap(), &src]).0, 201);
    assert_eq!(b.curl(&["-X", "MKCOL", &format!("{}/ms", b.url)]).0, 201);
    let dst = format!("{}/ms/dst.bin", b.url);
    let (code, out) = b.copy(
        &dst,
        &[
            &format!("Source: {src}"),
            "Credential: none",
            "X-Number-Of-Streams: 4",
        ],
    );
    assert_eq!(code, 201, "{out}");
    assert_eq!(out.lines().last(), Some("success: Created"), "{out}");
    assert!(b.curl(&[&dst]).1 == body, "bytes differ");
    let st =
        b.rt.block_on(b.core().stat(&Env::root(), Env::path("/ms/dst.bin")))
            .expect("stat");
    assert_eq!(st.checksum.expect("adler32").hex(), adler32(&body));
    // The source served a HEAD and one GET per 8 MiB range (4 ranges),
    // not one GET of the whole file.
    // (The access log is written by a thread of its own: poll briefly.)
    let reads = || {
        std::fs::read_to_string(a.dir.path().join("data/logs/access.log"))
            .unwrap()
            .lines()
            .filter(|l| {
                l.contains("\"op\":\"open_read\"") && l.contains("\"path\":\"/ms/src.bin\"")
            })
            .count()
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while reads() < 5 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(reads() >= 5, "{} reads of the source", reads());
    // A source that does not answer ranges fails the copy, leaving nothing.
    let (code, out) = b.copy(
        &format!("{}/ms/none.bin", b.url),
        &[
            &format!("Source: {}/ms/missing.bin", a.url),
            "X-Number-Of-Streams: 4",
        ],
    );
    assert_eq!(code, 201, "{out}");
    assert!(
        out.lines().last().unwrap().starts_with("failure: "),
        "{out}"
    );
    assert_eq!(b.curl(&[&format!("{}/ms/none.bin", b.url)]).0, 404);
}

#[test]
fn fts_style_pull_with_tokens_at_both_ends() {
    use tessera_server::config::AnonymousCfg;
    let a = Env::start_with(|c| c.https.anonymous = AnonymousCfg::ReadOnly);
    let a_ca = a.ca.clone();
    let b = Env::start_with(move |c| {
        c.https.anonymous = AnonymousCfg::ReadOnly;
        c.https.tpc_ca_files.push(a_ca);
        // B's tokens act as the dev identity, not root: loopback sources
        // must be allowed explicitly.
        c.https.tpc_allow = vec!["127.0.0.0/8".into()];
    });
    // A's file is readable only by the identity A's tokens map to.
    let body = data(2_000_003, 12);
    owner_only_file(&a, &body);
    b.rt.block_on(async {
        b.core()
            .mkdir(&Env::root(), Env::path("/in"), 0o777, false)
            .await
            .unwrap();
    });
    let ta = crate::tokens::token(&a, "storage.read:/src");
    let tb = crate::tokens::token(&b, "storage.create:/in");
    let src = format!("{}/src/f.bin", a.url);
    let copy = |dst: &str, with_source_token: bool| {
        let (source, auth) = (
            format!("Source: {src}"),
            format!("Authorization: Bearer {tb}"),
        );
        let forwarded = format!("TransferHeaderAuthorization: Bearer {ta}");
        let mut headers = vec![source.as_str(), "Credential: none", auth.as_str()];
        if with_source_token {
            headers.push(&forwarded);
        }
        b.copy(&format!("{}{dst}", b.url), &headers)
    };
    // Without the source's token, A refuses and nothing is left at B.
    let (code, out) = copy("/in/no.bin", false);
    assert_eq!(code, 201, "{out}");
    assert!(
        out.lines().last().unwrap().starts_with("failure: "),
        "{out}"
    );
    assert_eq!(b.curl(&[&format!("{}/in/no.bin", b.url)]).0, 404);
    // With it (forwarded as Authorization), the copy succeeds.
    let (code, out) = copy("/in/yes.bin", true);
    assert_eq!(
        (code, out.lines().last()),
        (201, Some("success: Created")),
        "{out}"
    );
    assert!(b.curl(&[&format!("{}/in/yes.bin", b.url)]).1 == body);
    // B's token does not allow writing elsewhere on B.
    let (code, _) = copy("/elsewhere.bin", true);
    assert_eq!(code, 403);
    // The destination's copy is complete, its checksum too.
    let st =
        b.rt.block_on(b.core().stat(&Env::root(), Env::path("/in/yes.bin")))
            .unwrap();
    assert_eq!(st.checksum.unwrap().hex(), adler32(&body));
}

/// gfal-copy driving a pull with one bearer token (`BEARER_TOKEN`), as
/// FTS hands gfal2 a token: B trusts A's issuer, the token reads at A and
/// creates (and reads, for the checksum) at B. gfal2 first checks that the
/// destination does not exist, which a token that may only create there
/// must be told as 404, not 403. Without the token, nothing is copied.
#[test]
fn gfal_copy_pull_with_a_token() {
    use tessera_server::config::AnonymousCfg;
    let a = Env::start_with(|c| c.https.anonymous = AnonymousCfg::ReadOnly);
    let dev = a.dir.path().join("data").join("dev");
    let info = tessera_auth::dev::DevIssuer::read_info(&dev).unwrap();
    let (a_ca, iss) = (a.ca.clone(), info.issuer.clone());
    let b = Env::start_with(move |c| {
        c.https.anonymous = AnonymousCfg::ReadOnly;
        c.https.tpc_ca_files.push(a_ca.clone());
        c.auth.ca_files.push(a_ca);
        c.auth.issuers.push(crate::root_issuer(iss));
    });
    let body = data(2_500_001, 13);
    owner_only_file(&a, &body);
    assert_eq!(
        b.copy(&format!("{}/in", b.url), &[]).0,
        400,
        "COPY without Source or Destination"
    );
    b.rt.block_on(async {
        b.core()
            .mkdir(&Env::root(), Env::path("/in"), 0o777, false)
            .await
            .unwrap();
    });
    // Read at the destination too: gfal2 compares the checksum at both
    // ends (`-K ADLER32`), and a checksum is read from the data.
    let tok = crate::tokens::token(&a, "storage.read:/src storage.create:/in storage.read:/in");
    let both = both_cas(&a, &b);
    let src = format!("{}/src/f.bin", a.url);
    let gfal = |dst: &str, token: Option<&str>| {
        let mut c = b.cmd("gfal-copy");
        c.env("X509_CERT_DIR", &both);
        if let Some(t) = token {
            c.env("BEARER_TOKEN", t);
        }
        c.args(["--copy-mode", "pull", "-K", "ADLER32", &src, dst])
            .output()
            .unwrap()
    };
    let no = format!("{}/in/no.bin", b.url);
    assert!(!gfal(&no, None).status.success(), "no token, no copy");
    assert_eq!(b.curl(&[&no]).0, 404);
    let yes = format!("{}/in/yes.bin", b.url);
    let o = gfal(&yes, Some(&tok));
    assert!(
        o.status.success(),
        "gfal-copy pull with a token: {}\n{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
        std::fs::read_to_string(b.dir.path().join("data/logs/access.log")).unwrap_or_default()
    );
    assert!(b.curl(&[&yes]).1 == body);
}

/// `/src/f.bin` on `e` with `body`, readable only by the identity
/// development tokens act as (`/src` 0700, the file 0600, both its own).
fn owner_only_file(e: &Env, body: &[u8]) {
    let core = e.core();
    let dev = tessera_types::Identity::user(DEV_UID, DEV_UID, "dev", "test");
    e.rt.block_on(async {
        core.mkdir(&Env::root(), Env::path("/src"), 0o700, false)
            .await
            .unwrap();
        let own = tessera_core::SetAttr {
            uid: Some(DEV_UID),
            gid: Some(DEV_UID),
            ..Default::default()
        };
        core.setattr(&Env::root(), Env::path("/src"), own)
            .await
            .unwrap();
    });
    let mut w = core
        .open_write(&dev, &Env::path("/src/f.bin"), 0o600, false, 0)
        .unwrap();
    w.write(body).unwrap();
    w.close().unwrap();
}

/// Who development tokens act as (`[auth] dev_uid`, its default).
const DEV_UID: u32 = 1000;

/// A multi-stream pull's pieces come from the process's memory budget:
/// four streams into a server with 16 MiB (room for two 8 MiB pieces) still
/// copy a 30 MB file whole, and give every byte back; with none of the
/// budget free the pull fails and leaves nothing.
#[test]
fn multi_stream_pull_holds_its_pieces_under_the_budget() {
    let a = Env::start();
    let b = Env::trusting(&a, |c| {
        c.buffers.max_mib = Some(16);
        c.buffers.wait_ms = Some(300);
    });
    let body = data(30_000_017, 9);
    let f = a.file("src", &body);
    let src = format!("{}/mb/src.bin", a.url);
    assert_eq!(a.curl(&["-T", f.to_str().unwrap(), &src]).0, 201);
    assert_eq!(b.curl(&["-X", "MKCOL", &format!("{}/mb", b.url)]).0, 201);
    let pull = |dst: &str| {
        b.copy(
            &format!("{}/mb/{dst}", b.url),
            &[
                &format!("Source: {src}"),
                "Credential: none",
                "X-Number-Of-Streams: 4",
            ],
        )
    };
    let buffers = b.server.as_ref().unwrap().buffers.clone();
    // The most the budget held while the pull ran (sampled).
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sampler = {
        let (buffers, done) = (buffers.clone(), done.clone());
        std::thread::spawn(move || {
            let mut most = 0;
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                most = most.max(buffers.in_use());
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            most
        })
    };
    let (code, out) = pull("dst.bin");
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    let most = sampler.join().unwrap();
    assert_eq!(code, 201, "{out}");
    assert_eq!(out.lines().last(), Some("success: Created"), "{out}");
    assert!(b.curl(&[&format!("{}/mb/dst.bin", b.url)]).1 == body);
    assert!(
        (8 << 20..=16 << 20).contains(&most),
        "pieces held {most} bytes of the budget at most"
    );
    let t = std::time::Instant::now();
    while buffers.in_use() > 0 && t.elapsed() < std::time::Duration::from_secs(5) {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(buffers.in_use(), 0, "every piece gave its bytes back");

    let all =
        b.rt.block_on(buffers.lease(16 << 20))
            .expect("the whole budget");
    let (code, out) = pull("refused.bin");
    assert_eq!(code, 201, "{out}");
    let last = out.lines().last().unwrap_or_default().to_string();
    assert!(
        last.starts_with("failure: ") && last.contains("memory"),
        "{out}"
    );
    drop(all);
    assert_eq!(b.curl(&[&format!("{}/mb/refused.bin", b.url)]).0, 404);
}
