//! Property and concurrency tests: after any sequence of operations the
//! tree is consistent (no cycles, no orphans, every count right) and quota
//! usage equals a full recount; racing writers never beat a limit.

use proptest::prelude::*;
use std::sync::Arc;
use tessera_meta::*;
use tessera_types::{ErrorKind, Identity, NsPath};

const NAMES: [&str; 2] = ["a", "b"];

fn path_of(idx: &[u8]) -> NsPath {
    let mut s = String::new();
    for i in idx {
        s.push('/');
        s.push_str(NAMES[*i as usize % NAMES.len()]);
    }
    NsPath::parse(if s.is_empty() { "/" } else { &s }).expect("valid")
}

fn who(u: u8) -> Identity {
    match u % 3 {
        0 => Identity::root("prop"),
        1 => Identity::user(1000, 100, "alice", "prop"),
        _ => Identity::user(1001, 100, "bob", "prop"),
    }
}

#[derive(Debug, Clone)]
enum Op {
    Mkdir(Vec<u8>, bool, u8),
    Write(Vec<u8>, u8, u64, bool),
    Abandon(Vec<u8>, u8, u64),
    Unlink(Vec<u8>),
    Rmdir(Vec<u8>),
    Rename(Vec<u8>, Vec<u8>),
    Chown(Vec<u8>, u8),
    Quota(Vec<u8>, u8, u64, u64),
    RmNode(Vec<u8>),
    /// Set (`Some(len)`) or remove user attribute `user.<n % 3>`.
    Xattr(Vec<u8>, u8, u8, Option<u16>),
    /// `sys.versioning = n % 3` (0: removed) and a recycle bin on or off.
    Policy(Vec<u8>, u8, bool),
    /// A delete as one of the users (a tree with the flag): into a bin or
    /// for good.
    Remove(Vec<u8>, u8, bool),
    /// The n-th bin entry: restored (forced with the flag) or purged a
    /// step of two inodes.
    Binned(u8, u8, bool),
    /// Restore the n-th version of a file, or purge down to one.
    Version(Vec<u8>, u8, u8, bool),
    Reopen,
}

fn arb_path() -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(0u8..2, 1..4)
}

fn arb_op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (arb_path(), any::<bool>(), any::<u8>()).prop_map(|(p, b, u)| Op::Mkdir(p, b, u)),
        4 => (arb_path(), any::<u8>(), 0u64..5000, any::<bool>()).prop_map(|(p, u, s, o)| Op::Write(p, u, s, o)),
        1 => (arb_path(), any::<u8>(), 0u64..5000).prop_map(|(p, u, s)| Op::Abandon(p, u, s)),
        2 => arb_path().prop_map(Op::Unlink),
        2 => arb_path().prop_map(Op::Rmdir),
        3 => (arb_path(), arb_path()).prop_map(|(a, b)| Op::Rename(a, b)),
        1 => (arb_path(), any::<u8>()).prop_map(|(p, u)| Op::Chown(p, u)),
        2 => (proptest::collection::vec(0u8..2, 0..3), any::<u8>(), 0u64..20000, 0u64..20).prop_map(|(p, t, b, i)| Op::Quota(p, t, b, i)),
        1 => arb_path().prop_map(Op::RmNode),
        2 => (arb_path(), any::<u8>(), any::<u8>(), proptest::option::of(0u16..3000)).prop_map(|(p, u, n, l)| Op::Xattr(p, u, n, l)),
        1 => (arb_path(), any::<u8>(), any::<bool>()).prop_map(|(p, n, b)| Op::Policy(p, n, b)),
        2 => (arb_path(), any::<u8>(), any::<bool>()).prop_map(|(p, u, t)| Op::Remove(p, u, t)),
        2 => (any::<u8>(), any::<u8>(), any::<bool>()).prop_map(|(n, u, f)| Op::Binned(n, u, f)),
        1 => (arb_path(), any::<u8>(), any::<u8>(), any::<bool>()).prop_map(|(p, u, n, r)| Op::Version(p, u, n, r)),
        1 => Just(Op::Reopen),
    ]
}

fn opts() -> MetaOptions {
    MetaOptions {
        durability: Durability::Buffered,
        root_mode: 0o777,
        ..Default::default()
    }
}

/// Every record that was within its limits before an operation is within
/// them after it (limits may be set below usage; that is allowed).
fn within_limits(m: &MetaStore) -> Vec<(u64, QuotaTarget, bool, bool)> {
    let mut v = Vec::new();
    for node in m.quota_ls(&NsPath::root()).expect("ls") {
        for e in node.entries {
            let b = e.max_bytes.is_none_or(|x| e.used_bytes <= x);
            let i = e.max_inodes.is_none_or(|x| e.used_inodes <= x);
            v.push((node.node, e.target, b, i));
        }
    }
    v
}

