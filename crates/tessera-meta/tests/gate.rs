//! The gate of metadata HA: a store whose gate is shut changes nothing and
//! acknowledges nothing (issue 27), whatever the change.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use tessera_meta::*;
use tessera_types::{ErrorKind, Identity, NsPath};

fn p(s: &str) -> NsPath {
    NsPath::parse(s).expect("valid path")
}

#[test]
fn a_shut_gate_refuses_every_change_and_reads_go_on() {
    let d = tempfile::tempdir().expect("tmp");
    let open = Arc::new(AtomicBool::new(true));
    let o = Arc::clone(&open);
    let gate: Gate = Arc::new(move || {
        if o.load(Ordering::Relaxed) {
            Ok(())
        } else {
            Err("the lease is lost".into())
        }
    });
    let m = MetaStore::open(
        d.path(),
        MetaOptions {
            durability: Durability::Sync,
            gate: Some(gate),
            ..Default::default()
        },
    )
    .expect("open");
    let r = Identity::root("test");
    m.mkdir(&p("/a"), &r, 0o755, false).expect("open gate");
    open.store(false, Ordering::Relaxed);
    let e = m.mkdir(&p("/b"), &r, 0o755, false).expect_err("shut");
    assert_eq!(e.kind(), ErrorKind::Unavailable);
    assert!(e.to_string().contains("the lease is lost"), "{e}");
    assert_eq!(
        m.create(&p("/a/f"), &r, 0o644).expect_err("shut").kind(),
        ErrorKind::Unavailable
    );
    assert_eq!(
        m.rmdir(&p("/a"), &r).expect_err("shut").kind(),
        ErrorKind::Unavailable
    );
    // Nothing changed, and reads are served.
    assert!(m.stat(&root(), &p("/a")).is_ok());
    assert_eq!(
        m.stat(&root(), &p("/b")).expect_err("absent").kind(),
        ErrorKind::NotFound
    );
    assert_eq!(
        m.stat(&root(), &p("/a/f")).expect_err("absent").kind(),
        ErrorKind::NotFound
    );
    open.store(true, Ordering::Relaxed);
    m.mkdir(&p("/b"), &r, 0o755, false).expect("open again");
}

fn root() -> tessera_types::Identity {
    tessera_types::Identity::root("test")
}
