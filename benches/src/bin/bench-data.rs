//! End-to-end data layer throughput: write and read a file through
//! `tessera-data` into local folders, against `dd` of the same bytes to
//! the same disk in the same run (page cache dropped before each read).
//!
//! cargo run --release -p tessera-benches --bin bench-data -- --dir /var/tmp/x --mib 1024

use clap::Parser;
use std::io::Write;
use std::process::Command;
use std::sync::Arc;
use std::time::Instant;
use tessera_backend::{Backend, FolderBackend};
use tessera_data::{FileReader, FileWriter, Layout};

#[derive(Parser)]
struct Args {
    /// Where the folders go (all on one disk, as dd's target).
    #[arg(long)]
    dir: std::path::PathBuf,
    #[arg(long, default_value_t = 1024)]
    mib: usize,
    /// Write the stripes natively (libcephfs) into the file systems fs1
    /// and fs2 of the cluster with this ceph.conf, alternating stripes
    /// between the two; `--dir` is then the FUSE mount of fs1 for dd.
    #[arg(long)]
    cephfs_conf: Option<String>,
    /// Each read (dd's and ours) is timed this many times, page cache
    /// dropped before each; the best counts (the disk is noisy).
    #[arg(long, default_value_t = 3)]
    repeat: usize,
    /// Stripe format: 2 (a CRC per 4 KiB page, what new files get) or 1
    /// (a CRC per block), to compare the two.
    #[arg(long, default_value_t = 2)]
    format: u8,
}

fn drop_caches() {
    let _ = Command::new("sync").status();
    // Needs root; without it reads may come from the page cache (said below).
    if std::fs::write("/proc/sys/vm/drop_caches", "3").is_err() {
        eprintln!("(could not drop the page cache: reads may be cached)");
    }
}

fn dd(args: &[&str]) -> f64 {
    let t = Instant::now();
    let st = Command::new("dd")
        .args(args)
        .arg("status=none")
        .status()
        .expect("dd");
    assert!(st.success(), "dd {args:?}");
    t.elapsed().as_secs_f64()
}

