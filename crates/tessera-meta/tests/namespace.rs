//! Namespace behaviour through the public API of the store.

mod common;

use common::*;
use tessera_meta::*;
use tessera_types::{ErrorKind, Identity, NsPath};

#[test]
fn mkdir_create_stat_list() {
    let (_d, m, r) = fresh();
    m.mkdir(&p("/a/b/c"), &r, 0o755, true).expect("mkdir -p");
    refused(
        m.mkdir(&p("/a/b"), &r, 0o755, false),
        "exists",
        ErrorKind::AlreadyExists,
    );
    m.mkdir(&p("/a/b"), &r, 0o755, true)
        .expect("mkdir -p of existing is fine");
    refused(
        m.mkdir(&p("/x/y"), &r, 0o755, false),
        "no parent",
        ErrorKind::NotFound,
    );
    let f = m.create(&p("/a/f"), &r, 0o640).expect("create");
    assert_eq!(f.size, 0);
    refused(
        m.create(&p("/a/f"), &r, 0o640),
        "dup",
        ErrorKind::AlreadyExists,
    );
    refused(
        m.create(&p("/a/f/g"), &r, 0o640),
        "under file",
        ErrorKind::NotADirectory,
    );
    refused(
        m.stat(&root(), &p("/a/f/g")),
        "under file",
        ErrorKind::NotADirectory,
    );
    assert_eq!(m.stat(&root(), &p("/a/f")).expect("stat").ino, f.ino);
    let names: Vec<_> = m
        .list(&root(), &p("/a"), None, 100)
        .expect("list")
        .into_iter()
        .map(|i| i.name)
        .collect();
    assert_eq!(names, vec![b"b".to_vec(), b"f".to_vec()]);
    assert_eq!(m.stat(&root(), &p("/a")).expect("stat").nchildren, 2);
    refused(
        m.list(&root(), &p("/a/f"), None, 10),
        "file",
        ErrorKind::NotADirectory,
    );
    assert_clean(&m);
}

#[test]
fn paged_listing_is_stable() {
    let (_d, m, r) = fresh();
    m.mkdir(&p("/d"), &r, 0o755, false).expect("mkdir");
    for i in 0..250 {
        m.create(&p(&format!("/d/f{i:04}")), &r, 0o644)
            .expect("create");
    }
    let mut after: Option<Vec<u8>> = None;
    let mut all = Vec::new();
    loop {
        let page = m
            .list(&root(), &p("/d"), after.as_deref(), 64)
            .expect("page");
        if page.is_empty() {
            break;
        }
        after = Some(page.last().expect("non-empty").name.clone());
        all.extend(page.into_iter().map(|i| i.name));
    }
    let want: Vec<_> = (0..250).map(|i| format!("f{i:04}").into_bytes()).collect();
    assert_eq!(all, want);
}

#[test]
fn unlink_rmdir_rules() {
    let (_d, m, r) = fresh();
    m.mkdir(&p("/a/b"), &r, 0o755, true).expect("mkdir");
    write(&m, "/a/b/f", &r, 10).expect("write");
    refused(m.rmdir(&p("/a/b"), &r), "non-empty", ErrorKind::NotEmpty);
    refused(m.rmdir(&p("/a/b/f"), &r), "file", ErrorKind::NotADirectory);
    refused(m.unlink(&p("/a/b"), &r), "dir", ErrorKind::IsADirectory);
    refused(m.unlink(&p("/a/nope"), &r), "missing", ErrorKind::NotFound);
    refused(m.rmdir(&p("/"), &r), "root", ErrorKind::Busy);
    assert_eq!(m.unlink(&p("/a/b/f"), &r).expect("unlink").size, 10);
    m.rmdir(&p("/a/b"), &r).expect("rmdir");
    assert_eq!(m.stat(&root(), &p("/a")).expect("stat").nchildren, 0);
    assert_clean(&m);
}

