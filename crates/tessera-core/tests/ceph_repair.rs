//! Repair on a real Ceph cluster (issue 35, item 16): run by
//! scripts/test after deploy/ceph/up.sh, as `cargo test -p tessera-core
//! --test ceph_repair -- --ignored`; needs TC_MNT1 and TC_MNT2 from
//! `$TC_DIR/env`.

mod common;

use common::{cluster_env as env, data, p, read};
use tessera_types::Identity;

/// Issue 35, item 16 on CephFS: a RAIN 4+2 file over six folders on the
/// two instances (three each) with one stripe deleted, one truncated
/// half-way and a corrupt block in each of two others, at most two bad
/// blocks in every group: it reads back exactly, fsck calls it
/// recoverable, and repair restores it group by group.
#[tokio::test]
#[ignore = "needs the loopback Ceph cluster of deploy/ceph/up.sh"]
async fn repair_goes_group_by_group_on_cephfs() {
    let (mnt1, mnt2) = (env("TC_MNT1"), env("TC_MNT2"));
    let tmp = tempfile::tempdir().expect("tmp");
    let core = common::core_at(tmp.path(), tessera_meta::Durability::Sync, 0o755);
    let root = Identity::root("test");
    let run = format!("tessera-groups-{}", std::process::id());
    let mut roots = Vec::new();
    for (i, m) in [&mnt1, &mnt1, &mnt1, &mnt2, &mnt2, &mnt2]
        .iter()
        .enumerate()
    {
        let path = std::path::PathBuf::from(format!("{m}/{run}/f{i}"));
        common::add_folder(&core, &format!("c{i}"), &path, &format!("d{i}")).await;
        roots.push(path);
    }
    common::layout_dir(&core, &root, "/g", "layout=raid6 nstripes=6 blocksize=4k").await;
    let body = data(20 * 16 * 1024, 29);
    let f = common::put(&core, &root, "/g/f", &body).expect("write");
    let p0 = tessera_data::Placement::decode(&f.layout).expect("placement");
    let stripe = |i: usize| {
        let id = p0.fsids[i];
        let at = core
            .fs_list()
            .into_iter()
            .find(|v| v.rec.id == id)
            .expect("fs")
            .rec
            .locator
            .trim_start_matches("folder:")
            .to_string();
        let n = tessera_backend::StripeName::new(f.ino, i as u8);
        std::path::Path::new(&at).join(n.dir()).join(n.file())
    };
    std::fs::remove_file(stripe(0)).expect("rm");
    let len = common::shorten(&stripe(1), |len| len / 2);
    let per_block = (len - 4096) / 20;
    for (i, g) in [(2usize, 2u64), (3, 5)] {
        let mut raw = std::fs::read(stripe(i)).expect("read");
        raw[(4096 + g * per_block + 100) as usize] ^= 0x40;
        std::fs::write(stripe(i), raw).expect("write");
    }
    assert_eq!(read(&core, &root, "/g/f"), body);
    let scan = core.fsck_scan(true).expect("scan");
    let issue = scan.issues.iter().find(|i| i.fid == f.ino).expect("issue");
    assert!(issue.recoverable && issue.bad.len() == 4, "{issue:?}");
    let rep = core.fsck_repair(&scan, &common::APPLY_NOW).expect("repair");
    assert!(rep.failed.is_empty() && rep.stripes_rebuilt == 4, "{rep:?}");
    assert!(core.fsck_scan(true).expect("scan").issues.is_empty());
    assert_eq!(read(&core, &root, "/g/f"), body);
    core.remove(&root, p("/g/f"), false).await.expect("rm");
    for r in roots {
        let _ = std::fs::remove_dir_all(r.parent().expect("run dir"));
    }
}
