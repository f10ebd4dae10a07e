//! What a WLCG site reports about its storage, in the formats WLCG's
//! tools read: the Storage Resource Report (`srr`: JSON schema v4.2, for
//! CRIC, Rucio, WLCG space accounting and DIRAC), and the XRootD
//! monitoring stream WLCG's collectors read (`xrdmon`: the packets;
//! `monitor`: what is sent when), and SciTags flow marking (`scitags`:
//! fireflies and flowd lines).

pub mod monitor;
pub mod scitags;
pub mod srr;
mod udp;
pub mod watch;
pub mod xrdmon;