#[test]
fn rename_follows_posix() {
    let (_d, m, r) = fresh();
    m.mkdir(&p("/a/b/c"), &r, 0o755, true).expect("mkdir");
    m.mkdir(&p("/e"), &r, 0o755, true).expect("mkdir");
    m.mkdir(&p("/full/x"), &r, 0o755, true).expect("mkdir");
    write(&m, "/f", &r, 5).expect("write");
    write(&m, "/g", &r, 7).expect("write");
    let err = |a: &str, b: &str| {
        m.rename(&p(a), &p(b), &r, RenameFlags::default())
            .expect_err("must fail")
            .kind()
    };
    assert_eq!(err("/a", "/a/b/c/a"), ErrorKind::InvalidArgument);
    assert_eq!(err("/a", "/a/z"), ErrorKind::InvalidArgument);
    assert_eq!(err("/f", "/e"), ErrorKind::IsADirectory);
    assert_eq!(err("/e", "/f"), ErrorKind::NotADirectory);
    assert_eq!(err("/e", "/full"), ErrorKind::NotEmpty);
    assert_eq!(err("/nope", "/x"), ErrorKind::NotFound);
    assert_eq!(err("/f", "/nodir/f"), ErrorKind::NotFound);
    assert_eq!(err("/", "/x"), ErrorKind::Busy);
    // file replaces file
    m.rename(&p("/f"), &p("/g"), &r, RenameFlags::default())
        .expect("replace");
    assert_eq!(m.stat(&root(), &p("/g")).expect("stat").size, 5);
    refused(m.stat(&root(), &p("/f")), "gone", ErrorKind::NotFound);
    assert_eq!(
        m.rename(&p("/g"), &p("/a/g"), &r, RenameFlags { no_replace: true })
            .expect("no clash")
            .parent,
        m.stat(&root(), &p("/a")).expect("stat").ino
    );
    // empty dir replaces empty dir, across directories
    m.rename(&p("/e"), &p("/a/b/c"), &r, RenameFlags::default())
        .expect("dir over empty dir");
    m.rename(&p("/a/b"), &p("/moved"), &r, RenameFlags::default())
        .expect("move subtree");
    assert!(m.stat(&root(), &p("/moved/c")).expect("stat").is_dir());
    // rename onto itself is a no-op
    m.rename(&p("/moved"), &p("/moved"), &r, RenameFlags::default())
        .expect("self");
    assert_clean(&m);
}

#[test]
fn xattrs_and_inheritance() {
    let (_d, m, r) = fresh();
    let user = Identity::user(1000, 1000, "alice", "test");
    m.mkdir(&p("/a"), &r, 0o777, false).expect("mkdir");
    m.xattr_set(&p("/a"), &r, b"sys.forced.layout", b"raid6")
        .expect("set");
    m.xattr_set(&p("/a"), &r, b"user.note", b"hi").expect("set");
    m.mkdir(&p("/a/b/c"), &user, 0o755, true).expect("mkdir -p");
    assert_eq!(
        m.xattr_get(&root(), &p("/a/b/c"), b"sys.forced.layout")
            .expect("inherited"),
        b"raid6"
    );
    refused(
        m.xattr_get(&root(), &p("/a/b"), b"user.note"),
        "not inherited",
        ErrorKind::NotFound,
    );
    refused(
        m.xattr_set(&p("/a/b"), &user, b"sys.acl", b"u:1:rwx"),
        "admin only",
        ErrorKind::PermissionDenied,
    );
    m.xattr_set(&p("/a/b"), &user, b"user.x", b"1")
        .expect("owner may");
    assert_eq!(m.xattr_list(&root(), &p("/a/b")).expect("list").len(), 2);
    m.xattr_rm(&p("/a/b"), &user, b"user.x").expect("rm");
    refused(
        m.xattr_rm(&p("/a/b"), &user, b"user.x"),
        "gone",
        ErrorKind::NotFound,
    );
    refused(
        m.xattr_set(&p("/a"), &r, b"", b"x"),
        "empty name",
        ErrorKind::InvalidArgument,
    );
    m.rmdir(&p("/a/b/c"), &r).expect("rmdir drops xattrs");
    assert_clean(&m);
}

