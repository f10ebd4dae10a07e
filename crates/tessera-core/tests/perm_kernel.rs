//! The permission model against the kernel's: random trees of modes,
//! owners and groups, and random operations by random users, applied to a
//! real local directory (each operation on a thread of its own whose real,
//! effective and saved uid and gid and whose supplementary groups are the
//! user's: Linux keeps credentials per thread, so the kernel checks that
//! thread as that user) and to Tessera's core with the same identity;
//! every outcome (errno, or what a stat or listing shows) and the final
//! trees must be the same. Needs root (to build the trees and to take the
//! users' credentials); CI runs as root.
//!
//! Operations: stat, open for reading, list, mkdir, create (O_EXCL),
//! remove (unlink or rmdir by kind), rename, chmod. Modes are 0..0o777
//! and the sticky bit on directories; no ACLs (the kernel tree has none),
//! no set-id bits. A failing case prints its seed: rerun it with
//! `TESSERA_PERM_SEED=<seed>`.

mod common;

use common::*;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use tessera_core::Core;
use tessera_meta::{Durability, RenameFlags, SetAttr};
use tessera_types::Identity;

/// xorshift64*: cases reproduce from their seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len() as u64) as usize]
    }
}

#[derive(Debug, Clone, Copy)]
struct User {
    uid: u32,
    gid: u32,
    groups: &'static [u32],
}

const USERS: [User; 4] = [
    User {
        uid: 1000,
        gid: 1000,
        groups: &[1001],
    },
    User {
        uid: 1001,
        gid: 1001,
        groups: &[],
    },
    User {
        uid: 1002,
        gid: 1002,
        groups: &[1000, 1001],
    },
    User {
        uid: 65534,
        gid: 65534,
        groups: &[],
    },
];

impl User {
    fn identity(&self) -> Identity {
        let mut id = Identity::user(self.uid, self.gid, format!("u{}", self.uid), "test");
        id.groups = self.groups.to_vec();
        id
    }
}

const NAMES: [&str; 3] = ["a", "b", "c"];

#[derive(Debug, Clone)]
enum Op {
    Stat(String),
    Read(String),
    List(String),
    Mkdir(String, u32),
    Create(String, u32),
    Remove(String),
    Rename(String, String),
    Chmod(String, u32),
}

/// What an operation gave: an errno, or what it saw.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Outcome {
    Err(i32),
    Done,
    Stat {
        dir: bool,
        uid: u32,
        gid: u32,
        mode: u32,
    },
    Names(Vec<String>),
}

fn errno(e: std::io::Error) -> Outcome {
    Outcome::Err(e.raw_os_error().unwrap_or(-1))
}

/// Every path under `base` now, as root sees it (directories marked).
fn existing(base: &Path) -> Vec<(String, bool)> {
    let mut out = vec![(String::new(), true)];
    let mut i = 0;
    while i < out.len() {
        let (d, is_dir) = out[i].clone();
        i += 1;
        if !is_dir {
            continue;
        }
        for e in std::fs::read_dir(at(base, &d)).expect("list") {
            let e = e.expect("entry");
            let name = e.file_name().to_string_lossy().into_owned();
            out.push((format!("{d}/{name}"), e.file_type().expect("type").is_dir()));
        }
    }
    out
}

/// A path to act on: mostly one that exists now, else a name in an
/// existing directory, else any path of up to three names.
fn rand_path(r: &mut Rng, now: &[(String, bool)]) -> String {
    match r.below(10) {
        0..=5 if now.len() > 1 => now[1 + r.below(now.len() as u64 - 1) as usize].0.clone(),
        0..=8 => {
            let dirs: Vec<&String> = now.iter().filter(|e| e.1).map(|e| &e.0).collect();
            format!("{}/{}", r.pick(&dirs), r.pick(&NAMES))
        }
        _ => (0..1 + r.below(3))
            .map(|_| format!("/{}", r.pick(&NAMES)))
            .collect(),
    }
}

fn rand_mode(r: &mut Rng) -> u32 {
    // Bias towards modes that let some through.
    *r.pick(&[
        0o755, 0o700, 0o711, 0o750, 0o777, 0o770, 0o644, 0o600, 0o000, 0o555, 0o733, 0o705,
    ]) ^ if r.below(4) == 0 { 1 << r.below(9) } else { 0 }
}

fn rand_op(r: &mut Rng, now: &[(String, bool)]) -> Op {
    let p = rand_path(r, now);
    match r.below(12) {
        0 | 1 => Op::Stat(p),
        2 => Op::Read(p),
        3 => Op::List(p),
        4 | 5 => Op::Mkdir(p, rand_mode(r)),
        6 | 7 => Op::Create(p, rand_mode(r) & 0o666),
        8 => Op::Remove(p),
        9 | 10 => Op::Rename(p, rand_path(r, now)),
        _ => Op::Chmod(p, rand_mode(r)),
    }
}

