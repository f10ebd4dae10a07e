//! The real `tessera` binary against a server started in-process on port 0.

use std::process::{Command, Output};

struct Env {
    _dir: tempfile::TempDir,
    admin: String,
    token: std::path::PathBuf,
    server: Option<tessera_server::Running>,
    rt: tokio::runtime::Runtime,
}

impl Env {
    fn start() -> Env {
        let dir = tempfile::tempdir().expect("tmp");
        let rt = tokio::runtime::Runtime::new().expect("runtime");
        let (cfg, secret) = tessera_server::dev_config(dir.path()).expect("dev config");
        let server = rt
            .block_on(tessera_server::start(&cfg, secret))
            .expect("start");
        Env {
            admin: server.admin_addr.to_string(),
            token: cfg.admin.token_file.clone().expect("token"),
            server: Some(server),
            _dir: dir,
            rt,
        }
    }

    fn run(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_tessera"))
            .args(["--admin", &self.admin, "--token-file"])
            .arg(&self.token)
            .args(args)
            .env_remove("TESSERA_ADMIN")
            .env_remove("TESSERA_TOKEN_FILE")
            .output()
            .expect("run tessera")
    }

    /// Run, expect success, return stdout.
    fn ok(&self, args: &[&str]) -> String {
        let o = self.run(args);
        assert!(
            o.status.success(),
            "tessera {args:?} failed: {}\n{}",
            String::from_utf8_lossy(&o.stderr),
            String::from_utf8_lossy(&o.stdout)
        );
        String::from_utf8(o.stdout).expect("utf8")
    }

