//! Desktop WebDAV clients with a real credential (issue 35, item 6): HTTP
//! Basic over TLS against the site's password file, acting as the local
//! account named there (litmus in `litmus.rs`, cadaver and davfs2 here,
//! and curl); and `[https] anonymous = "owner"` is the kernel's word,
//! not the client's: on loopback only a client running as the server's
//! own user gets its rights, everyone else reads only.

use crate::litmus::with_dev_ca;
use crate::Env;
use tessera_server::config::AnonymousCfg;

pub const PASSWORD: &str = "desk-top-pw";

/// A dev server whose anonymous clients read only, with a password file
/// naming `nobody` (and `root`, whom it never takes).
pub fn with_passwords() -> Env {
    Env::start_with(|c| {
        c.https.anonymous = AnonymousCfg::ReadOnly;
        let f = c.data_dir.with_file_name("https.passwd");
        let lines = [
            tessera_auth::passwd::line("nobody", PASSWORD).unwrap(),
            tessera_auth::passwd::line("root", PASSWORD).unwrap(),
        ];
        std::fs::write(&f, lines.join("\n")).unwrap();
        c.https.basic_passwd = Some(f);
    })
}

/// Make `dir` and give it to `nobody`.
pub fn own_dir(e: &Env, dir: &str) {
    e.rt.block_on(async {
        e.core()
            .mkdir(&Env::root(), Env::path(dir), 0o755, true)
            .await
            .expect("mkdir");
        let a = tessera_core::SetAttr {
            uid: Some(65534),
            gid: Some(65534),
            ..Default::default()
        };
        e.core()
            .setattr(&Env::root(), Env::path(dir), a)
            .await
            .expect("chown");
    });
}

fn owner_of(e: &Env, path: &str) -> Option<u32> {
    e.rt.block_on(e.core().stat(&Env::root(), Env::path(path)))
        .ok()
        .map(|i| i.uid)
}

/// (status, WWW-Authenticate headers) of a curl PUT of a small body.
fn put(e: &Env, url: &str, extra: &[&str]) -> (u16, String) {
    let hdr = e.local("put.hdr");
    let mut args = vec![
        "-sS",
        "-o",
        "/dev/null",
        "-D",
        hdr.to_str().unwrap(),
        "-w",
        "%{http_code}",
        "--cacert",
        e.ca.to_str().unwrap(),
        "-X",
        "PUT",
        "--data-binary",
        "desk top bytes",
    ];
    args.extend_from_slice(extra);
    args.push(url);
    let o = e.run("curl", &args);
    let code = String::from_utf8_lossy(&o.stdout)
        .trim()
        .parse()
        .unwrap_or(0);
    let challenges = std::fs::read_to_string(&hdr)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.to_ascii_lowercase().starts_with("www-authenticate:"))
        .collect::<Vec<_>>()
        .join("\n");
    (code, challenges)
}

#[test]
fn basic_credentials_act_as_the_local_account() {
    let e = with_passwords();
    own_dir(&e, "/desk");
    let url = |p: &str| format!("{}/desk/{p}", e.url);
    let good = format!("nobody:{PASSWORD}");
    let (code, _) = put(&e, &url("a"), &["-u", &good]);
    assert_eq!(code, 201);
    assert_eq!(owner_of(&e, "/desk/a"), Some(65534), "written as nobody");
    // Without credentials: asked for them, both schemes offered.
    let (code, challenges) = put(&e, &url("b"), &[]);
    assert_eq!(code, 401, "{challenges}");
    assert!(
        challenges.contains("Basic realm=") && challenges.contains("Bearer realm="),
        "{challenges}"
    );
    // A wrong password, root's line, an account not in the file: 401.
    for who in ["nobody:wrong", &format!("root:{PASSWORD}"), "daemon:x"] {
        let (code, _) = put(&e, &url("c"), &["-u", who]);
        assert_eq!(code, 401, "{who}");
    }
    assert_eq!(owner_of(&e, "/desk/b"), None);
    assert_eq!(owner_of(&e, "/desk/c"), None);
}

