//! The recycle bin in the store: deletes move whole entries into the
//! bin with their quota, restore charges it back (checked), purge removes
//! a bounded piece at a time, and the store's own check stays clean at
//! every step.

mod common;
use common::*;
use tessera_meta::*;
use tessera_types::{ErrorKind, Identity};

fn alice_used(m: &MetaStore, at: &str) -> (u64, u64) {
    let show = m.quota_show(&root(), &p(at), 1000, 100).expect("show");
    let e = entry(&show, QuotaTarget::user(1000), "alice's record");
    (e.used_bytes, e.used_inodes)
}

/// `/proj` a quota node with a bin, alice's tree `/proj/t` of 2 dirs and
/// 3 files (600 bytes) and a file `/proj/f` (50 bytes).
fn project() -> (tempfile::TempDir, MetaStore) {
    let (d, m, r) = fresh();
    let alice = alice();
    m.mkdir(&p("/proj"), &r, 0o777, false).expect("mkdir");
    m.quota_set(
        &p("/proj"),
        QuotaTarget::user(1000),
        Some(10_000),
        Some(100),
    )
    .expect("quota");
    m.xattr_set(&p("/proj"), &r, RECYCLE_ATTR, b"/proj")
        .expect("bin");
    m.mkdir(&p("/proj/t/u"), &alice, 0o755, true)
        .expect("mkdir");
    write(&m, "/proj/t/a", &alice, 100).expect("a");
    write(&m, "/proj/t/u/b", &alice, 200).expect("b");
    write(&m, "/proj/t/u/c", &alice, 300).expect("c");
    write(&m, "/proj/f", &alice, 50).expect("f");
    (d, m)
}

fn moved(r: Result<Removal, MetaError>) -> RecycleEntry {
    match r.expect("move") {
        Removal::Binned { entry, .. } => entry,
        other => panic!("not moved: {other:?}"),
    }
}

#[test]
fn a_tree_moves_whole_and_comes_back_with_its_quota() {
    let (_d, m) = project();
    let alice = alice();
    assert_eq!(alice_used(&m, "/proj"), (650, 6));
    let e = moved(m.remove_entry(&p("/proj/t"), &alice, true));
    assert_eq!((e.bytes, e.inodes, e.kind), (600, 5, EntryKind::Directory));
    assert_eq!(e.path, "/proj/t");
    refused(m.stat(&alice, &p("/proj/t")), "gone", ErrorKind::NotFound);
    assert_eq!(alice_used(&m, "/proj"), (50, 1), "quota left the project");
    let bin = &m.recycle_bins().expect("bins")[0];
    assert_eq!((bin.used_bytes, bin.used_inodes, bin.entries), (600, 5, 1));
    assert_clean(&m);
    // Listed for its owner, not for bob; bob may not restore it.
    assert_eq!(
        m.recycle_list(&alice, None, false, 0, 10)
            .expect("ls")
            .len(),
        1
    );
    assert!(m
        .recycle_list(&bob(), None, false, 0, 10)
        .expect("ls")
        .is_empty());
    refused(
        m.recycle_list(&bob(), None, true, 0, 10),
        "all",
        ErrorKind::NotPermitted,
    );
    // Another owner's entry is as if there were none (no path, no owner
    // told).
    let e2 = m
        .recycle_restore(&bob(), e.id, None, false)
        .expect_err("bob");
    assert_eq!(e2.kind(), ErrorKind::NotFound);
    assert!(!e2.to_string().contains("/proj"), "{e2}");
    // A new entry at the old name: restore refuses unless forced.
    write(&m, "/proj/t", &alice, 7).expect("new t");
    refused(
        m.recycle_restore(&alice, e.id, None, false),
        "exists",
        ErrorKind::AlreadyExists,
    );
    let back = m.recycle_restore(&alice, e.id, None, true).expect("forced");
    assert!(
        back.replaced.is_empty(),
        "the replaced file went to the bin"
    );
    assert_eq!(m.stat(&alice, &p("/proj/t/u/c")).expect("back").size, 300);
    assert_eq!(alice_used(&m, "/proj"), (650, 6));
    let bins = m.recycle_bins().expect("bins");
    assert_eq!(
        (bins[0].used_bytes, bins[0].entries),
        (7, 1),
        "only the replaced file"
    );
    assert_clean(&m);
}

