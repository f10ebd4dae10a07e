//! Namespace commands, output forms, stat and the CLI on a closed pipe.

use crate::*;

#[test]
fn namespace_commands_and_output_forms() {
    let e = Env::start();
    e.ok(&["mkdir", "-p", "/a/b/c"]);
    e.ok(&["touch", "/a/file one"]);
    let names = e.ok(&["ls", "/a"]);
    assert_eq!(names, "b\nfile one\n");
    let long = e.ok(&["ls", "-l", "/a"]);
    assert!(
        long.lines().next().expect("row").starts_with("drwxr-xr-x"),
        "{long}"
    );
    assert!(long.contains("file one"), "{long}");

    let m = e.ok(&["ls", "-m", "/a"]);
    let lines: Vec<_> = m.lines().map(kv).collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["path"], "/a/b");
    assert_eq!(lines[0]["type"], "dir");
    assert_eq!(lines[1]["path"], "/a/file one");
    assert_eq!(lines[1]["size"], "0");

    let j: serde_json::Value =
        serde_json::from_str(&e.ok(&["--json", "stat", "/a/b"])).expect("json");
    assert_eq!(j["retc"], 0);
    assert_eq!(j["result"][0]["children"], 1);
    assert_eq!(j["result"][0]["mode"], "0755");

    e.ok(&["mv", "/a/file one", "/a/b/f2"]);
    e.fails(&["stat", "/a/file one"], 2);
    e.ok(&["chmod", "600", "/a/b/f2"]);
    e.ok(&["chown", "1000:1000", "/a/b/f2"]);
    let st = kv(e.ok(&["stat", "-m", "/a/b/f2"]).trim());
    assert_eq!(
        (st["mode"].as_str(), st["uid"].as_str(), st["gid"].as_str()),
        ("0600", "1000", "1000")
    );

    // errno exit codes
    e.fails(&["rmdir", "/a"], 39); // ENOTEMPTY
    e.fails(&["mkdir", "/a"], 17); // EEXIST
    e.fails(&["mkdir", "/x/y"], 2); // ENOENT
    e.fails(&["rmdir", "/a/b/f2"], 20); // ENOTDIR
    e.fails(&["mv", "/a", "/a/b/c/a"], 22); // EINVAL
    e.fails(&["chmod", "99", "/a"], 22);
    e.fails(&["no-such-command"], 22);
    let json_err = e.run(&["--json", "stat", "/missing"]);
    assert_eq!(json_err.status.code(), Some(2));
    let j: serde_json::Value = serde_json::from_slice(&json_err.stdout).expect("json");
    assert_eq!(j["retc"], 2);
    assert!(j["errormsg"].as_str().expect("msg").contains("/missing"));

    // roles act as another identity, with mode bits enforced
    e.fails(&["-r", "1000:1000", "mkdir", "/a/x"], 13);
    e.ok(&["chmod", "777", "/a"]);
    e.ok(&["-r", "1000:1000", "mkdir", "/a/x"]);
    let st = kv(e.ok(&["stat", "-m", "/a/x"]).trim());
    assert_eq!(st["uid"], "1000");

    // attributes
    e.ok(&["attr", "set", "sys.forced.layout=raid6", "/a"]);
    e.ok(&["attr", "set", "user.note=hello world", "/a"]);
    assert_eq!(
        e.ok(&["attr", "get", "sys.forced.layout", "/a"]).trim(),
        "sys.forced.layout=raid6"
    );
    let attrs: Vec<_> = e.ok(&["attr", "ls", "-m", "/a"]).lines().map(kv).collect();
    assert_eq!(attrs.len(), 2);
    assert_eq!(attrs[1]["value"], "hello world");
    e.fails(&["-r", "1000:1000", "attr", "set", "sys.acl=x", "/a/x"], 13);
    e.ok(&["mkdir", "/a/inherits"]);
    assert_eq!(
        e.ok(&["attr", "get", "sys.forced.layout", "/a/inherits"])
            .trim(),
        "sys.forced.layout=raid6"
    );
    e.ok(&["attr", "rm", "user.note", "/a"]);
    e.fails(&["attr", "get", "user.note", "/a"], 2);

    // recursive remove
    let r = kv(e.ok(&["rm", "-m", "-r", "/a"]).trim());
    assert_eq!((r["files"].as_str(), r["directories"].as_str()), ("1", "5"));
    // What the dev mode makes for development tokens stays.
    assert_eq!(e.ok(&["ls", "/"]), "data\n");
    let check = kv(e.ok(&["ns", "check", "-m"]).trim());
    assert_eq!(check["problems"], "0");
}