/// The kernel's answer to `op` by `u` on the tree under `base`, from a
/// thread that is `u`.
fn kernel(base: &Path, u: User, op: &Op) -> Outcome {
    let base = base.to_path_buf();
    let op = op.clone();
    std::thread::spawn(move || {
        let groups: Vec<_> = u
            .groups
            .iter()
            .map(|g| rustix::process::Gid::from_raw(*g))
            .collect();
        let (uid, gid) = (
            rustix::process::Uid::from_raw(u.uid),
            rustix::process::Gid::from_raw(u.gid),
        );
        rustix::thread::set_thread_groups(&groups).expect("setgroups");
        rustix::thread::set_thread_res_gid(gid, gid, gid).expect("setresgid");
        rustix::thread::set_thread_res_uid(uid, uid, uid).expect("setresuid");
        kernel_op(&base, &op)
    })
    .join()
    .expect("kernel thread")
}

fn at(base: &Path, p: &str) -> PathBuf {
    base.join(p.trim_start_matches('/'))
}

fn kernel_op(base: &Path, op: &Op) -> Outcome {
    let r = match op {
        Op::Stat(p) => return kstat(&at(base, p)),
        // open(2), then read(2), which fails with EISDIR on a directory.
        Op::Read(p) => std::fs::File::open(at(base, p)).and_then(|f| {
            use std::io::Read;
            f.take(1).read(&mut [0u8; 1]).map(|_| ())
        }),
        Op::List(p) => {
            return match std::fs::read_dir(at(base, p)) {
                Ok(rd) => {
                    let mut names: Vec<String> = rd
                        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
                        .collect();
                    names.sort();
                    Outcome::Names(names)
                }
                Err(e) => errno(e),
            }
        }
        Op::Mkdir(p, mode) => std::fs::DirBuilder::new().mode(*mode).create(at(base, p)),
        Op::Create(p, mode) => std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(*mode)
            .open(at(base, p))
            .map(|_| ()),
        Op::Remove(p) => {
            // By the kind the entry has (as the core's remove decides).
            let path = at(base, p);
            match std::fs::symlink_metadata(&path) {
                Ok(m) if m.is_dir() => std::fs::remove_dir(&path),
                _ => std::fs::remove_file(&path),
            }
        }
        Op::Rename(a, b) => std::fs::rename(at(base, a), at(base, b)),
        Op::Chmod(p, mode) => {
            std::fs::set_permissions(at(base, p), std::fs::Permissions::from_mode(*mode))
        }
    };
    match r {
        Ok(()) => Outcome::Done,
        Err(e) => errno(e),
    }
}

fn kstat(path: &Path) -> Outcome {
    match std::fs::symlink_metadata(path) {
        Ok(m) => Outcome::Stat {
            dir: m.is_dir(),
            uid: m.uid(),
            gid: m.gid(),
            mode: m.mode() & 0o7777,
        },
        Err(e) => errno(e),
    }
}

async fn tessera(core: &Core, who: &Identity, op: &Op) -> Outcome {
    let kind = |e: tessera_core::CoreError| Outcome::Err(e.kind().errno());
    let done = |r: Result<(), tessera_core::CoreError>| r.map_or_else(kind, |_| Outcome::Done);
    match op {
        Op::Stat(x) => match core.stat(who, p(x)).await {
            Ok(i) => Outcome::Stat {
                dir: i.is_dir(),
                uid: i.uid,
                gid: i.gid,
                mode: i.mode & 0o7777,
            },
            Err(e) => kind(e),
        },
        Op::Read(x) => match core.readable(who, &p(x)).await {
            Ok(_) => Outcome::Done,
            Err(e) => kind(e),
        },
        Op::List(x) => match core.list(who, p(x), None, 1000).await {
            Ok(es) => {
                let mut names: Vec<String> = es
                    .iter()
                    .map(|e| String::from_utf8_lossy(&e.name).into_owned())
                    .collect();
                names.sort();
                Outcome::Names(names)
            }
            Err(e) => kind(e),
        },
        Op::Mkdir(x, mode) => done(core.mkdir(who, p(x), *mode, false).await.map(|_| ())),
        Op::Create(x, mode) => done(core.touch(who, p(x), *mode).await.map(|_| ())),
        Op::Remove(x) => done(core.remove(who, p(x), false).await.map(|_| ())),
        Op::Rename(a, b) => done(
            core.rename(who, p(a), p(b), RenameFlags::default())
                .await
                .map(|_| ()),
        ),
        Op::Chmod(x, mode) => {
            let a = SetAttr {
                mode: Some(*mode),
                ..Default::default()
            };
            done(core.setattr(who, p(x), a).await.map(|_| ()))
        }
    }
}