fn apply(m: &MetaStore, op: &Op) -> Result<(), MetaError> {
    match op {
        Op::Mkdir(p, parents, u) => m.mkdir(&path_of(p), &who(*u), 0o777, *parents).map(|_| ()),
        Op::Write(p, u, size, over) => {
            let r = m.begin_write(&path_of(p), &who(*u), 0o666, *over, size / 2)?;
            if size / 2 < *size {
                // Half the time the estimate was short: extend, like a gateway.
                if let Err(e) = m.extend_write(r.id, size - size / 2) {
                    m.abort_write(r.id)?;
                    return Err(e);
                }
            }
            m.commit_write(
                r.id,
                CommitWrite {
                    size: *size,
                    crc32c: None,
                    ..Default::default()
                },
            )
            .map(|_| ())
        }
        Op::Abandon(p, u, size) => {
            let r = m.begin_write(&path_of(p), &who(*u), 0o666, true, *size)?;
            m.abort_write(r.id).map(|_| ())
        }
        Op::Unlink(p) => m.unlink(&path_of(p), &who(0)).map(|_| ()),
        Op::Rmdir(p) => m.rmdir(&path_of(p), &who(0)),
        Op::Rename(a, b) => m
            .rename(&path_of(a), &path_of(b), &who(0), RenameFlags::default())
            .map(|_| ()),
        Op::Chown(p, u) => {
            let w = who(*u);
            m.setattr(
                &path_of(p),
                &who(0),
                SetAttr {
                    uid: Some(w.uid),
                    gid: Some(w.gid),
                    ..Default::default()
                },
            )
            .map(|_| ())
        }
        Op::Quota(p, t, b, i) => {
            let target = match t % 3 {
                0 => QuotaTarget::user(1000),
                1 => QuotaTarget::group(100),
                _ => QuotaTarget::project(),
            };
            m.quota_set(&path_of(p), target, Some(*b), Some(*i))
        }
        Op::RmNode(p) => m.quota_rmnode(&path_of(p)),
        Op::Xattr(p, u, n, len) => {
            let name = format!("user.{}", n % 3);
            match len {
                Some(l) => m.xattr_set(
                    &path_of(p),
                    &who(*u),
                    name.as_bytes(),
                    &vec![b'x'; *l as usize],
                ),
                None => m.xattr_rm(&path_of(p), &who(*u), name.as_bytes()),
            }
        }
        Op::Policy(p, n, bin) => {
            let r = Identity::root("prop");
            let keep = n % 3;
            let v = match keep {
                0 => m.xattr_rm(&path_of(p), &r, VERSIONING_ATTR),
                k => m.xattr_set(&path_of(p), &r, VERSIONING_ATTR, k.to_string().as_bytes()),
            };
            let b = match bin {
                true => m.xattr_set(&path_of(p), &r, RECYCLE_ATTR, b"bin"),
                false => m.xattr_rm(&path_of(p), &r, RECYCLE_ATTR),
            };
            v.and(b)
        }
        Op::Remove(p, u, tree) => m.remove_entry(&path_of(p), &who(*u), *tree).map(|_| ()),
        Op::Binned(n, u, force) => {
            let all = m.recycle_list(&Identity::root("prop"), None, true, 0, 100)?;
            let Some(e) = all.get(*n as usize % all.len().max(1)) else {
                return Ok(());
            };
            if *u % 2 == 0 {
                m.recycle_purge_step(&who(*u), e.id, 2).map(|_| ())
            } else {
                m.recycle_restore(&who(*u), e.id, None, *force).map(|_| ())
            }
        }
        Op::Version(p, u, n, restore) => {
            let vs = m.versions(&who(*u), &path_of(p))?;
            match (restore, vs.get(*n as usize % vs.len().max(1))) {
                (true, Some(v)) => m.restore_version(&who(*u), &path_of(p), v.ino).map(|_| ()),
                (false, _) => m.purge_versions(&who(*u), &path_of(p), 1).map(|_| ()),
                (true, None) => Ok(()),
            }
        }
        Op::Reopen => Ok(()),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, .. ProptestConfig::default() })]

    #[test]
    fn random_operations_keep_the_tree_and_quotas_consistent(ops in proptest::collection::vec(arb_op(), 1..80)) {
        let dir = tempfile::tempdir().expect("tmp");
        let mut m = MetaStore::open(dir.path(), opts()).expect("open");
        for op in &ops {
            if let Op::Reopen = op {
                drop(m);
                m = MetaStore::open(dir.path(), opts()).expect("reopen");
                continue;
            }
            let before = within_limits(&m);
            let res = apply(&m, op);
            if let Err(e) = &res {
                // Errors are classified, never internal.
                prop_assert!(!matches!(e.kind(), ErrorKind::Corrupt | ErrorKind::Io), "{op:?}: {e}");
            }
            let after = within_limits(&m);
            for (node, t, b, i) in &before {
                if let Some((_, _, b2, i2)) = after.iter().find(|x| x.0 == *node && x.1 == *t) {
                    // Ownership changes and moves by root are not writes by
                    // the limited user; the limit holds for writes and creates.
                    if matches!(op, Op::Write(..) | Op::Mkdir(..) | Op::Xattr(..)) {
                        prop_assert!((!*b || *b2) && (!*i || *i2), "{op:?} broke a limit at {node} {t:?}");
                    }
                }
            }
            // The reader-side caches never serve a stale entry.
            for a in 0..2u8 { for b in 0..2u8 { for c in 0..2u8 {
                for idx in [vec![a], vec![a, b], vec![a, b, c]] {
                    let path = path_of(&idx);
                    let cached = m.stat(&root(), &path).map_err(|e| e.kind());
                    let fresh = m.stat_uncached(&path).map_err(|e| e.kind());
                    prop_assert_eq!(cached, fresh, "after {:?} at {}", op, path);
                }
            }}}
            let rep = m.check().expect("check");
            prop_assert!(rep.is_clean(), "after {:?}: {:#?}", op, rep.problems);
        }
    }
}

