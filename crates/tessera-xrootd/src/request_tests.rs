//! The `authz=` of a decoded request, as the token layer reads it.

use crate::proto::{encode, req, Header, HEADER_LEN};
use crate::request::decode;

/// The header of a request `code` with no parameters.
fn header(code: u16) -> Header {
    let wire = encode::request([0, 1], code, &[], &[]);
    Header::parse(wire[..HEADER_LEN].try_into().expect("a header"))
}

#[test]
fn the_authz_of_a_request() {
    let open = header(req::OPEN);
    let r = decode(&open, b"/a/b?authz=Bearer%20tok&x=1".to_vec()).expect("open");
    assert_eq!(r.authz(), Some("Bearer%20tok"));
    assert_eq!(
        tessera_auth::authz_token(r.authz().unwrap()).as_deref(),
        Some("tok")
    );
    let r = decode(&open, b"/a?x=1&authz=tok2\0".to_vec()).expect("open");
    assert_eq!(r.authz(), Some("tok2"));
    let r = decode(&open, b"/a?xauthz=tok".to_vec()).expect("open");
    assert_eq!(r.authz(), None);
    let mv = header(req::MV);
    let r = decode(&mv, b"/a /b?authz=t3".to_vec()).expect("mv");
    assert_eq!(r.authz(), Some("t3"));
}
