//! Helpers shared by the data layer's integration tests.

/// Deterministic pseudo-random bytes.
pub fn data(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

use std::sync::Arc;
use tessera_backend::{Backend, FolderBackend, StripeName};
use tessera_data::{FileReader, FileWriter, Layout, WrittenFile};

/// Plain, with blocks of `bs` bytes.
#[allow(dead_code)]
pub fn plain(bs: u64) -> Layout {
    Layout::plain().with_block_size(bs).expect("bs")
}

/// RAIN 4+2 with blocks of `bs` bytes.
#[allow(dead_code)]
pub fn rain42(bs: u64) -> Layout {
    Layout::rain(4, 2)
        .expect("rain")
        .with_block_size(bs)
        .expect("bs")
}

/// A file written with `layout` into one folder backend per stripe
/// (`fs0`, `fs1`, … under a temporary directory), and its bytes.
#[allow(dead_code)]
pub struct TestFile {
    pub dir: tempfile::TempDir,
    pub targets: Vec<(u32, Arc<dyn Backend>)>,
    pub written: WrittenFile,
    pub bytes: Vec<u8>,
    pub fid: u64,
}

#[allow(dead_code)]
impl TestFile {
    /// `len` bytes of `data(len, seed)` written as file `fid`.
    pub fn write(layout: Layout, len: usize, seed: u64, fid: u64) -> TestFile {
        let dir = tempfile::tempdir().expect("tmp");
        let targets: Vec<(u32, Arc<dyn Backend>)> = (0..layout.stripes())
            .map(|i| {
                let b: Arc<dyn Backend> = Arc::new(
                    FolderBackend::new(dir.path().join(format!("fs{i}"))).expect("backend"),
                );
                (i as u32 + 1, b)
            })
            .collect();
        let bytes = data(len, seed);
        let mut w = FileWriter::create(layout, fid, 1, &targets).expect("create");
        w.write(&bytes).expect("write");
        let written = w.finish().expect("finish");
        TestFile {
            dir,
            targets,
            written,
            bytes,
            fid,
        }
    }

    pub fn reader(&self) -> FileReader {
        FileReader::new(
            self.written.placement.clone(),
            self.fid,
            self.written.size,
            self.targets.iter().map(|(_, b)| Some(b.clone())).collect(),
        )
        .expect("reader")
    }

    /// Where stripe `i` is.
    pub fn stripe_path(&self, i: usize) -> std::path::PathBuf {
        let n = StripeName::new(self.fid, i as u8);
        self.dir
            .path()
            .join(format!("fs{i}"))
            .join(n.dir())
            .join(n.file())
    }
}

/// Drop `path`'s pages from the page cache and wait (up to 5 s) until
/// `fincore` (util-linux; it looks with mincore, without reading) finds
/// none: one fadvise can leave pages behind (under writeback, or locked by
/// read-ahead on a busy machine).
#[allow(dead_code)]
pub fn evict(path: &std::path::Path) {
    let end = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let s = std::fs::File::open(path).expect("stripe");
        s.sync_all().expect("sync");
        rustix::fs::fadvise(&s, 0, None, rustix::fs::Advice::DontNeed).expect("fadvise");
        let out = std::process::Command::new("fincore")
            .args(["--bytes", "--noheadings", "--output", "RES"])
            .arg(path)
            .output()
            .expect("fincore (util-linux)");
        let res = String::from_utf8_lossy(&out.stdout).trim().to_string();
        if res.is_empty() || res == "0" {
            return;
        }
        assert!(
            std::time::Instant::now() < end,
            "{} still has {res} bytes in the page cache",
            path.display()
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}
