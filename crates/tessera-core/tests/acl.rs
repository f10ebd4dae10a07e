//! EOS-style ACLs on directories: allow beyond the mode bits, deny beats
//! allow (the owner too), no-delete, update-only, browse, the owner's
//! `user.acl` only where `sys.eval.useracl` is set, inheritance to new
//! subdirectories and files, and invalid lists refused when set.

mod common;

use common::{data, denied, p};
use tessera_core::*;
use tessera_types::{ErrorKind, Identity};

#[tokio::test]
async fn acls_on_directories() {
    let (_dir, c, root) = common::setup(1, 0o755).await;
    let alice = Identity::user(1000, 1000, "alice", "test");
    let bob = Identity::user(1001, 1001, "bob", "test");
    let carol = Identity::user(1002, 1002, "carol", "test");
    let set = |path: &str, name: &str, v: &str| {
        let (c, root) = (c.clone(), root.clone());
        let (path, name, v) = (path.to_string(), name.to_string(), v.to_string());
        async move {
            c.xattr_set(&root, p(&path), name.into_bytes(), v.into_bytes())
                .await
        }
    };
    c.mkdir(&root, p("/shared"), 0o755, false).await.unwrap();
    // Mode bits alone: only root writes here.
    denied(common::put(&c, &alice, "/shared/a", b"x"));
    set("/shared", "sys.acl", "u:1000:rwx, u:carol:ru, z:!d")
        .await
        .unwrap();
    // An allow goes beyond the mode bits.
    common::put(&c, &alice, "/shared/a", &data(5000, 1)).unwrap();
    denied(common::put(&c, &bob, "/shared/b", b"x"));
    // Deny beats allow, for the owner too: no delete.
    denied(c.remove(&alice, p("/shared/a"), false).await);
    assert!(c.stat(&root, p("/shared/a")).await.is_ok());
    // Update-only: carol may replace an existing file, not create one.
    common::put(&c, &carol, "/shared/a", &data(6000, 2)).unwrap();
    denied(common::put(&c, &carol, "/shared/new", b"x"));
    assert_eq!(common::get(&c, &carol, "/shared/a").unwrap(), data(6000, 2));
    // Inheritance: a new subdirectory carries sys.acl; files in it are
    // governed by it.
    c.mkdir(&alice, p("/shared/sub"), 0o700, false)
        .await
        .unwrap();
    let got = c
        .xattr_get(&root, p("/shared/sub"), b"sys.acl".to_vec())
        .await
        .unwrap();
    assert_eq!(got, b"u:1000:rwx, u:carol:ru, z:!d");
    common::put(&c, &alice, "/shared/sub/f", b"f").unwrap();
    denied(c.remove(&alice, p("/shared/sub/f"), false).await);
    // Browse: a 0700 directory listed through `x` only.
    c.mkdir(&root, p("/closed"), 0o700, false).await.unwrap();
    denied(c.list(&alice, p("/closed"), None, 10).await);
    set("/closed", "sys.acl", "u:1000:x").await.unwrap();
    c.list(&alice, p("/closed"), None, 10).await.unwrap();
    denied(c.list(&bob, p("/closed"), None, 10).await);
    // The owner's user.acl counts only with sys.eval.useracl.
    c.mkdir(&root, p("/home"), 0o755, false).await.unwrap();
    c.mkdir(&root, p("/home/alice"), 0o755, false)
        .await
        .unwrap();
    c.setattr(
        &root,
        p("/home/alice"),
        SetAttr {
            uid: Some(1000),
            gid: Some(1000),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    c.xattr_set(
        &alice,
        p("/home/alice"),
        b"user.acl".to_vec(),
        b"u:1001:rwx".to_vec(),
    )
    .await
    .unwrap();
    denied(common::put(&c, &bob, "/home/alice/from-bob", b"x"));
    set("/home/alice", "sys.eval.useracl", "1").await.unwrap();
    common::put(&c, &bob, "/home/alice/from-bob", b"x").unwrap();
    // Only admins set sys.acl; nonsense is refused when set.
    denied(
        c.xattr_set(
            &alice,
            p("/home/alice"),
            b"sys.acl".to_vec(),
            b"z:rwx".to_vec(),
        )
        .await,
    );
    for bad in ["q:1:r", "u:1000:rz", "z:!r"] {
        let e = set("/shared", "sys.acl", bad).await.expect_err(bad);
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{bad}");
    }
    // `!m`: not even the owner changes modes.
    set("/home/alice", "sys.acl", "z:!m").await.unwrap();
    denied(
        c.setattr(&alice, p("/home/alice/from-bob"), common::chmod(0o600))
            .await,
    );
}
