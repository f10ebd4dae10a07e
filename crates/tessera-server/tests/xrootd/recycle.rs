//! The recycle bin (issue 39) with the real clients and the real CLI
//! against `tesserad serve --dev`: a 1,000-file tree deleted over XRootD
//! (`gfal-rm -r root://`, one request per entry; `xrdfs` has no recursive
//! rm), over WebDAV (`DELETE` of the collection, one entry) and with
//! `tessera rm -r` comes back byte-exact with `tessera recycle restore`,
//! the project quota exact before, during and after; purge by age and by
//! volume; `kill -9` during deletes into the bin and during a purge loses
//! nothing and leaves the namespace check (quota recounted) clean.

use crate::devd::{cli, tessera};
use crate::{data, run_ok, Daemon};

fn daemon(dir: &Path) -> Daemon {
    crate::devd::daemon(dir, OVERLAY)
}

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const OVERLAY: &str = "[https]\nanonymous = \"owner\"\n\
    [recycle]\npurge_interval = \"1s\"\npurge_budget = 40\n";

/// The number after `key=` in a `-m` line.
fn field(line: &str, key: &str) -> u64 {
    crate::devd::field(line, key)
        .parse()
        .unwrap_or_else(|_| panic!("{key} in {line} is a number"))
}

/// The project's (bytes, inodes) at the quota node `/data/proj`.
fn project(d: &Daemon, dir: &Path) -> (u64, u64) {
    let out = cli(d, dir, &["-m", "quota", "ls", "/data/proj"]);
    let l = out
        .lines()
        .find(|l| l.contains("type=project"))
        .unwrap_or_else(|| panic!("project record in {out}"));
    (field(l, "usedbytes"), field(l, "usedfiles"))
}

/// The bin's (bytes, inodes, entries).
fn bin(d: &Daemon, dir: &Path) -> (u64, u64, u64) {
    let out = cli(d, dir, &["-m", "recycle", "bins"]);
    let l = out
        .lines()
        .find(|l| l.contains("bin=/data/proj "))
        .unwrap_or_else(|| panic!("bin in {out}"));
    (field(l, "bytes"), field(l, "inodes"), field(l, "entries"))
}

/// The store's own check finds nothing wrong (quota recounted included).
fn assert_clean(d: &Daemon, dir: &Path) {
    let out = cli(d, dir, &["ns", "check"]);
    assert!(out.contains("problems := 0"), "{out}");
}

/// A local tree of `dirs` × `per` files of 1 to 2,000 bytes: its total
/// bytes.
fn make_tree(at: &Path, dirs: usize, per: usize) -> u64 {
    let mut total = 0;
    for d in 0..dirs {
        let sub = at.join(format!("d{d}"));
        std::fs::create_dir_all(&sub).unwrap();
        for f in 0..per {
            let n = 1 + (d * per + f) * 7 % 2000;
            std::fs::write(sub.join(format!("f{f}")), data(n, (d * per + f) as u64)).unwrap();
            total += n as u64;
        }
    }
    total
}

fn upload(xr: &str, src: &Path) {
    run_ok(
        Command::new("xrdfs").args([xr, "mkdir", "-p", "/data/proj/t"]),
        "mkdir",
    );
    let mut c = Command::new("xrdcp");
    c.args(["--nopbar", "-r", "--parallel", "4"]);
    for e in std::fs::read_dir(src).unwrap() {
        c.arg(e.unwrap().path());
    }
    run_ok(c.arg(format!("root://{xr}//data/proj/t/")), "xrdcp -r up");
}

/// Download `/data/proj/t` and compare it with `src`, byte for byte.
fn assert_same(xr: &str, src: &Path, scratch: &Path) {
    let _ = std::fs::remove_dir_all(scratch);
    std::fs::create_dir_all(scratch).unwrap();
    run_ok(
        Command::new("xrdcp")
            .args(["--nopbar", "-r", "--parallel", "4"])
            .arg(format!("root://{xr}//data/proj/t"))
            .arg(scratch),
        "xrdcp -r down",
    );
    let o = Command::new("diff")
        .arg("-r")
        .arg(src)
        .arg(scratch.join("t"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stdout));
}

fn gfal_rm(xr: &str) -> Command {
    let mut c = Command::new("gfal-rm");
    c.env("GFAL_PYTHONBIN", "/usr/bin/python3")
        .args(["-r", &format!("root://{xr}//data/proj/t")]);
    c
}

