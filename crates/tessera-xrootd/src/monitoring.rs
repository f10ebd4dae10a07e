//! The XRootD monitoring stream (`tessera-wlcg`'s `Monitor`) as this
//! front-end feeds it: the session becomes a monitored user (`u`, with
//! the login's name and process id and the identity it opened as) when
//! it first opens a file; each open file counts its reads, vector reads
//! and writes, recorded at its close; files left open when the client
//! goes are recorded as forced closes, then the session's end.

use crate::session::{Handle, Session};
use tessera_types::{Identity, NsPath};
use tessera_wlcg::monitor::{self, MonFile};

impl Session {
    pub fn set_login_hint(&self, name: &str, pid: u32) {
        let _ = self.login_hint.set((name.to_string(), pid));
    }

    /// The monitoring record of a file `who` opened (none when the stream
    /// is off: nothing is made then).
    pub fn mon_open(
        &self,
        who: &Identity,
        path: &NsPath,
        size: u64,
        write: bool,
    ) -> Option<MonFile> {
        let mon = self.cfg.monitor.as_ref()?;
        let user = self.mon_user.get_or_init(|| {
            let (name, pid) = self.login_hint.get().cloned().unwrap_or_default();
            let host = monitor::host_of(self.peer.ip());
            let info = monitor::client_info(who, &host, self.app(), self.peer.is_ipv6());
            let client = monitor::Client {
                user: &name,
                pid,
                host: &host,
                info,
            };
            Some(mon.login("xroot", client))
        });
        Some(user.as_ref()?.open(&path.display(), size, write))
    }

    /// The files still open when the client goes: forced closes.
    pub(crate) fn mark_forced(&self) {
        for h in self.open_handles() {
            let m = match &h {
                Handle::Read(r) => r.mon.as_ref(),
                Handle::Write(w) => w.mon.as_ref(),
                Handle::Update(u) => u.mon.as_ref(),
            };
            if let Some(m) = m {
                m.forced();
            }
        }
    }
}