#[test]
fn owner_mode_believes_the_kernel_not_the_client() {
    // The test Env's default: [https] anonymous = "owner".
    let e = Env::start();
    e.rt.block_on(e.core().mkdir(&Env::root(), Env::path("/own"), 0o777, true))
        .unwrap();
    let url = format!("{}/own/f", e.url);
    // This test runs as the server's user: its curl is the owner.
    let (code, _) = put(&e, &url, &[]);
    assert!((200..300).contains(&code), "{code}");
    // The same request from a process running as nobody: read-only
    // anonymous, whatever it claims (0777 directory and all).
    let as_nobody = |args: &[&str]| {
        let o = std::process::Command::new("setpriv")
            .args([
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                "curl",
                "-sS",
                "-k",
            ])
            .args(["-o", "/dev/null", "-w", "%{http_code}"])
            .args(args)
            .output()
            .expect("setpriv");
        String::from_utf8_lossy(&o.stdout).trim().to_string()
    };
    let other = format!("{}/own/by-nobody", e.url);
    assert_eq!(
        as_nobody(&["-X", "PUT", "--data-binary", "x", &other]),
        "401"
    );
    assert_eq!(owner_of(&e, "/own/by-nobody"), None);
    assert_eq!(as_nobody(&[&url]), "200", "reads stay open");
}

#[test]
fn cadaver_writes_with_basic_credentials() {
    let e = with_passwords();
    own_dir(&e, "/desk");
    let local = e.file("cadaver-up.txt", b"written by cadaver\n");
    let back = e.local("cadaver-back.txt");
    std::fs::write(
        e.local(".netrc"),
        format!("machine localhost login nobody password {PASSWORD}\n"),
    )
    .unwrap();
    let commands = format!(
        "put {} up.txt\nls\nget up.txt {}\nquit\n",
        local.display(),
        back.display()
    );
    std::fs::write(e.local("cadaver.in"), commands).unwrap();
    let o = with_dev_ca(
        &e,
        &format!(
            "exec cadaver '{}/desk/' < '{}'",
            e.url,
            e.local("cadaver.in").display()
        ),
    )
    .output()
    .expect("cadaver (scripts/test installs it)");
    let out = crate::common::all_output(&o);
    assert_eq!(owner_of(&e, "/desk/up.txt"), Some(65534), "{out}");
    assert_eq!(
        std::fs::read(&back).unwrap_or_default(),
        b"written by cadaver\n",
        "{out}"
    );
}

/// A file copied into the mount, read back through it, a directory made;
/// no listing through the mount: davfs2 1.6.1's own FUSE readdir answers
/// EINVAL on this kernel whatever the server (rclone's WebDAV server
/// too), so the core lists.
#[test]
fn davfs2_mounts_and_writes_with_basic_credentials() {
    let e = with_passwords();
    own_dir(&e, "/desk");
    let mnt = e.local("mnt");
    std::fs::create_dir_all(&mnt).unwrap();
    let secrets = e.file(
        "davfs2.secrets",
        format!("{} nobody {PASSWORD}\n", mnt.display()),
    );
    std::fs::set_permissions(
        &secrets,
        std::os::unix::fs::PermissionsExt::from_mode(0o600),
    )
    .unwrap();
    let conf = e.local("davfs2.conf");
    // The dev CA is trusted through the namespace's system bundle
    // (`with_dev_ca`): mount.davfs reads certificate files after it gave
    // up root, and the test's directory is root's alone.
    std::fs::write(
        &conf,
        format!(
            "use_locks 0\ndelay_upload 0\nask_auth 0\nsecrets {}\n",
            secrets.display()
        ),
    )
    .unwrap();
    let src = e.file("dav-src.txt", b"written through davfs2\n");
    let o = with_dev_ca(
        &e,
        &format!(
            "mount -t davfs -o conf={conf} '{url}/desk/' {mnt} && cp {src} {mnt}/dav.txt && \
             mkdir {mnt}/sub && cmp {src} {mnt}/dav.txt; r=$?; umount {mnt}; exit $r",
            conf = conf.display(),
            url = e.url,
            mnt = mnt.display(),
            src = src.display()
        ),
    )
    .output()
    .expect("mount.davfs (scripts/test installs davfs2)");
    let out = crate::common::all_output(&o);
    assert!(o.status.success(), "{out}");
    // umount returns before mount.davfs has uploaded what it caches.
    let start = std::time::Instant::now();
    while owner_of(&e, "/desk/dav.txt").is_none() && start.elapsed().as_secs() < 30 {
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    assert_eq!(owner_of(&e, "/desk/dav.txt"), Some(65534), "{out}");
    assert_eq!(owner_of(&e, "/desk/sub"), Some(65534), "{out}");
}
