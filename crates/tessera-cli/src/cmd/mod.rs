//! One module per command group.

pub mod access;
pub mod acl;
pub mod attr;
pub mod balance;
pub mod fed;
pub mod file;
pub mod fs;
pub mod fsck;
pub mod ls;
pub mod ns;
pub mod passwd;
pub mod quota;
pub mod recycle;
pub mod srr;
pub mod token;
