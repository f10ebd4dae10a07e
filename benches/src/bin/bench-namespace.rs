//! Namespace rates in process and through gRPC, and boot time, for a
//! namespace of `--files` files (1000 per directory).
//!
//! cargo run --release -p tessera-benches --bin bench-namespace -- --files 1000000

use clap::Parser;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tessera_meta::{CommitWrite, Durability, MetaOptions, MetaStore, RenameFlags};
use tessera_types::{Identity, NsPath};

#[derive(Parser)]
struct Args {
    /// Files to create (in directories of 1000).
    #[arg(long, default_value_t = 1_000_000)]
    files: u64,
    /// Threads for the in-process phases.
    #[arg(long, default_value_t = 2)]
    threads: usize,
    /// Seconds per timed phase.
    #[arg(long, default_value_t = 5)]
    seconds: u64,
    /// Where to put the database (default: a temporary directory).
    #[arg(long)]
    dir: Option<std::path::PathBuf>,
    /// RocksDB block cache in MiB.
    #[arg(long, default_value_t = 2048)]
    cache_mib: usize,
    /// Metadata HA (issue 27): with `--dir` on a CephFS mount, durable
    /// creates with 1 and 16 writers against the raw group-commit pattern
    /// on the same directory, and stat; nothing else.
    #[arg(long)]
    ha: bool,
    /// With --ha: commits append to RocksDB's log buffer only (the synced
    /// flush writes it), as a metadata node on CephFS does.
    #[arg(long)]
    buffer_wal: bool,
}

const PER_DIR: u64 = 1000;

fn p(s: &str) -> NsPath {
    NsPath::parse(s).expect("valid")
}

fn file_path(i: u64) -> NsPath {
    p(&format!("/bench/d{:06}/f{:06}", i / PER_DIR, i % PER_DIR))
}

fn opts(d: Durability, cache_mib: usize) -> MetaOptions {
    MetaOptions {
        durability: d,
        block_cache_bytes: cache_mib << 20,
        ..MetaOptions::default()
    }
}

/// Run `f(thread, i)` on `threads` threads over `0..n`, return ops/s.
fn parallel(threads: usize, n: u64, f: impl Fn(usize, u64) + Sync) -> f64 {
    let t0 = Instant::now();
    std::thread::scope(|s| {
        for t in 0..threads {
            let f = &f;
            s.spawn(move || {
                let mut i = t as u64;
                while i < n {
                    f(t, i);
                    i += threads as u64;
                }
            });
        }
    });
    n as f64 / t0.elapsed().as_secs_f64()
}

