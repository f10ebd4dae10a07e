//! `kill -9` of a process during 50 parallel writes through the data layer:
//! after restart every acknowledged file reads back with its checksum, every
//! visible file is complete, and fsck finds only orphans, which repair
//! removes. The writer is this test binary re-run as a child process.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
mod common;

use common::{data, p};
use tessera_core::*;
use tessera_types::Identity;

const CHILD_ENV: &str = "TESSERA_CRASH_CHILD_DIR";

fn open_core(dir: &std::path::Path) -> Core {
    common::core_at(dir, tessera_meta::Durability::Sync, 0o755)
}

/// The child: register six folders, then 50 threads write files forever,
/// printing `acked PATH LEN SEED` after each close returns.
#[test]
#[ignore = "run as a child process by kill_9_during_parallel_writes"]
fn crash_child() {
    let Ok(dir) = std::env::var(CHILD_ENV) else {
        return;
    };
    let dir = std::path::PathBuf::from(dir);
    let rt = tokio::runtime::Runtime::new().expect("rt");
    let core = open_core(&dir);
    let root = Identity::root("crash");
    rt.block_on(async {
        common::add_folders(&core, &dir, 6).await;
        common::layout_dir(&core, &root, "/w", "layout=raid6 nstripes=6 blocksize=64k").await;
    });
    println!("ready");
    std::thread::scope(|s| {
        for t in 0..50u64 {
            let core = core.clone();
            let root = root.clone();
            s.spawn(move || {
                for n in 0.. {
                    let seed = t * 1_000_000 + n;
                    let len = 1000 + (seed as usize * 7919) % 700_000;
                    let path = format!("/w/t{t}-{n}");
                    let d = data(len, seed);
                    let mut w = core
                        .open_write(&root, &p(&path), 0o644, false, 0)
                        .expect("open");
                    for c in d.chunks(100_000) {
                        w.write(c).expect("write");
                    }
                    w.close().expect("close");
                    println!("acked {path} {len} {seed}");
                }
            });
        }
    });
}

#[tokio::test]
async fn kill_9_during_parallel_writes() {
    let dir = tempfile::tempdir().expect("tmp");
    let mut child = Command::new(std::env::current_exe().expect("exe"))
        .args([
            "--exact",
            "crash_child",
            "--ignored",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env(CHILD_ENV, dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn child");
    let out = BufReader::new(child.stdout.take().expect("stdout"));
    let mut acked = Vec::new();
    for line in out.lines() {
        let line = line.expect("line");
        if let Some(rest) = line.strip_prefix("acked ") {
            let f: Vec<&str> = rest.split(' ').collect();
            acked.push((
                f[0].to_string(),
                f[1].parse::<usize>().expect("len"),
                f[2].parse::<u64>().expect("seed"),
            ));
            if acked.len() >= 120 {
                break;
            }
        }
    }
    child.kill().expect("kill -9");
    child.wait().expect("reap");
    assert!(
        acked.len() >= 120,
        "child died early after {} files",
        acked.len()
    );

    let core = open_core(dir.path());
    let root = Identity::root("check");
    for (path, len, seed) in &acked {
        let r = core
            .open_read(&root, &p(path))
            .unwrap_or_else(|e| panic!("acknowledged {path} lost: {e}"));
        let mut buf = vec![0u8; *len];
        assert_eq!(r.read_at(0, &mut buf).expect("read"), *len);
        assert_eq!(buf, data(*len, *seed), "{path}");
    }
    // Every visible file is complete: its bytes match its stored adler32.
    let listing = core.list(&root, p("/w"), None, 10_000).await.expect("list");
    assert!(listing.len() >= acked.len());
    for f in &listing {
        let path = format!("/w/{}", String::from_utf8_lossy(&f.name));
        let r = core.open_read(&root, &p(&path)).expect("open");
        let mut buf = vec![0u8; r.size() as usize];
        assert_eq!(r.read_at(0, &mut buf).expect("read"), buf.len());
        let ck = f.checksum.as_ref().expect("checksum");
        assert_eq!(
            ck.value,
            simd_adler32::adler32(&buf.as_slice())
                .to_be_bytes()
                .to_vec(),
            "{path}"
        );
    }
    let scan = core.fsck_scan(true).expect("scan");
    assert!(
        scan.issues.is_empty(),
        "committed files are whole: {:?}",
        scan.issues
    );
    assert!(
        !scan.orphans.is_empty(),
        "in-flight writes leave temporary stripes"
    );
    let rep = core.fsck_repair(&scan, &common::APPLY_NOW).expect("repair");
    assert_eq!(rep.orphans_removed as usize, scan.orphans.len());
    let after = core.fsck_scan(false).expect("scan");
    assert!(after.orphans.is_empty() && after.issues.is_empty());
    assert!(core
        .check(&root)
        .await
        .expect("ns check")
        .problems
        .is_empty());
}
