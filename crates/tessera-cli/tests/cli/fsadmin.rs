//! Filesystems, spaces, fsck and drain.

use crate::*;

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
    e.fails(&argv("fs add --label x --domain d relative/path"), 22);
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
