//! Issue 35, item 10: small requests get bounded answers. A readv element
//! is at most the reference's 2 MiB (less 16): larger is refused as the
//! reference refuses it (`kXR_ArgTooLong`), so 16 KiB of readv ask for at
//! most 2 GiB, read a part at a time under the budget. An entry's dead
//! properties are at most 64 of 64 KiB together (507 beyond), so a
//! PROPFIND entry is bounded, and their bytes are charged to the owner's
//! byte quota; a directory's PROPFIND is streamed a page at a time, not
//! built in one string.

use crate::raw::{handle, Raw, ERROR, OK};
use crate::topo::{Shape, Topo, DEV_UID};
use tessera_types::Identity;

use tessera_xrdproto::req::READV as KXR_READV;

fn readv(r: &mut Raw, fh: [u8; 4], elements: &[(u32, u64)]) -> crate::raw::Reply {
    let mut list = Vec::new();
    for (len, off) in elements {
        list.extend_from_slice(&fh);
        list.extend_from_slice(&len.to_be_bytes());
        list.extend_from_slice(&off.to_be_bytes());
    }
    r.call(KXR_READV, [0u8; 16], &list)
}

#[test]
fn readv_elements_are_capped_as_the_reference_caps_them() {
    let t = Topo::start(Shape::Single);
    let dev = Identity::user(DEV_UID, DEV_UID, "dev", "test");
    t.put_as(&dev, "/atk/big", &vec![9u8; 4 << 20]);
    let mut r = Raw::login(crate::raw::addr_of(&t.xrd), None, "eve");
    let fh = handle(&r.open("/atk/big", 0x0010, 0));
    let too_long = readv(&mut r, fh, &[(8 << 20, 0)]);
    assert_eq!(
        (too_long.status, too_long.errnum()),
        (ERROR, 3002),
        "{}",
        too_long.text()
    );
    // At the cap, and 1,024 of them over the same bytes: answered (a part
    // at a time).
    let at_cap = readv(&mut r, fh, &[(2_097_136, 0)]);
    assert_eq!(at_cap.status, OK, "{}", at_cap.text());
    assert_eq!(at_cap.body.len(), 16 + 2_097_136);
}

#[test]
fn dead_properties_are_bounded_and_listings_streamed() {
    let t = Topo::start(Shape::Single);
    let tok = t.token("storage.read:/ storage.modify:/atk", &[], 600);
    let auth = format!("Authorization: Bearer {tok}");
    let f = format!("{}/atk/existing", t.https);
    let patch = |props: &str| {
        format!(
            "<?xml version=\"1.0\"?><D:propertyupdate xmlns:D=\"DAV:\" xmlns:Z=\"urn:z\">\
             <D:set><D:prop>{props}</D:prop></D:set></D:propertyupdate>"
        )
    };
    let proppatch = |body: &str| -> (u16, String) {
        let (code, out) = t.curl(&["-H", &auth, "-X", "PROPPATCH", "--data-binary", body, &f]);
        (code, String::from_utf8_lossy(&out).into_owned())
    };
    // 65 properties in one request: none is kept.
    let many: String = (0..65).map(|i| format!("<Z:p{i}>v</Z:p{i}>")).collect();
    let (code, body) = proppatch(&patch(&many));
    assert!(code == 207 && body.contains("507"), "{code} {body}");
    // Two of 40 KB: the second has no room.
    let big = "x".repeat(40_000);
    let one = |name: &str| patch(&format!("<Z:{name}>{big}</Z:{name}>"));
    let (code, body) = proppatch(&one("a"));
    assert!(code == 207 && body.contains("200 OK"));
    let (code, body) = proppatch(&one("b"));
    assert!(code == 207 && body.contains("507"));
    let attrs =
        t.rt.block_on(
            t.core()
                .xattr_list(&Topo::root(), Topo::path("/atk/existing")),
        )
        .unwrap();
    assert_eq!(
        attrs
            .iter()
            .filter(|(n, _)| n.starts_with(b"user.dav."))
            .count(),
        1
    );
    // A directory of 3,000 entries: one streamed answer, every entry in it.
    t.rt.block_on(async {
        let core = t.core();
        core.mkdir(&Topo::root(), Topo::path("/atk/many"), 0o755, false)
            .await
            .unwrap();
        for i in 0..3000 {
            core.touch(
                &Topo::root(),
                Topo::path(&format!("/atk/many/f{i:05}")),
                0o644,
            )
            .await
            .unwrap();
        }
    });
    let hdr = t.local("pf.hdr");
    let (code, xml) = t.curl(&[
        "-D",
        hdr.to_str().unwrap(),
        "-X",
        "PROPFIND",
        "-H",
        "Depth: 1",
        &format!("{}/atk/many", t.https),
    ]);
    let xml = String::from_utf8_lossy(&xml).into_owned();
    assert_eq!(code, 207);
    assert_eq!(xml.matches("<D:response>").count(), 3001);
    assert!(xml.trim_end().ends_with("</D:multistatus>"));
    let head = std::fs::read_to_string(&hdr).unwrap().to_ascii_lowercase();
    assert!(
        head.contains("transfer-encoding: chunked"),
        "streamed: {head}"
    );
    // Dead properties are the owner's bytes: a user at their byte limit
    // adds none (PROPPATCH by a user already over quota).
    t.rt.block_on(t.core().quota_set(
        &Topo::root(),
        Topo::path("/atk"),
        tessera_core::QuotaTarget::user(crate::topo::DEV_UID),
        Some(1),
        None,
    ))
    .expect("quota node");
    let (code, body) = proppatch(&patch("<Z:small>v</Z:small>"));
    assert!(
        code == 207 && body.contains("507") && body.contains("quota"),
        "{code} {body}"
    );
}
