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
    pub patches: &'a BTreeMap<u64, Vec<u8>>,
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
            overlay(c.patches, pos, &mut buf);
            self.write(&buf)?;
            pos += n as u64;
        }
        Ok(())
    }
}

/// Copy what `patches` hold of `out`'s range (from `offset`) over it.
pub(crate) fn overlay(patches: &BTreeMap<u64, Vec<u8>>, offset: u64, out: &mut [u8]) {
    let end = offset + out.len() as u64;
    for (s, p) in patches.range(..end) {
        let e = s + p.len() as u64;
        if e <= offset {
            continue;
        }
        let (a, b) = ((*s).max(offset), e.min(end));
        out[(a - offset) as usize..(b - offset) as usize]
            .copy_from_slice(&p[(a - s) as usize..(b - s) as usize]);
    }
}

/// Remove what `patches` hold of `[from, to)`, keeping their other parts;
/// returns how many bytes they hold less.
pub(crate) fn cut(patches: &mut BTreeMap<u64, Vec<u8>>, from: u64, to: u64) -> usize {
    let hit: Vec<u64> = patches
        .range(..to)
        .filter(|(s, p)| **s + p.len() as u64 > from)
        .map(|(s, _)| *s)
        .collect();
    let mut gone = 0;
    for s in hit {
        let p = patches.remove(&s).expect("present");
        let e = s + p.len() as u64;
        gone += (e.min(to) - s.max(from)) as usize;
        if s < from {
            patches.insert(s, p[..(from - s) as usize].to_vec());
        }
        if e > to {
            patches.insert(to, p[(to - s) as usize..].to_vec());
        }
    }
    gone
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cut_and_overlay_keep_the_newest_bytes() {
        let mut p = BTreeMap::new();
        p.insert(10u64, vec![1u8; 10]); // 10..20
        p.insert(30u64, vec![2u8; 10]); // 30..40
        assert_eq!(cut(&mut p, 15, 35), 10);
        p.insert(15, vec![3u8; 20]);
        let mut out = vec![0u8; 45];
        overlay(&p, 0, &mut out);
        let mut want = vec![0u8; 45];
        want[10..15].fill(1);
        want[15..35].fill(3);
        want[35..40].fill(2);
        assert_eq!(out, want);
        assert_eq!(p.values().map(Vec::len).sum::<usize>(), 30);
        // From an offset inside.
        let mut part = vec![0u8; 10];
        overlay(&p, 12, &mut part);
        assert_eq!(part, want[12..22]);
    }
}
