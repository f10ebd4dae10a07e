//! Metalink 4 (RFC 5854) documents for federated views: a file's replicas
//! in priority order, with its size, so that davix and gfal2 fail over
//! between them.

use crate::davxml::escape;
use tessera_fed::Replica;

/// The media type clients ask for (`Accept`) and get.
pub const MEDIA_TYPE: &str = "application/metalink4+xml";

/// The document for file `name` (its last path element) with `replicas`
/// best first (priority 1 is the most preferred).
pub fn document(name: &str, replicas: &[Replica]) -> String {
    let mut d = String::from(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<metalink xmlns=\"urn:ietf:params:xml:ns:metalink\">\n",
    );
    d.push_str(&format!("  <file name=\"{}\">\n", escape(name)));
    if let Some(size) = replicas.iter().find_map(|r| r.size) {
        d.push_str(&format!("    <size>{size}</size>\n"));
    }
    for (i, r) in replicas.iter().enumerate() {
        d.push_str(&format!(
            "    <url priority=\"{}\" location=\"{}\">{}</url>\n",
            i + 1,
            escape(&r.site),
            escape(&r.url)
        ));
    }
    d.push_str("  </file>\n</metalink>\n");
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replicas_in_order_escaped() {
        let r = |u: &str, s: &str| Replica {
            endpoint: "e".into(),
            site: s.into(),
            url: u.into(),
            size: Some(12),
            root: None,
            get_only: false,
        };
        let d = document(
            "a&b",
            &[r("https://x/1?a=1&b=2", "near"), r("https://y/1", "far")],
        );
        assert!(d.contains("<file name=\"a&amp;b\">"), "{d}");
        assert!(d.contains("<size>12</size>"));
        let near = d
            .find("priority=\"1\" location=\"near\">https://x/1?a=1&amp;b=2<")
            .unwrap();
        let far = d
            .find("priority=\"2\" location=\"far\">https://y/1<")
            .unwrap();
        assert!(near < far);
    }
}
