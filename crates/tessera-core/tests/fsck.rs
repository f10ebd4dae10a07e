//! fsck reports exactly what was done to the stripes; repair restores full
//! redundancy; drain empties a filesystem; orphans are found and removed.

mod common;

use common::{data, p};
use tessera_backend::StripeName;
use tessera_core::*;
use tessera_types::Identity;

async fn env(n: usize) -> (tempfile::TempDir, Core, Identity) {
    let dir = tempfile::tempdir().expect("tmp");
    let core = common::core_at(dir.path(), tessera_meta::Durability::Buffered, 0o755);
    common::add_folders(&core, dir.path(), n).await;
    let root = Identity::root("test");
    core.mkdir(&root, p("/d"), 0o755, false)
        .await
        .expect("mkdir");
    common::layout(
        &core,
        "/d",
        &[
            ("sys.forced.layout", "raid6"),
            ("sys.forced.nstripes", "6"),
            ("sys.forced.blocksize", "4k"),
        ],
    )
    .await;
    (dir, core, root)
}

fn put(c: &Core, who: &Identity, path: &str, d: &[u8]) -> Inode {
    common::put(c, who, path, d).expect("write")
}

fn read(c: &Core, who: &Identity, path: &str) -> Vec<u8> {
    common::get(c, who, path).expect("read")
}

/// The on-disk path of stripe `i` of `fid` on the filesystem with id `fsid`.
fn stripe_path(c: &Core, fsid: u32, fid: u64, i: usize) -> std::path::PathBuf {
    let v = c
        .fs_list()
        .into_iter()
        .find(|v| v.rec.id == fsid)
        .expect("fs");
    let n = StripeName::new(fid, i as u8);
    std::path::Path::new(v.rec.locator.trim_start_matches("folder:"))
        .join(n.dir())
        .join(n.file())
}

fn fsids(f: &Inode) -> Vec<u32> {
    tessera_data::Placement::decode(&f.layout)
        .expect("placement")
        .fsids
}

fn tag(r: &FsckReport, name: &str) -> u64 {
    r.tags()
        .into_iter()
        .find(|(t, _)| *t == name)
        .expect("tag")
        .1
}

#[tokio::test]
async fn fsck_reports_exactly_what_was_done_and_repair_restores_it() {
    let (_dir, c, root) = env(7).await;
    let a = data(50_000, 1);
    let b = data(9_000, 2);
    let fa = put(&c, &root, "/d/a", &a);
    let fb = put(&c, &root, "/d/b", &b);
    let clean = c.fsck_scan(true).expect("scan");
    assert_eq!(
        (
            clean.files,
            clean.stripes,
            clean.issues.len(),
            clean.orphans.len()
        ),
        (2, 12, 0, 0)
    );

    // a: remove stripe 0, truncate stripe 4; b: flip a bit in a block of stripe 2.
    let ia = fsids(&fa);
    std::fs::remove_file(stripe_path(&c, ia[0], fa.ino, 0)).expect("rm");
    let s4 = stripe_path(&c, ia[4], fa.ino, 4);
    let len = std::fs::metadata(&s4).expect("meta").len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&s4)
        .expect("open")
        .set_len(len - 10)
        .expect("truncate");
    let ib = fsids(&fb);
    let s2 = stripe_path(&c, ib[2], fb.ino, 2);
    let mut raw = std::fs::read(&s2).expect("read");
    raw[4096 + 100] ^= 0x01;
    std::fs::write(&s2, raw).expect("write");
    // and an orphan: a stripe of a file that does not exist
    let stray = stripe_path(&c, ib[3], 0xfffff, 3);
    std::fs::create_dir_all(stray.parent().expect("dir")).expect("mkdir");
    std::fs::copy(stripe_path(&c, ib[3], fb.ino, 3), &stray).expect("copy");

    let shallow = c.fsck_scan(false).expect("scan");
    assert_eq!(tag(&shallow, "rep_missing_n"), 1);
    assert_eq!(tag(&shallow, "d_mem_sz_diff"), 1);
    assert_eq!(
        tag(&shallow, "blockxs_err"),
        0,
        "a shallow scan does not read blocks"
    );
    let deep = c.fsck_scan(true).expect("scan");
    assert_eq!(tag(&deep, "rep_missing_n"), 1);
    assert_eq!(tag(&deep, "d_mem_sz_diff"), 1);
    assert_eq!(tag(&deep, "blockxs_err"), 1);
    assert_eq!(tag(&deep, "orphans_n"), 1);
    assert_eq!(tag(&deep, "rep_diff_n"), 2);
    assert_eq!(tag(&deep, "unrecoverable_n"), 0);
    let issue_a = deep.issues.iter().find(|i| i.fid == fa.ino).expect("a");
    let mut bad: Vec<usize> = issue_a.bad.iter().map(|(i, _, _)| *i).collect();
    bad.sort();
    assert_eq!(bad, vec![0, 4]);
    assert_eq!(issue_a.path, "/d/a");

    // Reads go on meanwhile, correct.
    assert_eq!(read(&c, &root, "/d/a"), a);
    assert_eq!(read(&c, &root, "/d/b"), b);
    // ... and what they ran into is handed to fsck, which now checks
    // those files block by block even in a shallow scan.
    assert_eq!(tag(&deep, "read_errors_n"), 0);
    let seen = c.fsck_scan(false).expect("scan");
    assert!(tag(&seen, "read_errors_n") > 0);
    for f in [&fa, &fb] {
        assert!(
            seen.read_errors.iter().any(|d| d.fid == f.ino),
            "{:?}",
            seen.read_errors
        );
    }
    assert_eq!(
        tag(&seen, "blockxs_err"),
        1,
        "damaged files are read deeply"
    );

    // A repair from the latest (shallow) scan fixes everything: the
    // damaged files were checked block by block.
    let rep = c.fsck_repair(&seen).expect("repair");
    assert_eq!(
        (rep.stripes_rebuilt, rep.files_repaired, rep.orphans_removed),
        (3, 2, 1),
        "{rep:?}"
    );
    let after = c.fsck_scan(true).expect("scan");
    assert!(
        after.issues.is_empty() && after.orphans.is_empty(),
        "{after:?}"
    );
    assert_eq!(read(&c, &root, "/d/a"), a);
    assert_eq!(read(&c, &root, "/d/b"), b);
    assert_eq!(
        tag(&after, "read_errors_n"),
        0,
        "repair forgot what it fixed"
    );
}

