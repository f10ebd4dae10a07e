//! What a front-end holds for one transfer when monitoring or flow
//! marking is on: its monitoring record and its marked flow, both fed the
//! bytes as they move and both recorded when it is dropped. With both
//! off it is two `None`s and every call a branch.

use crate::monitor::MonFile;
use crate::scitags::Flow;

#[derive(Default)]
pub struct Watch {
    pub mon: Option<MonFile>,
    pub flow: Option<Flow>,
}

impl Watch {
    pub fn is_on(&self) -> bool {
        self.mon.is_some() || self.flow.is_some()
    }

    /// `n` bytes read from the file (sent to the client).
    pub fn read(&self, n: u64) {
        if let Some(m) = &self.mon {
            m.read(n);
        }
        if let Some(f) = &self.flow {
            f.sent(n);
        }
    }

    /// A vector read of `segs` segments, `n` bytes.
    pub fn readv(&self, n: u64, segs: u64) {
        if let Some(m) = &self.mon {
            m.readv(n, segs);
        }
        if let Some(f) = &self.flow {
            f.sent(n);
        }
    }

    /// `n` bytes written to the file (sent by the client, the flow's
    /// source).
    pub fn wrote(&self, n: u64) {
        if let Some(m) = &self.mon {
            m.wrote(n);
        }
        if let Some(f) = &self.flow {
            f.sent(n);
        }
    }

    /// The client went away with the file open.
    pub fn forced(&self) {
        if let Some(m) = &self.mon {
            m.forced();
        }
    }
}
