//! Third-party copies between tesserad and the reference: Debian's xrootd
//! server with its HTTP (XrdHttp) and TPC (XrdHttpTPC) plugins, started
//! by the test on loopback as the `xrootd` user, with tesserad's dev
//! certificate. gfal-copy drives pull, push and streamed copies in both
//! directions, checking adler32 at both ends.

use crate::{data, Env};
use std::path::{Path, PathBuf};
use std::process::Child;

/// Debian's xrootd with XrdHttp and XrdHttpTPC; stopped (by PID) on drop.
pub struct Reference {
    child: Child,
    pub url: String,
    /// Its root:// address.
    pub root: String,
    pub dir: PathBuf,
}

impl Drop for Reference {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn free_port() -> u16 {
    crate::common::spare_ports::<1>()[0]
}

use crate::common::chown_xrootd;

impl Reference {
    /// With tesserad's dev certificate and CA.
    pub fn start(tess: &Env) -> Reference {
        let dev = tess.dir.path().join("data").join("dev");
        Reference::launch(
            tess,
            [&dev.join("server.pem"), &dev.join("server.key")],
            &dev.join("certificates"),
            |_| String::new(),
        )
    }

    /// With host certificate and key `cred`, CAs from `ca_dir`, and the
    /// configuration lines `extra` returns (given the directory whose
    /// `pki/` it may write files into).
    pub fn launch(
        tess: &Env,
        cred: [&Path; 2],
        ca_dir: &Path,
        extra: impl FnOnce(&Path) -> String,
    ) -> Reference {
        assert!(
            Path::new("/usr/bin/xrootd").exists(),
            "Debian's xrootd server not found: apt-get install xrootd-server \
             xrootd-server-plugins (scripts/test does)"
        );
        // Its own directory, readable by the xrootd user (it refuses root).
        let dir = PathBuf::from(format!(
            "/var/tmp/tessera-xrd-ref-{}-{}",
            std::process::id(),
            free_port()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        for d in ["data", "run", "home", "pki"] {
            std::fs::create_dir_all(dir.join(d)).unwrap();
        }
        std::fs::copy(cred[0], dir.join("pki/cert.pem")).unwrap();
        std::fs::copy(cred[1], dir.join("pki/key.pem")).unwrap();
        std::fs::create_dir_all(dir.join("pki/certificates")).unwrap();
        for e in std::fs::read_dir(ca_dir).unwrap() {
            let p = e.unwrap().path();
            std::fs::write(
                dir.join("pki/certificates").join(p.file_name().unwrap()),
                std::fs::read(&p).unwrap(),
            )
            .unwrap();
        }
        let [xport, hport] = crate::common::spare_ports::<2>();
        let d = dir.display();
        let extra = extra(&dir);
        // The CA directive unless the caller gives its own.
        let tlsca = if extra.contains("xrd.tlsca") {
            String::new()
        } else {
            format!("xrd.tlsca certdir {d}/pki/certificates\n")
        };
        let cfg = format!(
            "all.export /\n\
             oss.localroot {d}/data\n\
             all.adminpath {d}/run\n\
             all.pidpath {d}/run\n\
             xrd.port {xport}\n\
             all.role server\n\
             xrootd.chksum adler32\n\
             xrd.tls {d}/pki/cert.pem {d}/pki/key.pem\n\
             {tlsca}\
             xrootd.tls capable all\n\
             xrd.protocol XrdHttp:{hport} libXrdHttp.so\n\
             http.exthandler xrdtpc libXrdHttpTPC.so\n\
             http.listingdeny no\n\
             http.trace all\n{extra}"
        );
        std::fs::write(dir.join("xrd.cfg"), cfg).unwrap();
        chown_xrootd(&dir);
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(
            dir.join("pki/key.pem"),
            std::fs::Permissions::from_mode(0o400),
        )
        .unwrap();
        let child = crate::common::spawn_xrootd(&dir, "ref");
        let r = Reference {
            child,
            url: format!("https://localhost:{hport}"),
            root: format!("root://localhost:{xport}"),
            dir,
        };
        // Up to 30 s: on a loaded 2-core machine the reference's start
        // (TLS set-up, plug-ins) has taken over 10 s.
        for _ in 0..300 {
            if tess.curl(&["-X", "OPTIONS", &format!("{}/", r.url)]).0 == 200 {
                return r;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        panic!(
            "the reference xrootd did not start (ports {xport}, {hport}): {}",
            r.log_tail()
        );
    }
}

impl Reference {
    /// The end of its log (for failure messages).
    pub fn log_tail(&self) -> String {
        let raw = std::fs::read(self.dir.join("ref").join("xrootd.log")).unwrap_or_default();
        let text = String::from_utf8_lossy(&raw);
        let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        lines[lines.len().saturating_sub(40)..].join("\n")
    }
}

fn gfal_copy(e: &Env, x: &Reference, mode: &str, src: &str, dst: &str) {
    let o = e
        .cmd("gfal-copy")
        .env("BEARER_TOKEN", e.token.as_ref().expect("a token"))
        .args(["-t", "240", "--copy-mode", mode, "-K", "ADLER32", src, dst])
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "gfal-copy {mode} {src} {dst}: {}\nreference log:\n{}",
        crate::common::out_err(&o),
        x.log_tail()
    );
}

/// tesserad, trusting its own dev CA for the copies it drives, and the
/// reference (which uses the same certificate); the copies tesserad drives
/// carry a token of a third server's issuer (kept running: it serves its
/// keys), which tesserad takes as root.
fn both() -> (Env, Reference, Env) {
    let issuer = Env::start();
    let e = Env::trusting(&issuer, |cfg| {
        let ca = cfg.data_dir.join("dev").join("ca.pem");
        cfg.https.tpc_ca_files.push(ca);
    });
    let x = Reference::start(&e);
    (e, x, issuer)
}

#[test]
fn third_party_copies_with_debian_xrootd_both_ways() {
    let (e, x, _issuer) = both();
    let body = data(7_340_033, 12);
    let f = e.file("src", &body);
    let (code, _) = e.curl(&["-T", f.to_str().unwrap(), &format!("{}/ref/t.bin", x.url)]);
    assert!(
        (200..300).contains(&code),
        "upload to the reference: {code}"
    );
    let (code, _) = e.curl(&["-T", f.to_str().unwrap(), &format!("{}/ref/t.bin", e.url)]);
    assert_eq!(code, 201);
    let same = |url: &str| {
        let (code, got) = e.curl(&[url]);
        assert_eq!(code, 200, "{url}");
        assert!(got == body, "{url}: bytes differ");
    };
    // gfal-copy in `mode` of t.bin at `from` to `name` at `to`, checked.
    let gfal = |mode: &str, from: &str, to: &str, name: &str| {
        let dst = format!("{to}/ref/{name}");
        gfal_copy(&e, &x, mode, &format!("{from}/ref/t.bin"), &dst);
        same(&dst);
    };
    // tesserad is the active side: it pulls from, and pushes to, xrootd.
    gfal("pull", &x.url, &e.url, "pulled.bin");
    gfal("push", &e.url, &x.url, "pushed.bin");
    // xrootd is the active side: it pulls from, and pushes to, tesserad.
    // Driven as FTS does with tokens (`Credential: none`): gfal2 without a
    // token asks for `Credential: gridsite` (X.509 delegation), which the
    // reference refuses unless it is set up for delegation.
    // The remote end is tesserad: xrootd forwards the token FTS hands it
    // (`TransferHeaderAuthorization`), since tesserad's anonymous clients
    // only read.
    let fwd = format!(
        "TransferHeaderAuthorization: Bearer {}",
        e.token.as_ref().expect("a token")
    );
    let copy = |dir: &str, remote: String, at: String| {
        let (code, out) = e.copy(
            &at,
            &[&format!("{dir}: {remote}"), "Credential: none", &fwd],
        );
        assert_eq!(code, 201, "{out}\n{}", x.log_tail());
        assert_eq!(
            out.lines().last(),
            Some("success: Created"),
            "{out}\n{}",
            x.log_tail()
        );
    };
    copy(
        "Source",
        format!("{}/ref/t.bin", e.url),
        format!("{}/ref/xpulled.bin", x.url),
    );
    same(&format!("{}/ref/xpulled.bin", x.url));
    copy(
        "Destination",
        format!("{}/ref/xpushed.bin", e.url),
        format!("{}/ref/t.bin", x.url),
    );
    same(&format!("{}/ref/xpushed.bin", e.url));
    // tesserad pulls from xrootd with four streams (range requests).
    let (code, out) = e.copy(
        &format!("{}/ref/multi.bin", e.url),
        &[
            &format!("Source: {}/ref/t.bin", x.url),
            "X-Number-Of-Streams: 4",
        ],
    );
    assert_eq!(
        (code, out.lines().last()),
        (201, Some("success: Created")),
        "{out}"
    );
    same(&format!("{}/ref/multi.bin", e.url));
    // adler32 agrees at both ends.
    let sum = |url: String| {
        let o = e.ok("gfal-sum", &[&url, "ADLER32"]);
        o.split_whitespace().last().unwrap_or("").to_string()
    };
    let want = crate::adler32(&body);
    for u in [
        format!("{}/ref/xpulled.bin", x.url),
        format!("{}/ref/xpushed.bin", e.url),
        format!("{}/ref/pulled.bin", e.url),
        format!("{}/ref/pushed.bin", x.url),
        format!("{}/ref/multi.bin", e.url),
    ] {
        assert_eq!(sum(u.clone()), want, "{u}");
    }
    // Streamed through the client, both ways.
    gfal("streamed", &e.url, &x.url, "s1.bin");
    gfal("streamed", &x.url, &e.url, "s2.bin");

    // The source's announced digest is checked: asked for with
    // TransferHeaderWant-Digest, one stream and four.
    let pull_checked = |name: &str, streams: &str| {
        let (code, out) = e.copy(
            &format!("{}/ref/{name}", e.url),
            &[
                &format!("Source: {}/ref/t.bin", x.url),
                "TransferHeaderWant-Digest: adler32",
                &format!("X-Number-Of-Streams: {streams}"),
            ],
        );
        assert_eq!(code, 201);
        out
    };
    for (name, n) in [("d1.bin", "1"), ("d4.bin", "4")] {
        let out = pull_checked(name, n);
        assert_eq!(out.lines().last(), Some("success: Created"), "{out}");
        same(&format!("{}/ref/{name}", e.url));
    }
    // The reference keeps the adler32 it computed with the file's mtime;
    // change the data under it, same size and mtime, and it announces a
    // stale one: the copy fails, and nothing is left at the destination.
    let file = x.dir.join("data/ref/t.bin");
    let mtime = std::fs::metadata(&file).unwrap().modified().unwrap();
    {
        use std::io::{Seek, Write};
        let mut w = std::fs::OpenOptions::new().write(true).open(&file).unwrap();
        w.seek(std::io::SeekFrom::Start(1000)).unwrap();
        w.write_all(b"not what the checksum says").unwrap();
        w.set_modified(mtime).unwrap();
    }
    for (name, n) in [("bad1.bin", "1"), ("bad4.bin", "4")] {
        let out = pull_checked(name, n);
        let last = out.lines().last().unwrap_or_default();
        assert!(
            last.starts_with("failure: ") && last.contains("checksum mismatch"),
            "{out}"
        );
        assert_eq!(e.curl(&[&format!("{}/ref/{name}", e.url)]).0, 404);
    }
    // A file being replaced stays as it was.
    let out = pull_checked("d1.bin", "1");
    assert!(
        out.lines()
            .last()
            .unwrap_or_default()
            .starts_with("failure: "),
        "{out}"
    );
    same(&format!("{}/ref/d1.bin", e.url));
}

/// XrdHttp hangs on a PUT whose final TLS record straddles the end of its
/// 1 MiB buffer (the record's rest waits in OpenSSL, unseen by its
/// poller): pushes of k MiB + 1 bytes, the last byte sent alone, all end.
#[test]
fn pushes_just_past_a_mebibyte_reach_the_reference() {
    let (e, x, _issuer) = both();
    let f = e.local("src");
    for k in 1..=8u64 {
        std::fs::write(&f, data((k << 20) as usize + 1, k)).unwrap();
        let (code, _) = e.curl(&["-T", f.to_str().unwrap(), &format!("{}/s{k}", e.url)]);
        assert_eq!(code, 201);
    }
    for round in 0..3 {
        for k in 1..=8u64 {
            let to = format!("Destination: {}/ref/p{round}-{k}", x.url);
            let auth = format!("Authorization: Bearer {}", e.token.as_ref().unwrap());
            let (code, out) = e.curl(&[
                "-X",
                "COPY",
                "-m",
                "60",
                "-H",
                &auth,
                "-H",
                &to,
                "-H",
                "Credential: none",
                &format!("{}/s{k}", e.url),
            ]);
            let out = String::from_utf8_lossy(&out);
            assert_eq!(
                (code, out.lines().last()),
                (201, Some("success: Created")),
                "push {round} of {k} MiB + 1 B\n{}",
                x.log_tail()
            );
        }
    }
    for k in 1..=8u64 {
        let (code, got) = e.curl(&[&format!("{}/ref/p2-{k}", x.url)]);
        assert_eq!(code, 200);
        assert!(got == data((k << 20) as usize + 1, k), "p2-{k} differs");
    }
}
