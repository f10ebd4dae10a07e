//! Filesystem administration that must lose nothing: the same storage is
//! never registered twice, a path that does not exist is not made on the
//! root disk, a filesystem holding stripes cannot be removed and ids are
//! never reused, and a root whose marker names another filesystem is not
//! served as this one.

mod common;

use common::{data, p};
use tessera_core::*;
use tessera_types::{ErrorKind, Identity};

fn rec(label: &str, path: &std::path::Path, domain: &str) -> FsRecord {
    FsRecord {
        id: 0,
        label: label.into(),
        locator: format!("folder:{}", path.display()),
        domain: domain.into(),
        space: DEFAULT_SPACE.into(),
        status: FsConfigStatus::Rw,
        uuid: String::new(),
    }
}

#[tokio::test]
async fn the_same_storage_twice_and_missing_paths_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let c = common::core_at(dir.path(), tessera_meta::Durability::Buffered, 0o777);
    let root = Identity::root("test");
    let x = dir.path().join("x");
    // Missing: refused without create, nothing made.
    let e = c
        .fs_add(&root, rec("a", &x, "d1"), false)
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    assert!(!x.exists());
    // A plain directory (no mount point, no marker): refused without create.
    std::fs::create_dir(&x).unwrap();
    assert!(c.fs_add(&root, rec("a", &x, "d1"), false).await.is_err());
    let a = c.fs_add(&root, rec("a", &x, "d1"), true).await.unwrap();
    let marker = std::fs::read_to_string(x.join(tessera_backend::MARKER)).unwrap();
    assert_eq!(
        tessera_backend::Marker::parse(&marker),
        Some(tessera_backend::Marker {
            fs: a.id,
            uuid: a.uuid.clone()
        })
    );
    // The same directory again: by its path, through a symlink, through a
    // bind-like second name (`..` in the path).
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(&x, &link).unwrap();
    let dotted = dir.path().join("x").join("..").join("x");
    for (label, path) in [("b", x.clone()), ("c", link), ("d", dotted)] {
        let e = c
            .fs_add(&root, rec(label, &path, "d2"), true)
            .await
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::AlreadyExists, "{label}: {e}");
        assert!(
            e.to_string().contains(&format!("filesystem {}", a.id)),
            "{e}"
        );
    }
    assert_eq!(c.fs_list().len(), 1);
    // A copy of the marker elsewhere (a second mount of the same storage).
    let y = dir.path().join("y");
    std::fs::create_dir(&y).unwrap();
    std::fs::copy(
        x.join(tessera_backend::MARKER),
        y.join(tessera_backend::MARKER),
    )
    .unwrap();
    let e = c
        .fs_add(&root, rec("e", &y, "d2"), false)
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::AlreadyExists, "{e}");
}

#[tokio::test]
async fn a_filesystem_with_stripes_stays_and_ids_are_never_reused() {
    let (dir, c, root) = common::setup(2, 0o777).await;
    common::put(&c, &root, "/f", &data(100_000, 1)).unwrap();
    let fsid = tessera_core::Placement::decode(&c.stat(&root, p("/f")).await.unwrap().layout)
        .unwrap()
        .fsids[0];
    common::fs_status(&c, &root, fsid, FsConfigStatus::Off)
        .await
        .unwrap();
    let e = c.fs_rm(&root, fsid).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Busy, "{e}");
    assert!(e.to_string().contains("1 stripes of 1 files"), "{e}");
    // Drained, it goes; the file is whole on the other one.
    common::fs_status(&c, &root, fsid, FsConfigStatus::Rw)
        .await
        .unwrap();
    let rep = c.drain(fsid).unwrap();
    assert!(rep.emptied, "{rep:?}");
    c.fs_rm(&root, fsid).await.unwrap();
    assert_eq!(common::get(&c, &root, "/f").unwrap(), data(100_000, 1));
    // The next filesystem gets a new id, not the removed one's.
    common::add_folder(&c, "new", &dir.path().join("new"), "d9").await;
    let ids: Vec<u32> = c.fs_list().iter().map(|v| v.rec.id).collect();
    assert!(
        !ids.contains(&fsid) && ids.iter().all(|&i| i <= 3),
        "{ids:?}"
    );
    assert!(ids.contains(&3), "{ids:?}");
}

#[tokio::test]
async fn a_root_whose_marker_names_another_filesystem_is_not_used() {
    let (dir, c, root) = common::setup(1, 0o777).await;
    common::put(&c, &root, "/before", b"fine").unwrap();
    // Other storage mounted in its place: its marker names another
    // filesystem.
    let other = tessera_backend::Marker {
        fs: 99,
        uuid: tessera_backend::new_uuid(),
    };
    std::fs::write(
        dir.path().join("fs1").join(tessera_backend::MARKER),
        other.render(),
    )
    .unwrap();
    // Placement's reading is good for 2 s.
    std::thread::sleep(std::time::Duration::from_millis(2100));
    let v = &c.fs_list()[0];
    assert!(
        v.error
            .as_deref()
            .is_some_and(|e| e.contains("names filesystem 99")),
        "{v:?}"
    );
    let e = common::put(&c, &root, "/after", b"nowhere").unwrap_err();
    assert_eq!(
        e.kind(),
        ErrorKind::NoSpace,
        "no filesystem to place it on: {e}"
    );
}
