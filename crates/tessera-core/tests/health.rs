//! A failing filesystem is never chosen again until it recovers: an I/O
//! error marks it degraded at once, the write that hit it places that
//! stripe elsewhere, and a probe brings it back. The failure is real: a
//! folder bind-mounted read-only over itself (tests run as root).

mod common;

use common::data;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;
use tessera_core::*;

fn mount(args: &[&str]) {
    let st = Command::new("mount").args(args).status().expect("mount");
    assert!(st.success(), "mount {args:?} (the tests run as root)");
}

/// A folder made read-only by a bind mount over itself; unmounted on drop.
struct ReadOnly(PathBuf);

impl ReadOnly {
    fn new(dir: &Path) -> ReadOnly {
        let d = dir.to_str().expect("utf8");
        mount(&["--bind", d, d]);
        let ro = ReadOnly(dir.to_path_buf());
        mount(&["-o", "remount,bind,ro", d]);
        ro
    }

    fn writable(&self) {
        mount(&["-o", "remount,bind,rw", self.0.to_str().expect("utf8")]);
    }
}

impl Drop for ReadOnly {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

fn fsids(f: &Inode) -> Vec<u32> {
    Placement::decode(&f.layout).expect("placement").fsids
}

fn health(c: &Core, id: u32) -> Health {
    c.fs_list()
        .into_iter()
        .find(|v| v.rec.id == id)
        .expect("fs")
        .health
}

#[tokio::test]
async fn a_read_only_folder_is_avoided_until_a_probe_finds_it_writable() {
    let (dir, core, root) = common::setup(7, 0o755).await;
    common::layout_dir(&core, &root, "/d", "nstripes=6 layout=raid6 blocksize=4k").await;
    let bad = common::fs_by_label(&core, "fs3").rec.id;
    let ro = ReadOnly::new(&dir.path().join("fs3"));
    // Six stripes, seven folders: every placement but one in seven uses
    // fs3. Every upload succeeds all the same, and after the first that
    // ran into it none places a stripe there.
    let mut hit = false;
    for i in 0..20 {
        let path = format!("/d/f{i}");
        let f = common::put(&core, &root, &path, &data(30_000, i)).expect("upload");
        assert!(!fsids(&f).contains(&bad), "{path} has a stripe on fs {bad}");
        assert_eq!(
            common::get(&core, &root, &path).expect("read"),
            data(30_000, i)
        );
        hit |= health(&core, bad).state != HealthState::Ok;
    }
    assert!(hit, "an upload ran into the read-only folder");
    let h = health(&core, bad);
    assert_eq!(h.state, HealthState::Degraded);
    let why = h.reason.expect("reason").1;
    assert!(why.contains("Read-only"), "{why}");
    let space = &core.spaces()[0];
    assert_eq!(space.writable, 6, "{space:?}");

    // A probe finds it still read-only; once it is writable, the next
    // probe brings it back.
    core.probe_filesystems(PROBE_DEADLINE);
    assert_eq!(health(&core, bad).state, HealthState::Degraded);
    ro.writable();
    core.probe_filesystems(PROBE_DEADLINE);
    let h = health(&core, bad);
    assert_eq!(h.state, HealthState::Ok, "{h:?}");
    assert!(h.probe_latency.is_some_and(|l| l < Duration::from_secs(5)));
    let used = (20..60).any(|i| {
        let f = common::put(&core, &root, &format!("/d/f{i}"), &data(1000, i)).expect("upload");
        fsids(&f).contains(&bad)
    });
    assert!(used, "placement uses it again");
}
