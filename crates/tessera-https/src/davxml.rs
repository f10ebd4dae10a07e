//! The PROPFIND request body (RFC 4918 §14.20): `allprop`, `propname` or
//! a `prop` list. A small XML reader of our own, made for untrusted input:
//! no DTD is accepted (so no entity can expand: XML bombs are refused, not
//! bounded), only the five predefined entities and character references,
//! namespaces resolved per element, nesting and element counts bounded,
//! and every malformation an error (the request's 400). It reads no more
//! than the body the caller has already bounded.

/// A property name: namespace URI and local name.
pub type PropName = (String, String);

/// What a PROPFIND asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Propfind {
    /// Every property (also an empty body).
    AllProp,
    /// The names of the properties, without values.
    PropName,
    /// These properties.
    Prop(Vec<PropName>),
}

/// Deepest element nesting accepted.
const MAX_DEPTH: usize = 32;
/// Most elements accepted in one body.
const MAX_ELEMENTS: usize = 4096;

/// Parse a PROPFIND body; `Err` says what is wrong with it.
pub fn parse(body: &[u8]) -> Result<Propfind, String> {
    let text = std::str::from_utf8(body).map_err(|_| "the body is not UTF-8".to_string())?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if text.trim().is_empty() {
        return Ok(Propfind::AllProp);
    }
    let root = Reader::new(text).document()?;
    if root.name != dav("propfind") {
        return Err(format!(
            "the body's root is {{{}}}{}, not DAV: propfind",
            root.name.0, root.name.1
        ));
    }
    for c in &root.children {
        match (c.name.0.as_str(), c.name.1.as_str()) {
            ("DAV:", "allprop") => return Ok(Propfind::AllProp),
            ("DAV:", "propname") => return Ok(Propfind::PropName),
            ("DAV:", "prop") => {
                return Ok(Propfind::Prop(
                    c.children.iter().map(|p| p.name.clone()).collect(),
                ))
            }
            _ => {}
        }
    }
    Err("propfind holds none of allprop, propname and prop".into())
}

/// Read a whole document of at most `max_elements` elements (the same
/// reader and rules as the request bodies).
pub(crate) fn document(text: &str, max_elements: usize) -> Result<Element, String> {
    let mut r = Reader::new(text);
    r.max_elements = max_elements;
    r.document()
}

/// One change of a PROPPATCH, in document order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PatchOp {
    /// Set the property to this value (XML content, see [`Element`]).
    Set(PropName, String),
    Remove(PropName),
}

/// Parse a PROPPATCH body (RFC 4918 §14.19: `propertyupdate` holding
/// `set` and `remove` instructions, each with a `prop`).
pub fn parse_proppatch(body: &[u8]) -> Result<Vec<PatchOp>, String> {
    let text = std::str::from_utf8(body).map_err(|_| "the body is not UTF-8".to_string())?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let root = Reader::new(text).document()?;
    if root.name != dav("propertyupdate") {
        return Err(format!(
            "the body's root is {{{}}}{}, not DAV: propertyupdate",
            root.name.0, root.name.1
        ));
    }
    let mut ops = Vec::new();
    for c in &root.children {
        let set = match (c.name.0.as_str(), c.name.1.as_str()) {
            ("DAV:", "set") => true,
            ("DAV:", "remove") => false,
            _ => continue,
        };
        for prop in c.children.iter().filter(|p| p.name == dav("prop")) {
            for p in &prop.children {
                ops.push(if set {
                    PatchOp::Set(p.name.clone(), p.inner.clone())
                } else {
                    PatchOp::Remove(p.name.clone())
                });
            }
        }
    }
    if ops.is_empty() {
        return Err("propertyupdate changes no property".into());
    }
    Ok(ops)
}

pub(crate) fn dav(local: &str) -> PropName {
    ("DAV:".to_string(), local.to_string())
}