/// Run `f` on `threads` threads for `secs` seconds, return ops/s.
fn timed(threads: usize, secs: u64, f: impl Fn(usize, u64) + Sync) -> f64 {
    let stop = Instant::now() + Duration::from_secs(secs);
    let t0 = Instant::now();
    let total: u64 = std::thread::scope(|s| {
        let hs: Vec<_> = (0..threads)
            .map(|t| {
                let f = &f;
                s.spawn(move || {
                    let mut n = 0u64;
                    while Instant::now() < stop {
                        for _ in 0..64 {
                            f(t, n);
                            n += 1;
                        }
                    }
                    n
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().expect("thread")).sum()
    });
    total as f64 / t0.elapsed().as_secs_f64()
}

fn create(m: &MetaStore, who: &Identity, path: &NsPath) {
    let r = m.begin_write(path, who, 0o644, false, 1024).expect("begin");
    m.commit_write(
        r.id,
        CommitWrite {
            size: 1024,
            ..Default::default()
        },
    )
    .expect("commit");
}

fn main() -> anyhow::Result<()> {
    let a = Args::parse();
    let tmp = tempfile::tempdir()?;
    let dir = a.dir.clone().unwrap_or_else(|| tmp.path().join("meta"));
    let root = Identity::root("bench");
    if a.ha {
        return ha_phase(&a, &dir);
    }
    println!(
        "# bench-namespace: {} files, {} threads, {} s phases",
        a.files, a.threads, a.seconds
    );

    // 1. Populate (buffered WAL), measuring the create rate.
    let m = Arc::new(MetaStore::open(
        &dir,
        opts(Durability::Buffered, a.cache_mib),
    )?);
    let dirs = a.files.div_ceil(PER_DIR);
    for d in 0..dirs {
        m.mkdir(&p(&format!("/bench/d{d:06}")), &root, 0o755, true)?;
    }
    let rate = parallel(a.threads, a.files, |_, i| create(&m, &root, &file_path(i)));
    println!("create (buffered WAL, begin+commit with quota): {rate:.0}/s");

    println!("# compacting (steady state for the read phases)");
    let t0 = Instant::now();
    m.compact()?;
    println!(
        "compaction after populate: {:.1} s",
        t0.elapsed().as_secs_f64()
    );

    // 2. stat of random existing files, as a user (search permission is
    // checked on every directory on the way).
    let user = Identity::user(1000, 1000, "bench", "bench");
    let rate = timed(a.threads, a.seconds, |t, n| {
        let i = (n.wrapping_mul(2_654_435_761).wrapping_add(t as u64 * 7919)) % a.files;
        m.stat(&user, &file_path(i)).expect("stat");
    });
    println!("stat (random files, depth 3): {rate:.0}/s");

    // 3. list: entries per second in pages of 1000.
    let rate = timed(a.threads, a.seconds, |t, n| {
        let d = (n * 31 + t as u64) % dirs;
        let page = m
            .list(&user, &p(&format!("/bench/d{d:06}")), None, 1000)
            .expect("list");
        assert!(!page.is_empty());
    }) * PER_DIR.min(a.files) as f64;
    println!("list (pages of 1000, with inodes): {rate:.0} entries/s");

    // 4. rename within a directory, back and forth.
    let rate = timed(1, a.seconds, |_, n| {
        let d = (n / 2) % dirs;
        let (x, y) = (
            format!("/bench/d{d:06}/f000000"),
            format!("/bench/d{d:06}/renamed"),
        );
        let (s, t) = if n % 2 == 0 { (x, y) } else { (y, x) };
        m.rename(&p(&s), &p(&t), &root, RenameFlags::default())
            .expect("rename");
    });
    println!("rename (1 thread): {rate:.0}/s");
    let check_t0 = Instant::now();
    let stats = m.ns_stats()?;
    println!(
        "ns_stats: {} inodes, {:.1} ms",
        stats.inodes,
        check_t0.elapsed().as_secs_f64() * 1e3
    );
    drop(m);

    // 5. Synced creates (fsync per acknowledgement, group commit).
    let m = Arc::new(MetaStore::open(&dir, opts(Durability::Sync, a.cache_mib))?);
    m.mkdir(&p("/sync"), &root, 0o755, false)?;
    for threads in [1usize, 16] {
        let base = threads as u64 * 1_000_000_000;
        let rate = timed(threads, a.seconds, |t, n| {
            create(&m, &root, &p(&format!("/sync/t{t}-{}", base + n)));
        });
        println!("create (fsync WAL, {threads} threads): {rate:.0}/s");
    }
    drop(m);

    // 6. Boot time at this size: after a close without flush (what a crash
    // leaves: the WAL is replayed), and after a clean shutdown (flushed).
    let wal: u64 = std::fs::read_dir(&dir)?
        .filter_map(|e| e.ok())
        .filter(|e| e.path().extension().is_some_and(|x| x == "log"))
        .filter_map(|e| e.metadata().ok())
        .map(|m| m.len())
        .sum();
    println!("WAL to replay: {:.1} MiB", wal as f64 / (1 << 20) as f64);
    let t0 = Instant::now();
    let m = MetaStore::open(&dir, opts(Durability::Sync, a.cache_mib))?;
    let boot_clean = t0.elapsed();
    m.stat(&Identity::root("bench"), &file_path(a.files - 1))?;
    m.flush()?;
    drop(m);
    let t0 = Instant::now();
    let m = MetaStore::open(&dir, opts(Durability::Sync, a.cache_mib))?;
    println!(
        "boot: {:.1} ms after a close without flush (WAL replay), {:.1} ms after a clean shutdown",
        boot_clean.as_secs_f64() * 1e3,
        t0.elapsed().as_secs_f64() * 1e3
    );
    drop(m);

    // 7. Through gRPC: a server in process, 16 concurrent clients.
    grpc_phase(&a, &dir)?;
    Ok(())
}

/// The raw pattern of a group-committing log on `dir`'s file system:
/// 200-byte records appended by `threads` writers, each acknowledged once
/// an fdatasync that began after it was written returns; one sync at a
/// time, covering every record written before it began. The ceiling a
/// store's synced commits on that file system can reach.
fn raw_log(dir: &std::path::Path, threads: usize, secs: u64) -> anyhow::Result<f64> {
    use std::io::Write;
    use std::sync::Mutex;
    let path = dir.join(format!("raw-{threads}.log"));
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)?;
    let written = Mutex::new(0u64);
    let synced = Mutex::new(0u64);
    let rec = [b'r'; 200];
    let rate = timed(threads, secs, |_, _| {
        let mine = {
            let mut w = written.lock().expect("lock");
            (&file).write_all(&rec).expect("append");
            *w += 1;
            *w
        };
        let mut s = synced.lock().expect("lock");
        if *s < mine {
            let upto = *written.lock().expect("lock");
            file.sync_data().expect("fdatasync");
            *s = upto;
        }
    });
    std::fs::remove_file(&path)?;
    Ok(rate)
}

/// Each writer its own file: a 200-byte append and an fdatasync per
/// record, all writers at once (what the file system gives writers that
/// share nothing; one store has one log, so not a ceiling for it).
fn raw_files(dir: &std::path::Path, threads: usize, secs: u64) -> anyhow::Result<f64> {
    use std::io::Write;
    let files = (0..threads)
        .map(|t| {
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(dir.join(format!("raw-own-{t}.log")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let rec = [b'r'; 200];
    let rate = timed(threads, secs, |t, _| {
        (&files[t]).write_all(&rec).expect("append");
        files[t].sync_data().expect("fdatasync");
    });
    for t in 0..threads {
        std::fs::remove_file(dir.join(format!("raw-own-{t}.log")))?;
    }
    Ok(rate)
}

/// `--ha`: durable creates against the raw log on the same directory.
fn ha_phase(a: &Args, dir: &std::path::Path) -> anyhow::Result<()> {
    let root = Identity::root("bench");
    std::fs::create_dir_all(dir)?;
    println!(
        "# bench-namespace --ha: {} s phases in {}",
        a.seconds,
        dir.display()
    );
    let mut raw = Vec::new();
    for threads in [1usize, 16] {
        let r = raw_log(dir, threads, a.seconds)?;
        println!("raw log, fdatasync group commit ({threads} writers): {r:.0}/s");
        raw.push(r);
    }
    let own = raw_files(dir, 16, a.seconds)?;
    println!("16 writers, a file each, append + fdatasync: {own:.0}/s");
    let m = Arc::new(MetaStore::open(
        &dir.join("meta"),
        MetaOptions {
            buffer_wal: a.buffer_wal,
            ..opts(Durability::Sync, a.cache_mib)
        },
    )?);
    println!("buffered log appends: {}", a.buffer_wal);
    m.mkdir(&p("/sync"), &root, 0o755, true)?;
    let mut made = 0u64;
    for (k, threads) in [1usize, 16].into_iter().enumerate() {
        let base = threads as u64 * 1_000_000_000;
        let rate = timed(threads, a.seconds, |t, n| {
            create(&m, &root, &p(&format!("/sync/t{t}-{}", base + n)));
        });
        made += (rate * a.seconds as f64) as u64;
        println!(
            "create (fsync WAL, {threads} writers): {rate:.0}/s = {:.2} of the raw log",
            rate / raw[k]
        );
    }
    let names: Vec<NsPath> = m
        .list(&root, &p("/sync"), None, 10_000)?
        .into_iter()
        .map(|e| p(&format!("/sync/{}", String::from_utf8_lossy(&e.name))))
        .collect();
    let rate = timed(a.threads, a.seconds, |t, n| {
        let i = (n as usize * 7919 + t * 104_729) % names.len();
        m.stat(&root, &names[i]).expect("stat");
    });
    println!(
        "stat ({} threads, {} files of ~{made}): {rate:.0}/s",
        a.threads,
        names.len()
    );
    Ok(())
}

fn grpc_phase(a: &Args, meta_dir: &std::path::Path) -> anyhow::Result<()> {
    use tessera_proto::admin::v1 as pb;
    use tessera_proto::admin::v1::namespace_client::NamespaceClient;
    let rt = tokio::runtime::Runtime::new()?;
    let tmp = tempfile::tempdir()?;
    let (mut cfg, secret) = tessera_server::dev_config(tmp.path())?;
    cfg.meta.dir = Some(meta_dir.to_path_buf());
    cfg.log.access = Some(String::new());
    let files = a.files;
    let secs = a.seconds;
    rt.block_on(async move {
        let srv = tessera_server::start(&cfg, secret.clone()).await?;
        let ch = tonic::transport::Channel::from_shared(format!("http://{}", srv.admin_addr))?
            .connect()
            .await?;
        let bearer: tonic::metadata::MetadataValue<_> = format!("Bearer {secret}").parse()?;
        for (op, clients) in [("stat", 16u64), ("touch", 16u64)] {
            let stop = Instant::now() + Duration::from_secs(secs);
            let t0 = Instant::now();
            let mut hs = Vec::new();
            for c in 0..clients {
                let ch = ch.clone();
                let bearer = bearer.clone();
                hs.push(tokio::spawn(async move {
                    let mut ns =
                        NamespaceClient::with_interceptor(ch, move |mut r: tonic::Request<()>| {
                            r.metadata_mut().insert("authorization", bearer.clone());
                            Ok(r)
                        });
                    let mut n = 0u64;
                    while Instant::now() < stop {
                        if op == "stat" {
                            let i = (n * 7919 + c * 104_729) % files;
                            ns.stat(pb::StatRequest {
                                path: file_path(i).as_bytes().to_vec(),
                            })
                            .await
                            .expect("stat");
                        } else {
                            let path = format!("/grpc/c{c}-{n}").into_bytes();
                            if n == 0 && c == 0 {
                                let _ = ns
                                    .mkdir(pb::MkdirRequest {
                                        path: b"/grpc".to_vec(),
                                        mode: 0,
                                        parents: true,
                                    })
                                    .await;
                            }
                            match ns.touch(pb::TouchRequest { path, mode: 0 }).await {
                                Ok(_) => {}
                                Err(e) if e.code() == tonic::Code::NotFound => {
                                    tokio::time::sleep(Duration::from_millis(5)).await;
                                    continue;
                                }
                                Err(e) => panic!("touch: {e}"),
                            }
                        }
                        n += 1;
                    }
                    n
                }));
            }
            let mut total = 0;
            for h in hs {
                total += h.await?;
            }
            let rate = total as f64 / t0.elapsed().as_secs_f64();
            println!("grpc {op} ({clients} clients, fsync WAL for touch): {rate:.0}/s");
        }
        srv.shutdown().await?;
        Ok::<_, anyhow::Error>(())
    })
}