fn main() -> anyhow::Result<()> {
    let a = Args::parse();
    std::fs::create_dir_all(&a.dir)?;
    let bytes = a.mib << 20;
    let data = tessera_benches::noise(bytes, 0x9e37_79b9);
    let src = std::path::Path::new("/dev/shm/tessera-bench-src");
    std::fs::write(src, &data)?;
    let mb = bytes as f64 / 1e6;
    println!(
        "# bench-data: {} MiB, folders under {}, stripe format {}",
        a.mib,
        a.dir.display(),
        a.format
    );

    // Reference: dd of the same bytes onto the same disk (fsync at the end).
    let dst = a.dir.join("dd.out");
    let srcs = format!("if={}", src.display());
    let dsts = format!("of={}", dst.display());
    let w_dd = dd(&[&srcs, &dsts, "bs=4M", "conv=fsync"]);
    std::fs::remove_file(src)?;
    // dd's read is timed in every round, before ours (the disk's speed
    // drifts; reads far apart in time would compare two different disks).
    let dd_read = || {
        drop_caches();
        dd(&[&format!("if={}", dst.display()), "of=/dev/null", "bs=4M"])
    };
    println!("dd: write {:.0} MB/s", mb / w_dd);

    let page = if a.format == 1 { 0 } else { 4096 };
    for (name, mut layout, folders) in [
        ("plain", Layout::plain(), 1usize),
        ("rain 4+2", Layout::rain(4, 2)?, 6),
    ] {
        layout.page = page;
        let tag = name.replace(' ', "_").replace('+', "p");
        let run = a.dir.join(&tag);
        let targets: Vec<(u32, Arc<dyn Backend>)> = (0..folders)
            .map(|i| -> anyhow::Result<(u32, Arc<dyn Backend>)> {
                let b: Arc<dyn Backend> = match &a.cephfs_conf {
                    Some(conf) => tessera_backend::format_locator(&format!(
                        "cephfs:{conf}:fs{}:/ec/bench-{}-{tag}-{i}",
                        1 + i % 2,
                        std::process::id()
                    ))?,
                    None => Arc::new(FolderBackend::new(run.join(format!("fs{i}")))?),
                };
                Ok((i as u32 + 1, b))
            })
            .collect::<Result<_, _>>()?;
        let t = Instant::now();
        let mut w = FileWriter::create(layout, 1, 1, &targets)?;
        for c in data.chunks(8 << 20) {
            w.write(c)?;
        }
        let done = w.finish()?;
        let wt = t.elapsed().as_secs_f64();
        let r = FileReader::new(
            done.placement.clone(),
            1,
            done.size,
            targets.iter().map(|(_, b)| Some(b.clone())).collect(),
        )?;
        // One 8 MiB request at a time, then 4 in flight (as xrdcp does),
        // each written to /dev/null as dd does, straight from the stripe
        // buffers (as a gateway sends them); then one at a time copied
        // into a caller's buffer (`read_at`).
        let configs = [
            (1usize, false, true),
            (4, false, true),
            (1, true, true),
            (1, false, false),
        ];
        let mut rates = vec![f64::MAX; configs.len()];
        let mut r_dd = f64::MAX;
        for _ in 0..a.repeat.max(1) {
            r_dd = r_dd.min(dd_read());
            for (ci, &(inflight, copy, ahead)) in configs.iter().enumerate() {
                drop_caches();
                // A libcephfs client caches what it wrote: read through new ones.
                let r = match &a.cephfs_conf {
                    Some(conf) => {
                        let fresh: Vec<Option<Arc<dyn Backend>>> = (0..folders)
                            .map(|i| {
                                tessera_backend::open_locator(&format!(
                                    "cephfs:{conf}:fs{}:/ec/bench-{}-{tag}-{i}",
                                    1 + i % 2,
                                    std::process::id()
                                ))
                                .ok()
                            })
                            .collect();
                        FileReader::new(done.placement.clone(), 1, done.size, fresh)?
                            .with_read_ahead(ahead)
                    }
                    None => FileReader::new(
                        done.placement.clone(),
                        1,
                        done.size,
                        targets.iter().map(|(_, b)| Some(b.clone())).collect(),
                    )?
                    .with_read_ahead(ahead),
                };
                let chunk = 8u64 << 20;
                let chunks = done.size.div_ceil(chunk);
                let t = Instant::now();
                std::thread::scope(|s| {
                    for w in 0..inflight {
                        let r = &r;
                        s.spawn(move || {
                            let mut null = std::fs::OpenOptions::new()
                                .write(true)
                                .open("/dev/null")
                                .expect("/dev/null");
                            let mut buf = vec![0u8; if copy { chunk as usize } else { 0 }];
                            let mut c = w as u64;
                            while c < chunks {
                                let off = c * chunk;
                                // Timed as dd is: read, no comparison.
                                if copy {
                                    let n = r.read_at(off, &mut buf).expect("read");
                                    null.write_all(&buf[..n]).expect("write");
                                } else {
                                    let d = r.read(off, chunk as usize).expect("read");
                                    let n = null.write_vectored(&d.io_slices()).expect("write");
                                    assert_eq!(n, d.len());
                                }
                                c += inflight as u64;
                            }
                        });
                    }
                });
                rates[ci] = rates[ci].min(t.elapsed().as_secs_f64());
            }
        }
        // Then, untimed, check every byte.
        let mut buf = vec![0u8; 8 << 20];
        let mut off = 0u64;
        while off < done.size {
            let n = r.read_at(off, &mut buf)?;
            assert_eq!(&buf[..n], &data[off as usize..off as usize + n]);
            off += n as u64;
        }
        println!(
            "{name}: dd read {:.0} MB/s in the same rounds; write {:.0} MB/s ({:.2}x dd), read {:.0} MB/s ({:.2}x dd) with 1 request in flight, {:.0} MB/s ({:.2}x dd) with 4, {:.0} MB/s ({:.2}x dd) copied into a buffer, {:.0} MB/s ({:.2}x dd) 1 in flight without read-ahead",
            mb / r_dd,
            mb / wt,
            w_dd / wt,
            mb / rates[0],
            r_dd / rates[0],
            mb / rates[1],
            r_dd / rates[1],
            mb / rates[2],
            r_dd / rates[2],
            mb / rates[3],
            r_dd / rates[3]
        );
        if a.cephfs_conf.is_none() {
            std::fs::remove_dir_all(&run)?;
        } else {
            for (i, (_, b)) in targets.iter().enumerate() {
                let _ = b.remove(&tessera_backend::StripeName::new(1, i as u8), None);
            }
        }
    }
    std::fs::remove_file(&dst)?;
    Ok(())
}