/// An element: its resolved name, its child elements, and its content
/// written out again as XML (a dead property's value): text escaped,
/// child elements each declaring its own namespace as the default one
/// (so the value means the same wherever it is put back), comments,
/// processing instructions and attributes left out.
#[derive(Debug)]
pub(crate) struct Element {
    pub(crate) name: PropName,
    pub(crate) children: Vec<Element>,
    pub(crate) inner: String,
}

impl Element {
    /// The element itself written out as `inner` is.
    fn outer(&self) -> String {
        let (ns, local) = &self.name;
        let ns = escape(ns);
        if self.inner.is_empty() {
            format!("<{local} xmlns=\"{ns}\"/>")
        } else {
            format!("<{local} xmlns=\"{ns}\">{}</{local}>", self.inner)
        }
    }
}

/// XML escaping of text and attribute values.
pub fn escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&apos;"),
            c if (c as u32) < 0x20 && c != '\t' && c != '\n' && c != '\r' => o.push('\u{FFFD}'),
            c => o.push(c),
        }
    }
    o
}

struct Reader<'a> {
    s: &'a str,
    at: usize,
    elements: usize,
    /// Namespace declarations in scope: (prefix, URI); "" is the default.
    scope: Vec<(String, String)>,
    /// Most elements accepted in the document.
    max_elements: usize,
}

impl<'a> Reader<'a> {
    fn new(s: &'a str) -> Reader<'a> {
        Reader {
            s,
            at: 0,
            elements: 0,
            max_elements: MAX_ELEMENTS,
            scope: vec![
                ("xml".into(), "http://www.w3.org/XML/1998/namespace".into()),
                (String::new(), String::new()),
            ],
        }
    }

    fn rest(&self) -> &'a str {
        &self.s[self.at..]
    }

    fn err<T>(&self, what: &str) -> Result<T, String> {
        Err(format!("{what} at byte {}", self.at))
    }

    /// Prolog, one root element, then only whitespace, comments and
    /// processing instructions.
    fn document(&mut self) -> Result<Element, String> {
        self.misc()?;
        if !self.rest().starts_with('<') {
            return self.err("expected the root element");
        }
        let root = self.element(0)?;
        self.misc()?;
        if !self.rest().is_empty() {
            return self.err("content after the root element");
        }
        Ok(root)
    }

    /// Skip whitespace, comments and processing instructions; refuse a DTD.
    fn misc(&mut self) -> Result<(), String> {
        loop {
            self.skip_space();
            let r = self.rest();
            if r.starts_with("<?") {
                self.skip_past("?>")?;
            } else if r.starts_with("<!--") {
                self.comment()?;
            } else if r.starts_with("<!") {
                return self.err("a DTD or declaration (not accepted)");
            } else {
                return Ok(());
            }
        }
    }

    fn skip_space(&mut self) {
        let r = self.rest();
        self.at += r.len() - r.trim_start_matches([' ', '\t', '\r', '\n']).len();
    }

    fn skip_past(&mut self, end: &str) -> Result<(), String> {
        match self.rest().find(end) {
            Some(i) => {
                self.at += i + end.len();
                Ok(())
            }
            None => self.err(&format!("unterminated construct (no {end:?})")),
        }
    }

    fn comment(&mut self) -> Result<(), String> {
        self.at += 4;
        let Some(i) = self.rest().find("--") else {
            return self.err("unterminated comment");
        };
        self.at += i;
        if !self.rest().starts_with("-->") {
            return self.err("\"--\" inside a comment");
        }
        self.at += 3;
        Ok(())
    }

