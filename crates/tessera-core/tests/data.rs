//! Files through the core service into six real folders: layouts from
//! directory attributes, checksums, quota, faults, removal, aborts.

mod common;

use common::{data as bytes, get, p, put, Env};
use tessera_core::*;
use tessera_types::{ErrorKind, Identity};

async fn env() -> Env {
    common::env(6, 0o777).await
}

/// Make directory `path` with the layout `spec` (see `common::layout_spec`).
async fn dir_with(e: &Env, path: &str, spec: &str) {
    e.core
        .mkdir(&e.root, p(path), 0o777, false)
        .await
        .expect("mkdir");
    common::layout_spec(&e.core, path, spec).await;
}

fn stripe_files(dir: &std::path::Path) -> usize {
    (1..=6).map(|i| walk(&dir.join(format!("fs{i}")))).sum()
}

fn walk(d: &std::path::Path) -> usize {
    let Ok(rd) = std::fs::read_dir(d) else {
        return 0;
    };
    rd.flatten()
        .map(|e| {
            if e.path().is_dir() {
                walk(&e.path())
            } else {
                usize::from(e.file_name() != tessera_backend::MARKER)
            }
        })
        .sum()
}

#[tokio::test]
async fn raid6_files_round_trip_with_checksums_and_survive_two_lost_filesystems() {
    let e = env().await;
    let c = &e.core;
    dir_with(&e, "/data", "layout=raid6 nstripes=6 blocksize=64k").await;
    let sizes = [0usize, 1, 65_535, 65_537, 4 * 65_536 + 3, 3_000_001];
    for (i, size) in sizes.iter().enumerate() {
        let data = bytes(*size, i as u64 + 1);
        let ino = put(c, &e.root, &format!("/data/f{i}"), &data).expect("write");
        assert_eq!(ino.size, *size as u64);
        let ck = ino.checksum.expect("checksum");
        assert_eq!(ck.kind, "adler32");
        assert_eq!(
            ck.value,
            simd_adler32::adler32(&data.as_slice())
                .to_be_bytes()
                .to_vec()
        );
        assert_eq!(get(c, &e.root, &format!("/data/f{i}")).expect("read"), data);
    }
    assert_eq!(
        stripe_files(e.dir.path()),
        6 * sizes.len(),
        "6 stripes per file, no temporaries left"
    );
    // Lose two whole filesystems: every file still reads back.
    let views = c.fs_list();
    for v in views.iter().take(2) {
        std::fs::remove_dir_all(v.rec.locator.trim_start_matches("folder:")).expect("rm fs");
    }
    let mut events = 0;
    for (i, size) in sizes.iter().enumerate() {
        let r = c
            .open_read(&e.root, &p(&format!("/data/f{i}")))
            .expect("open");
        let mut out = vec![0u8; *size];
        assert_eq!(r.read_at(0, &mut out).expect("degraded read"), *size);
        assert_eq!(out, bytes(*size, i as u64 + 1));
        events += r.events().len();
    }
    // Which stripes were lost depends on placement; some data stripes were.
    assert!(events > 0, "degraded reads are recorded");
}

/// Layout attributes no write could use are refused when set (EINVAL),
/// and the directory keeps what it had.
#[tokio::test]
async fn unusable_layout_attributes_are_refused() {
    let e = env().await;
    let c = &e.core;
    c.mkdir(&e.root, p("/l"), 0o755, false)
        .await
        .expect("mkdir");
    let set = |k: &str, v: &str| {
        c.xattr_set(
            &e.root,
            p("/l"),
            k.as_bytes().to_vec(),
            v.as_bytes().to_vec(),
        )
    };
    set("sys.forced.layout", "raid6").await.expect("raid6");
    for (k, v) in [
        ("sys.forced.layout", "bogus"),
        ("sys.forced.nstripes", "0"),
        ("sys.forced.nstripes", "many"),
        ("sys.forced.blocksize", "huge"),
        // More stripes than the space has failure domains (six here).
        ("sys.forced.nstripes", "99"),
        ("sys.forced.nstripes", "7"),
        // A RAIN layout with no more stripes than parity.
        ("sys.forced.nstripes", "2"),
    ] {
        let err = set(k, v).await.expect_err(v);
        assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{k}={v}: {err}");
    }
    let err = set("sys.forced.nstripes", "20").await.expect_err("20");
    assert!(
        err.to_string().contains("needs 20 stripes") && err.to_string().contains("has 6"),
        "the reason is given: {err}"
    );
    let err = set("sys.forced.nstripes", "2").await.expect_err("2");
    assert!(err.to_string().contains("more than 2"), "{err}");
    // A space with no filesystems takes no layout at all.
    let err = set("sys.forced.space", "nowhere").await.expect_err("space");
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
    set("sys.forced.nstripes", "5")
        .await
        .expect("raid6 3+2 fits six domains");
    set("sys.forced.blocksize", "64k").await.expect("64k");
    set("user.note", "anything goes").await.expect("user attr");
    let got = c
        .xattr_get(&e.root, p("/l"), b"sys.forced.layout".to_vec())
        .await
        .expect("get");
    assert_eq!(got, b"raid6");
    put(c, &e.root, "/l/f", &bytes(100_000, 5)).expect("a write still works");
}