#[test]
fn restore_is_checked_against_quota_and_a_missing_directory() {
    let (_d, m) = project();
    let alice = alice();
    let e = moved(m.remove_entry(&p("/proj/t"), &alice, true));
    // The freed room is used up: restoring would exceed the quota.
    write(&m, "/proj/big", &alice, 9_500).expect("fill");
    refused(
        m.recycle_restore(&alice, e.id, None, false),
        "quota",
        ErrorKind::QuotaExceeded,
    );
    assert_clean(&m);
    m.mkdir(&p("/other"), &root(), 0o777, false).expect("mkdir");
    refused(
        m.recycle_restore(&alice, e.id, Some(&p("/nowhere/t")), false),
        "no parent",
        ErrorKind::NotFound,
    );
    m.recycle_restore(&alice, e.id, Some(&p("/other/t")), false)
        .expect("elsewhere");
    assert_eq!(m.stat(&alice, &p("/other/t/a")).expect("there").size, 100);
    assert_clean(&m);
}

#[test]
fn no_bin_no_move_and_a_tree_alice_cannot_fully_remove_goes_in_pieces() {
    let (_d, m, r) = fresh();
    let alice = alice();
    m.mkdir(&p("/plain"), &r, 0o777, false).expect("mkdir");
    write(&m, "/plain/x", &alice, 1).expect("x");
    let gone = m
        .remove_entry(&p("/plain/x"), &alice, false)
        .expect("no bin");
    assert!(
        matches!(gone, Removal::Gone(ref i, _) if i.size == 1),
        "{gone:?}"
    );
    m.mkdir(&p("/plain/d/e"), &alice, 0o755, true)
        .expect("mkdir");
    let r1 = m
        .remove_entry(&p("/plain/d"), &alice, true)
        .expect("no bin, a tree");
    assert!(matches!(r1, Removal::NotWhole(_)), "{r1:?}");
    m.mkdir(&p("/b"), &r, 0o777, false).expect("mkdir");
    m.xattr_set(&p("/b"), &r, RECYCLE_ATTR, b"bee")
        .expect("bin");
    m.mkdir(&p("/b/t/bobs"), &alice, 0o777, true)
        .expect("mkdir");
    m.setattr(
        &p("/b/t/bobs"),
        &r,
        SetAttr {
            uid: Some(1001),
            mode: Some(0o755),
            ..Default::default()
        },
    )
    .expect("give to bob");
    let r2 = m.remove_entry(&p("/b/t"), &alice, true).expect("asked");
    assert!(matches!(r2, Removal::NotWhole(_)), "{r2:?}");
    assert!(m.stat(&alice, &p("/b/t/bobs")).is_ok(), "nothing moved");
    // Subdirectories made later do not copy the bin's attribute: turning
    // it off at the top turns it off below.
    m.mkdir(&p("/b/later"), &alice, 0o755, false)
        .expect("mkdir");
    write(&m, "/b/later/x", &alice, 3).expect("x");
    let attrs = m.xattr_list(&r, &p("/b/later")).expect("attrs");
    assert!(attrs.iter().all(|(n, _)| n != RECYCLE_ATTR), "{attrs:?}");
    m.xattr_rm(&p("/b"), &r, RECYCLE_ATTR).expect("off");
    let gone = m.remove_entry(&p("/b/later/x"), &alice, false).expect("rm");
    assert!(matches!(gone, Removal::Gone(..)), "{gone:?}");
    m.xattr_set(&p("/b"), &r, RECYCLE_ATTR, b"bee")
        .expect("on again");
    // A non-recursive delete of a non-empty directory is refused.
    refused(
        m.remove_entry(&p("/b/t"), &alice, false),
        "not empty",
        ErrorKind::NotEmpty,
    );
    assert_clean(&m);
}

#[test]
fn purge_goes_a_piece_at_a_time_and_by_age_and_volume() {
    let (_d, m) = project();
    let alice = alice();
    let t = moved(m.remove_entry(&p("/proj/t"), &alice, true));
    let f = moved(m.remove_entry(&p("/proj/f"), &alice, false));
    // Nothing is due yet (30 days), then everything is.
    let now = f.deleted_ns;
    assert!(m.recycle_due(now, 10).expect("due").is_empty());
    assert_eq!(
        m.recycle_due(now + 31 * 86_400 * 1_000_000_000, 10)
            .expect("due"),
        vec![t.id, f.id]
    );
    // A volume cap of 100 bytes: the oldest (600 bytes) goes first, and
    // then 50 fit.
    m.recycle_set_bin(&root(), "/proj", 0, (100, 0))
        .expect("set");
    assert_eq!(m.recycle_due(now, 10).expect("due"), vec![t.id]);
    let mut files = 0;
    loop {
        let s = m.recycle_purge_step(&alice, t.id, 2).expect("step");
        assert!(s.inodes <= 2);
        files += s.files.len();
        assert_clean(&m);
        if s.done {
            break;
        }
        let e = m.recycle_entry(&alice, t.id).expect("still there");
        assert!(e.purging);
        refused(
            m.recycle_restore(&alice, t.id, None, false),
            "purging",
            ErrorKind::Busy,
        );
    }
    assert_eq!(files, 3, "every purged file handed back for its stripes");
    refused(m.recycle_entry(&alice, t.id), "gone", ErrorKind::NotFound);
    let bin = &m.recycle_bins().expect("bins")[0];
    assert_eq!((bin.used_bytes, bin.used_inodes, bin.entries), (50, 1, 1));
    assert!(m.recycle_due(now, 10).expect("due").is_empty());
    assert_clean(&m);
}

