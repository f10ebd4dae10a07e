//! Permissions through the store's public API: mode bits, search
//! permission on every directory on the way (POSIX traversal), the sticky
//! bit.

mod common;

use common::*;
use tessera_meta::*;
use tessera_types::ErrorKind;

#[test]
fn permissions_from_mode_bits() {
    let (_d, m, r) = fresh();
    let (alice, bob) = (alice(), bob());
    m.mkdir(&p("/home/alice"), &r, 0o755, true).expect("mkdir");
    m.setattr(
        &p("/home/alice"),
        &r,
        SetAttr {
            uid: Some(1000),
            gid: Some(100),
            ..Default::default()
        },
    )
    .expect("chown");
    write(&m, "/home/alice/f", &alice, 3).expect("owner writes");
    assert_eq!(
        write(&m, "/home/alice/g", &bob, 3).expect_err("bob").kind(),
        ErrorKind::PermissionDenied
    );
    assert_eq!(
        m.unlink(&p("/home/alice/f"), &bob).expect_err("bob").kind(),
        ErrorKind::PermissionDenied
    );
    assert_eq!(
        m.setattr(
            &p("/home/alice/f"),
            &alice,
            SetAttr {
                uid: Some(1001),
                ..Default::default()
            }
        )
        .expect_err("only root chowns")
        .kind(),
        ErrorKind::NotPermitted
    );
    m.setattr(
        &p("/home/alice/f"),
        &alice,
        SetAttr {
            mode: Some(0o600),
            ..Default::default()
        },
    )
    .expect("owner chmods");
    assert_eq!(
        m.stat(&root(), &p("/home/alice/f")).expect("stat").mode,
        0o600
    );
    assert_clean(&m);
}

#[test]
fn every_directory_on_the_way_must_be_searchable() {
    let (_d, m, r) = fresh();
    let (alice, bob) = (alice(), bob());
    m.mkdir(&p("/home/alice/open"), &r, 0o777, true)
        .expect("mkdir");
    let mine = SetAttr {
        uid: Some(1000),
        gid: Some(100),
        ..Default::default()
    };
    m.setattr(&p("/home/alice"), &r, mine).expect("chown");
    write(&m, "/home/alice/f", &alice, 3).expect("owner writes");
    write(&m, "/home/alice/open/g", &alice, 3).expect("owner writes");
    let mode = |m: &MetaStore, path: &str, mode: u32| {
        let a = SetAttr {
            mode: Some(mode),
            ..Default::default()
        };
        m.setattr(&p(path), &alice, a).expect("chmod");
    };
    // Readable by bob while /home/alice is 0755 (the stat is cached now).
    assert!(m.stat(&bob, &p("/home/alice/f")).is_ok());
    mode(&m, "/home/alice", 0o700);
    let denied = |r: Result<Inode, MetaError>| r.expect_err("denied").kind();
    for f in ["/home/alice/f", "/home/alice/open/g", "/home/alice/nothing"] {
        assert_eq!(
            denied(m.stat(&bob, &p(f))),
            ErrorKind::PermissionDenied,
            "{f}"
        );
        assert_eq!(
            m.stat_nowait(&bob, &p(f)).expect_err("denied").kind(),
            ErrorKind::PermissionDenied
        );
    }
    assert!(m.stat(&alice, &p("/home/alice/open/g")).is_ok());
    assert!(
        m.stat(&bob, &p("/home/alice")).is_ok(),
        "the directory itself"
    );
    // No create, delete, rename or listing in the 0777 directory below.
    assert_eq!(
        denied(write(&m, "/home/alice/open/new", &bob, 1)),
        ErrorKind::PermissionDenied
    );
    assert_eq!(
        m.unlink(&p("/home/alice/open/g"), &bob).unwrap_err().kind(),
        ErrorKind::PermissionDenied
    );
    assert_eq!(
        denied(m.rename(
            &p("/home/alice/open/g"),
            &p("/home/alice/open/h"),
            &bob,
            RenameFlags::default()
        )),
        ErrorKind::PermissionDenied
    );
    assert_eq!(
        m.list(&bob, &p("/home/alice/open"), None, 10)
            .unwrap_err()
            .kind(),
        ErrorKind::PermissionDenied
    );
    assert_eq!(
        denied(m.mkdir(&p("/home/alice/open/x/y"), &bob, 0o755, true)),
        ErrorKind::PermissionDenied
    );
    // A commit of a write begun while the way was open is refused once
    // it is shut.
    mode(&m, "/home/alice", 0o755);
    let w = m
        .begin_write(&p("/home/alice/open/late"), &bob, 0o644, false, 0)
        .expect("open while searchable");
    mode(&m, "/home/alice", 0o700);
    assert_eq!(
        m.commit_write(w.id, CommitWrite::default())
            .unwrap_err()
            .kind(),
        ErrorKind::PermissionDenied
    );
    // An ACL's browse right grants the search the mode bits refuse.
    m.xattr_set(&p("/home/alice"), &r, b"sys.acl", b"u:bob:x")
        .expect("acl");
    assert!(m.stat(&bob, &p("/home/alice/open/g")).is_ok());
    assert_clean(&m);
}

#[test]
fn a_sticky_directory_keeps_other_users_entries() {
    let (_d, m, r) = fresh();
    let (alice, bob) = (alice(), bob());
    m.mkdir(&p("/tmp"), &r, 0o1777, false).expect("mkdir");
    write(&m, "/tmp/a", &alice, 1).expect("alice");
    write(&m, "/tmp/b", &bob, 1).expect("bob");
    assert_eq!(
        m.unlink(&p("/tmp/a"), &bob).unwrap_err().kind(),
        ErrorKind::NotPermitted
    );
    assert_eq!(
        m.rename(&p("/tmp/a"), &p("/tmp/c"), &bob, RenameFlags::default())
            .unwrap_err()
            .kind(),
        ErrorKind::NotPermitted
    );
    assert_eq!(
        m.rename(&p("/tmp/b"), &p("/tmp/a"), &bob, RenameFlags::default())
            .unwrap_err()
            .kind(),
        ErrorKind::NotPermitted,
        "nor replaced by a rename"
    );
    m.unlink(&p("/tmp/b"), &bob).expect("own entry");
    m.unlink(&p("/tmp/a"), &r).expect("root");
    assert_clean(&m);
}
