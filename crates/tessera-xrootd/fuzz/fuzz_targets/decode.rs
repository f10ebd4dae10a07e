//! XRootD request decoding: handshake, framing with length caps, and every
//! pure payload parser (paths and CGI, readv lists, mv, unix credentials).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    tessera_xrootd::decode::fuzz(data);
});
