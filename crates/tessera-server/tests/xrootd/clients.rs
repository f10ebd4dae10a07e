//! xrdcp and xrdfs: uploads and downloads with end-to-end adler32, the
//! overwrite rules, recursive and parallel copies, the namespace commands,
//! RAIN files, and the same over roots://.

use crate::{adler32, data, evict_page_cache, reads_in_line, reads_in_line_after, write_file, Env};

fn roundtrip(e: &Env, remote: &str, bytes: &[u8], tag: &str) {
    let src = e.local(&format!("{tag}.up"));
    let back = e.local(&format!("{tag}.down"));
    write_file(&src, bytes);
    let url = format!("{}/{remote}", e.url);
    e.ok(
        "xrdcp",
        &[
            "--nopbar",
            "--cksum",
            "adler32",
            src.to_str().unwrap(),
            &url,
        ],
    );
    e.ok(
        "xrdcp",
        &[
            "--nopbar",
            "--cksum",
            "adler32",
            &url,
            back.to_str().unwrap(),
        ],
    );
    let got = std::fs::read(&back).expect("downloaded");
    assert_eq!(got.len(), bytes.len(), "{tag}: size");
    assert!(got == bytes, "{tag}: bytes differ");
    let q = e.ok("xrdfs", &[&e.url, "query", "checksum", remote]);
    assert_eq!(q.trim(), format!("adler32 {}", adler32(bytes)), "{tag}");
    let _ = std::fs::remove_file(&src);
    let _ = std::fs::remove_file(&back);
}

#[test]
fn xrdcp_up_and_down_with_adler32() {
    let e = Env::start();
    roundtrip(&e, "/up/empty", &[], "empty");
    roundtrip(&e, "/up/one", b"x", "one");
    roundtrip(&e, "/up/mib", &data(1 << 20, 1), "mib");
    roundtrip(&e, "/up/gib", &data(1 << 30, 2), "gib");
    // A RAIN 4+2 directory (EOS attribute names).
    e.rain_dir("/rain");
    roundtrip(&e, "/rain/f", &data(10 << 20, 3), "rain");
}

#[test]
fn crc32c_end_to_end() {
    let e = Env::start();
    let body = data(5 << 20, 21);
    let src = e.local("c.up");
    write_file(&src, &body);
    let url = format!("{}//crc/f", e.url);
    // xrdcp computes crc32c itself and compares with the server's.
    checked_round_trip(&e, "crc32c", (&src, &body), &url, "c.down");
    let q = e.ok(
        "xrdfs",
        &[&e.url, "query", "checksum", "/crc/f?cks.type=crc32c"],
    );
    assert_eq!(q.trim(), format!("crc32c {:08x}", crc32c::crc32c(&body)));
    let msg = e.fails(
        "xrdfs",
        &[&e.url, "query", "checksum", "/crc/f?cks.type=md5"],
    );
    assert!(msg.contains("not supported"), "{msg}");
}

#[test]
fn overwrite_needs_f() {
    let e = Env::start();
    let a = e.local("a");
    let b = e.local("b");
    write_file(&a, b"first version");
    write_file(&b, b"second, longer version");
    let url = format!("{}//o/file", e.url);
    e.ok("xrdcp", &["--nopbar", a.to_str().unwrap(), &url]);
    let msg = e.fails("xrdcp", &["--nopbar", b.to_str().unwrap(), &url]);
    assert!(msg.contains("exists"), "{msg}");
    e.ok("xrdcp", &["--nopbar", "-f", b.to_str().unwrap(), &url]);
    let back = e.local("back");
    e.ok("xrdcp", &["--nopbar", &url, back.to_str().unwrap()]);
    assert_eq!(std::fs::read(&back).unwrap(), b"second, longer version");
}

#[test]
fn recursive_and_parallel_copies() {
    let e = Env::start();
    let tree = e.local("tree");
    for d in ["a", "a/b", "c"] {
        std::fs::create_dir_all(tree.join(d)).unwrap();
    }
    let mut files = Vec::new();
    for (i, d) in ["a", "a/b", "c", "a", "c"].iter().enumerate() {
        for j in 0..10 {
            let rel = format!("{d}/f{i}-{j}");
            let body = data(100 + i * 1000 + j, (i * 10 + j) as u64);
            write_file(&tree.join(&rel), &body);
            files.push((rel, body));
        }
    }
    e.ok("xrdfs", &[&e.url, "mkdir", "-p", "/dst"]);
    e.ok(
        "xrdcp",
        &[
            "--nopbar",
            "-r",
            "--parallel",
            "8",
            tree.to_str().unwrap(),
            &format!("{}//dst/", e.url),
        ],
    );
    let down = e.local("down");
    std::fs::create_dir_all(&down).unwrap();
    e.ok(
        "xrdcp",
        &[
            "--nopbar",
            "-r",
            &format!("{}//dst/tree", e.url),
            down.to_str().unwrap(),
        ],
    );
    for (rel, body) in &files {
        let got = std::fs::read(down.join("tree").join(rel)).unwrap_or_else(|_| panic!("{rel}"));
        assert!(&got == body, "{rel} differs");
    }
    let ls = e.ok("xrdfs", &[&e.url, "ls", "/dst/tree/a"]);
    assert!(
        ls.contains("/dst/tree/a/b") && ls.contains("/dst/tree/a/f0-0"),
        "{ls}"
    );
}

