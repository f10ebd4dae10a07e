//! JSON string literals for the few answers written by hand (access-log
//! lines, `whoami`), where a serializer would be a dependency for one
//! function.

use std::fmt::Write as _;

/// Append `v` to `s` as a JSON string literal.
pub fn string(s: &mut String, v: &str) {
    s.push('"');
    if !v.bytes().any(|c| c < 0x20 || c == b'"' || c == b'\\') {
        s.push_str(v);
        s.push('"');
        return;
    }
    for c in v.chars() {
        match c {
            '"' => s.push_str("\\\""),
            '\\' => s.push_str("\\\\"),
            '\n' => s.push_str("\\n"),
            '\r' => s.push_str("\\r"),
            '\t' => s.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(s, "\\u{:04x}", c as u32);
            }
            c => s.push(c),
        }
    }
    s.push('"');
}

/// `pairs` as one JSON object of strings.
pub fn object(pairs: &[(&str, String)]) -> String {
    let mut s = String::from("{");
    for (i, (k, v)) in pairs.iter().enumerate() {
        if i > 0 {
            s.push_str(", ");
        }
        string(&mut s, k);
        s.push_str(": ");
        string(&mut s, v);
    }
    s.push('}');
    s
}

#[cfg(test)]
mod tests {
    #[test]
    fn escapes_what_json_needs() {
        let mut s = String::new();
        super::string(&mut s, "a\"b\\c\n\u{1}é");
        assert_eq!(s, "\"a\\\"b\\\\c\\n\\u0001é\"");
        assert_eq!(
            super::object(&[("k", "v".into()), ("n", "1".into())]),
            "{\"k\": \"v\", \"n\": \"1\"}"
        );
    }
}