/// A project quota node with a bin at `/data/proj`.
fn setup(d: &Daemon, dir: &Path, lifetime: &str) {
    cli(d, dir, &["mkdir", "-p", "/data/proj"]);
    cli(
        d,
        dir,
        &[
            "quota",
            "set",
            "--path",
            "/data/proj",
            "--project",
            "--max-bytes",
            "1G",
        ],
    );
    set_bin(d, dir, lifetime, "1G");
}

/// One way to delete `/data/proj/t`.
type Delete<'a> = Box<dyn Fn() + 'a>;

#[test]
fn a_tree_deleted_by_every_client_comes_back_byte_exact_with_exact_quota() {
    let dir = tempfile::tempdir().unwrap();
    let d = daemon(dir.path());
    let (xr, https) = (d.field("xrootd="), d.field("https="));
    setup(&d, dir.path(), "30d");
    let src = dir.path().join("src");
    let bytes = make_tree(&src, 10, 100);
    upload(&xr, &src);
    let before = project(&d, dir.path());
    // 1,000 files, 10 directories and `t` itself (a quota node's own
    // directory counts in the node above).
    assert_eq!(before, (bytes, 1011), "the tree");
    assert_eq!(bin(&d, dir.path()), (0, 0, 0));
    let deletes: [(&str, Delete); 3] = [
        (
            "gfal-rm -r root://",
            Box::new(|| {
                run_ok(&mut gfal_rm(&xr), "gfal-rm -r");
            }),
        ),
        (
            "WebDAV DELETE",
            Box::new(|| {
                let o = Command::new("curl")
                    .args([
                        "-sS",
                        "-o",
                        "/dev/null",
                        "-w",
                        "%{http_code}",
                        "-X",
                        "DELETE",
                        "--cacert",
                    ])
                    .arg(dir.path().join("data/dev/ca.pem"))
                    .arg(format!("https://{https}/data/proj/t"))
                    .output()
                    .unwrap();
                assert_eq!(String::from_utf8_lossy(&o.stdout), "204");
            }),
        ),
        (
            "tessera rm -r",
            Box::new(|| {
                let out = cli(&d, dir.path(), &["rm", "-r", "/data/proj/t"]);
                assert!(out.contains("into the recycle bin (1 entry)"), "{out}");
            }),
        ),
    ];
    for (how, delete) in deletes {
        delete();
        let st = tessera(&d, dir.path(), &["stat", "/data/proj/t"])
            .output()
            .unwrap();
        assert!(!st.status.success(), "{how}: /data/proj/t is gone");
        assert_eq!(
            project(&d, dir.path()),
            (0, 0),
            "{how}: the project no longer pays for it"
        );
        assert_eq!(bin(&d, dir.path()).0, bytes, "{how}: the bin does");
        assert_eq!(bin(&d, dir.path()).1, 1011, "{how}");
        assert_clean(&d, dir.path());
        // A new file where the tree was: restore refuses to overwrite it.
        if how == "tessera rm -r" {
            cli(&d, dir.path(), &["touch", "/data/proj/t"]);
            let o = tessera(
                &d,
                dir.path(),
                &["recycle", "restore", "--under", "/data/proj/t"],
            )
            .output()
            .unwrap();
            assert!(
                !o.status.success() && String::from_utf8_lossy(&o.stderr).contains("exists"),
                "{}",
                String::from_utf8_lossy(&o.stderr)
            );
            cli(&d, dir.path(), &["rm", "/data/proj/t"]);
            // That empty file went to the bin too; purge it by id.
            let ls = cli(&d, dir.path(), &["-m", "recycle", "ls"]);
            let id = ls
                .lines()
                .find(|l| l.contains("type=file") && l.contains("path=/data/proj/t "))
                .map(|l| field(l, "id"))
                .expect("the empty file");
            cli(&d, dir.path(), &["recycle", "purge", &id.to_string()]);
        }
        let out = cli(
            &d,
            dir.path(),
            &["recycle", "restore", "--under", "/data/proj/t"],
        );
        assert!(out.starts_with("restored"), "{how}: {out}");
        assert_eq!(
            project(&d, dir.path()),
            before,
            "{how}: quota exact after restore"
        );
        assert_eq!(bin(&d, dir.path()), (0, 0, 0), "{how}: the bin is empty");
        assert_same(&xr, &src, &dir.path().join("back"));
        assert_clean(&d, dir.path());
    }
}

