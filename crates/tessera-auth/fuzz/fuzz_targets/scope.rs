//! Token scope claims: whatever validates names only clean paths under the
//! issuer's base path (dot components, empty ones and encoded separators
//! refuse the token).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    tessera_auth::fuzz_scope(data);
});
