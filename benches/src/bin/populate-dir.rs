//! Fill a directory of a stopped tesserad's namespace with empty files,
//! a batch per transaction (`MetaStore::create_many`): how bench-listing
//! makes its large directory (and a test its million entries).
//!
//! populate-dir --meta DATA/meta --dir /data/big --files 100000 --uid 1000 --gid 1000

use clap::Parser;
use tessera_meta::{Durability, MetaOptions, MetaStore};
use tessera_types::{Identity, NsPath};

#[derive(Parser)]
struct Args {
    /// The namespace's RocksDB directory (`<data_dir>/meta`).
    #[arg(long)]
    meta: std::path::PathBuf,
    /// The directory to fill (made with its parents).
    #[arg(long)]
    dir: String,
    #[arg(long, default_value_t = 100_000)]
    files: u64,
    #[arg(long, default_value_t = 1000)]
    uid: u32,
    #[arg(long, default_value_t = 1000)]
    gid: u32,
}

fn main() -> anyhow::Result<()> {
    let a = Args::parse();
    let opts = MetaOptions {
        durability: Durability::Buffered,
        ..MetaOptions::default()
    };
    let m = MetaStore::open(&a.meta, opts)?;
    let dir = NsPath::parse(&a.dir)?;
    m.mkdir(&dir, &Identity::root("populate"), 0o755, true)?;
    let names = (0..a.files).map(|i| format!("run{i:07}.root").into_bytes());
    let t = std::time::Instant::now();
    let n = m.create_many(&dir, (a.uid, a.gid, 0o644), names, 50_000)?;
    println!(
        "# {n} files in {} in {:.1} s",
        a.dir,
        t.elapsed().as_secs_f64()
    );
    Ok(())
}