    fn name(&mut self) -> Result<&'a str, String> {
        // Letters, digits, '_', '-', '.' and one ':' (names are echoed
        // back in answers: nothing else may pass).
        let r = self.rest();
        let n = r
            .find(|c: char| !(c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | ':')))
            .unwrap_or(r.len());
        let name = &r[..n];
        // Prefix and local part each start with a letter or '_'.
        let ok = name.split(':').count() <= 2
            && name.split(':').all(|p| {
                p.chars()
                    .next()
                    .is_some_and(|c| c.is_alphabetic() || c == '_')
            });
        if !ok {
            return self.err(&format!("bad name {name:?}"));
        }
        self.at += n;
        Ok(name)
    }

    /// An element starting at `<`, with everything inside it.
    fn element(&mut self, depth: usize) -> Result<Element, String> {
        if depth >= MAX_DEPTH {
            return self.err("elements nested too deep");
        }
        self.elements += 1;
        if self.elements > self.max_elements {
            return self.err("too many elements");
        }
        self.at += 1; // '<'
        let qname = self.name()?;
        let mark = self.scope.len();
        let empty = self.attributes()?;
        let name = self.resolve(qname)?;
        let mut children = Vec::new();
        let mut inner = String::new();
        if !empty {
            loop {
                inner.push_str(&escape(&self.text()?));
                let r = self.rest();
                if r.starts_with("</") {
                    self.at += 2;
                    let end = self.name()?;
                    if end != qname {
                        return self.err(&format!("</{end}> closes <{qname}>"));
                    }
                    self.skip_space();
                    if !self.rest().starts_with('>') {
                        return self.err("expected '>'");
                    }
                    self.at += 1;
                    break;
                } else if r.starts_with("<!--") {
                    self.comment()?;
                } else if r.starts_with("<![CDATA[") {
                    let from = self.at + 9;
                    self.skip_past("]]>")?;
                    inner.push_str(&escape(&self.s[from..self.at - 3]));
                } else if r.starts_with("<?") {
                    self.skip_past("?>")?;
                } else if r.starts_with("<!") {
                    return self.err("a declaration inside an element");
                } else if r.starts_with('<') {
                    let child = self.element(depth + 1)?;
                    inner.push_str(&child.outer());
                    children.push(child);
                } else {
                    return self.err(&format!("unclosed element <{qname}>"));
                }
            }
        }
        self.scope.truncate(mark);
        Ok(Element {
            name,
            children,
            inner,
        })
    }

    /// Attributes up to `>` or `/>` (returns true for `/>`); `xmlns`
    /// declarations enter the scope.
    fn attributes(&mut self) -> Result<bool, String> {
        let mut seen: Vec<&str> = Vec::new();
        loop {
            let before = self.at;
            self.skip_space();
            let r = self.rest();
            if r.starts_with("/>") {
                self.at += 2;
                return Ok(true);
            }
            if r.starts_with('>') {
                self.at += 1;
                return Ok(false);
            }
            if r.is_empty() {
                return self.err("unterminated tag");
            }
            if self.at == before {
                return self.err("expected whitespace before an attribute");
            }
            let name = self.name()?;
            if seen.contains(&name) {
                return self.err(&format!("attribute {name} given twice"));
            }
            seen.push(name);
            self.skip_space();
            if !self.rest().starts_with('=') {
                return self.err("expected '='");
            }
            self.at += 1;
            self.skip_space();
            let value = self.quoted()?;
            if name == "xmlns" {
                self.scope.push((String::new(), value));
            } else if let Some(p) = name.strip_prefix("xmlns:") {
                if value.is_empty() {
                    return self.err("a prefix bound to no namespace");
                }
                self.scope.push((p.to_string(), value));
            }
        }
    }

    fn quoted(&mut self) -> Result<String, String> {
        let q = match self.rest().chars().next() {
            Some(c @ ('"' | '\'')) => c,
            _ => return self.err("expected a quoted value"),
        };
        self.at += 1;
        let Some(end) = self.rest().find(q) else {
            return self.err("unterminated value");
        };
        let raw = &self.rest()[..end];
        if raw.contains('<') {
            return self.err("'<' in a value");
        }
        let v = unescape(raw).map_err(|e| format!("{e} at byte {}", self.at))?;
        self.at += end + 1;
        Ok(v)
    }

    /// Character data up to the next `<`, references replaced.
    fn text(&mut self) -> Result<String, String> {
        let r = self.rest();
        let n = r.find('<').unwrap_or(r.len());
        let t = unescape(&r[..n]).map_err(|e| format!("{e} at byte {}", self.at))?;
        self.at += n;
        Ok(t)
    }

    fn resolve(&self, qname: &str) -> Result<PropName, String> {
        let (prefix, local) = qname.split_once(':').unwrap_or(("", qname));
        // The default namespace is always in scope ("" at first).
        match self.scope.iter().rev().find(|(p, _)| p == prefix) {
            Some((_, uri)) => Ok((uri.clone(), local.to_string())),
            None => Err(format!("undeclared namespace prefix {prefix:?}")),
        }
    }
}