#[tokio::test]
async fn over_quota_writes_leave_nothing_and_unlink_removes_stripes() {
    let e = env().await;
    let c = &e.core;
    dir_with(&e, "/q", "layout=replica").await;
    c.quota_set(
        &e.root,
        p("/q"),
        QuotaTarget::project(),
        Some(1_000_000),
        None,
    )
    .await
    .expect("quota");
    let alice = Identity::user(1000, 100, "alice", "test");
    put(c, &alice, "/q/small", &bytes(400_000, 1)).expect("fits");
    assert_eq!(stripe_files(e.dir.path()), 2, "replica 2");
    let err = put(c, &alice, "/q/big", &bytes(700_000, 2)).expect_err("over quota");
    assert_eq!(err.kind(), ErrorKind::QuotaExceeded, "{err}");
    assert_eq!(
        c.stat(&alice, p("/q/big"))
            .await
            .expect_err("invisible")
            .kind(),
        ErrorKind::NotFound
    );
    assert_eq!(
        stripe_files(e.dir.path()),
        2,
        "the failed write left no stripe"
    );
    // An abandoned write (dropped without close) leaves nothing either.
    {
        let mut w = c
            .open_write(&alice, &p("/q/dropped"), 0o644, false, 0)
            .expect("open");
        w.write(&bytes(1000, 3)).expect("write");
    }
    assert_eq!(stripe_files(e.dir.path()), 2);
    let show = c
        .quota_show(&e.root, p("/q"), 1000, 100)
        .await
        .expect("show");
    let proj = show
        .entries
        .iter()
        .find(|x| x.target == QuotaTarget::project())
        .expect("project");
    assert_eq!((proj.used_bytes, proj.reserved_bytes), (400_000, 0));
    // Overwrite replaces the old stripes; unlink removes them.
    put(c, &alice, "/q/small", &bytes(10, 4)).expect("overwrite");
    assert_eq!(stripe_files(e.dir.path()), 2);
    assert_eq!(get(c, &alice, "/q/small").expect("read"), bytes(10, 4));
    // A digest the data does not match (a copy's source announced it):
    // refused, the file being replaced stays, no stripe left.
    let close_with = |want: Expect, d: &[u8]| {
        let mut w = c.open_write(&alice, &p("/q/small"), 0o644, true, 0)?;
        w.write(d)?;
        w.close_expecting(want)
    };
    let new = bytes(5000, 5);
    let good = simd_adler32::adler32(&new.as_slice());
    let err = close_with(
        Expect {
            adler32: Some(good ^ 1),
            crc32c: None,
        },
        &new,
    )
    .expect_err("mismatch");
    assert_eq!(err.kind(), ErrorKind::Corrupt, "{err}");
    assert_eq!(get(c, &alice, "/q/small").expect("read"), bytes(10, 4));
    assert_eq!(stripe_files(e.dir.path()), 2);
    let i = close_with(
        Expect {
            adler32: Some(good),
            crc32c: None,
        },
        &new,
    )
    .expect("matches");
    assert_eq!(i.size, 5000);
    assert_eq!(get(c, &alice, "/q/small").expect("read"), new);
    c.remove(&alice, p("/q/small"), false).await.expect("rm");
    assert_eq!(stripe_files(e.dir.path()), 0);
    let rep = c.check(&e.root).await.expect("check");
    assert!(rep.problems.is_empty(), "{:?}", rep.problems);
}

#[tokio::test]
async fn placement_needs_enough_failure_domains() {
    let e = env().await;
    let c = &e.core;
    dir_with(&e, "/wide", "layout=raiddp").await;
    put(c, &e.root, "/wide/ok", b"fits on six domains").expect("write");
    let id = c.fs_list()[0].rec.id;
    common::fs_status(c, &e.root, id, FsConfigStatus::Ro)
        .await
        .expect("ro");
    let err = put(c, &e.root, "/wide/no", b"five domains left").expect_err("no placement");
    assert_eq!(err.kind(), ErrorKind::NoSpace, "{err}");
    // Two filesystems in one domain count once.
    c.fs_set(
        &e.root,
        id,
        FsChange {
            status: Some(FsConfigStatus::Rw),
            domain: Some("d2".into()),
            ..Default::default()
        },
    )
    .await
    .expect("rw");
    assert_eq!(
        put(c, &e.root, "/wide/no", b"x")
            .expect_err("five domains")
            .kind(),
        ErrorKind::NoSpace
    );
    assert_eq!(
        get(c, &e.root, "/wide/ok").expect("still readable"),
        b"fits on six domains"
    );
    let spaces = c.spaces();
    assert_eq!(
        (
            spaces[0].name.as_str(),
            spaces[0].filesystems,
            spaces[0].domains
        ),
        ("default", 6, 5)
    );
}