    /// Run, expect failure with this exit status (an errno).
    fn fails(&self, args: &[&str], errno: i32) -> String {
        let o = self.run(args);
        assert_eq!(
            o.status.code(),
            Some(errno),
            "tessera {args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8(o.stderr).expect("utf8")
    }
}

impl Drop for Env {
    fn drop(&mut self) {
        if let Some(s) = self.server.take() {
            let _ = self.rt.block_on(s.shutdown());
        }
    }
}

/// Parse one `-m` line into key/value pairs (handles quoted values).
fn kv(line: &str) -> std::collections::HashMap<String, String> {
    let mut out = std::collections::HashMap::new();
    let mut rest = line.trim();
    while !rest.is_empty() {
        let (k, after) = rest.split_once('=').expect("key=value");
        let (v, next) = if let Some(q) = after.strip_prefix('"') {
            let end = q.find('"').expect("closing quote");
            (q[..end].to_string(), &q[end + 1..])
        } else {
            match after.split_once(' ') {
                Some((v, n)) => (v.to_string(), n),
                None => (after.to_string(), ""),
            }
        };
        out.insert(k.to_string(), v);
        rest = next.trim_start();
    }
    out
}

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

#[test]
fn quota_commands() {
    let e = Env::start();
    e.ok(&["mkdir", "-p", "/a/b"]);
    e.ok(&["touch", "/a/b/f"]);
    e.ok(&[
        "quota",
        "set",
        "--path",
        "/a",
        "--uid",
        "1000",
        "--max-bytes",
        "10G",
        "--max-inodes",
        "1000",
    ]);
    e.ok(&[
        "quota",
        "set",
        "--path",
        "/a",
        "--project",
        "--max-inodes",
        "3",
    ]);
    let recs: Vec<_> = e.ok(&["quota", "ls", "-m", "/a"]).lines().map(kv).collect();
    let user = recs
        .iter()
        .find(|r| r.get("uid").map(String::as_str) == Some("1000"))
        .expect("uid 1000");
    assert_eq!(user["maxbytes"], "10000000000");
    assert_eq!(user["maxfiles"], "1000");
    assert_eq!(user["space"], "/a");
    let project = recs
        .iter()
        .find(|r| r["type"] == "project")
        .expect("project");
    // b and f, created by root, moved into the new node
    assert_eq!(project["usedfiles"], "2");
    assert_eq!(project["maxfiles"], "3");
    // one more inode fits, the next is refused with EDQUOT
    e.ok(&["touch", "/a/b/g"]);
    let err = e.fails(&["touch", "/a/b/h"], 122);
    assert!(err.contains("quota"), "{err}");
    let human = e.ok(&["quota", "ls", "/"]);
    assert!(human.contains("exceeded"), "{human}");
    let show = e.ok(&[
        "quota", "show", "-m", "--path", "/a/b", "--uid", "1000", "--gid", "1000",
    ]);
    assert!(show.lines().all(|l| kv(l)["space"] == "/a"), "{show}");
    e.ok(&["quota", "rm", "--path", "/a", "--project"]);
    e.ok(&["touch", "/a/b/h"]);
    e.fails(&["quota", "rm", "--path", "/a/b", "--uid", "1"], 2);
    e.ok(&["quota", "rmnode", "--path", "/a"]);
    let nodes: Vec<_> = e.ok(&["quota", "ls", "-m"]).lines().map(kv).collect();
    assert!(nodes.iter().all(|r| r["space"] == "/"), "{nodes:?}");
    e.fails(
        &[
            "quota",
            "set",
            "--path",
            "/a",
            "--uid",
            "1",
            "--max-bytes",
            "lots",
        ],
        22,
    );
    e.fails(
        &[
            "-r",
            "5:5",
            "quota",
            "set",
            "--path",
            "/a",
            "--uid",
            "1",
            "--max-bytes",
            "1",
        ],
        13,
    );
    let check = kv(e.ok(&["ns", "check", "-m"]).trim());
    assert_eq!(check["problems"], "0");
}

#[test]
fn refuses_without_the_admin_credential() {
    let e = Env::start();
    let bad = tempfile::NamedTempFile::new().expect("tmp");
    std::fs::write(bad.path(), "not-the-secret-at-all").expect("write");
    let o = Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args(["--admin", &e.admin, "--token-file"])
        .arg(bad.path())
        .args(["ls", "/"])
        .output()
        .expect("run");
    assert_eq!(o.status.code(), Some(13));
    let o = Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args(["--admin", &e.admin, "ls", "/"])
        .env_remove("TESSERA_TOKEN_FILE")
        .output()
        .expect("run");
    assert_eq!(
        o.status.code(),
        Some(22),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // unreachable server: ECONNREFUSED
    let o = Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args(["--admin", "127.0.0.1:1", "--token-file"])
        .arg(&e.token)
        .args(["ls", "/"])
        .output()
        .expect("run");
    assert_eq!(o.status.code(), Some(111));
}

#[test]
fn filesystem_and_space_commands() {
    let e = Env::start();
    let fs: Vec<_> = e.ok(&["fs", "ls", "-m"]).lines().map(kv).collect();
    assert_eq!(fs.len(), 6, "dev mode registers six folders");
    let mut domains: Vec<_> = fs.iter().map(|f| f["domain"].clone()).collect();
    domains.dedup();
    assert_eq!(domains.len(), 6);
    assert!(
        fs.iter().all(|f| f["configstatus"] == "rw"
            && f["stat.error"].is_empty()
            && f["stat.health"] == "ok"),
        "{fs:?}"
    );
    assert!(fs
        .iter()
        .all(|f| f["stat.statfs.capacity"].parse::<u64>().expect("n") > 0));
    let sp = kv(e.ok(&["space", "ls", "-m"]).trim());
    assert_eq!(
        (
            sp["name"].as_str(),
            sp["nofs"].as_str(),
            sp["domains"].as_str()
        ),
        ("default", "6", "6")
    );

    let set = kv(e.ok(&["fs", "set", "-m", "1", "--status", "ro"]).trim());
    assert_eq!(set["configstatus"], "ro");
    // The answer shows the filesystem as `fs ls` does, capacity included.
    assert_ne!(set["stat.statfs.capacity"], "0", "{set:?}");
    e.fails(&["fs", "rm", "1"], 16); // EBUSY: drain or set off first
    e.fails(&["fs", "set", "1", "--status", "sideways"], 22);
    e.ok(&["fs", "set", "1", "--status", "off"]);
    e.ok(&["fs", "rm", "1"]);
    assert_eq!(e.ok(&["fs", "ls", "-m"]).lines().count(), 5);
    e.fails(
        &[
            "fs",
            "add",
            "--label",
            "x",
            "--domain",
            "d",
            "relative/path",
        ],
        22,
    );
    let extra = e._dir.path().join("extra");
    let add = |label: &str, path: &std::path::Path, create: bool| {
        let loc = format!("folder:{}", path.display());
        let mut a = vec!["fs", "add", "-m", "--label", label, "--domain", "other"];
        if create {
            a.push("--create");
        }
        a.push(&loc);
        e.run(&a)
    };
    // A path that does not exist is not made on whatever disk holds its
    // parent, unless asked to.
    assert_eq!(add("extra", &extra, false).status.code(), Some(22));
    assert!(!extra.exists());
    let o = add("extra", &extra, true);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let added = kv(String::from_utf8_lossy(&o.stdout).trim());
    assert_eq!(
        (added["id"].as_str(), added["configstatus"].as_str()),
        ("7", "rw")
    );
    // The same storage under another label, or by another path: refused.
    let link = e._dir.path().join("link-to-extra");
    std::os::unix::fs::symlink(&extra, &link).unwrap();
    for (label, path) in [("again", &extra), ("by-link", &link)] {
        let o = add(label, path, true);
        assert_eq!(
            o.status.code(),
            Some(17),
            "{label}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(String::from_utf8_lossy(&o.stderr).contains("already registered as filesystem 7"));
    }
    // A removed filesystem's id is never handed out again.
    e.ok(&["fs", "set", "7", "--status", "off"]);
    e.ok(&["fs", "rm", "7"]);
    let readded = kv(String::from_utf8_lossy(&add("extra", &extra, false).stdout).trim());
    assert_eq!(readded["id"], "8", "its marker is kept: no --create needed");
    e.fails(
        &[
            "fs",
            "add",
            "--label",
            "extra",
            "--domain",
            "d",
            &format!("folder:{}", extra.display()),
        ],
        17,
    );
    e.fails(&["-r", "1000:1000", "fs", "set", "2", "--status", "ro"], 13);
    let human = e.ok(&["fs", "ls"]);
    assert!(
        human.contains("extra") && human.contains("capacity"),
        "{human}"
    );
}

#[test]
fn fsck_and_drain_commands() {
    let e = Env::start();
    let tags: std::collections::HashMap<String, String> = e
        .ok(&["fsck", "report", "-m", "--deep"])
        .lines()
        .map(kv)
        .map(|r| (r["tag"].clone(), r["count"].clone()))
        .collect();
    assert_eq!(tags["orphans_n"], "0");
    assert_eq!(tags["rep_missing_n"], "0");
    // A stripe file no namespace entry references is an orphan.
    let fs1 = e._dir.path().join("fs/fs1/00000000000f");
    std::fs::create_dir_all(&fs1).expect("mkdir");
    std::fs::write(fs1.join("00000000000fffff.0"), b"stray").expect("write");
    let all: Vec<_> = e
        .ok(&["fsck", "report", "-m", "-a"])
        .lines()
        .map(kv)
        .collect();
    assert!(
        all.iter()
            .any(|r| r.get("tag").map(String::as_str) == Some("orphans_n") && r["count"] == "1"),
        "{all:?}"
    );
    assert!(
        all.iter()
            .any(|r| r.get("orphan").is_some() && r["fid"] == "1048575"),
        "{all:?}"
    );
    // A dry run by default: it says what it would remove, and keeps it.
    let stray = fs1.join("00000000000fffff.0");
    let rep = kv(e.ok(&["fsck", "repair", "-m", "--grace", "0"]).trim());
    assert_eq!(
        (rep["applied"].as_str(), rep["orphansremoved"].as_str()),
        ("false", "1")
    );
    assert!(e.ok(&["fsck", "repair"]).contains("dry run"));
    assert!(stray.exists());
    // With --apply, a stripe written just now is kept (one hour's grace).
    let rep = kv(e.ok(&["fsck", "repair", "-m", "--apply"]).trim());
    assert_eq!(
        (rep["orphansremoved"].as_str(), rep["orphanskept"].as_str()),
        ("0", "1")
    );
    assert!(stray.exists());
    e.fails(&["fsck", "repair", "--grace", "soon"], 22);
    let rep = kv(e
        .ok(&["fsck", "repair", "-m", "--apply", "--grace", "0s"])
        .trim());
    assert_eq!(
        (rep["applied"].as_str(), rep["orphansremoved"].as_str()),
        ("true", "1")
    );
    assert!(!stray.exists());
    let d = kv(e.ok(&["fs", "drain", "-m", "2"]).trim());
    assert_eq!(
        (d["emptied"].as_str(), d["stripesmoved"].as_str()),
        ("true", "0")
    );
    let fs: Vec<_> = e.ok(&["fs", "ls", "-m"]).lines().map(kv).collect();
    assert_eq!(
        fs.iter().find(|f| f["id"] == "2").expect("fs 2")["configstatus"],
        "empty"
    );
    e.ok(&["fs", "rm", "2"]);
    e.fails(&["-r", "1000:1000", "fsck", "report"], 13);
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

/// A user runs `tessera quota ls` with their own bearer token (WLCG token
/// discovery, no admin credential) and sees their own records and the
/// projects', not other users', as `eos quota ls` does.
#[test]
fn a_user_sees_their_own_quota_with_their_token() {
    let e = Env::start();
    e.ok(&["mkdir", "-p", "/a"]);
    for (who, id) in [("--uid", "1000"), ("--uid", "1001"), ("--gid", "4242")] {
        e.ok(&["quota", "set", "--path", "/a", who, id, "--max-bytes", "1G"]);
    }
    e.ok(&[
        "quota",
        "set",
        "--path",
        "/a",
        "--project",
        "--max-inodes",
        "9",
    ]);
    let token = e
        .ok(&[
            "token",
            "issue",
            "--data-dir",
            e._dir.path().to_str().unwrap(),
            "--sub",
            "alice",
            "--scope",
            "storage.read:/",
        ])
        .trim()
        .to_string();
    let user = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_tessera"))
            .args(["--admin", &e.admin])
            .args(args)
            .env_remove("TESSERA_TOKEN_FILE")
            .env("BEARER_TOKEN", &token)
            .output()
            .expect("run")
    };
    let o = user(&["quota", "ls", "-m", "/a"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let recs: Vec<_> = String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(kv)
        .collect();
    let mut seen: Vec<String> = recs
        .iter()
        .map(|r| match r["type"].as_str() {
            "project" => "project".to_string(),
            t => format!("{t}:{}", r.get("uid").or(r.get("gid")).unwrap()),
        })
        .collect();
    seen.sort();
    assert_eq!(
        seen,
        vec!["project".to_string(), "user:1000".into()],
        "{recs:?}"
    );
    // Another user's record is not theirs to see; admin calls stay closed.
    let o = user(&[
        "quota", "show", "--path", "/a", "--uid", "1001", "--gid", "1001",
    ]);
    assert_eq!(
        o.status.code(),
        Some(13),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let o = user(&[
        "quota",
        "set",
        "--path",
        "/a",
        "--uid",
        "1000",
        "--max-bytes",
        "9G",
    ]);
    assert!(!o.status.success());
    let o = user(&["ls", "/"]);
    assert!(!o.status.success(), "only the user calls take a token");
    // The admin still sees every record.
    assert_eq!(e.ok(&["quota", "ls", "-m", "/a"]).lines().count(), 4);
}

/// Every admin action leaves one JSON line in the audit log: who, what,
/// on what, and how it ended (refusals too).
#[test]
fn admin_actions_are_audited() {
    let e = Env::start();
    e.ok(&["mkdir", "/au"]);
    e.ok(&[
        "quota",
        "set",
        "--path",
        "/au",
        "--uid",
        "7",
        "--max-bytes",
        "1G",
    ]);
    e.ok(&["acl", "set", "u:7:rx", "/au"]);
    e.fails(
        &[
            "fs",
            "add",
            "--label",
            "x",
            "--domain",
            "dx",
            "folder:/nonexistent/tessera",
        ],
        22,
    );
    e.ok(&["fs", "set", "2", "--status", "ro"]);
    e.fails(&["-r", "1000:1000", "quota", "rmnode", "--path", "/au"], 13);
    e.ok(&["fsck", "repair"]);
    let log = e._dir.path().join("logs/audit.log");
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&log)
        .expect("audit log")
        .lines()
        .map(|l| serde_json::from_str(l).expect("json"))
        .collect();
    let seen: Vec<(String, String, String)> = lines
        .iter()
        .map(|v| {
            (
                v["action"].as_str().unwrap().to_string(),
                v["target"].as_str().unwrap().to_string(),
                v["result"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let want = [
        ("mkdir", "/au", "ok"),
        ("quota set", "/au", "ok"),
        ("attr set", "/au", "ok"),
        ("fs add", "folder:/nonexistent/tessera", "error"),
        ("fs set", "2", "ok"),
        ("quota rmnode", "/au", "error"),
        ("fsck repair", "/", "ok"),
    ];
    let want: Vec<(String, String, String)> = want
        .iter()
        .map(|(a, t, r)| (a.to_string(), t.to_string(), r.to_string()))
        .collect();
    assert_eq!(seen, want, "{lines:?}");
    assert!(lines[2]["args"]
        .as_str()
        .unwrap()
        .contains("sys.acl=u:7:rx"));
    assert_eq!(lines[5]["uid"], 1000, "who asked: {}", lines[5]);
    assert!(
        lines[3]["error"].as_str().unwrap().contains("not exist")
            || lines[3]["error"].as_str().unwrap().contains("No such"),
        "{}",
        lines[3]
    );
    assert_eq!(lines[0]["who"], "root");
}