#[test]
fn xrdfs_commands() {
    let e = Env::start();
    let u = e.url.as_str();
    e.ok("xrdfs", &[u, "mkdir", "-p", "/x/y/z"]);
    let f = e.local("f");
    write_file(&f, &data(12345, 9));
    e.ok(
        "xrdcp",
        &["--nopbar", f.to_str().unwrap(), &format!("{u}//x/y/file")],
    );
    let ls = e.ok("xrdfs", &[u, "ls", "/x/y"]);
    assert_eq!(
        ls.lines().collect::<Vec<_>>(),
        ["/x/y/file", "/x/y/z"],
        "{ls}"
    );
    let ll = e.ok("xrdfs", &[u, "ls", "-l", "/x/y"]);
    assert!(
        ll.lines()
            .any(|l| l.starts_with("-rw") && l.contains(" 12345 ") && l.ends_with("/x/y/file")),
        "{ll}"
    );
    // Owner and group by name, as the reference server shows them.
    assert!(
        ll.lines()
            .all(|l| l.split_whitespace().nth(1) == Some("root")
                && l.split_whitespace().nth(2) == Some("root")),
        "{ll}"
    );
    assert!(
        ll.lines()
            .any(|l| l.starts_with('d') && l.ends_with("/x/y/z")),
        "{ll}"
    );
    let st = e.ok("xrdfs", &[u, "stat", "/x/y/file"]);
    assert!(
        st.contains("Size:   12345") && st.contains("IsReadable"),
        "{st}"
    );
    let st = e.ok("xrdfs", &[u, "stat", "/x/y/z"]);
    assert!(st.contains("IsDir"), "{st}");
    let msg = e.fails("xrdfs", &[u, "rmdir", "/x/y"]);
    assert!(msg.contains("not empty"), "{msg}");
    e.ok("xrdfs", &[u, "mv", "/x/y/file", "/x/moved"]);
    e.fails("xrdfs", &[u, "stat", "/x/y/file"]);
    let q = e.ok("xrdfs", &[u, "query", "checksum", "/x/moved"]);
    assert_eq!(q.trim(), format!("adler32 {}", adler32(&data(12345, 9))));
    let loc = e.ok("xrdfs", &[u, "locate", "/x/moved"]);
    assert!(loc.contains("Server ReadWrite"), "{loc}");
    e.ok("xrdfs", &[u, "rm", "/x/moved"]);
    e.ok("xrdfs", &[u, "rmdir", "/x/y/z"]);
    e.ok("xrdfs", &[u, "rmdir", "/x/y"]);
    let ls = e.ok("xrdfs", &[u, "ls", "/x"]);
    assert_eq!(ls.trim(), "", "{ls}");
    let cfg = e.ok("xrdfs", &[u, "query", "config", "chksum", "tpc"]);
    // Each value on its own line, the last one too (as the reference).
    assert_eq!(
        cfg.trim_end().lines().collect::<Vec<_>>(),
        ["0:adler32,1:crc32c", "tpc"]
    );
    // statvfs (kXR_stat with kXR_vfs) and spaceinfo: the filesystems' space.
    let field = |text: &str, name: &str| -> u64 {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("{name} in {text}"))
    };
    let vfs = e.ok("xrdfs", &[u, "statvfs", "/"]);
    assert_eq!(field(&vfs, "Nodes with RW space:"), 1, "{vfs}");
    assert!(field(&vfs, "Size of largest RW space (MB):") > 0, "{vfs}");
    assert!(field(&vfs, "Utilization of RW space (%):") <= 100, "{vfs}");
    let sp = e.ok("xrdfs", &[u, "spaceinfo", "/"]);
    let (total, free) = (field(&sp, "Total:"), field(&sp, "Free:"));
    assert!(total >= free && free > 0, "{sp}");
    // (Other tests write beside this one: the same space within 4 GiB.)
    let vfs_free = field(&vfs, "Size of largest RW space (MB):");
    assert!(vfs_free.abs_diff(free >> 20) < 4096, "{vfs}\n{sp}");
}

