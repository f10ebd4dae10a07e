//! Token scopes through the core service: what a token allows happens,
//! anything else is EACCES with no side effect; create never replaces or
//! deletes, modify does; paths match by whole components.

mod common;

use common::{data, denied, p};
use std::sync::Arc;
use tessera_core::*;
use tessera_types::{Access, ErrorKind, Identity, ScopeGrant, TokenGrant};

fn token(scopes: &[(Access, &str)]) -> Identity {
    let mut id = Identity::user(1000, 1000, "alice", "test");
    id.token = Some(Arc::new(TokenGrant {
        issuer: "https://issuer.test".into(),
        subject: "alice".into(),
        scopes: scopes
            .iter()
            .map(|(a, s)| ScopeGrant {
                access: *a,
                path: p(s),
                dir_only: false,
            })
            .collect(),
        expires: u64::MAX,
    }));
    id
}

#[tokio::test]
async fn scopes_allow_exactly_what_they_say() {
    let (_dir, c, root) = common::setup(1, 0o777).await;
    for d in ["/data", "/database", "/up", "/mine"] {
        c.mkdir(&root, p(d), 0o777, false).await.unwrap();
    }
    common::put(&c, &root, "/data/f", &data(1000, 1)).unwrap();
    common::put(&c, &root, "/database/f", &data(1000, 2)).unwrap();
    let t = token(&[
        (Access::Read, "/data"),
        (Access::Create, "/up"),
        (Access::Modify, "/mine"),
    ]);
    // Read scope: read, stat, list; nothing on a sibling prefix.
    assert_eq!(common::get(&c, &t, "/data/f").unwrap(), data(1000, 1));
    c.stat(&t, p("/data/f")).await.unwrap();
    c.list(&t, p("/data"), None, 10).await.unwrap();
    denied(common::get(&c, &t, "/database/f"));
    denied(c.list(&t, p("/database"), None, 10).await);
    denied(c.stat(&t, p("/database/f")).await);
    // Parents of scope paths can be looked at (stat), not listed.
    c.stat(&t, p("/")).await.unwrap();
    denied(c.list(&t, p("/"), None, 10).await);
    // Read scope does not write.
    denied(common::put(&c, &t, "/data/new", b"x"));
    assert!(
        c.stat(&root, p("/data/new")).await.is_err(),
        "no side effect"
    );
    // Create scope: new files and directories, never replace or delete.
    common::put(&c, &t, "/up/a", b"first").unwrap();
    c.mkdir(&t, p("/up/sub/deeper"), 0o755, true).await.unwrap();
    denied(common::put(&c, &t, "/up/a", b"second"));
    assert_eq!(common::get(&c, &root, "/up/a").unwrap(), b"first");
    denied(c.remove(&t, p("/up/a"), false).await);
    // Opening for reading where it may only create: what is not there is
    // ENOENT, as a stat tells it (a copy's destination is checked so); what
    // is there is EACCES.
    let gone = c
        .open_read(&t, &p("/up/none"))
        .map(|_| ())
        .expect_err("absent");
    assert_eq!(gone.kind(), ErrorKind::NotFound);
    denied(c.open_read(&t, &p("/up/a")).map(|_| ()));
    // Outside every scope, even absence is not told.
    denied(c.open_read(&t, &p("/database/none")).map(|_| ()));
    denied(c.setattr(&t, p("/up/a"), common::chmod(0o600)).await);
    // ... and a rename within create scopes, not onto an existing file.
    c.rename(&t, p("/up/a"), p("/up/b"), RenameFlags::default())
        .await
        .unwrap();
    common::put(&c, &t, "/up/c", b"c").unwrap();
    denied(
        c.rename(&t, p("/up/c"), p("/up/b"), RenameFlags::default())
            .await,
    );
    // Modify scope: overwrite, delete, truncate.
    common::put(&c, &t, "/mine/f", b"one").unwrap();
    common::put(&c, &t, "/mine/f", b"two").unwrap();
    c.truncate(&t, &p("/mine/f"), 1).unwrap();
    c.remove(&t, p("/mine/f"), false).await.unwrap();
    // Outside every scope: nothing.
    denied(c.mkdir(&t, p("/elsewhere"), 0o755, false).await);
    denied(
        c.xattr_set(&t, p("/data"), b"user.x".to_vec(), b"1".to_vec())
            .await,
    );
}

/// A write that began while its file did not exist, as a writer that may
/// only create there (a create-only token, or an ACL that denies
/// replacing), must not replace the file another writer committed
/// meanwhile: its commit decides again in the same transaction and is
/// refused with EACCES, the other file and the quota as they were.
#[tokio::test]
async fn create_only_never_replaces_a_file_committed_meanwhile() {
    let (_dir, c, root) = common::setup(1, 0o777).await;
    c.mkdir(&root, p("/race"), 0o777, false).await.unwrap();
    c.quota_set(&root, p("/race"), QuotaTarget::user(0), None, Some(100))
        .await
        .unwrap();
    let t = token(&[(Access::Create, "/race")]);

    // 1. A create-only token asks to replace (xrdcp -f, an HTTP PUT).
    let mut slow = c.open_write(&t, &p("/race/f"), 0o644, true, 0).unwrap();
    slow.write(b"the create-only writer's bytes").unwrap();
    common::put(&c, &root, "/race/f", b"committed meanwhile").unwrap();
    let used = |r: QuotaNodeReport| -> Vec<(u64, u64)> {
        r.entries
            .iter()
            .map(|e| (e.used_bytes, e.used_inodes))
            .collect()
    };
    let before = used(c.quota_show(&root, p("/race"), 0, 0).await.unwrap());
    denied(slow.close());
    assert_eq!(
        common::get(&c, &root, "/race/f").unwrap(),
        b"committed meanwhile"
    );
    let after = c.quota_show(&root, p("/race"), 0, 0).await.unwrap();
    assert!(
        after.entries.iter().all(|e| e.reserved_bytes == 0),
        "released"
    );
    assert_eq!(used(after), before);
    // And at the open, when the file is already there.
    denied(c.open_write(&t, &p("/race/f"), 0o644, true, 0).map(|_| ()));

    // 2. The same race under an ACL: group /cms may create, not update.
    c.xattr_set(
        &root,
        p("/race"),
        b"sys.acl".to_vec(),
        b"g:/cms:w!u".to_vec(),
    )
    .await
    .unwrap();
    let mut cms = Identity::user(1000, 1000, "bob", "test");
    cms.group_names = vec!["/cms".into()];
    let mut slow = c.open_write(&cms, &p("/race/g"), 0o644, true, 0).unwrap();
    slow.write(b"bob's").unwrap();
    common::put(&c, &root, "/race/g", b"root's").unwrap();
    denied(slow.close());
    assert_eq!(common::get(&c, &root, "/race/g").unwrap(), b"root's");

    // 3. Rights withdrawn during a write: the commit is refused.
    let mut slow = c.open_write(&cms, &p("/race/h"), 0o644, true, 0).unwrap();
    slow.write(b"late").unwrap();
    c.xattr_set(
        &root,
        p("/race"),
        b"sys.acl".to_vec(),
        b"g:/cms:rx".to_vec(),
    )
    .await
    .unwrap();
    c.setattr(&root, p("/race"), common::chmod(0o755))
        .await
        .unwrap();
    denied(slow.close());
    assert!(
        c.stat(&root, p("/race/h")).await.is_err(),
        "nothing visible"
    );
}
