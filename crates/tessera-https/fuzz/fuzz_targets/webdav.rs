//! The WebDAV parsers that see client input: the PROPFIND body reader and
//! the Range header parser (whose ranges must stay inside the file).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = tessera_https::davxml::parse(data);
    if let Ok(h) = std::str::from_utf8(data) {
        let size = data.len() as u64 * 97;
        if let Ok(tessera_https::ranges::Ranges::Some(v)) = tessera_https::ranges::parse(h, size) {
            for (first, last) in v {
                assert!(first <= last && last < size);
            }
        }
    }
});