/// Build the same random tree in both, as root: every path of up to three
/// names is a directory, a file or absent (under a directory), with a
/// random owner, group and mode.
async fn build(r: &mut Rng, base: &Path, core: &Core) -> Vec<String> {
    let root = Identity::root("test");
    let mut made = Vec::new();
    let mut dirs = vec![String::new()];
    for _depth in 0..3 {
        let mut next = Vec::new();
        for d in &dirs {
            for n in NAMES {
                let path = format!("{d}/{n}");
                let u = *r.pick(&USERS);
                let g = if r.below(3) == 0 {
                    r.pick(&USERS).gid
                } else {
                    u.gid
                };
                let kind = r.below(5);
                let mut mode = rand_mode(r);
                let real = at(base, &path);
                match kind {
                    0 | 1 => {
                        if r.below(6) == 0 {
                            mode |= 0o1000;
                        }
                        std::fs::create_dir(&real).expect("mkdir");
                        core.mkdir(&root, p(&path), 0o755, false)
                            .await
                            .expect("mkdir");
                        next.push(path.clone());
                    }
                    2 => {
                        mode &= 0o666;
                        std::fs::File::create(&real).expect("create");
                        core.touch(&root, p(&path), 0o644).await.expect("touch");
                    }
                    _ => continue,
                }
                std::os::unix::fs::chown(&real, Some(u.uid), Some(g)).expect("chown");
                std::fs::set_permissions(&real, std::fs::Permissions::from_mode(mode))
                    .expect("chmod");
                let a = SetAttr {
                    uid: Some(u.uid),
                    gid: Some(g),
                    mode: Some(mode),
                    mtime_ns: None,
                };
                core.setattr(&root, p(&path), a).await.expect("setattr");
                made.push(path);
            }
        }
        dirs = next;
    }
    made
}

/// Every entry of both trees, as root sees it: the same.
async fn same_trees(base: &Path, core: &Core) -> Result<(), String> {
    let root = Identity::root("test");
    let mut todo = vec![String::new()];
    while let Some(d) = todo.pop() {
        let shown = if d.is_empty() {
            "/".to_string()
        } else {
            d.clone()
        };
        let k = kernel_op(base, &Op::List(shown.clone()));
        let t = tessera(core, &root, &Op::List(shown.clone())).await;
        if k != t {
            return Err(format!("listing {shown}: kernel {k:?}, tessera {t:?}"));
        }
        let Outcome::Names(names) = k else { continue };
        for n in names {
            let path = format!("{d}/{n}");
            let k = kstat(&at(base, &path));
            let t = tessera(core, &root, &Op::Stat(path.clone())).await;
            if k != t {
                return Err(format!("{path}: kernel {k:?}, tessera {t:?}"));
            }
            if matches!(k, Outcome::Stat { dir: true, .. }) {
                todo.push(path);
            }
        }
    }
    Ok(())
}

/// How often each outcome came (the test must have compared refusals and
/// successes of every kind, not only paths that do not exist).
#[derive(Default)]
struct Seen {
    done: usize,
    eacces: usize,
    eperm: usize,
    other: usize,
}

async fn one_case(seed: u64, ops: usize, seen: &mut Seen) -> Result<(), String> {
    let mut r = Rng(seed | 1);
    let kdir = tempfile::tempdir().expect("tmp");
    std::fs::set_permissions(kdir.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let tdir = tempfile::tempdir().expect("tmp");
    let core = core_at(tdir.path(), Durability::Buffered, 0o755);
    let made = build(&mut r, kdir.path(), &core).await;
    let mut log = format!("seed {seed}: tree {made:?}\n");
    for i in 0..ops {
        let u = *r.pick(&USERS);
        let op = rand_op(&mut r, &existing(kdir.path()));
        let k = kernel(kdir.path(), u, &op);
        let t = tessera(&core, &u.identity(), &op).await;
        log.push_str(&format!("  {i}: uid {} {op:?} -> {k:?}\n", u.uid));
        if k != t {
            return Err(format!("{log}  tessera answered {t:?}"));
        }
        match k {
            Outcome::Err(13) => seen.eacces += 1,
            Outcome::Err(1) => seen.eperm += 1,
            Outcome::Err(_) => seen.other += 1,
            _ => seen.done += 1,
        }
    }
    same_trees(kdir.path(), &core)
        .await
        .map_err(|e| format!("{log}  trees differ at the end: {e}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn permissions_decide_as_the_kernel_does() {
    if !rustix::process::geteuid().is_root() {
        panic!("this test takes users' credentials and needs root (CI runs as root)");
    }
    rustix::process::umask(rustix::fs::Mode::empty());
    let seeds: Vec<u64> = match std::env::var("TESSERA_PERM_SEED") {
        Ok(s) => vec![s.parse().expect("seed")],
        Err(_) => (1..=300u64)
            .map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15))
            .collect(),
    };
    let mut seen = Seen::default();
    let one = seeds.len() == 1;
    for seed in seeds {
        if let Err(e) = one_case(seed, 80, &mut seen).await {
            panic!("the kernel and Tessera disagree (TESSERA_PERM_SEED={seed}):\n{e}");
        }
    }
    println!(
        "same answers: {} done, {} EACCES, {} EPERM, {} other errors",
        seen.done, seen.eacces, seen.eperm, seen.other
    );
    if !one {
        assert!(seen.done > 2000 && seen.eacces > 1000 && seen.eperm > 50 && seen.other > 1000);
    }
}
