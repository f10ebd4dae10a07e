//! Whole trees in one core call: a removal that goes on past what cannot
//! be removed (WebDAV's DELETE of a collection) and releases the quota of
//! what went; a deep copy with its `user.*` attributes.

mod common;

use common::{data, p};
use tessera_types::{ErrorKind, Identity};

#[tokio::test]
async fn a_tree_removal_goes_past_what_it_may_not_remove() {
    let (_dir, c, root) = common::setup(1, 0o755).await;
    let alice = Identity::user(1000, 1000, "alice", "test");
    c.mkdir(&root, p("/r"), 0o777, false).await.unwrap();
    c.mkdir(&root, p("/r/locked"), 0o755, false).await.unwrap();
    common::put(&c, &root, "/r/locked/f", &data(1000, 1)).unwrap();
    common::put(&c, &root, "/r/a", &data(2000, 2)).unwrap();
    c.mkdir(&alice, p("/r/mine"), 0o755, false).await.unwrap();
    for i in 0..600 {
        // More than a listing page, so the walk pages past failures.
        common::put(&c, &alice, &format!("/r/mine/x{i}"), b"x").unwrap();
    }
    common::put(&c, &alice, "/r/mine/big", &data(100_000, 3)).unwrap();
    let done = c.remove_all(&alice, p("/r")).await.expect("tried");
    let failed: Vec<String> = done.failed.iter().map(|(p, _)| p.display()).collect();
    assert_eq!(failed, ["/r/locked/f"]);
    assert_eq!(done.failed[0].1.kind(), ErrorKind::PermissionDenied);
    assert_eq!((done.removed.files, done.removed.dirs), (602, 1));
    // What could go is gone; what could not, and its parents, stay.
    assert!(c.stat(&root, p("/r/mine")).await.is_err());
    assert!(c.stat(&root, p("/r/a")).await.is_err());
    assert!(c.stat(&root, p("/r/locked/f")).await.is_ok());
    // Nothing tried at all is the error itself.
    let e = c.remove_all(&alice, p("/r/locked")).await.expect("tried");
    assert_eq!(e.failed.len(), 1);
    let none = c
        .remove_all(&alice, p("/nothere"))
        .await
        .expect_err("missing");
    assert_eq!(none.kind(), ErrorKind::NotFound);
    // Root removes the rest.
    let all = c.remove_all(&root, p("/r")).await.unwrap();
    assert!(all.failed.is_empty());
    assert_eq!((all.removed.files, all.removed.dirs), (1, 2));
}

#[tokio::test]
async fn a_deep_copy_keeps_bytes_and_user_attributes() {
    let (_dir, c, root) = common::setup(1, 0o755).await;
    c.mkdir(&root, p("/s/d"), 0o755, true).await.unwrap();
    let body = data(3_000_000, 5);
    common::put(&c, &root, "/s/d/f", &body).unwrap();
    common::put(&c, &root, "/s/empty", b"").unwrap();
    c.xattr_set(&root, p("/s/d"), b"user.dav.x.y".to_vec(), b"v".to_vec())
        .await
        .unwrap();
    let done = c.copy_tree(&root, p("/s"), p("/t"), true).await.unwrap();
    assert!(done.failed.is_empty(), "{:?}", done.failed);
    assert_eq!((done.files, done.dirs), (2, 2));
    assert_eq!(common::get(&c, &root, "/t/d/f").unwrap(), body);
    assert_eq!(common::get(&c, &root, "/t/empty").unwrap(), b"");
    let v = c
        .xattr_get(&root, p("/t/d"), b"user.dav.x.y".to_vec())
        .await;
    assert_eq!(v.unwrap(), b"v");
    // Depth 0: the directory alone; an existing destination is refused.
    let shallow = c.copy_tree(&root, p("/s"), p("/u"), false).await.unwrap();
    assert_eq!((shallow.files, shallow.dirs), (0, 1));
    assert!(c.stat(&root, p("/u/d")).await.is_err());
    let again = c.copy_tree(&root, p("/s"), p("/t"), true).await;
    assert_eq!(again.expect_err("exists").kind(), ErrorKind::AlreadyExists);
}
