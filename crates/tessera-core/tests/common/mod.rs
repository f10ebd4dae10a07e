//! Helpers shared by the core service's integration tests.
#![allow(dead_code)] // each test binary uses a different subset

use std::sync::Arc;
use tessera_core::*;
use tessera_obs::{AccessLog, Metrics};
use tessera_types::{ErrorKind, Identity, NsPath};

/// Repair for real, orphans of any age (tests make theirs just now).
pub const APPLY_NOW: RepairPlan = RepairPlan {
    apply: true,
    orphan_grace: std::time::Duration::ZERO,
};

pub fn p(s: &str) -> NsPath {
    NsPath::parse(s).expect("path")
}

/// Deterministic pseudo-random bytes.
pub fn data(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// A core over a namespace in `dir/meta` (root directory mode `root_mode`).
pub fn core_at(
    dir: &std::path::Path,
    durability: tessera_meta::Durability,
    root_mode: u32,
) -> Core {
    core_logging(dir, durability, root_mode, Arc::new(AccessLog::disabled()))
}

/// As [`core_at`], with its access lines going to `access`.
pub fn core_logging(
    dir: &std::path::Path,
    durability: tessera_meta::Durability,
    root_mode: u32,
    access: Arc<AccessLog>,
) -> Core {
    let meta = Arc::new(
        MetaStore::open(
            &dir.join("meta"),
            MetaOptions {
                durability,
                root_mode,
                ..Default::default()
            },
        )
        .expect("open"),
    );
    Core::new(meta, Arc::new(Metrics::new("test")), access).expect("core")
}

/// Register folder `path` as a read-write filesystem in `domain`.
pub async fn add_folder(core: &Core, label: &str, path: &std::path::Path, domain: &str) {
    core.fs_add(
        &Identity::root("test"),
        FsRecord {
            id: 0,
            label: label.to_string(),
            locator: format!("folder:{}", path.display()),
            domain: domain.to_string(),
            space: DEFAULT_SPACE.into(),
            status: FsConfigStatus::Rw,
            uuid: String::new(),
        },
        true,
    )
    .await
    .expect("fs add");
}

/// Register `dir/fs1..n` in domains `d1..n`.
pub async fn add_folders(core: &Core, dir: &std::path::Path, n: usize) {
    for i in 1..=n {
        add_folder(
            core,
            &format!("fs{i}"),
            &dir.join(format!("fs{i}")),
            &format!("d{i}"),
        )
        .await;
    }
}

/// A core over a namespace and the folders `fs1..n` (see [`add_folders`])
/// in a fresh temporary directory, with the root identity to act as.
pub struct Env {
    pub dir: tempfile::TempDir,
    pub core: Core,
    pub root: Identity,
}

/// An [`Env`] with `folders` folders, buffered, root directory mode `root_mode`.
pub async fn env(folders: usize, root_mode: u32) -> Env {
    let (dir, core, root) = setup(folders, root_mode).await;
    Env { dir, core, root }
}

/// [`env`] in pieces: the directory to keep, the core and the root identity.
pub async fn setup(folders: usize, root_mode: u32) -> (tempfile::TempDir, Core, Identity) {
    let dir = tempfile::tempdir().expect("tmp");
    let core = core_at(dir.path(), tessera_meta::Durability::Buffered, root_mode);
    add_folders(&core, dir.path(), folders).await;
    (dir, core, Identity::root("test"))
}

/// The filesystem labelled `label`.
pub fn fs_by_label(core: &Core, label: &str) -> FsView {
    core.fs_list()
        .into_iter()
        .find(|v| v.rec.label == label)
        .unwrap_or_else(|| panic!("no filesystem {label}"))
}

/// The call was refused for want of permission.
#[track_caller]
pub fn denied<T: std::fmt::Debug>(r: Result<T, CoreError>) {
    assert_eq!(r.expect_err("refused").kind(), ErrorKind::PermissionDenied);
}

/// Make directory `dir` (mode 0755) as `who`, then set its layout from
/// `spec` (see [`layout_spec`]).
pub async fn layout_dir(core: &Core, who: &Identity, dir: &str, spec: &str) {
    core.mkdir(who, p(dir), 0o755, false).await.expect("mkdir");
    layout_spec(core, dir, spec).await;
}

/// [`layout`] from `name=value` words, each set as `sys.forced.name` in
/// that order (`"layout=raid6 nstripes=6 blocksize=4k"`).
pub async fn layout_spec(core: &Core, dir: &str, spec: &str) {
    let names: Vec<(String, &str)> = spec
        .split_whitespace()
        .map(|w| {
            let (k, v) = w.split_once('=').expect("name=value");
            (format!("sys.forced.{k}"), v)
        })
        .collect();
    let attrs: Vec<(&str, &str)> = names.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    layout(core, dir, &attrs).await;
}

/// A change of the mode bits alone.
pub fn chmod(mode: u32) -> SetAttr {
    SetAttr {
        mode: Some(mode),
        ..Default::default()
    }
}

/// Cut the file at `path` to `to(its length)`; that length before.
pub fn shorten(path: &std::path::Path, to: impl FnOnce(u64) -> u64) -> u64 {
    let len = std::fs::metadata(path).expect("meta").len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .expect("open")
        .set_len(to(len))
        .expect("truncate");
    len
}

/// Set a filesystem's configured status.
pub async fn fs_status(
    core: &Core,
    who: &Identity,
    id: u32,
    status: FsConfigStatus,
) -> Result<FsRecord, CoreError> {
    let change = FsChange {
        status: Some(status),
        ..Default::default()
    };
    core.fs_set(who, id, change).await
}

/// Set the `sys.forced.*` layout attributes of a directory.
pub async fn layout(core: &Core, dir: &str, attrs: &[(&str, &str)]) {
    for (k, v) in attrs {
        core.xattr_set(
            &Identity::root("test"),
            p(dir),
            k.as_bytes().to_vec(),
            v.as_bytes().to_vec(),
        )
        .await
        .expect("attr");
    }
}

/// Write a whole file (overwriting), in 100 kB pieces.
pub fn put(core: &Core, who: &Identity, path: &str, d: &[u8]) -> Result<Inode, CoreError> {
    let mut w = core.open_write(who, &p(path), 0o644, true, 0)?;
    for c in d.chunks(100_000) {
        w.write(c)?;
    }
    w.close()
}

/// Read a whole file.
pub fn get(core: &Core, who: &Identity, path: &str) -> Result<Vec<u8>, CoreError> {
    let r = core.open_read(who, &p(path))?;
    let mut out = vec![0u8; r.size() as usize];
    let n = r.read_at(0, &mut out)?;
    out.truncate(n);
    Ok(out)
}

/// Read a whole file that must read.
pub fn read(core: &Core, who: &Identity, path: &str) -> Vec<u8> {
    get(core, who, path).expect("read")
}

/// A variable of the loopback Ceph cluster's environment (`$TC_DIR/env`).
pub fn cluster_env(k: &str) -> String {
    std::env::var(k).unwrap_or_else(|_| {
        panic!("{k} not set: start the cluster with deploy/ceph/up.sh and source $TC_DIR/env")
    })
}