fn alice_used(m: &MetaStore, at: &str) -> (u64, u64) {
    let show = m.quota_show(&root(), &p(at), 1000, 100).expect("show");
    let e = entry(&show, QuotaTarget::user(1000), "alice's record");
    (e.used_bytes, e.used_inodes)
}

#[test]
fn user_attributes_count_in_the_byte_quota() {
    let (_d, m, r) = fresh();
    let alice = alice();
    m.mkdir(&p("/q"), &r, 0o777, false).expect("mkdir");
    m.quota_set(&p("/q"), QuotaTarget::user(1000), Some(1000), None)
        .expect("set");
    write(&m, "/q/f", &alice, 900).expect("write");
    m.mkdir(&p("/q/d"), &alice, 0o755, false).expect("mkdir");
    // Names and values are charged, on files and directories alike.
    m.xattr_set(&p("/q/f"), &alice, b"user.a", &[b'x'; 44])
        .expect("fits");
    assert_eq!(alice_used(&m, "/q"), (950, 2));
    m.xattr_set(&p("/q/d"), &alice, b"user.b", &[b'x'; 44])
        .expect("fits");
    assert_eq!(alice_used(&m, "/q"), (1000, 2));
    // A user at the limit adds no dead property (the attack: many
    // PROPPATCHes by a user already over quota).
    let e = m
        .xattr_set(&p("/q/f"), &alice, b"user.c", b"x")
        .expect_err("over");
    assert_eq!(e.kind(), ErrorKind::QuotaExceeded, "{e}");
    let e = m
        .xattr_patch(
            &p("/q/d"),
            &alice,
            &[(b"user.c".to_vec(), Some(b"x".to_vec()))],
        )
        .expect_err("over");
    assert_eq!(e.kind(), ErrorKind::QuotaExceeded, "{e}");
    // Admin attributes are not the user's bytes.
    m.xattr_set(&p("/q/f"), &r, b"sys.note", &[b'x'; 100])
        .expect("sys");
    // Shrinking, removing and deleting give the bytes back; moves and
    // owner changes take them along.
    m.xattr_set(&p("/q/f"), &alice, b"user.a", &[b'x'; 4])
        .expect("shrink");
    assert_eq!(alice_used(&m, "/q"), (960, 2));
    m.xattr_rm(&p("/q/d"), &alice, b"user.b").expect("rm");
    assert_eq!(alice_used(&m, "/q"), (910, 2));
    m.rename(&p("/q/f"), &p("/f"), &r, RenameFlags::default())
        .expect("mv out");
    assert_eq!(alice_used(&m, "/q"), (0, 1));
    assert_eq!(alice_used(&m, "/"), (910, 1));
    m.setattr(
        &p("/f"),
        &r,
        SetAttr {
            uid: Some(1001),
            ..Default::default()
        },
    )
    .expect("chown");
    assert_eq!(alice_used(&m, "/"), (0, 0));
    assert_clean(&m);
    m.unlink(&p("/f"), &r).expect("rm");
    assert_clean(&m);
    // A directory's attributes move with it when a quota node is made
    // and dropped.
    m.mkdir(&p("/n/sub"), &alice, 0o755, true).expect("mkdir");
    m.xattr_set(&p("/n/sub"), &alice, b"user.z", &[b'x'; 94])
        .expect("set");
    m.quota_set(&p("/n"), QuotaTarget::user(1000), Some(10_000), None)
        .expect("node");
    assert_eq!(alice_used(&m, "/n"), (100, 1));
    m.quota_rmnode(&p("/n")).expect("drop node");
    assert_clean(&m);
}

