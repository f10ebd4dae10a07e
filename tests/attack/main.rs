//! The attack suite: each attack of issue 22 ("every path authorizes the
//! same way, and no unauthenticated client can exhaust the server") made
//! through the real protocol (curl, xrdcp, the XRootD Python bindings,
//! raw sockets) against a single server and against a metadata service
//! with two gateways, asserting the refusal and the absence of side
//! effects; exhaustion attacks against a `tesserad` process of their own.
//! `docs/security.md` lists every attack and its test here.

mod amplify;
mod authz;
mod capability;
mod exhaust;
mod exhaust_read;
mod exhaust_write;
mod proc;
mod race;
mod raw;
mod slots;
mod tokens;
mod topo;
mod tpc;
mod traverse;
mod unix;
mod zerofill;