/// Wait up to 20 s for `cond`, checking every 50 ms.
fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    let until = Instant::now() + Duration::from_secs(20);
    while !cond() {
        assert!(Instant::now() < until, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `tessera recycle config /data/proj` with this lifetime and size cap.
fn set_bin(d: &Daemon, dir: &Path, lifetime: &str, size: &str) {
    let args = [
        "recycle",
        "config",
        "/data/proj",
        "--lifetime",
        lifetime,
        "--size",
        size,
    ];
    cli(d, dir, &args);
}

/// The paths of the entries in the bin, oldest first.
fn binned(d: &Daemon, dir: &Path) -> Vec<String> {
    let out = cli(d, dir, &["-m", "recycle", "ls", "--all"]);
    let mut es: Vec<(u64, String)> = out
        .lines()
        .map(|l| {
            let path = l
                .split_whitespace()
                .find_map(|w| w.strip_prefix("path="))
                .unwrap();
            (field(l, "deleted"), path.to_string())
        })
        .collect();
    es.sort();
    es.into_iter().map(|(_, p)| p).collect()
}

#[test]
fn the_bin_is_purged_by_volume_oldest_first_and_by_age() {
    let dir = tempfile::tempdir().unwrap();
    let d = daemon(dir.path());
    let xr = d.field("xrootd=");
    setup(&d, dir.path(), "30d");
    set_bin(&d, dir.path(), "30d", "5000");
    let f = dir.path().join("f");
    std::fs::write(&f, data(2000, 7)).unwrap();
    for i in 1..=4 {
        let url = format!("root://{xr}//data/proj/f{i}");
        run_ok(
            Command::new("xrdcp").args(["--nopbar", f.to_str().unwrap(), &url]),
            "up",
        );
    }
    for i in 1..=3 {
        run_ok(
            Command::new("xrdfs").args([&xr, "rm", &format!("/data/proj/f{i}")]),
            "rm",
        );
        // Whole seconds apart: the listing's deletion time is in seconds.
        std::thread::sleep(Duration::from_millis(1100));
    }
    // 6,000 bytes in a 5,000-byte bin: the oldest goes, at once.
    wait_for("the oldest entry purged", || {
        bin(&d, dir.path()) == (4000, 2, 2)
    });
    assert_eq!(binned(&d, dir.path()), ["/data/proj/f2", "/data/proj/f3"]);
    run_ok(
        Command::new("xrdfs").args([&xr, "rm", "/data/proj/f4"]),
        "rm",
    );
    wait_for("the next oldest purged", || {
        bin(&d, dir.path()) == (4000, 2, 2) && binned(&d, dir.path())[0] == "/data/proj/f3"
    });
    assert_eq!(binned(&d, dir.path()), ["/data/proj/f3", "/data/proj/f4"]);
    // A lifetime of 1 s: everything goes within a round or two.
    set_bin(&d, dir.path(), "1s", "5000");
    wait_for("the bin emptied by age", || {
        bin(&d, dir.path()) == (0, 0, 0)
    });
    assert_clean(&d, dir.path());
    // Their stripes went with them: fsck finds no orphans.
    let fsck = cli(&d, dir.path(), &["-m", "fsck", "report"]);
    assert!(fsck.contains("tag=orphans_n count=0"), "{fsck}");
}

#[test]
fn kill_9_during_deletes_into_the_bin_and_during_a_purge_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut d = daemon(dir.path());
    let xr = d.field("xrootd=");
    setup(&d, dir.path(), "30d");
    let src = dir.path().join("src");
    make_tree(&src, 6, 50);
    upload(&xr, &src);
    let before = project(&d, dir.path());
    // One delete per entry over XRootD, killed in the middle.
    let mut rm = gfal_rm(&xr)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    wait_for("deletes under way", || {
        cli(&d, dir.path(), &["-m", "recycle", "ls", "--all"])
            .lines()
            .count()
            >= 60
    });
    d.signal("-KILL");
    // The client would retry against the dead server for minutes.
    let _ = rm.kill();
    let _ = rm.wait();
    drop(d);
    d = daemon(dir.path());
    let xr = d.field("xrootd=");
    assert_clean(&d, dir.path());
    let (p, b) = (project(&d, dir.path()), bin(&d, dir.path()));
    assert!(b.2 >= 60, "entries in the bin: {b:?}");
    assert_eq!(
        (p.0 + b.0, p.1 + b.1),
        before,
        "every byte and inode is in one place or the other"
    );
    cli(
        &d,
        dir.path(),
        &["recycle", "restore", "--under", "/data/proj/t"],
    );
    assert_eq!(project(&d, dir.path()), before);
    assert_same(&xr, &src, &dir.path().join("back"));
    // The tree in as one entry, then a purge of it, killed half-way
    // (40 inodes a round).
    cli(&d, dir.path(), &["rm", "-r", "/data/proj/t"]);
    set_bin(&d, dir.path(), "1s", "1G");
    wait_for("the purge under way", || {
        let ls = cli(&d, dir.path(), &["-m", "recycle", "ls", "--all"]);
        ls.contains("purging=true")
    });
    d.signal("-KILL");
    drop(d);
    let d = daemon(dir.path());
    assert_clean(&d, dir.path());
    wait_for("the purge finished after the restart", || {
        bin(&d, dir.path()) == (0, 0, 0)
    });
    assert_clean(&d, dir.path());
    assert_eq!(project(&d, dir.path()), (0, 0));
}

/// The sizes of `/data/proj/f`'s versions, oldest first, and their ids.
fn versions(d: &Daemon, dir: &Path) -> Vec<(u64, u64)> {
    cli(d, dir, &["-m", "file", "versions", "/data/proj/f"])
        .lines()
        .map(|l| (field(l, "size"), field(l, "id")))
        .collect()
}

#[test]
fn five_overwrites_with_three_versions_keep_three_and_one_comes_back() {
    let dir = tempfile::tempdir().unwrap();
    let d = daemon(dir.path());
    let (xr, https) = (d.field("xrootd="), d.field("https="));
    setup(&d, dir.path(), "30d");
    cli(
        &d,
        dir.path(),
        &["attr", "set", "sys.versioning=3", "/data/proj"],
    );
    let bodies: Vec<Vec<u8>> = (0..6).map(|i| data(10_000 + i * 1000, i as u64)).collect();
    let url = format!("root://{xr}//data/proj/f");
    for (i, b) in bodies.iter().enumerate() {
        let src = dir.path().join(format!("b{i}"));
        std::fs::write(&src, b).unwrap();
        if i < 4 {
            // The first write, then three overwrites with xrdcp -f ...
            run_ok(
                Command::new("xrdcp")
                    .args(["--nopbar", "-f"])
                    .arg(&src)
                    .arg(&url),
                "xrdcp -f",
            );
        } else {
            // ... and two with a WebDAV PUT.
            let o = Command::new("curl")
                .args([
                    "-sS",
                    "-o",
                    "/dev/null",
                    "-w",
                    "%{http_code}",
                    "-H",
                    "Expect:",
                    "-T",
                ])
                .arg(&src)
                .arg("--cacert")
                .arg(dir.path().join("data/dev/ca.pem"))
                .arg(format!("https://{https}/data/proj/f"))
                .output()
                .unwrap();
            assert_eq!(String::from_utf8_lossy(&o.stdout), "204", "PUT over");
        }
    }
    let vs = versions(&d, dir.path());
    let sizes: Vec<u64> = vs.iter().map(|v| v.0).collect();
    assert_eq!(
        sizes,
        [12_000, 13_000, 14_000],
        "the three newest replaced, oldest first"
    );
    // Clients see the current file only.
    let ls = run_ok(Command::new("xrdfs").args([&xr, "ls", "/data/proj"]), "ls");
    assert_eq!(String::from_utf8_lossy(&ls.stdout).trim(), "/data/proj/f");
    // Versions count in the quota: the file and its three versions.
    assert_eq!(project(&d, dir.path()), (15_000 + 39_000, 4));
    assert_clean(&d, dir.path());
    // Version 13,000 back: it is what clients read now.
    cli(
        &d,
        dir.path(),
        &[
            "file",
            "restore-version",
            "/data/proj/f",
            &vs[1].1.to_string(),
        ],
    );
    let back = dir.path().join("back");
    run_ok(
        Command::new("xrdcp")
            .args(["--nopbar", "-f", &url])
            .arg(&back),
        "xrdcp down",
    );
    assert_eq!(std::fs::read(&back).unwrap(), bodies[3]);
    let sizes: Vec<u64> = versions(&d, dir.path()).iter().map(|v| v.0).collect();
    assert_eq!(sizes, [12_000, 14_000, 15_000]);
    // Purged down to one; the dropped versions' stripes are gone too.
    cli(
        &d,
        dir.path(),
        &["file", "purge-versions", "/data/proj/f", "--keep", "1"],
    );
    assert_eq!(versions(&d, dir.path()).len(), 1);
    assert_eq!(project(&d, dir.path()), (13_000 + 15_000, 2));
    assert_clean(&d, dir.path());
    let fsck = cli(&d, dir.path(), &["-m", "fsck", "report"]);
    assert!(fsck.contains("tag=orphans_n count=0"), "{fsck}");
}