#[test]
fn quota_limits_reservations_and_accounting() {
    let (_d, m, r) = fresh();
    let alice = alice();
    m.mkdir(&p("/q/sub"), &r, 0o777, true).expect("mkdir");
    write(&m, "/q/sub/pre", &alice, 100).expect("write before quota");
    m.quota_set(&p("/q"), QuotaTarget::user(1000), Some(1000), Some(5))
        .expect("set");
    let show = m
        .quota_show(&root(), &p("/q/sub"), 1000, 100)
        .expect("show");
    assert_eq!(show.path, p("/q"));
    let u = entry(&show, QuotaTarget::user(1000), "user rec");
    // pre (100 bytes, 1 inode) moved from / to /q; /q/sub is owned by root.
    assert_eq!((u.used_bytes, u.used_inodes), (100, 1));
    assert_clean(&m);

    // A reservation holds space: a second writer cannot overshoot.
    let big = m
        .begin_write(&p("/q/sub/big"), &alice, 0o644, false, 800)
        .expect("reserve 800");
    refused(
        m.begin_write(&p("/q/sub/other"), &alice, 0o644, false, 200),
        "over",
        ErrorKind::QuotaExceeded,
    );
    refused(
        m.extend_write(big.id, 101),
        "over",
        ErrorKind::QuotaExceeded,
    );
    m.extend_write(big.id, 100).expect("fits exactly");
    m.commit_write(
        big.id,
        CommitWrite {
            size: 900,
            crc32c: None,
            ..Default::default()
        },
    )
    .expect("commit");
    // A commit larger than reserved and over the limit is refused, nothing visible.
    let r2 = m
        .begin_write(&p("/q/sub/tiny"), &alice, 0o644, false, 0)
        .expect("reserve");
    refused(
        m.commit_write(
            r2.id,
            CommitWrite {
                size: 1,
                crc32c: None,
                ..Default::default()
            },
        ),
        "over",
        ErrorKind::QuotaExceeded,
    );
    refused(
        m.stat(&root(), &p("/q/sub/tiny")),
        "invisible",
        ErrorKind::NotFound,
    );
    // Aborted writes leave nothing and release their space.
    let r3 = m
        .begin_write(&p("/q/sub/gone"), &alice, 0o644, false, 0)
        .expect("reserve");
    m.abort_write(r3.id).expect("abort");
    refused(
        m.stat(&root(), &p("/q/sub/gone")),
        "invisible",
        ErrorKind::NotFound,
    );
    // Inode limit: 2 used (pre, big) of 5.
    for i in 0..3 {
        m.create(&p(&format!("/q/sub/e{i}")), &alice, 0o644)
            .expect("inode fits");
    }
    refused(
        m.create(&p("/q/sub/e9"), &alice, 0o644),
        "inodes",
        ErrorKind::QuotaExceeded,
    );
    // Other users are not limited by alice's record.
    m.create(&p("/q/sub/rootfile"), &r, 0o644)
        .expect("root not limited");
    // Moving a file out of the node frees alice's usage.
    m.rename(&p("/q/sub/big"), &p("/big"), &r, RenameFlags::default())
        .expect("mv out");
    let u = m.quota_show(&root(), &p("/q"), 1000, 100).expect("show");
    let u = entry(&u, QuotaTarget::user(1000), "rec");
    assert_eq!((u.used_bytes, u.used_inodes), (100, 4));
    // Moving it back in is refused when it does not fit... it fits (1000).
    m.rename(&p("/big"), &p("/q/big"), &r, RenameFlags::default())
        .expect("mv in");
    write(&m, "/q/x", &alice, 1).expect_err("full");
    assert_clean(&m);
    // Dropping the node returns usage to /.
    m.quota_rm(&p("/q"), QuotaTarget::user(1000), true, true)
        .expect("rm limits");
    m.quota_rmnode(&p("/q")).expect("rmnode");
    assert_eq!(m.quota_ls(&NsPath::root()).expect("ls").len(), 1);
    assert_clean(&m);
}

