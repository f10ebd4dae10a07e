//! `MetaStore::create_many`: a large directory made in batches keeps what
//! single creates keep (entries in order, the directory's count, the
//! project's inodes, a clean check) and refuses names that exist.

mod common;

use common::*;
use tessera_meta::*;
use tessera_types::ErrorKind;

#[test]
fn many_files_in_batches() {
    let (_d, m, root) = fresh();
    m.mkdir(&p("/big"), &root, 0o755, false).unwrap();
    m.quota_set(&p("/big"), QuotaTarget::project(), Some(1 << 30), None)
        .unwrap();
    let t = std::time::Instant::now();
    let n = 100_000u64;
    let names = (0..n).map(|i| format!("f{i:06}").into_bytes());
    assert_eq!(
        m.create_many(&p("/big"), (1000, 1000, 0o644), names, 30_000)
            .unwrap(),
        n
    );
    eprintln!("{n} files in {:?}", t.elapsed());
    let dir = m.stat(&root, &p("/big")).unwrap();
    assert_eq!(dir.nchildren, n);
    let page = m.list(&root, &p("/big"), Some(b"f049999"), 3).unwrap();
    let names: Vec<_> = page
        .iter()
        .map(|i| String::from_utf8_lossy(&i.name).into_owned())
        .collect();
    assert_eq!(names, ["f050000", "f050001", "f050002"]);
    assert_eq!((page[0].uid, page[0].size), (1000, 0));
    let show = m.quota_ls(&p("/big")).unwrap();
    let proj = entry(&show[0], QuotaTarget::project(), "project");
    assert_eq!(proj.used_inodes, n);
    // An existing name, or one twice in a batch, fails its batch.
    let again = vec![b"new1".to_vec(), b"f000007".to_vec()];
    refused(
        m.create_many(&p("/big"), (0, 0, 0o644), again, 10),
        "exists",
        ErrorKind::AlreadyExists,
    );
    let twice = vec![b"x".to_vec(), b"x".to_vec()];
    refused(
        m.create_many(&p("/big"), (0, 0, 0o644), twice, 10),
        "twice",
        ErrorKind::AlreadyExists,
    );
    assert_eq!(m.stat(&root, &p("/big")).unwrap().nchildren, n);
    assert_clean(&m);
}

/// A listing's attributes by inode: each entry's own, none for an entry
/// without; refused to whoever may not search the directory.
#[test]
fn attributes_of_a_listing() {
    let (_d, m, root) = fresh();
    m.mkdir(&p("/d"), &root, 0o755, false).unwrap();
    let names = (0..3).map(|i| format!("f{i}").into_bytes());
    m.create_many(&p("/d"), (1000, 100, 0o644), names, 10)
        .unwrap();
    m.xattr_set(&p("/d/f1"), &root, b"user.dav.x", b"one")
        .unwrap();
    m.xattr_set(&p("/d/f2"), &root, b"user.a", b"2").unwrap();
    m.xattr_set(&p("/d/f2"), &root, b"user.b", b"3").unwrap();
    let page = m.list(&root, &p("/d"), None, 10).unwrap();
    let inos: Vec<u64> = page.iter().map(|i| i.ino).collect();
    let all = m.xattr_list_children(&root, &p("/d"), &inos).unwrap();
    assert_eq!(all[0], vec![]);
    assert_eq!(all[1], vec![(b"user.dav.x".to_vec(), b"one".to_vec())]);
    assert_eq!(all[2].len(), 2);
    let mode = SetAttr {
        mode: Some(0o700),
        ..Default::default()
    };
    m.setattr(&p("/d"), &root, mode).unwrap();
    refused(
        m.xattr_list_children(&bob(), &p("/d"), &inos),
        "no search",
        ErrorKind::PermissionDenied,
    );
}