/// Every opened file's close is one access line with the bytes it moved:
/// a committed write, an abandoned one, and a read.
#[tokio::test]
async fn closes_are_logged_with_their_bytes() {
    let dir = tempfile::tempdir().expect("tmp");
    let log_path = dir.path().join("access.log");
    let access = std::sync::Arc::new(tessera_obs::AccessLog::to_file(&log_path).expect("log"));
    let c = common::core_logging(
        dir.path(),
        tessera_meta::Durability::Buffered,
        0o777,
        std::sync::Arc::clone(&access),
    );
    common::add_folders(&c, dir.path(), 6).await;
    let root = Identity::root("test");
    let body = bytes(300_000, 5);
    put(&c, &root, "/logged", &body).expect("put");
    let mut w = c
        .open_write(&root, &p("/abandoned"), 0o644, false, 0)
        .expect("open");
    w.write(&body[..1234]).expect("write");
    drop(w);
    let r = c.open_read(&root, &p("/logged")).expect("open");
    let mut buf = vec![0u8; 1000];
    assert_eq!(r.read_at(0, &mut buf).expect("read"), 1000);
    assert_eq!(r.read_at(299_500, &mut buf).expect("read"), 500);
    let fid = r.inode().ino;
    drop(r);
    // Its stripe gone, a read fails: the close says so.
    let stripe = tessera_backend::StripeName::new(fid, 0);
    for i in 1..=6 {
        let f = dir
            .path()
            .join(format!("fs{i}"))
            .join(stripe.dir())
            .join(stripe.file());
        let _ = std::fs::remove_file(f);
    }
    let r = c.open_read(&root, &p("/logged")).expect("open");
    r.read_at(0, &mut buf).expect_err("stripe gone");
    drop(r);
    access.flush();
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&log_path)
        .expect("log")
        .lines()
        .map(|l| serde_json::from_str(l).expect("json"))
        .collect();
    let closes: Vec<(&str, &str, &str, u64)> = lines
        .iter()
        .filter(|v| v["op"].as_str().is_some_and(|o| o.starts_with("close_")))
        .map(|v| {
            (
                v["op"].as_str().unwrap(),
                v["path"].as_str().unwrap(),
                v["status"].as_str().unwrap(),
                v["bytes"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        closes,
        vec![
            ("close_write", "/logged", "ok", 300_000),
            ("close_write", "/abandoned", "aborted", 1234),
            ("close_read", "/logged", "ok", 1500),
            ("close_read", "/logged", "corrupt", 0),
        ]
    );
    let failed = lines
        .iter()
        .rfind(|v| v["op"] == "close_read")
        .expect("line");
    assert_eq!(failed["errno"], 5, "EIO: {failed}");
    let m = c.metrics().encode();
    assert!(
        m.contains("tessera_written_bytes_total{protocol=\"test\"} 301234"),
        "{m}"
    );
    assert!(
        m.contains("tessera_read_bytes_total{protocol=\"test\"} 1500"),
        "{m}"
    );
    assert!(
        m.contains(
            "tessera_requests_total{protocol=\"test\",op=\"close_read\",code=\"corrupt\"} 1"
        ),
        "{m}"
    );
}

/// What a write session asks of the memory budget: 64 KiB while the file
/// fits in it, then its writer's ceiling (a RAIN 4+2 group of 64 KiB blocks
/// and its parity: 6 × 64 KiB and the padding room), nothing once it holds
/// that, whatever else is appended.
#[tokio::test]
async fn a_write_session_asks_for_its_group_in_two_steps() {
    let e = env().await;
    let c = &e.core;
    dir_with(&e, "/m", "layout=raiddp blocksize=64k").await;
    let (c2, root) = (c.clone(), e.root.clone());
    tokio::task::spawn_blocking(move || {
        let budget = Budget::new(64 << 20, std::time::Duration::from_millis(10));
        let rt = tokio::runtime::Handle::current();
        let mut ws = c2
            .open_write(&root, &p("/m/f"), 0o644, false, 0)
            .expect("open");
        assert_eq!(ws.memory_wanted(1000), FIRST_LEASE as usize);
        let l = rt
            .block_on(budget.lease(FIRST_LEASE as usize))
            .expect("lease");
        ws.hold_memory(l);
        assert_eq!(ws.memory_wanted(1000), 0);
        ws.write(&bytes(60_000, 1)).expect("write");
        let ceiling = 4 * (64 << 10) + 4 + 2 * (64 << 10);
        assert_eq!(ws.memory_wanted(10_000), ceiling - FIRST_LEASE as usize);
        let l = rt
            .block_on(budget.lease(ceiling - FIRST_LEASE as usize))
            .expect("lease");
        ws.hold_memory(l);
        ws.write(&bytes(1 << 20, 2)).expect("write");
        assert_eq!(ws.memory_wanted(64 << 20), 0);
        assert!(budget.in_use() > 0);
        ws.close().expect("close");
        assert_eq!(budget.in_use(), 0, "the session's leases went back with it");
    })
    .await
    .expect("join");
}