#[tokio::test]
async fn damage_found_by_reads_is_kept_across_restarts_and_repaired() {
    let dir = tempfile::tempdir().expect("tmp");
    let d = data(40_000, 9);
    let (f, s3) = {
        let (_keep, c, root) = {
            let c = common::core_at(dir.path(), tessera_meta::Durability::Buffered, 0o755);
            common::add_folders(&c, dir.path(), 6).await;
            let root = Identity::root("test");
            c.mkdir(&root, p("/d"), 0o755, false).await.expect("mkdir");
            common::layout(
                &c,
                "/d",
                &[
                    ("sys.forced.layout", "raid6"),
                    ("sys.forced.nstripes", "6"),
                    ("sys.forced.blocksize", "4k"),
                ],
            )
            .await;
            ((), c, root)
        };
        let f = put(&c, &root, "/d/f", &d);
        let s3 = stripe_path(&c, fsids(&f)[1], f.ino, 1);
        let mut raw = std::fs::read(&s3).expect("read");
        raw[4096 + 200] ^= 0x10;
        std::fs::write(&s3, raw).expect("write");
        // The read rebuilds the block and returns the right bytes.
        assert_eq!(read(&c, &root, "/d/f"), d);
        (f, s3)
    };
    // A restart does not forget what the read found.
    let c = common::core_at(dir.path(), tessera_meta::Durability::Buffered, 0o755);
    let before = c.fsck_scan(false).expect("scan");
    let rec: Vec<_> = before
        .read_errors
        .iter()
        .filter(|r| r.fid == f.ino)
        .collect();
    assert_eq!(rec.len(), 1, "{:?}", before.read_errors);
    assert_eq!(rec[0].stripe, 1);
    assert!(rec[0].what.contains("checksum"), "{:?}", rec[0]);
    assert_eq!(tag(&before, "blockxs_err"), 1);

    let rep = c.repair_damaged().expect("repair");
    assert_eq!((rep.stripes_rebuilt, rep.files_repaired), (1, 1), "{rep:?}");
    assert!(rep.failed.is_empty(), "{rep:?}");
    let after = c.fsck_scan(true).expect("scan");
    assert!(after.issues.is_empty(), "{after:?}");
    assert_eq!(tag(&after, "read_errors_n"), 0);
    // Nothing left to do the second time.
    assert_eq!(c.repair_damaged().expect("repair"), RepairReport::default());
    let root = Identity::root("test");
    assert_eq!(read(&c, &root, "/d/f"), d);
    let _ = s3;
}

