//! fsck reports exactly what was done to the stripes; repair restores full
//! redundancy; drain empties a filesystem; orphans are found and removed.

mod common;

use common::{data, p, read};
use tessera_backend::StripeName;
use tessera_core::*;
use tessera_types::Identity;

async fn env(n: usize) -> (tempfile::TempDir, Core, Identity) {
    let (dir, core, root) = common::setup(n, 0o755).await;
    common::layout_dir(&core, &root, "/d", "layout=raid6 nstripes=6 blocksize=4k").await;
    (dir, core, root)
}

fn put(c: &Core, who: &Identity, path: &str, d: &[u8]) -> Inode {
    common::put(c, who, path, d).expect("write")
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
    common::shorten(&s4, |len| len - 10);
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
    let rep = c.fsck_repair(&seen, &common::APPLY_NOW).expect("repair");
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
            common::layout_dir(&c, &root, "/d", "layout=raid6 nstripes=6 blocksize=4k").await;
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
    common::fs_status(&c, &root, dead, FsConfigStatus::Off)
        .await
        .expect("off");
    let scan = c.fsck_scan(false).expect("scan");
    let on_dead = scan.issues.len();
    assert!(scan.issues.iter().all(|i| i.recoverable
        && i.bad
            .iter()
            .all(|(_, id, s)| *id == dead && matches!(s, StripeState::Unavailable(_)))));
    let rep = c.fsck_repair(&scan, &common::APPLY_NOW).expect("repair");
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

/// Orphan removal deletes a stripe only with `apply`, only past the grace
/// period, and never on a filesystem whose marker is not its own.
#[tokio::test]
async fn orphans_go_only_when_applied_old_and_on_their_own_filesystem() {
    let (_dir, c, root) = env(7).await;
    let f = put(&c, &root, "/d/f", &data(20_000, 4));
    // Two stripes no file references: copies of f's stripes 0 and 1 under
    // the name of a file that does not exist.
    let ids = fsids(&f);
    let plant = |i: usize| {
        let dst = stripe_path(&c, ids[i], 999_999, i);
        std::fs::create_dir_all(dst.parent().expect("dir")).expect("mkdir");
        std::fs::copy(stripe_path(&c, ids[i], f.ino, i), &dst).expect("copy");
        dst
    };
    let (o0, o1) = (plant(0), plant(1));
    let scan = c.fsck_scan(false).expect("scan");
    assert_eq!(scan.orphans.len(), 2, "{:?}", scan.orphans);
    assert!(scan.orphans.iter().all(|o| o.age.is_some()));

    // A dry run says what it would remove and removes nothing.
    let dry = RepairPlan {
        apply: false,
        orphan_grace: std::time::Duration::ZERO,
    };
    let rep = c.fsck_repair(&scan, &dry).expect("dry run");
    assert_eq!((rep.applied, rep.orphans_removed), (false, 2), "{rep:?}");
    assert!(o0.exists() && o1.exists());

    // The default grace period keeps stripes written just now.
    let rep = c.fsck_repair(&scan, &RepairPlan::apply()).expect("repair");
    assert_eq!((rep.orphans_removed, rep.orphans_kept), (0, 2), "{rep:?}");
    assert!(o0.exists() && o1.exists());

    // Two hours old: past the grace period.
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(7200);
    for o in [&o0, &o1] {
        std::fs::File::options()
            .write(true)
            .open(o)
            .and_then(|h| h.set_modified(old))
            .expect("mtime");
    }
    // Stripe 1's filesystem now holds a marker naming another filesystem
    // (other storage mounted there): nothing of it is removed.
    let v = c
        .fs_list()
        .into_iter()
        .find(|v| v.rec.id == ids[1])
        .expect("fs");
    let root1 = std::path::Path::new(v.rec.locator.trim_start_matches("folder:")).to_path_buf();
    let marker = root1.join(tessera_backend::MARKER);
    let own = std::fs::read_to_string(&marker).expect("marker");
    let other = tessera_backend::Marker {
        fs: 4242,
        uuid: tessera_backend::new_uuid(),
    };
    std::fs::write(&marker, other.render()).expect("write marker");
    let scan = c.fsck_scan(false).expect("scan");
    let rep = c.fsck_repair(&scan, &RepairPlan::apply()).expect("repair");
    assert_eq!(rep.orphans_removed, 1, "{rep:?}");
    assert!(!o0.exists(), "the old orphan on its own filesystem is gone");
    assert!(o1.exists(), "the foreign filesystem's stripe is kept");
    assert!(
        rep.failed.iter().any(|(_, e)| e.contains("marker")),
        "{:?}",
        rep.failed
    );
    std::fs::write(&marker, own).expect("restore marker");
    assert_eq!(read(&c, &root, "/d/f"), data(20_000, 4));
}

/// A file beyond repair is a failure of the repair (the CLI exits
/// non-zero); an empty file never is, whatever happened to its stripes.
#[tokio::test]
async fn unrecoverable_files_fail_the_repair_and_empty_files_are_rebuilt() {
    let (_dir, c, root) = env(7).await;
    let lost = put(&c, &root, "/d/lost", &data(30_000, 5));
    let empty = put(&c, &root, "/d/empty", &[]);
    for i in 0..3 {
        std::fs::remove_file(stripe_path(&c, fsids(&lost)[i], lost.ino, i)).expect("rm");
    }
    for (i, id) in fsids(&empty).iter().enumerate() {
        let _ = std::fs::remove_file(stripe_path(&c, *id, empty.ino, i));
    }
    let scan = c.fsck_scan(false).expect("scan");
    let rep = c.fsck_repair(&scan, &common::APPLY_NOW).expect("repair");
    assert_eq!(rep.failed.len(), 1, "{rep:?}");
    assert_eq!(rep.failed[0].0, lost.ino);
    assert!(rep.failed[0].1.contains("beyond repair"), "{rep:?}");
    assert_eq!(rep.files_repaired, 1, "the empty file: {rep:?}");
    assert!(read(&c, &root, "/d/empty").is_empty());
    let after = c.fsck_scan(true).expect("scan");
    assert_eq!(
        after.issues.len(),
        1,
        "only the lost file: {:?}",
        after.issues
    );
}

/// What an interrupted repair left (a temporary stripe under the name an
/// earlier release used for every attempt) does not block the next one,
/// and fsck removes it once past the grace period.
#[tokio::test]
async fn a_leftover_of_a_crashed_repair_blocks_nothing() {
    let (_dir, c, root) = env(7).await;
    let d = data(50_000, 6);
    let f = put(&c, &root, "/d/f", &d);
    let id = fsids(&f)[2];
    let good = stripe_path(&c, id, f.ino, 2);
    let name = StripeName::new(f.ino, 2);
    for write_id in [(1u64 << 63) | f.ino, (1u64 << 63) | 12345] {
        let tmp = good.with_file_name(name.temp_file(write_id));
        std::fs::copy(&good, &tmp).expect("leftover");
    }
    std::fs::remove_file(&good).expect("rm");
    for round in 0..2 {
        let scan = c.fsck_scan(false).expect("scan");
        let rep = c.fsck_repair(&scan, &RepairPlan::apply()).expect("repair");
        assert!(rep.failed.is_empty(), "round {round}: {rep:?}");
        assert_eq!(read(&c, &root, "/d/f"), d);
        let back = stripe_path(
            &c,
            fsids(&c.stat(&root, p("/d/f")).await.expect("stat"))[2],
            f.ino,
            2,
        );
        std::fs::remove_file(back).expect("break it again");
    }
    let scan = c.fsck_scan(false).expect("scan");
    let temps: Vec<_> = scan
        .orphans
        .iter()
        .filter(|o| o.temp_of_write.is_some())
        .collect();
    assert_eq!(temps.len(), 2, "{:?}", scan.orphans);
    let rep = c.fsck_repair(&scan, &common::APPLY_NOW).expect("repair");
    assert_eq!(rep.orphans_removed, 2, "{rep:?}");
    assert!(c.fsck_scan(true).expect("scan").orphans.is_empty());
    assert_eq!(read(&c, &root, "/d/f"), d);
}

/// Issue 35, item 16: repair works group by group, as reads do. A RAIN
/// 4+2 file with one stripe deleted, one truncated half-way and corrupt
/// blocks in two others (in groups the truncation spares, so at most two
/// bad blocks in every group) reads back exactly, fsck calls it
/// recoverable, and repair restores full redundancy.
#[tokio::test]
async fn repair_goes_group_by_group() {
    let (_dir, c, root) = env(7).await;
    // 4 KiB blocks, 4 data stripes: 16 KiB a group; 20 groups.
    let body = data(20 * 16 * 1024, 7);
    let f = put(&c, &root, "/d/g", &body);
    let ids = fsids(&f);
    std::fs::remove_file(stripe_path(&c, ids[0], f.ino, 0)).expect("rm");
    // Stripe 1 keeps its first half (groups 0..10 whole).
    let s1 = stripe_path(&c, ids[1], f.ino, 1);
    let len = common::shorten(&s1, |len| len / 2);
    // One bit in a block of stripe 2 (group 2) and of stripe 3 (group 5):
    // neither group has lost stripe 1's block.
    let flip = |i: usize, at: u64| {
        let p = stripe_path(&c, ids[i], f.ino, i);
        let mut raw = std::fs::read(&p).expect("read");
        raw[at as usize] ^= 0x40;
        std::fs::write(&p, raw).expect("write");
    };
    let per_block = (len - 4096) / 20;
    flip(2, 4096 + 2 * per_block + 100);
    flip(3, 4096 + 5 * per_block + 200);
    assert_eq!(read(&c, &root, "/d/g"), body, "reads go group by group");
    let scan = c.fsck_scan(true).expect("scan");
    let issue = scan.issues.iter().find(|i| i.fid == f.ino).expect("issue");
    assert_eq!(issue.bad.len(), 4, "{issue:?}");
    assert!(issue.recoverable, "{issue:?}");
    assert_eq!(tag(&scan, "unrecoverable_n"), 0);
    let rep = c.fsck_repair(&scan, &common::APPLY_NOW).expect("repair");
    assert!(rep.failed.is_empty(), "{rep:?}");
    assert_eq!((rep.files_repaired, rep.stripes_rebuilt), (1, 4), "{rep:?}");
    let after = c.fsck_scan(true).expect("scan");
    assert!(after.issues.is_empty(), "{:?}", after.issues);
    assert_eq!(read(&c, &root, "/d/g"), body);
}

/// Issue 35, item 17: a filesystem whose mount went away (its folder
/// there, empty, without its marker) is unavailable, not lost: fsck says
/// so, repair rebuilds nothing and waits; back, everything is whole and
/// nothing is an orphan; declared lost (off), its stripes are rebuilt.
#[tokio::test]
async fn an_unmounted_filesystem_is_unavailable_not_lost() {
    let (dir, c, root) = env(7).await;
    let body = data(70_000, 17);
    let f = put(&c, &root, "/d/u", &body);
    let gone = fsids(&f)[0];
    let v = c
        .fs_list()
        .into_iter()
        .find(|v| v.rec.id == gone)
        .expect("fs");
    let at = std::path::PathBuf::from(v.rec.locator.trim_start_matches("folder:"));
    // The mount goes: an empty directory where it was.
    let away = dir.path().join("away");
    std::fs::rename(&at, &away).expect("unmount");
    std::fs::create_dir(&at).expect("mount point");
    assert_eq!(read(&c, &root, "/d/u"), body);
    let scan = c.fsck_scan(false).expect("scan");
    let issue = scan.issues.iter().find(|i| i.fid == f.ino).expect("issue");
    assert!(
        matches!(issue.bad[0].2, StripeState::Unavailable(_)),
        "{issue:?}"
    );
    assert_eq!(tag(&scan, "rep_missing_n"), 0);
    let rep = c.fsck_repair(&scan, &common::APPLY_NOW).expect("repair");
    assert_eq!((rep.stripes_rebuilt, rep.waiting.len()), (0, 1), "{rep:?}");
    // Back: whole, no orphans.
    std::fs::remove_dir(&at).expect("rmdir");
    std::fs::rename(&away, &at).expect("mount");
    let back = c.fsck_scan(true).expect("scan");
    assert!(
        back.issues.is_empty() && back.orphans.is_empty(),
        "{back:?}"
    );
    // Gone again, and declared lost by an admin: rebuilt elsewhere.
    std::fs::rename(&at, &away).expect("unmount");
    std::fs::create_dir(&at).expect("mount point");
    common::fs_status(&c, &root, gone, FsConfigStatus::Off)
        .await
        .expect("off");
    let scan = c.fsck_scan(false).expect("scan");
    let rep = c.fsck_repair(&scan, &common::APPLY_NOW).expect("repair");
    assert_eq!((rep.stripes_rebuilt, rep.waiting.len()), (1, 0), "{rep:?}");
    assert_eq!(read(&c, &root, "/d/u"), body);
    let f2 = c.stat(&root, p("/d/u")).await.expect("stat");
    assert!(!fsids(&f2).contains(&gone));
}
