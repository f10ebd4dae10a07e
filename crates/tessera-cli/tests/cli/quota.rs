//! Quotas (admin and user views), the admin credential and the audit log.

use crate::*;

#[test]
fn quota_commands() {
    let e = Env::start();
    e.ok(&["mkdir", "-p", "/a/b"]);
    e.ok(&["touch", "/a/b/f"]);
    e.ok(&argv(
        "quota set --path /a --uid 1000 --max-bytes 10G --max-inodes 1000",
    ));
    e.ok(&argv("quota set --path /a --project --max-inodes 3"));
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
    let show = e.ok(&argv("quota show -m --path /a/b --uid 1000 --gid 1000"));
    assert!(show.lines().all(|l| kv(l)["space"] == "/a"), "{show}");
    e.ok(&["quota", "rm", "--path", "/a", "--project"]);
    e.ok(&["touch", "/a/b/h"]);
    e.fails(&["quota", "rm", "--path", "/a/b", "--uid", "1"], 2);
    e.ok(&["quota", "rmnode", "--path", "/a"]);
    let nodes: Vec<_> = e.ok(&["quota", "ls", "-m"]).lines().map(kv).collect();
    assert!(nodes.iter().all(|r| r["space"] == "/"), "{nodes:?}");
    e.fails(&argv("quota set --path /a --uid 1 --max-bytes lots"), 22);
    e.fails(
        &argv("-r 5:5 quota set --path /a --uid 1 --max-bytes 1"),
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
    e.ok(&argv("quota set --path /a --project --max-inodes 9"));
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
    let o = user(&argv("quota show --path /a --uid 1001 --gid 1001"));
    assert_eq!(
        o.status.code(),
        Some(13),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let o = user(&argv("quota set --path /a --uid 1000 --max-bytes 9G"));
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
    e.ok(&argv("quota set --path /au --uid 7 --max-bytes 1G"));
    e.ok(&["acl", "set", "u:7:rx", "/au"]);
    e.fails(
        &argv("fs add --label x --domain dx folder:/nonexistent/tessera"),
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