#[tokio::test]
async fn repair_moves_stripes_off_a_dead_filesystem_and_drain_empties_one() {
    let (dir, c, root) = env(8).await;
    let files: Vec<(String, Vec<u8>)> = (0..6)
        .map(|i| (format!("/d/f{i}"), data(20_000 + i * 999, i as u64 + 3)))
        .collect();
    for (path, d) in &files {
        put(&c, &root, path, d);
    }
    // A whole filesystem goes away: its stripes are unavailable.
    let dead = c.fs_list()[0].rec.id;
    std::fs::remove_dir_all(dir.path().join("fs1")).expect("rm");
    c.fs_set(
        &root,
        dead,
        FsChange {
            status: Some(FsConfigStatus::Off),
            ..Default::default()
        },
    )
    .await
    .expect("off");
    let scan = c.fsck_scan(false).expect("scan");
    let on_dead = scan.issues.len();
    assert!(scan.issues.iter().all(|i| i.recoverable
        && i.bad
            .iter()
            .all(|(_, id, s)| *id == dead && matches!(s, StripeState::Unavailable(_)))));
    let rep = c.fsck_repair(&scan).expect("repair");
    assert_eq!(rep.files_repaired as usize, on_dead, "{rep:?}");
    let clean = c.fsck_scan(true).expect("scan");
    assert!(clean.issues.is_empty(), "{:?}", clean.issues);
    for (path, d) in &files {
        assert_eq!(&read(&c, &root, path), d);
    }

    // Drain another filesystem: every stripe moves, it ends up empty.
    let victim = c.fs_list()[1].rec.id;
    let dr = c.drain(victim).expect("drain");
    assert!(dr.emptied && dr.failed.is_empty(), "{dr:?}");
    let v = c
        .fs_list()
        .into_iter()
        .find(|v| v.rec.id == victim)
        .expect("fs");
    assert_eq!(v.rec.status, FsConfigStatus::Empty);
    for (path, d) in &files {
        let f = c.stat(&root, p(path)).await.expect("stat");
        assert!(!fsids(&f).contains(&victim));
        assert_eq!(&read(&c, &root, path), d);
    }
    let clean = c.fsck_scan(true).expect("scan");
    assert!(
        clean.issues.is_empty() && clean.orphans.is_empty(),
        "{clean:?}"
    );
    c.fs_rm(&root, victim)
        .await
        .expect("an empty filesystem can be removed");
}

/// A stripe sealed under its final name just before its write commits is
/// not an orphan while the write is open (a scan between the two must not
/// let repair delete it); once the write is abandoned, it is one.
#[tokio::test]
async fn a_sealed_stripe_of_an_open_write_is_not_an_orphan() {
    let (_dir, c, root) = env(7).await;
    let fb = put(&c, &root, "/d/b", &data(9_000, 2));
    let mut w = c
        .open_write(&root, &p("/d/open"), 0o644, false, 0)
        .expect("open");
    w.write(&data(5_000, 3)).expect("write");
    // As the seal leaves it: the open write's stripe under its final name
    // (on a filesystem other than the one the write itself put its stripe
    // 3 on, which the abort below removes).
    let fid = w.fid();
    let fsid = *fsids(&fb)
        .iter()
        .find(|id| !stripe_path(&c, **id, fid, 3).exists())
        .expect("a filesystem without the write's stripe 3");
    let sealed = stripe_path(&c, fsid, fid, 3);
    std::fs::create_dir_all(sealed.parent().expect("dir")).expect("mkdir");
    let source = stripe_path(&c, fsids(&fb)[3], fb.ino, 3);
    std::fs::copy(source, &sealed).expect("copy");
    let during = c.fsck_scan(false).expect("scan");
    assert!(during.orphans.is_empty(), "{:?}", during.orphans);
    w.abort();
    let after = c.fsck_scan(false).expect("scan");
    let found: Vec<_> = after
        .orphans
        .iter()
        .map(|o| (o.fsid, o.name, o.temp_of_write))
        .collect();
    assert_eq!(found, vec![(fsid, StripeName::new(fid, 3), None)]);
}
