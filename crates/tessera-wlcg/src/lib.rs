//! What a WLCG site reports about its storage, in the formats WLCG's
//! tools read: the Storage Resource Report (`srr`: JSON schema v4.2, for
//! CRIC, Rucio, WLCG space accounting and DIRAC).

pub mod srr;
