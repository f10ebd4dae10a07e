//! The XRootD monitoring stream (`tessera-wlcg`'s `Monitor`) and SciTags
//! flow marking as this front-end feeds them: the session becomes a
//! monitored user (`u`, with the login's name and process id and the
//! identity it opened as) when it first opens a file; each open file
//! counts its reads, vector reads and writes, recorded at its close;
//! files left open when the client goes are recorded as forced closes,
//! then the session's end. An open with `scitag.flow` in its CGI marks
//! the connection's flow for that file (fireflies at the open and the
//! close; the data's sender is the flow's source).

use crate::session::{Handle, Session, Target};
use tessera_types::{Identity, NsPath};
use tessera_wlcg::monitor::{self, MonFile};
use tessera_wlcg::scitags::{self, Tag};
use tessera_wlcg::watch::Watch;

impl Session {
    /// The scitag an open's CGI carries (`scitag.flow`), if valid.
    pub fn flow_tag(&self, t: &Target) -> Option<Tag> {
        scitags::parse(t.cgi("scitag.flow")?)
    }

    pub fn set_login_hint(&self, name: &str, pid: u32) {
        let _ = self.login_hint.set((name.to_string(), pid));
    }

    /// What follows a file `who` opened as `t` (nothing when monitoring
    /// and marking are off).
    pub fn watch(&self, who: &Identity, t: &Target, size: u64, write: bool) -> Watch {
        self.watch_path(who, &t.path, self.flow_tag(t), size, write)
    }

    pub fn watch_path(
        &self,
        who: &Identity,
        path: &NsPath,
        tag: Option<Tag>,
        size: u64,
        write: bool,
    ) -> Watch {
        let flow = match (&self.cfg.fireflies, tag) {
            (Some(ff), Some(tag)) => {
                let (src, dst) = match write {
                    true => (self.peer, self.local),
                    false => (self.local, self.peer),
                };
                let app = match self.app() {
                    "" => "xroot",
                    a => a,
                };
                Some(ff.start(tag, app, src, dst))
            }
            _ => None,
        };
        Watch {
            mon: self.mon_open(who, path, size, write),
            flow,
        }
    }

    /// The monitoring record of a file `who` opened (none when the stream
    /// is off: nothing is made then).
    fn mon_open(&self, who: &Identity, path: &NsPath, size: u64, write: bool) -> Option<MonFile> {
        let mon = self.cfg.monitor.as_ref()?;
        let (login, pid) = self.login_hint.get().cloned().unwrap_or_default();
        let peer = monitor::Peer {
            prot: "xroot",
            login: &login,
            pid,
            addr: self.peer,
            app: self.app(),
        };
        let what = (path.display(), size, write);
        Some(
            self.mon_users
                .open(mon, who, peer, (&what.0, what.1, what.2)),
        )
    }

    /// The files still open when the client goes: forced closes.
    pub(crate) fn mark_forced(&self) {
        for h in self.open_handles() {
            match &h {
                Handle::Read(r) => r.watch.forced(),
                Handle::Write(w) => w.watch.forced(),
                Handle::Update(u) => u.watch.forced(),
            }
        }
    }
}
