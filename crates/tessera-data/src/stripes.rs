//! The stripes of one file as a reader sees them: opened once each (on
//! first use, or from memory only), blocks read and checked one by one.

use crate::layout::Geometry;
use crate::readdata::BufPool;
use std::sync::{Arc, OnceLock};
use tessera_backend::{Backend, StripeName, StripeRead};

/// How the error of one bad block begins (a checksum mismatch, a short
/// block): it rules out that block only, not the rest of its stripe (each
/// group is rebuilt from whatever good blocks it has).
pub(crate) const BAD_BLOCK: &str = "bad block:";

/// The stripes of one file, shared with the reader threads (which may
/// outlive a read when a stripe is slow).
pub(crate) struct Stripes {
    pub(crate) geo: Geometry,
    pub(crate) fid: u64,
    pub(crate) backends: Vec<Option<Arc<dyn Backend>>>,
    pub(crate) opened: Vec<OnceLock<OpenResult>>,
    pub(crate) pool: Arc<BufPool>,
    /// Checksum tables of the blocks last read by pages.
    pub(crate) tables: crate::pageread::Tables,
}

type OpenResult = Result<Box<dyn StripeRead>, String>;

impl Stripes {
    pub(crate) fn stripe(&self, i: usize) -> Result<&dyn StripeRead, String> {
        let r = self.opened[i].get_or_init(|| match &self.backends[i] {
            None => Err("filesystem unavailable".to_string()),
            Some(b) => b
                .open(&StripeName::new(self.fid, i as u8))
                .map_err(|e| e.to_string()),
        });
        match r {
            Ok(s) => Ok(s.as_ref()),
            Err(e) => Err(e.clone()),
        }
    }

    /// Stripe `i`, only if it is open already or opens without waiting
    /// (see `Backend::open_cached`).
    pub(crate) fn stripe_cached(&self, i: usize) -> Option<&dyn StripeRead> {
        if self.opened[i].get().is_none() {
            let s = self.backends[i]
                .as_ref()?
                .open_cached(&StripeName::new(self.fid, i as u8))?;
            // Another reader may have opened it meanwhile: either will do.
            let _ = self.opened[i].set(Ok(s));
        }
        match self.opened[i].get()? {
            Ok(s) => Some(s.as_ref()),
            Err(_) => None,
        }
    }

    /// Whether every block of groups `ga..=gb` in `buf` (which holds a
    /// stripe's bytes from offset `from`) matches its checksums.
    pub(crate) fn verified(&self, buf: &[u8], from: u64, ga: u64, gb: u64) -> bool {
        (ga..=gb).all(|g| {
            let off = (self.geo.block_offset(g) - from) as usize;
            let len = self.geo.block_len(g);
            let sums = &buf[off + len..off + self.geo.block_span(g)];
            crate::sums::verify(&self.geo.layout, &buf[off..off + len], sums)
        })
    }

    /// Block `g` of stripe `i`, verified.
    pub(crate) fn block(&self, i: usize, g: u64) -> Result<Vec<u8>, String> {
        let (len, span) = (self.geo.block_len(g), self.geo.block_span(g));
        let s = self.stripe(i)?;
        let mut buf = vec![0u8; span];
        let n = s
            .read_at(self.geo.block_offset(g), &mut buf)
            .map_err(|e| e.to_string())?;
        if n != span {
            return Err(format!("{BAD_BLOCK} short: {n} of {span} bytes"));
        }
        if !crate::sums::verify(&self.geo.layout, &buf[..len], &buf[len..]) {
            return Err(format!("{BAD_BLOCK} checksum mismatch"));
        }
        buf.truncate(len);
        Ok(buf)
    }
}
