//! A new file whose bytes changed after they were streamed into its
//! stripes: XRootD writes that go back (ROOT rewrites its header when it
//! closes a file it created), truncates that shrink. Stripes are written
//! once, in order, with their checksums, so such a file is finished in two
//! passes: the streamed version is sealed under the write's first file id
//! (never named in the namespace), the write gets a second id
//! (`Ledger::renumber`, same reservation), and the streamed bytes that
//! still stand, the changes over them and zeros elsewhere are streamed
//! into new stripes under it, which the usual close commits; the first
//! version's stripes are then removed. Nothing is visible before that
//! commit, as for any upload. The second pass costs one more read and
//! write of the file, paid only by files that were changed this way.

use crate::ledger::drop_stripes;
use crate::{CoreError, Expect, Inode, WriteSession};
use std::collections::BTreeMap;
use std::sync::Arc;
use tessera_backend::Backend;
use tessera_data::{FileReader, FileWriter};

/// Bytes streamed per write in the second pass.
const CHUNK: usize = 4 << 20;

/// What a file is at its close when bytes changed after streaming.
pub(crate) struct Changes<'a> {
    /// Streamed bytes below this stand (a shrink lowers it).
    pub valid: u64,
    /// The file's size.
    pub size: u64,
    /// Bytes written over the streamed ones (or past them), by offset;
    /// non-overlapping.
    pub patches: &'a Patches,
}

impl WriteSession {
    /// Close a file whose bytes changed after streaming (see the module
    /// comment); `want` is checked against the final bytes.
    pub(crate) fn close_changed(
        mut self,
        c: Changes<'_>,
        want: Expect,
    ) -> Result<Inode, CoreError> {
        // On failure the session is dropped: the second version's stripes
        // and the reservation go with it.
        self.second_pass(&c)?;
        self.close_expecting(want)
    }

    fn second_pass(&mut self, c: &Changes<'_>) -> Result<(), CoreError> {
        let w = self
            .writer
            .take()
            .ok_or_else(|| CoreError::Invalid("write after close".into()))?;
        let first = w.finish()?;
        let first_fid = self.plan.fid;
        let r = self.rewrite_from(&first, c);
        // The first version is never named: its stripes go either way.
        drop_stripes(&self.fs, &first.placement, first_fid);
        r
    }

    /// Stream the first version's standing bytes, `c`'s patches and zeros
    /// into new stripes under a new file id.
    fn rewrite_from(
        &mut self,
        first: &tessera_data::WrittenFile,
        c: &Changes<'_>,
    ) -> Result<(), CoreError> {
        let backends: Vec<Option<Arc<dyn Backend>>> = first
            .placement
            .fsids
            .iter()
            .map(|id| self.fs.backend(*id))
            .collect();
        let reader = FileReader::new(first.placement.clone(), self.plan.fid, first.size, backends)?
            .with_read_ahead(false);
        self.plan.fid = self.ledger.renumber(self.plan.resv_id)?;
        let targets: Vec<(u32, Arc<dyn Backend>)> = self
            .plan
            .placement
            .fsids
            .iter()
            .filter_map(|id| self.fs.backend(*id).map(|b| (*id, b)))
            .collect();
        let w = FileWriter::create(
            self.plan.placement.layout,
            self.plan.fid,
            self.plan.resv_id,
            &targets,
        )?;
        self.writer = Some(if self.durable { w } else { w.buffered() });
        let stand = c.valid.min(first.size);
        let mut pos = 0u64;
        while pos < c.size {
            let n = CHUNK.min((c.size - pos) as usize);
            let mut buf = vec![0u8; n];
            if pos < stand {
                let k = ((stand - pos) as usize).min(n);
                if reader.read_at(pos, &mut buf[..k])? != k {
                    return Err(CoreError::Invalid(format!(
                        "the streamed version ended early at {pos}"
                    )));
                }
            }
            c.patches.overlay(pos, &mut buf);
            self.write(&buf)?;
            pos += n as u64;
        }
        Ok(())
    }
}

/// Bytes written over others (or past them), kept until a file is built:
/// non-overlapping runs by offset, and how many bytes they hold.
#[derive(Default)]
pub(crate) struct Patches {
    runs: BTreeMap<u64, Vec<u8>>,
    bytes: usize,
}

impl Patches {
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// `data` at `offset`, over whatever was there.
    pub fn put(&mut self, offset: u64, data: Vec<u8>) {
        self.cut(offset, offset + data.len() as u64);
        if !data.is_empty() {
            self.bytes += data.len();
            self.runs.insert(offset, data);
        }
    }

    /// Remove what the runs hold of `[from, to)`, keeping their other
    /// parts.
    pub fn cut(&mut self, from: u64, to: u64) {
        let hit: Vec<u64> = self
            .runs
            .range(..to)
            .filter(|(s, p)| **s + p.len() as u64 > from)
            .map(|(s, _)| *s)
            .collect();
        for s in hit {
            let p = self.runs.remove(&s).expect("present");
            let e = s + p.len() as u64;
            self.bytes -= (e.min(to) - s.max(from)) as usize;
            if s < from {
                self.runs.insert(s, p[..(from - s) as usize].to_vec());
            }
            if e > to {
                self.runs.insert(to, p[(to - s) as usize..].to_vec());
            }
        }
    }

    pub fn clear(&mut self) {
        *self = Patches::default();
    }

    /// What the runs hold of `[from, to)`: (index from `from`, bytes).
    fn within(&self, from: u64, to: u64) -> impl Iterator<Item = (usize, &[u8])> {
        self.runs
            .range(..to)
            .filter(move |(s, p)| **s + p.len() as u64 > from)
            .map(move |(s, p)| {
                let e = s + p.len() as u64;
                let (a, b) = ((*s).max(from), e.min(to));
                ((a - from) as usize, &p[(a - s) as usize..(b - s) as usize])
            })
    }

    /// Copy what the runs hold of `out`'s range (from `offset`) over it.
    pub fn overlay(&self, offset: u64, out: &mut [u8]) {
        for (at, b) in self.within(offset, offset + out.len() as u64) {
            out[at..at + b.len()].copy_from_slice(b);
        }
    }

    /// [`Patches::overlay`]'s copies, taken now to be laid later.
    pub fn copies(&self, from: u64, to: u64) -> Vec<(usize, Vec<u8>)> {
        self.within(from, to)
            .map(|(at, b)| (at, b.to_vec()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cut_and_overlay_keep_the_newest_bytes() {
        let mut p = Patches::default();
        p.put(10, vec![1u8; 10]); // 10..20
        p.put(30, vec![2u8; 10]); // 30..40
        p.put(15, vec![3u8; 20]); // over both
        let mut out = vec![0u8; 45];
        p.overlay(0, &mut out);
        let mut want = vec![0u8; 45];
        want[10..15].fill(1);
        want[15..35].fill(3);
        want[35..40].fill(2);
        assert_eq!(out, want);
        assert_eq!(p.bytes(), 30);
        // From an offset inside, now and later.
        let mut part = vec![0u8; 10];
        p.overlay(12, &mut part);
        assert_eq!(part, want[12..22]);
        let copies = p.copies(12, 22);
        let mut later = vec![0u8; 10];
        for (at, b) in copies {
            later[at..at + b.len()].copy_from_slice(&b);
        }
        assert_eq!(later, part);
        p.cut(0, 100);
        assert_eq!(p.bytes(), 0);
    }
}
