//! The core's `Upload`, as the front-ends drive it: writes in and out of
//! order, gaps filled at close, rewrites and shrinks kept for the close
//! where writes may come out of order, the refusals that abort a file
//! (nothing visible, memory and holds given back), and where each step
//! runs.

mod common;

use common::{data as bytes, get, p, Env};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tessera_core::*;
use tessera_types::ErrorKind;

async fn env() -> Env {
    let e = common::env(6, 0o777).await;
    common::layout_spec(&e.core, "/", "layout=raiddp blocksize=64k").await;
    e
}

fn open(e: &Env, path: &str) -> WriteSession {
    e.core
        .open_write(&e.root, &p(path), 0o644, false, 0)
        .expect("open")
}

fn write(at: Option<u64>, d: &[u8]) -> Step<Vec<u8>> {
    Step::Write {
        at,
        data: d.to_vec(),
        lease: Lease::default(),
    }
}

fn holds(shared: &Arc<AtomicUsize>) -> Option<Holds> {
    Some(Holds {
        per_file: 1 << 20,
        per_group: 4 << 20,
        shared: Arc::clone(shared),
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_out_of_order_are_held_and_a_gap_left_at_close_reads_as_zeros() {
    let e = env().await;
    let budget = Budget::new(64 << 20, Duration::from_secs(1));
    let shared = Arc::new(AtomicUsize::new(0));
    let up = Upload::new(open(&e, "/f"), budget.clone(), holds(&shared));
    let (a, b, c) = (bytes(100_000, 1), bytes(50_000, 2), bytes(7, 3));
    // b after a gap, then a fills the gap, then c after another gap.
    up.step(write(Some(100_000), &b)).await.expect("held");
    assert_eq!(shared.load(Ordering::Relaxed), 50_000);
    up.step(write(Some(0), &a)).await.expect("fills the gap");
    assert_eq!(shared.load(Ordering::Relaxed), 0, "held bytes applied");
    up.step(write(Some(200_000), &c)).await.expect("held");
    let ino = up.close(Expect::default()).await.expect("close");
    assert_eq!(ino.size, 200_007);
    assert_eq!(shared.load(Ordering::Relaxed), 0);
    let mut want = a.clone();
    want.extend_from_slice(&b);
    want.resize(200_000, 0);
    want.extend_from_slice(&c);
    assert_eq!(get(&e.core, &e.root, "/f").expect("read"), want);
    drop(up);
    assert_eq!(budget.in_use(), 0, "the file's memory went back");
}

/// Stripe files under the test's folders (no orphans left behind).
fn stripe_files(e: &Env) -> usize {
    let mut n = 0;
    let mut todo = vec![e.dir.path().to_path_buf()];
    while let Some(d) = todo.pop() {
        for x in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = x.path();
            let name = x.file_name().to_string_lossy().into_owned();
            if path.is_dir() {
                if !path.ends_with("meta") {
                    todo.push(path);
                }
            } else if d.parent().is_some_and(|p| {
                p.file_name()
                    .is_some_and(|f| f.to_string_lossy().starts_with("fs"))
            }) && !name.starts_with('.')
            {
                n += 1;
            }
        }
    }
    n
}

/// Where writes may come out of order (XRootD), writes over streamed
/// bytes and shrinks are kept, and the file is built again with them at
/// close (ROOT rewrites its header when it closes a file it created): the
/// final bytes are exact, and the first version leaves no stripe behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rewrites_and_shrinks_are_kept_and_the_file_built_again_at_close() {
    let e = env().await;
    let budget = Budget::new(64 << 20, Duration::from_secs(1));
    let shared = Arc::new(AtomicUsize::new(0));
    // Several groups (RAIN 4+2, 64 KiB blocks), a held write, a rewrite of
    // the first bytes, one across the streamed end.
    let up = Upload::new(open(&e, "/r"), budget.clone(), holds(&shared));
    let first = bytes(600_000, 1);
    up.step(write(None, &first)).await.expect("append");
    up.step(write(Some(700_000), &bytes(10, 2)))
        .await
        .expect("held");
    up.step(write(Some(10), b"header")).await.expect("rewrite");
    up.step(write(Some(599_990), &[7u8; 20]))
        .await
        .expect("across the end");
    let done = up.close(Expect::default()).await.expect("close");
    let mut want = first.clone();
    want[10..16].copy_from_slice(b"header");
    want[599_990..].fill(7);
    want.extend_from_slice(&[7u8; 10]);
    want.resize(700_000, 0);
    want.extend_from_slice(&bytes(10, 2));
    assert_eq!(done.size, want.len() as u64);
    assert!(
        get(&e.core, &e.root, "/r").expect("read") == want,
        "content"
    );
    assert_eq!(stripe_files(&e), 6, "one file's stripes, no orphans");
    // A shrink, then writes past it: the bytes between read as zeros.
    let up = Upload::new(open(&e, "/s"), budget.clone(), holds(&shared));
    up.step(write(None, &bytes(300_000, 3)))
        .await
        .expect("append");
    up.step(Step::Truncate(100)).await.expect("shrink");
    up.step(write(Some(200), b"abc"))
        .await
        .expect("past the shrink");
    up.step(write(Some(50), b"zz")).await.expect("inside");
    up.close(Expect::default()).await.expect("close");
    let mut want = bytes(300_000, 3)[..100].to_vec();
    want[50..52].copy_from_slice(b"zz");
    want.resize(200, 0);
    want.extend_from_slice(b"abc");
    assert!(get(&e.core, &e.root, "/s").expect("read") == want, "shrunk");
    assert_eq!(stripe_files(&e), 12);
    // A digest announced for the final bytes is checked against them.
    let up = Upload::new(open(&e, "/d"), budget.clone(), holds(&shared));
    up.step(write(None, &bytes(1000, 4))).await.expect("append");
    up.step(write(Some(0), b"Z")).await.expect("rewrite");
    let wrong = Expect {
        adler32: Some(simd_adler32::adler32(&bytes(1000, 4).as_slice())),
        ..Default::default()
    };
    let err = up.close(wrong).await.expect_err("digest of the old bytes");
    assert_eq!(err.kind(), ErrorKind::Corrupt, "{err}");
    assert_eq!(stripe_files(&e), 12, "nothing of it left");
    assert_eq!((budget.in_use(), shared.load(Ordering::Relaxed)), (0, 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_holds_a_write_past_the_end_and_a_shrink_are_refused() {
    let e = env().await;
    let budget = Budget::new(64 << 20, Duration::from_secs(1));
    let up = Upload::new(open(&e, "/g"), budget.clone(), None);
    let err = up.step(write(Some(10), b"late")).await.expect_err("gap");
    assert_eq!(err.kind(), ErrorKind::Unsupported);
    let up = Upload::new(open(&e, "/t"), budget, None);
    up.append(bytes(300, 1), Lease::default()).await.expect("w");
    up.step(Step::Truncate(1000)).await.expect("extend");
    let err = up.step(Step::Truncate(10)).await.expect_err("shrink");
    assert_eq!(err.kind(), ErrorKind::Unsupported);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_the_budget_cannot_give_aborts_the_file_with_no_memory() {
    let e = env().await;
    // One first lease fits, the writer's full group does not.
    let budget = Budget::new(FIRST_LEASE, Duration::from_millis(20));
    let up = Upload::new(open(&e, "/m"), budget.clone(), None);
    up.append(bytes(1000, 1), Lease::default())
        .await
        .expect("small");
    assert!(budget.in_use() > 0);
    let err = up
        .append(bytes(200_000, 2), Lease::default())
        .await
        .expect_err("over budget");
    assert_eq!(err.kind(), ErrorKind::NoMemory);
    assert_eq!(budget.in_use(), 0, "the aborted file gave its memory back");
    let gone = e
        .core
        .stat(&e.root, p("/m"))
        .await
        .expect_err("not visible");
    assert_eq!(gone.kind(), ErrorKind::NotFound);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_append_into_memory_runs_in_line_a_reservation_and_a_close_on_the_pool() {
    let e = env().await;
    let budget = Budget::new(64 << 20, Duration::from_secs(1));
    let up = Upload::new(open(&e, "/w"), budget, None);
    let ran = |d: Done, r: Ran| {
        (
            d.is_ok(),
            r,
            std::thread::current().name().map(String::from),
        )
    };
    // The first append reserves quota (a namespace step): on the pool.
    let (ok, r, _) = up.apply(write(None, b"hello"), ran).await.expect("w");
    assert!(ok);
    assert_eq!(r, Ran::OnPool);
    // The next lands in the group buffer, inside the reservation.
    let (ok, r, _) = up.apply(write(None, b" world"), ran).await.expect("w");
    assert!(ok);
    assert_eq!(r, Ran::InLine);
    let (ok, r, _) = up.apply(Step::Sync, ran).await.expect("sync");
    assert!(ok);
    assert_eq!(r, Ran::InLine);
    let (ok, r, thread) = up
        .apply(Step::Close(Expect::default()), ran)
        .await
        .expect("close");
    assert!(ok);
    assert_eq!(r, Ran::OnPool);
    assert_ne!(thread.as_deref(), Some("tokio-runtime-worker"));
    assert_eq!(get(&e.core, &e.root, "/w").expect("read"), b"hello world");
}