fn overwrite(m: &MetaStore, path: &str, who: &Identity, size: u64) -> (Inode, Vec<Inode>) {
    let r = m
        .begin_write(&p(path), who, 0o644, true, size)
        .expect("begin");
    m.commit_write(
        r.id,
        CommitWrite {
            size,
            ..Default::default()
        },
    )
    .expect("commit")
}

#[test]
fn versions_keep_the_last_n_count_in_quota_and_follow_their_file() {
    let (_d, m) = project();
    let (alice, r) = (alice(), root());
    m.xattr_set(&p("/proj"), &r, VERSIONING_ATTR, b"3")
        .expect("versioning");
    let before = alice_used(&m, "/proj");
    // Five overwrites of a 50-byte file: sizes 1..5; the last 3 replaced
    // ones stay.
    let mut dropped = 0;
    for size in 1..=5 {
        dropped += overwrite(&m, "/proj/f", &alice, size).1.len();
        assert_clean(&m);
    }
    let vs = m.versions(&alice, &p("/proj/f")).expect("versions");
    assert_eq!(
        vs.iter().map(|v| v.size).collect::<Vec<_>>(),
        [2, 3, 4],
        "oldest first"
    );
    assert_eq!(dropped, 2, "the original (50 bytes) and size 1 went");
    assert_eq!(
        m.list(&alice, &p("/proj"), None, 100).expect("ls").len(),
        2,
        "no version listed"
    );
    // Versions count: 50 → 5 current + 2 + 3 + 4 versions, 3 more inodes.
    assert_eq!(
        alice_used(&m, "/proj"),
        (before.0 - 50 + 5 + 9, before.1 + 3)
    );
    // Restore the size-3 one: the current (5) becomes a version.
    m.restore_version(&alice, &p("/proj/f"), vs[1].ino)
        .expect("restore");
    assert_eq!(m.stat(&alice, &p("/proj/f")).expect("stat").size, 3);
    let sizes: Vec<u64> = m
        .versions(&alice, &p("/proj/f"))
        .unwrap()
        .iter()
        .map(|v| v.size)
        .collect();
    assert_eq!(sizes, [2, 4, 5]);
    refused(
        m.restore_version(&bob(), &p("/proj/f"), vs[0].ino),
        "bob",
        ErrorKind::PermissionDenied,
    );
    assert_clean(&m);
    // A rename takes them along; a delete into the bin too, and back.
    m.rename(&p("/proj/f"), &p("/proj/g"), &alice, RenameFlags::default())
        .expect("mv");
    assert_eq!(m.versions(&alice, &p("/proj/g")).unwrap().len(), 3);
    let e = moved(m.remove_entry(&p("/proj/g"), &alice, false));
    assert_eq!((e.bytes, e.inodes), (3 + 2 + 4 + 5, 4));
    assert_clean(&m);
    m.recycle_restore(&alice, e.id, None, false)
        .expect("restore");
    assert_eq!(m.versions(&alice, &p("/proj/g")).unwrap().len(), 3);
    assert_clean(&m);
    // A rename over it: the file it replaces becomes its newest version
    // (and the oldest beyond three goes).
    write(&m, "/proj/h", &alice, 6).expect("h");
    m.rename(&p("/proj/h"), &p("/proj/g"), &alice, RenameFlags::default())
        .expect("mv over");
    let sizes: Vec<u64> = m
        .versions(&alice, &p("/proj/g"))
        .unwrap()
        .iter()
        .map(|v| v.size)
        .collect();
    assert_eq!(sizes, [4, 5, 3], "by inode: the restored 3 is the newest");
    assert_clean(&m);
    // Purge down to one; then a delete for good takes the rest.
    assert_eq!(
        m.purge_versions(&alice, &p("/proj/g"), 1)
            .expect("purge")
            .len(),
        2
    );
    m.xattr_rm(&p("/proj"), &r, RECYCLE_ATTR).expect("no bin");
    match m.remove_entry(&p("/proj/g"), &alice, false).expect("rm") {
        Removal::Gone(_, versions) => assert_eq!(versions.len(), 1),
        other => panic!("{other:?}"),
    }
    assert_clean(&m);
}
