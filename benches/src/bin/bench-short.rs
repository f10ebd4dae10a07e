//! Short reads through the data layer, stripe format 1 (a CRC per 1 MiB
//! block) against format 2 (a CRC per 4 KiB page), same bytes, same
//! folders, page cache warm (as a file being analysed is): ROOT-style
//! vector reads (1,024 sorted 1 KiB elements spread over 64 MiB, each
//! element read on its own as the XRootD gateway does after merging),
//! scattered 64 KiB reads, and sequential 64 KiB reads. No gateway, no
//! client: what the stripe format costs per read.
//!
//! cargo run --release -p tessera-benches --bin bench-short -- --dir /var/tmp/x

use clap::Parser;
use std::sync::Arc;
use std::time::Instant;
use tessera_backend::{Backend, FolderBackend};
use tessera_data::{FileReader, FileWriter, Layout};

#[derive(Parser)]
struct Args {
    /// Where the stripe folders go (removed at the end).
    #[arg(long)]
    dir: std::path::PathBuf,
    /// File size in MiB.
    #[arg(long, default_value_t = 256)]
    mib: usize,
    /// Rounds; the best of each is reported.
    #[arg(long, default_value_t = 5)]
    repeat: usize,
    /// Drop the kernel's page cache before each round (root): reads go to
    /// the storage (on a ceph-fuse mount, to ceph-fuse, whose own object
    /// cache is not dropped).
    #[arg(long)]
    cold: bool,
}

/// Write back and drop the kernel's clean page cache.
fn drop_caches() {
    let _ = std::process::Command::new("sync").status();
    std::fs::write("/proc/sys/vm/drop_caches", "1").expect("drop caches (root)");
}

/// `count` offsets for reads of `len` bytes, sorted within each region of
/// `region` bytes, regions taken in turn through the file.
fn offsets(size: u64, count: usize, len: u64, region: u64, seed: u64) -> Vec<u64> {
    let mut x = seed | 1;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut out = Vec::with_capacity(count);
    let per = 1024.min(count);
    let mut base = 0u64;
    while out.len() < count {
        let mut v: Vec<u64> = (0..per).map(|_| base + next() % (region - len)).collect();
        v.sort_unstable();
        out.extend(v);
        base = (base + region) % (size - region).max(1);
    }
    out
}

fn time(open: &dyn Fn() -> FileReader, reads: &[(u64, usize)], repeat: usize, cold: bool) -> f64 {
    let mut best = f64::MAX;
    for _ in 0..repeat {
        if cold {
            drop_caches();
        }
        let r = open();
        let t = Instant::now();
        for &(o, n) in reads {
            let d = match r.read_cached(o, n) {
                Some(d) => d,
                None => r.read(o, n).expect("read"),
            };
            assert_eq!(d.len(), n);
        }
        best = best.min(t.elapsed().as_secs_f64());
    }
    best / reads.len() as f64 * 1e6
}

fn main() -> anyhow::Result<()> {
    let a = Args::parse();
    let size = (a.mib as u64) << 20;
    let data = tessera_benches::noise(size as usize, 0x2545_f491);
    println!(
        "# bench-short: {} MiB file, folders under {}, page cache {}",
        a.mib,
        a.dir.display(),
        if a.cold {
            "dropped before each round"
        } else {
            "warm"
        }
    );
    println!();
    println!(
        "| µs per read | format 1 (CRC per 1 MiB block) | format 2 (CRC per 4 KiB page) | ratio |"
    );
    println!("|---|---|---|---|");
    let vec_reads: Vec<(u64, usize)> = offsets(size, 10 * 1024, 1024, 64 << 20, 7)
        .into_iter()
        .map(|o| (o, 1024))
        .collect();
    let scattered: Vec<(u64, usize)> = offsets(size, 1024, 64 << 10, size, 9)
        .into_iter()
        .map(|o| (o, 64 << 10))
        .collect();
    let sequential: Vec<(u64, usize)> = (0..1024u64).map(|i| (i << 16, 64 << 10)).collect();
    let long: Vec<(u64, usize)> = (0..size >> 23).map(|i| (i << 23, 8 << 20)).collect();
    for (name, base) in [
        ("plain", Layout::plain()),
        ("RAIN 4+2", Layout::rain(4, 2)?),
    ] {
        let mut rows: Vec<[f64; 4]> = Vec::new();
        for page in [0u32, 4096] {
            let mut layout = base;
            layout.page = page;
            let run = a
                .dir
                .join(format!("{}-{page}", name.replace([' ', '+'], "_")));
            let targets: Vec<(u32, Arc<dyn Backend>)> = (0..layout.stripes())
                .map(|i| -> anyhow::Result<(u32, Arc<dyn Backend>)> {
                    let b: Arc<dyn Backend> =
                        Arc::new(FolderBackend::new(run.join(format!("fs{i}")))?);
                    Ok((i as u32 + 1, b))
                })
                .collect::<Result<_, _>>()?;
            let mut w = FileWriter::create(layout, 1, 1, &targets)?.buffered();
            for c in data.chunks(8 << 20) {
                w.write(c)?;
            }
            let done = w.finish()?;
            let open = || {
                FileReader::new(
                    done.placement.clone(),
                    1,
                    done.size,
                    targets.iter().map(|(_, b)| Some(b.clone())).collect(),
                )
                .expect("reader")
            };
            // Warm: read it all once.
            let r = open();
            let mut buf = vec![0u8; 8 << 20];
            let mut off = 0;
            while off < size {
                off += r.read_at(off, &mut buf)? as u64;
            }
            let (n, c) = (a.repeat, a.cold);
            rows.push([
                time(&open, &vec_reads, n, c),
                time(&open, &scattered, n, c),
                time(&open, &sequential, n, c),
                time(&open, &long, n, c),
            ]);
            std::fs::remove_dir_all(&run)?;
        }
        for (i, what) in [
            "1 KiB elements, 1,024 sorted per 64 MiB",
            "64 KiB scattered",
            "64 KiB sequential",
            "8 MiB sequential",
        ]
        .iter()
        .enumerate()
        {
            println!(
                "| {name}, {what} | {:.1} | {:.1} | {:.2} |",
                rows[0][i],
                rows[1][i],
                rows[0][i] / rows[1][i]
            );
        }
    }
    Ok(())
}