#[test]
fn restart_keeps_everything_and_never_reuses_inodes() {
    let d = tempfile::tempdir().expect("tmp");
    let r = root();
    let (ino_before, resv_ino) = {
        let m = open(d.path());
        m.mkdir(&p("/a"), &r, 0o755, false).expect("mkdir");
        let f = write(&m, "/a/f", &r, 42).expect("write");
        m.quota_set(&p("/a"), QuotaTarget::group(5), Some(10_000), None)
            .expect("quota");
        let pending = m
            .begin_write(&p("/a/pending"), &r, 0o644, false, 1)
            .expect("begin");
        (f.ino, pending.ino)
    };
    let m = open(d.path());
    assert_eq!(m.stat(&root(), &p("/a/f")).expect("stat").ino, ino_before);
    refused(
        m.stat(&root(), &p("/a/pending")),
        "never committed",
        ErrorKind::NotFound,
    );
    let next = write(&m, "/a/g", &r, 1).expect("write");
    assert!(next.ino > resv_ino, "inode {} handed out again", next.ino);
    assert_eq!(m.quota_ls(&p("/a")).expect("ls")[0].entries.len(), 4);
    assert_clean(&m);
}

#[test]
fn damage_records_count_list_and_clear_and_survive_restart() {
    let d = tempfile::tempdir().unwrap();
    {
        let m = open(d.path());
        m.damage_note(7, 2, 3, "block checksum mismatch", 100)
            .unwrap();
        m.damage_note(7, 2, 3, "short block", 200).unwrap();
        m.damage_note(7, 0, 1, "missing", 150).unwrap();
        m.damage_note(9, 1, 4, "no answer within 2s", 300).unwrap();
        let all = m.damage_list(0, 100).unwrap();
        assert_eq!(
            all.iter().map(|r| (r.fid, r.stripe)).collect::<Vec<_>>(),
            vec![(7, 0), (7, 2), (9, 1)]
        );
        let r = &all[1];
        assert_eq!((r.fsid, r.count, r.first_ns, r.last_ns), (3, 2, 100, 200));
        assert_eq!(r.what, "short block");
        // Paged by file.
        let after = m.damage_list(7, 100).unwrap();
        assert_eq!(after.len(), 1);
        assert_eq!(after[0].fid, 9);
        assert_eq!(m.damage_list(0, 1).unwrap().len(), 1);
        // Only what was known at the given time is forgotten.
        m.damage_clear(7, 170).unwrap();
        assert_eq!(m.damage_list(0, 100).unwrap().len(), 2);
        m.damage_clear(7, 200).unwrap();
        assert_eq!(m.damage_list(0, 100).unwrap().len(), 1);
    }
    let m = open(d.path());
    let left = m.damage_list(0, 100).unwrap();
    assert_eq!(left.len(), 1);
    assert_eq!((left[0].fid, left[0].stripe, left[0].count), (9, 1, 1));
}

/// RocksDB's own LOG gets no line per synced commit (Debian's library
/// defaults to debug level, which logged "FlushWAL sync=true" for every
/// file written, without end).
#[test]
fn synced_commits_do_not_grow_the_rocksdb_log() {
    let d = tempfile::tempdir().unwrap();
    {
        let m = MetaStore::open(
            d.path(),
            MetaOptions {
                durability: Durability::Sync,
                ..Default::default()
            },
        )
        .expect("open");
        m.mkdir(&p("/d"), &root(), 0o755, false).unwrap();
        for i in 0..50 {
            write(&m, &format!("/d/f{i}"), &root(), 10).unwrap();
        }
        m.flush().unwrap();
    } // closing flushes the LOG
    let log = std::fs::read_to_string(d.path().join("LOG")).expect("RocksDB LOG");
    assert!(!log.contains("FlushWAL"), "a line per commit");
    assert!(!log.contains("[DEBUG]"), "debug lines");
}

