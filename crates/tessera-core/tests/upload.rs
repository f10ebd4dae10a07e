//! The core's `Upload`, as the front-ends drive it: writes in and out of
//! order, gaps filled at close, the refusals that abort a file (nothing
//! visible, memory and holds given back), and where each step runs.

mod common;

use common::{data as bytes, get, p};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tessera_core::*;
use tessera_types::{ErrorKind, Identity};

struct Env {
    _dir: tempfile::TempDir,
    core: Core,
    root: Identity,
}

async fn env() -> Env {
    let dir = tempfile::tempdir().expect("tmp");
    let core = common::core_at(dir.path(), tessera_meta::Durability::Buffered, 0o777);
    common::add_folders(&core, dir.path(), 6).await;
    let attrs = [
        ("sys.forced.layout", "raiddp"),
        ("sys.forced.blocksize", "64k"),
    ];
    common::layout(&core, "/", &attrs).await;
    Env {
        _dir: dir,
        core,
        root: Identity::root("test"),
    }
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rewrite_aborts_the_file_and_every_later_step_meets_that_error() {
    let e = env().await;
    let budget = Budget::new(64 << 20, Duration::from_secs(1));
    let shared = Arc::new(AtomicUsize::new(0));
    let up = Upload::new(open(&e, "/r"), budget.clone(), holds(&shared));
    up.step(write(None, &bytes(1000, 1))).await.expect("append");
    up.step(write(Some(5000), &bytes(10, 2)))
        .await
        .expect("held");
    let err = up.step(write(Some(10), b"x")).await.expect_err("rewrite");
    assert_eq!(err.kind(), ErrorKind::Unsupported);
    assert!(err.to_string().contains("rewriting"), "{err}");
    assert_eq!(shared.load(Ordering::Relaxed), 0, "the held write dropped");
    let again = up.step(Step::Sync).await.expect_err("sync after failure");
    assert_eq!(again.kind(), ErrorKind::Unsupported);
    let closed = up.close(Expect::default()).await.expect_err("close");
    assert_eq!(closed.kind(), ErrorKind::Unsupported);
    let gone = e
        .core
        .stat(&e.root, p("/r"))
        .await
        .expect_err("not visible");
    assert_eq!(gone.kind(), ErrorKind::NotFound);
    assert_eq!(budget.in_use(), 0);
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
