//! The WebDAV parsers that see client input: the PROPFIND body reader and
//! the Range header parser (whose ranges must stay inside the file and,
//! coalesced, never add up to more than it).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = tessera_https::davxml::parse(data);
    if let Ok(h) = std::str::from_utf8(data) {
        let size = data.len() as u64 * 97;
        if let Ok(tessera_https::ranges::Ranges::Some(v)) = tessera_https::ranges::parse(h, size) {
            // Coalesced: sorted, apart, never more than the entity.
            let total: u64 = v.iter().map(|(f, l)| l - f + 1).sum();
            assert!(total <= size);
            assert!(v.len() <= tessera_https::ranges::MAX_PARTS);
            for w in v.windows(2) {
                assert!(w[0].1 + 1 < w[1].0);
            }
            for (first, last) in v {
                assert!(first <= last && last < size);
            }
        }
    }
});