#[test]
fn roots_with_the_dev_ca() {
    let e = Env::start();
    let f = e.local("f");
    let body = data(3 << 20, 5);
    write_file(&f, &body);
    let url = format!("{}//tls/f", e.tls_url);
    checked_round_trip(&e, "adler32", (&f, &body), &url, "back");
    let ls = e.ok("xrdfs", &[&e.tls_url, "ls", "-l", "/tls"]);
    assert!(ls.contains("/tls/f"), "{ls}");
    // Without the CA the client refuses the server.
    std::fs::create_dir_all(e.local("empty-ca-dir")).unwrap();
    let o = e
        .cmd("xrdfs")
        .env("X509_CERT_DIR", e.local("empty-ca-dir"))
        .args([&e.tls_url, "stat", "/tls/f"])
        .output()
        .unwrap();
    assert!(!o.status.success(), "TLS must fail without the CA");
}

#[test]
fn large_directory_listing_in_parts() {
    let e = Env::start();
    let core = e.core();
    let n = 4500; // more than one page of the namespace and many reply parts
    e.rt.block_on(async {
        core.mkdir(&Env::root(), Env::path("/big"), 0o755, false)
            .await
            .expect("mkdir");
        let mut tasks = tokio::task::JoinSet::new();
        for i in 0..n {
            let core = core.clone();
            tasks.spawn(async move {
                core.touch(
                    &Env::root(),
                    Env::path(&format!("/big/entry-{i:05}")),
                    0o644,
                )
                .await
                .expect("touch")
            });
        }
        while tasks.join_next().await.is_some() {}
    });
    for args in [vec!["ls", "/big"], vec!["ls", "-l", "/big"]] {
        let mut a = vec![e.url.as_str()];
        a.extend(args.iter());
        let out = e.ok("xrdfs", &a);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), n, "{args:?}");
        assert!(lines[0].ends_with("/big/entry-00000"), "{}", lines[0]);
        assert!(lines[n - 1].ends_with(&format!("/big/entry-{:05}", n - 1)));
    }
}

#[test]
fn a_corrupt_stripe_reads_right_and_is_repaired_in_the_background() {
    let e = Env::start_with(|c| c.fsck.repair_interval_secs = 1);
    let core = e.core();
    e.rain_dir("/rain");
    let body = data(3 << 20, 11);
    let src = e.local("c.up");
    write_file(&src, &body);
    let url = format!("{}//rain/c", e.url);
    e.ok("xrdcp", &["--nopbar", src.to_str().unwrap(), &url]);
    // Flip a bit in the first block of one stripe (after its header).
    let (victim, good) = e.corrupt_first_stripe();
    let victim = &victim;
    // The read goes around it: the right bytes, checksum included.
    let back = e.local("c.down");
    e.ok(
        "xrdcp",
        &[
            "--nopbar",
            "--cksum",
            "adler32",
            &url,
            back.to_str().unwrap(),
        ],
    );
    assert!(std::fs::read(&back).expect("down") == body, "bytes differ");
    // The background repair rebuilds the stripe and forgets the damage.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let r = core.fsck_scan(true).expect("scan");
        if r.issues.is_empty() && r.read_errors.is_empty() {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "not repaired: {:?} {:?}",
            r.issues,
            r.read_errors
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    assert!(
        std::fs::read(victim).expect("stripe") == good,
        "stripe not rebuilt"
    );
}

/// A download of a small file the kernel holds in memory is read on the
/// request's own thread; with its stripe out of the page cache the read
/// goes to the blocking pool (the same bytes), and the next is in line.
#[test]
fn downloads_of_files_in_memory_are_read_in_line() {
    let e = Env::start();
    let body = data(40_000, 6);
    let (src, back) = (e.local("m.up"), e.local("m.down"));
    write_file(&src, &body);
    let url = format!("{}//m/f", e.url);
    e.ok("xrdcp", &["--nopbar", src.to_str().unwrap(), &url]);
    assert_eq!(reads_in_line(e.core(), "xroot"), 0);
    let down = |what: &str| {
        e.ok("xrdcp", &["--nopbar", "-f", &url, back.to_str().unwrap()]);
        assert!(std::fs::read(&back).expect("downloaded") == body, "{what}");
    };
    down("in memory");
    assert_eq!(reads_in_line_after(e.core(), "xroot", 1), 1);
    evict_page_cache(&e.dir.path().join("data"));
    down("read from the disk");
    down("in memory again");
    assert_eq!(reads_in_line_after(e.core(), "xroot", 2), 2);
}

/// `src` (holding `body`) up to `url` and back into the local file `back`,
/// xrdcp checking checksum `kind` both ways: the bytes back are `body`.
fn checked_round_trip(
    e: &Env,
    kind: &str,
    (src, body): (&std::path::Path, &[u8]),
    url: &str,
    back: &str,
) {
    let cp = |from: &str, to: &str| e.ok("xrdcp", &["--nopbar", "--cksum", kind, from, to]);
    cp(src.to_str().unwrap(), url);
    let back = e.local(back);
    cp(url, back.to_str().unwrap());
    assert!(std::fs::read(&back).unwrap() == body);
}