/// Replace the predefined entities and character references; any other
/// entity is an error (none can be declared: DTDs are refused).
pub(crate) fn unescape(s: &str) -> Result<String, String> {
    if !s.contains('&') {
        return Ok(s.to_string());
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('&') {
        out.push_str(&rest[..i]);
        rest = &rest[i + 1..];
        let Some(end) = rest.find(';').filter(|&e| e <= 10) else {
            return Err("a '&' that starts no reference".into());
        };
        let name = &rest[..end];
        let c = match name {
            "lt" => '<',
            "gt" => '>',
            "amp" => '&',
            "quot" => '"',
            "apos" => '\'',
            _ => {
                let code = if let Some(h) = name.strip_prefix("#x") {
                    u32::from_str_radix(h, 16).ok()
                } else if let Some(d) = name.strip_prefix('#') {
                    d.parse().ok()
                } else {
                    return Err(format!("undefined entity &{name};"));
                };
                code.and_then(char::from_u32)
                    .filter(|&c| c != '\0')
                    .ok_or_else(|| format!("bad character reference &{name};"))?
            }
        };
        out.push(c);
        rest = &rest[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn p(ns: &str, l: &str) -> PropName {
        (ns.to_string(), l.to_string())
    }

    #[test]
    fn what_clients_send() {
        assert_eq!(parse(b""), Ok(Propfind::AllProp));
        assert_eq!(parse(b" \r\n"), Ok(Propfind::AllProp));
        // davix's listing request.
        let davix = br#"<?xml version="1.0" encoding="utf-8" ?>
<D:propfind xmlns:D="DAV:" xmlns:L="LCGDM:"><D:prop>
<D:displayname/><D:getlastmodified/><D:creationdate/><D:getcontentlength/>
<D:quota-used-bytes/><D:resourcetype/><L:mode/><L:owner/><L:group/>
</D:prop></D:propfind>"#;
        let Ok(Propfind::Prop(v)) = parse(davix) else {
            panic!("{:?}", parse(davix))
        };
        assert_eq!(v.len(), 9);
        assert_eq!(v[0], p("DAV:", "displayname"));
        assert_eq!(v[6], p("LCGDM:", "mode"));
        // Default namespace, comments, a BOM.
        let b = "\u{feff}<!-- hi --><propfind xmlns=\"DAV:\"><allprop/></propfind>\n";
        assert_eq!(parse(b.as_bytes()), Ok(Propfind::AllProp));
        let b = br#"<a:propfind xmlns:a="DAV:"><a:propname></a:propname></a:propfind>"#;
        assert_eq!(parse(b), Ok(Propfind::PropName));
        // A property in no namespace, and an inner redeclaration.
        let b =
            br#"<propfind xmlns="DAV:"><prop><x xmlns=""/><y xmlns="urn:y"/></prop></propfind>"#;
        assert_eq!(
            parse(b),
            Ok(Propfind::Prop(vec![p("", "x"), p("urn:y", "y")]))
        );
        // Entities and character references in text and values.
        let b = br#"<propfind xmlns="DAV:" a="&lt;&#65;&#x42;"><prop>&amp; text</prop></propfind>"#;
        assert_eq!(parse(b), Ok(Propfind::Prop(vec![])));
    }

    #[test]
    fn refusals() {
        let bad: &[&[u8]] = &[
            // XML bombs need a DTD: refused outright.
            br#"<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;">]><propfind xmlns="DAV:">&lol2;</propfind>"#,
            br#"<!DOCTYPE propfind SYSTEM "http://example.com/x.dtd"><propfind xmlns="DAV:"/>"#,
            br#"<propfind xmlns="DAV:"><prop>&undefined;</prop></propfind>"#,
            br#"<propfind xmlns="DAV:"><prop></propfind>"#,
            br#"<propfind xmlns="DAV:"><allprop/>"#,
            br#"<D:propfind><D:allprop/></D:propfind>"#,
            br#"<propfind xmlns="DAV:"/><propfind xmlns="DAV:"/>"#,
            br#"<propfind xmlns="DAV:"/>"#,
            br#"<propertyupdate xmlns="DAV:"><set/></propertyupdate>"#,
            br#"<propfind xmlns="DAV:" a="1" a="2"><allprop/></propfind>"#,
            br#"<propfind xmlns="DAV:"><allprop/></propfind> trailing"#,
            br#"not xml at all"#,
            br#"<propfind xmlns="DAV:"><!-- a -- b --><allprop/></propfind>"#,
            b"<propfind xmlns=\"DAV:\">\xff</propfind>",
            br#"<propfind xmlns="DAV:"><prop>&#0;</prop></propfind>"#,
            br#"<propfind xmlns="DAV:"><prop><a&b/></prop></propfind>"#,
            br#"<propfind xmlns="DAV:"><prop><1a/></prop></propfind>"#,
            br#"<propfind xmlns="DAV:"><prop><a:b:c xmlns:a="x"/></prop></propfind>"#,
        ];
        for b in bad {
            assert!(parse(b).is_err(), "{}", String::from_utf8_lossy(b));
        }
        let deep = format!(
            "<propfind xmlns=\"DAV:\">{}{}</propfind>",
            "<a>".repeat(100),
            "</a>".repeat(100)
        );
        assert!(parse(deep.as_bytes()).unwrap_err().contains("too deep"));
        let wide = format!(
            "<propfind xmlns=\"DAV:\"><prop>{}</prop></propfind>",
            "<a/>".repeat(5000)
        );
        assert!(parse(wide.as_bytes()).unwrap_err().contains("too many"));
    }

    /// The fuzz target's seed corpus (the fuzzer's finds are added there)
    /// parses without a panic; the seeds that are PROPFIND bodies parse as
    /// they should.
    #[test]
    fn seed_corpus() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/webdav");
        let mut n = 0;
        for e in std::fs::read_dir(&dir).expect("corpus dir") {
            let path = e.expect("entry").path();
            let r = parse(&std::fs::read(&path).expect("seed"));
            match path.file_name().and_then(|f| f.to_str()) {
                Some("davix-prop") => {
                    assert!(matches!(r, Ok(Propfind::Prop(ref v)) if v.len() == 9))
                }
                Some("allprop") => assert_eq!(r, Ok(Propfind::AllProp)),
                Some("propname") => assert_eq!(r, Ok(Propfind::PropName)),
                Some("bomb") => assert!(r.is_err()),
                _ => {}
            }
            n += 1;
        }
        assert!(n >= 5, "seed corpus has {n} files");
    }

    proptest! {
        #[test]
        fn never_panics(b in proptest::collection::vec(any::<u8>(), 0..400)) {
            let _ = parse(&b);
        }

        #[test]
        fn never_panics_on_near_xml(s in "[<>/=\"' a-zDAV:!?&;#x0-9-]{0,200}") {
            let _ = parse(s.as_bytes());
            let _ = parse(format!("<propfind xmlns=\"DAV:\">{s}</propfind>").as_bytes());
        }
    }
}