/// Reads from memory only (what a request may do without leaving its
/// thread) answer from the caches and RocksDB's memtables and block cache,
/// and step aside (`None`) where a record would have to be read from
/// storage; where they answer, they agree with the ordinary reads.
#[test]
fn reads_from_memory_answer_or_step_aside() {
    let d = tempfile::tempdir().unwrap();
    let bob = Identity::user(1000, 100, "bob", "t");
    {
        let m = open(d.path());
        m.mkdir(&p("/d"), &root(), 0o700, false).unwrap();
        let w = m.begin_write(&p("/d/f"), &root(), 0o600, true, 10).unwrap();
        m.commit_write(w.id, CommitWrite::default()).unwrap();
        m.xattr_set(&p("/d"), &root(), b"sys.acl", b"u:1000:r")
            .unwrap();
        m.flush().unwrap();
    }
    // Reopened: every record is in a table file, no cache holds any.
    let m = open(d.path());
    assert_eq!(m.stat_nowait(&root(), &p("/d/f")).unwrap(), None);
    let f = m.stat(&root(), &p("/d/f")).unwrap();
    assert_eq!(m.stat_nowait(&root(), &p("/d/f")).unwrap(), Some(f.clone()));
    // Not there is an answer too, once the blocks that say so are read.
    let e = m.stat_nowait(&root(), &p("/d/g")).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound);
    // The directory's ACL lets bob read (the file's mode 0600 would not).
    assert!(!may(&bob, &f, 4));
    assert_eq!(m.may_read_nowait(&bob, &f).unwrap(), None);
    assert!(m.may_read(&bob, &f).unwrap());
    assert_eq!(m.may_read_nowait(&bob, &f).unwrap(), Some(true));
    // A change is seen at once (the memtable is memory).
    write(&m, "/d/g", &root(), 5).unwrap();
    assert_eq!(
        m.stat_nowait(&root(), &p("/d/g")).unwrap().map(|i| i.size),
        Some(5)
    );
}

#[test]
fn an_update_keeps_owner_mode_and_attributes_and_loses_to_a_replace() {
    let (_d, m, r) = fresh();
    let alice = Identity::user(1000, 1000, "alice", "test");
    let bob = Identity::user(1001, 1001, "bob", "test");
    m.mkdir(&p("/u"), &r, 0o777, false).expect("mkdir");
    let old = write(&m, "/u/f", &alice, 10).expect("alice's file");
    m.xattr_set(&p("/u/f"), &alice, b"user.tag", b"v1")
        .expect("xattr");
    m.setattr(
        &p("/u/f"),
        &alice,
        SetAttr {
            mode: Some(0o666),
            ..Default::default()
        },
    )
    .expect("chmod");
    // Bob updates it (he may: mode 0666 in a 0777 directory).
    let u = m
        .begin_write(&p("/u/f"), &bob, 0o600, true, 10)
        .expect("reserve");
    let commit = CommitWrite {
        size: 20,
        ..Default::default()
    };
    let (new, replaced) = m.commit_update(u.id, commit, old.ino).expect("update");
    assert_eq!(
        replaced.iter().map(|i| i.ino).collect::<Vec<_>>(),
        [old.ino]
    );
    assert_ne!(new.ino, old.ino);
    assert_eq!(
        (new.uid, new.gid, new.mode & 0o7777, new.size),
        (1000, 1000, 0o666, 20)
    );
    assert_eq!(
        m.xattr_get(&root(), &p("/u/f"), b"user.tag").expect("kept"),
        b"v1"
    );
    assert_clean(&m); // the attribute carried over is charged once
                      // A file replaced during an update wins: the update is refused and
                      // changes nothing.
    let u2 = m
        .begin_write(&p("/u/f"), &bob, 0o600, true, 10)
        .expect("reserve");
    let again = write(&m, "/u/f", &bob, 5).expect("replace meanwhile");
    let e = m
        .commit_update(u2.id, CommitWrite::default(), new.ino)
        .expect_err("stale");
    assert_eq!(e.kind(), ErrorKind::Busy);
    assert_eq!(m.stat(&root(), &p("/u/f")).expect("there").ino, again.ino);
    assert_clean(&m);
}