/// `stat` shows where a file's stripes are (EOS's `file info`), and a
/// drain moves them.
#[test]
fn stat_shows_the_layout_and_the_stripes() {
    let e = Env::start();
    e.ok(&["mkdir", "/r"]);
    e.ok(&["attr", "set", "sys.forced.layout=raid6", "/r"]);
    e.ok(&["attr", "set", "sys.forced.nstripes=6", "/r"]);
    let core = e.server.as_ref().expect("running").core().expect("core");
    let root = tessera_types::Identity::root("test");
    let path = tessera_types::NsPath::parse("/r/f").expect("path");
    let mut w = core
        .open_write(&root, &path, 0o644, false, 0)
        .expect("open");
    w.write(&vec![7u8; 3_000_000]).expect("write");
    w.close().expect("close");
    let st = kv(e.ok(&["stat", "-m", "/r/f"]).trim());
    assert_eq!(st["layout"], "rain:4+2");
    assert_eq!(st["blocksize"], "1048576");
    let fsids: Vec<&str> = st["stripes"].split(',').collect();
    assert_eq!(fsids.len(), 6, "{st:?}");
    let mut distinct = fsids.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), 6, "one stripe per failure domain: {st:?}");
    let human = e.ok(&["stat", "/r/f"]);
    assert!(
        human.contains(&format!(
            "Layout: rain:4+2  Block: 1 MiB  Stripes on fs: {}",
            fsids.join(" ")
        )),
        "{human}"
    );
    // Directories and plain files show what they have.
    assert_eq!(kv(e.ok(&["stat", "-m", "/r"]).trim())["layout"], "");
    // Draining the filesystem of stripe 0 needs a seventh failure domain
    // (no two stripes share one): refused without it, done with it.
    let first = fsids[0].to_string();
    let o = e.run(&["fs", "drain", "-m", &first]);
    assert_eq!(o.status.code(), Some(5));
    let lines: Vec<_> = String::from_utf8_lossy(&o.stdout).lines().map(kv).collect();
    assert_eq!(lines[0]["failed"], "1", "{lines:?}");
    assert!(
        lines[1]["failure"].contains("failure domain"),
        "the reason is given: {lines:?}"
    );
    let seventh = e._dir.path().join("fs7");
    e.ok(&[
        "fs",
        "add",
        "--create",
        "--label",
        "fs7",
        "--domain",
        "d7",
        &format!("folder:{}", seventh.display()),
    ]);
    e.ok(&["fs", "drain", &first]);
    let after = kv(e.ok(&["stat", "-m", "/r/f"]).trim());
    assert!(
        !after["stripes"].split(',').any(|f| f == first),
        "{after:?}"
    );
}

/// `tessera ls / | head -2`: a reader that goes away ends the listing
/// quietly (status 141, as coreutils under pipefail), never a panic.
#[test]
fn a_closed_pipe_ends_the_output_quietly() {
    let e = Env::start();
    e.ok(&["mkdir", "/many"]);
    let core = e.server.as_ref().expect("running").core().expect("core");
    let root = tessera_types::Identity::root("test");
    // More than a pipe holds (64 KiB), so a write meets the closed end.
    for i in 0..1200 {
        let name = format!("/many/{i:04}-{}", "x".repeat(60));
        let path = tessera_types::NsPath::parse(&name).expect("path");
        core.open_write(&root, &path, 0o644, false, 0)
            .and_then(|w| w.close())
            .expect("create");
    }
    let mut child = Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args(["--admin", &e.admin, "--token-file"])
        .arg(&e.token)
        .args(["ls", "/many"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    drop(child.stdout.take());
    let out = child.wait_with_output().expect("wait");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(141), "{err}");
    assert!(err.is_empty(), "quiet: {err}");
}
