//! A file's `Content-Type` from its name's extension, for browsers: a
//! small table of types that display safely (text, JSON, images, PDF,
//! archives); everything else, markup and scripts included, is
//! `application/octet-stream`, so stored content never runs as a page of
//! this site (with `X-Content-Type-Options: nosniff`, browsers do not
//! guess otherwise).

/// The type a file named `name` is served as.
pub fn of(name: &[u8]) -> &'static str {
    let Some(dot) = name.iter().rposition(|&b| b == b'.') else {
        return OCTETS;
    };
    let ext = String::from_utf8_lossy(&name[dot + 1..]).to_ascii_lowercase();
    match ext.as_str() {
        "txt" | "log" | "out" | "err" | "csv" | "md" | "py" | "c" | "h" | "cc" | "cpp" | "cxx"
        | "sh" | "cfg" | "conf" => "text/plain; charset=utf-8",
        "json" => "application/json",
        "pdf" => "application/pdf",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "gz" | "tgz" => "application/gzip",
        "tar" => "application/x-tar",
        "zip" => "application/zip",
        "h5" | "hdf5" => "application/x-hdf5",
        _ => OCTETS,
    }
}

const OCTETS: &str = "application/octet-stream";

#[cfg(test)]
mod tests {
    #[test]
    fn types() {
        assert_eq!(super::of(b"notes.TXT"), "text/plain; charset=utf-8");
        assert_eq!(super::of(b"plot.png"), "image/png");
        for unsafe_or_unknown in [
            &b"x.html"[..],
            b"a.svg",
            b"evil.js",
            b"run.root",
            b"noext",
            b".",
        ] {
            assert_eq!(super::of(unsafe_or_unknown), "application/octet-stream");
        }
    }
}