/// A store for racing threads to share (kept in the directory), and the
/// racers' root.
fn racing() -> (tempfile::TempDir, Arc<MetaStore>, Identity) {
    let dir = tempfile::tempdir().expect("tmp");
    let m = Arc::new(MetaStore::open(dir.path(), opts()).expect("open"));
    (dir, m, Identity::root("race"))
}

#[test]
fn racing_writers_never_exceed_a_quota() {
    let (_dir, m, root_id) = racing();
    let q = NsPath::parse("/q").expect("valid");
    m.mkdir(&q, &root_id, 0o777, false).expect("mkdir");
    const SIZE: u64 = 1000;
    const LIMIT_FILES: u64 = 10;
    m.quota_set(&q, QuotaTarget::user(1000), Some(SIZE * LIMIT_FILES), None)
        .expect("set");
    let alice = Identity::user(1000, 100, "alice", "race");
    let threads: Vec<_> = (0..32)
        .map(|t| {
            let m = Arc::clone(&m);
            let alice = alice.clone();
            std::thread::spawn(move || {
                let mut ok = 0u64;
                for i in 0..4 {
                    let path = NsPath::parse(format!("/q/t{t}-{i}")).expect("valid");
                    let full = CommitWrite {
                        size: SIZE,
                        crc32c: None,
                        ..Default::default()
                    };
                    // Half the writers reserve up front, half grow as they go.
                    let res = if t % 2 == 0 {
                        m.begin_write(&path, &alice, 0o644, false, SIZE)
                            .and_then(|r| m.commit_write(r.id, full))
                    } else {
                        m.begin_write(&path, &alice, 0o644, false, 0).and_then(|r| {
                            for _ in 0..4 {
                                if let Err(e) = m.extend_write(r.id, SIZE / 4) {
                                    m.abort_write(r.id).expect("abort");
                                    return Err(e);
                                }
                            }
                            m.commit_write(r.id, full)
                        })
                    };
                    match res {
                        Ok(_) => ok += 1,
                        Err(e) => assert_eq!(e.kind(), ErrorKind::QuotaExceeded, "{e}"),
                    }
                }
                ok
            })
        })
        .collect();
    let ok: u64 = threads.into_iter().map(|t| t.join().expect("thread")).sum();
    assert_eq!(ok, LIMIT_FILES, "exactly the files that fit were written");
    let show = m.quota_show(&root(), &q, 1000, 100).expect("show");
    let u = show
        .entries
        .iter()
        .find(|e| e.target == QuotaTarget::user(1000))
        .expect("rec");
    assert_eq!(u.used_bytes, SIZE * LIMIT_FILES);
    assert_eq!((u.reserved_bytes, u.reserved_inodes), (0, 0));
    assert!(m.check().expect("check").is_clean());
}

#[test]
fn readers_racing_a_writer_never_go_back_in_time() {
    let (_dir, m, root_id) = racing();
    let f = NsPath::parse("/f").expect("valid");
    m.create(&f, &root_id, 0o644).expect("create");
    const ROUNDS: i64 = 3000;
    let set = |t: i64| SetAttr {
        mtime_ns: Some(t),
        ..Default::default()
    };
    m.setattr(&f, &root_id, set(0)).expect("setattr");
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let readers: Vec<_> = (0..3)
        .map(|_| {
            let (m, f, done) = (Arc::clone(&m), f.clone(), Arc::clone(&done));
            std::thread::spawn(move || {
                let mut last = 0;
                while !done.load(std::sync::atomic::Ordering::Acquire) {
                    let t = m.stat(&root(), &f).expect("stat").mtime_ns;
                    assert!(t >= last, "went back from {last} to {t}");
                    last = t;
                }
            })
        })
        .collect();
    for t in 1..=ROUNDS {
        m.setattr(&f, &root_id, set(t)).expect("setattr");
        // A committed change is what every later read sees.
        assert_eq!(m.stat(&root(), &f).expect("stat").mtime_ns, t);
    }
    done.store(true, std::sync::atomic::Ordering::Release);
    for r in readers {
        r.join().expect("reader");
    }
    assert_eq!(m.stat(&root(), &f).expect("stat").mtime_ns, ROUNDS);
}

fn root() -> tessera_types::Identity {
    tessera_types::Identity::root("test")
}
