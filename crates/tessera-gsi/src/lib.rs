//! XRootD's `gsi` security protocol, the server's side, as stock xrdcp,
//! xrdfs and the Python bindings (XrdSecgsi 5.5, protocol version 10600)
//! speak it with an X.509 proxy (`X509_USER_PROXY`), without delegation:
//!
//! 1. login reply: `&P=gsi,v:10600,c:ssl,ca:<issuer hashes of our host
//!    certificate>` ([`GsiServer::login_param`]);
//! 2. `kXR_auth` step 1000 (certreq: the client's random tag) →
//!    `kXR_authmore` step 2001: the tag signed with the host key, a tag of
//!    ours, our DH public value (RFC 7919 ffdhe2048) signed with the host
//!    key, the ciphers and digests we take, the host certificate;
//! 3. `kXR_auth` step 1001 (cert: the client's DH value signed with its
//!    proxy key, the proxy's public key, and, encrypted with the agreed
//!    AES key, its chain and our tag signed) → `kXR_ok`: the chain is
//!    handed to the caller, who verifies it (tessera-x509) and maps it.
//!
//! Everything a client sends is parsed strictly and bounded
//! ([`buffer`]); every refusal is a [`GsiError`] whose text reads like
//! the reference's (`Secgsi: ErrParseBuffer: ...`). The wire format
//! follows the XrdSecgsi sources (XrdSecProtocolgsi.cc, XrdSutBuffer.cc,
//! XrdCryptosslCipher.cc); no code of theirs is here.

pub mod buffer;
mod crypto;
mod handshake;

pub use handshake::{GsiError, GsiServer, Outcome, Pending};

/// The protocol version spoken (XrdSecgsiVERSION of 5.5 and later).
pub const VERSION: i32 = 10600;
