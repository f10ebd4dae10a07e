//! `tessera`: the admin CLI, in the spirit of the `eos` command. It talks
//! only to the gRPC admin API. Human tables by default, `-m` for one
//! `key=value` record per line, `--json` for an envelope; the exit status is
//! the errno of the failure.

mod client;
mod cmd;
mod output;

use clap::{Parser, Subcommand};
use client::Failure;
use output::Format;
use std::path::PathBuf;

#[derive(Parser)]
#[command(
    name = "tessera",
    version,
    about = "Tessera admin CLI",
    propagate_version = true
)]
pub struct Cli {
    /// Admin API address, HOST:PORT; for a highly available metadata
    /// service every node's, comma-separated (the active one answers).
    #[arg(
        long,
        env = "TESSERA_ADMIN",
        global = true,
        default_value = "127.0.0.1:7094"
    )]
    admin: String,
    /// File holding the admin credential.
    #[arg(long, env = "TESSERA_TOKEN_FILE", global = true)]
    token_file: Option<PathBuf>,
    /// Act as UID:GID instead of the admin (like `eos -r`); before the command.
    #[arg(long, short = 'r')]
    role: Option<String>,
    /// Monitoring output: one `key=value` record per line.
    #[arg(short = 'm', global = true)]
    monitoring: bool,
    /// JSON output.
    #[arg(long, global = true, conflicts_with = "monitoring")]
    json: bool,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// List a directory.
    Ls(cmd::ls::LsArgs),
    /// Show one entry.
    Stat { path: String },
    /// Create a directory.
    Mkdir(cmd::ns::MkdirArgs),
    /// Create an empty file.
    Touch { path: String },
    /// Remove a file, or a tree with -r.
    Rm(cmd::ns::RmArgs),
    /// Remove an empty directory.
    Rmdir { path: String },
    /// Rename or move.
    Mv(cmd::ns::MvArgs),
    /// Change permission bits (octal).
    Chmod { mode: String, path: String },
    /// Change owner: UID[:GID].
    Chown { owner: String, path: String },
    /// Extended attributes: ls, get, set, rm.
    #[command(subcommand)]
    Attr(cmd::attr::AttrCmd),
    /// Quotas: set, rm, rmnode, ls, show.
    #[command(subcommand)]
    Quota(cmd::quota::QuotaCmd),
    /// Access rules: ban, allow, stall, redirect, limit, ls, rm.
    #[command(subcommand)]
    Access(cmd::access::AccessCmd),
    /// The balancer: start, stop, status.
    #[command(subcommand)]
    Balance(cmd::balance::BalanceCmd),
    /// The Storage Resource Report (WLCG SRR v4.2 JSON).
    Srr(cmd::srr::SrrArgs),
    /// File versions (sys.versioning): versions, restore-version,
    /// purge-versions.
    #[command(subcommand)]
    File(cmd::file::FileCmd),
    /// Recycle bins: ls, restore, purge, bins, config.
    #[command(subcommand)]
    Recycle(cmd::recycle::RecycleCmd),
    /// Filesystems: add, ls, set, rm.
    #[command(subcommand)]
    Fs(cmd::fs::FsCmd),
    /// Consistency of the stored stripes: report, repair.
    #[command(subcommand)]
    Fsck(cmd::fsck::FsckCmd),
    /// Spaces: ls.
    #[command(subcommand)]
    Space(cmd::fs::SpaceCmd),
    /// Namespace: check, stat.
    #[command(subcommand)]
    Ns(cmd::ns::NsCmd),
    /// Access control lists of a directory: ls, set, rm.
    #[command(subcommand)]
    Acl(cmd::acl::AclCmd),
    /// Bearer tokens: inspect, issue (dev issuer); local, no admin API.
    #[command(subcommand)]
    Token(cmd::token::TokenCmd),
    /// Federation: probe an endpoint (Nagios checks; no admin API), and
    /// endpoints at run time (`fed endpoint ls|add|set|rm`).
    #[command(subcommand)]
    Fed(cmd::fed::FedCmd),
    /// A line of the HTTPS password file (`[https] basic_passwd`) for a
    /// local account; the password is read from standard input. Local,
    /// no admin API.
    Passwd { name: String },
}

fn main() -> std::process::ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let usage = e.use_stderr();
            let _ = e.print();
            // Usage errors exit with EINVAL, like `eos`.
            return std::process::ExitCode::from(if usage { 22 } else { 0 });
        }
    };
    let fmt = if cli.json {
        Format::Json
    } else if cli.monitoring {
        Format::Monitoring
    } else {
        Format::Human
    };
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: {e}");
            return std::process::ExitCode::from(5);
        }
    };
    // A probe exits with its Nagios state.
    // It sends the user's own token, never the admin credential.
    if let Cmd::Fed(f @ cmd::fed::FedCmd::Probe { .. }) = &cli.cmd {
        let token = read_token(None);
        return std::process::ExitCode::from(rt.block_on(cmd::fed::run(f, fmt, token)));
    }
    match rt.block_on(run(cli, fmt)) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(f) => {
            if fmt == Format::Json {
                output::line(serde_json::json!({"retc": f.errno, "errormsg": f.msg, "result": []}));
            }
            eprintln!("error: {} (errno={})", f.msg, f.errno);
            std::process::ExitCode::from(f.errno.clamp(1, 255) as u8)
        }
    }
}

/// The credential a call presents: the admin credential (`--token-file`,
/// `TESSERA_TOKEN_FILE`), else the user's own bearer token found as WLCG
/// bearer token discovery says (`BEARER_TOKEN`, `BEARER_TOKEN_FILE`,
/// `$XDG_RUNTIME_DIR/bt_u<uid>`, `/tmp/bt_u<uid>`): enough for the calls
/// about oneself (`quota ls`, `quota show`).
fn read_token(path: Option<&PathBuf>) -> Result<String, Failure> {
    let read = |path: &std::path::Path| {
        std::fs::read_to_string(path)
            .map(|s| s.trim().to_string())
            .map_err(|e| {
                Failure::new(
                    e.raw_os_error().unwrap_or(5),
                    format!("{}: {e}", path.display()),
                )
            })
    };
    if let Some(p) = path {
        return read(p);
    }
    if let Ok(t) = std::env::var("BEARER_TOKEN") {
        if !t.trim().is_empty() {
            return Ok(t.trim().to_string());
        }
    }
    if let Ok(f) = std::env::var("BEARER_TOKEN_FILE") {
        return read(std::path::Path::new(&f));
    }
    let uid = std::fs::metadata("/proc/self")
        .map(|m| std::os::unix::fs::MetadataExt::uid(&m))
        .unwrap_or(u32::MAX);
    let mut places = Vec::new();
    if let Ok(d) = std::env::var("XDG_RUNTIME_DIR") {
        places.push(PathBuf::from(d).join(format!("bt_u{uid}")));
    }
    places.push(PathBuf::from(format!("/tmp/bt_u{uid}")));
    match places.iter().find(|p| p.is_file()) {
        Some(p) => read(p),
        None => Err(Failure::new(
            22,
            "no credential: give --token-file FILE (the admin credential) or set \
             TESSERA_TOKEN_FILE; a user's bearer token is found in BEARER_TOKEN, \
             BEARER_TOKEN_FILE or bt_u<uid> (WLCG token discovery)",
        )),
    }
}

async fn run(cli: Cli, fmt: Format) -> Result<(), Failure> {
    if let Cmd::Token(t) = cli.cmd {
        return cmd::token::run(fmt, t);
    }
    if let Cmd::Passwd { name } = &cli.cmd {
        return cmd::passwd::run(name);
    }
    let token = read_token(cli.token_file.as_ref())?;
    let mut c = client::connect(&cli.admin, token, cli.role.clone()).await?;
    match cli.cmd {
        Cmd::Ls(a) => cmd::ls::ls(&mut c, fmt, a).await,
        Cmd::Stat { path } => cmd::ns::stat(&mut c, fmt, path).await,
        Cmd::Mkdir(a) => cmd::ns::mkdir(&mut c, fmt, a).await,
        Cmd::Touch { path } => cmd::ns::touch(&mut c, fmt, path).await,
        Cmd::Rm(a) => cmd::ns::rm(&mut c, fmt, a).await,
        Cmd::Rmdir { path } => cmd::ns::rmdir(&mut c, fmt, path).await,
        Cmd::Mv(a) => cmd::ns::mv(&mut c, fmt, a).await,
        Cmd::Chmod { mode, path } => cmd::ns::chmod(&mut c, fmt, mode, path).await,
        Cmd::Chown { owner, path } => cmd::ns::chown(&mut c, fmt, owner, path).await,
        Cmd::Attr(a) => cmd::attr::run(&mut c, fmt, a).await,
        Cmd::Acl(a) => cmd::acl::run(&mut c, fmt, a).await,
        Cmd::Quota(q) => cmd::quota::run(&mut c, fmt, q).await,
        Cmd::Access(a) => cmd::access::run(&mut c, fmt, a).await,
        Cmd::Recycle(r) => cmd::recycle::run(&mut c, fmt, r).await,
        Cmd::File(f) => cmd::file::run(&mut c, fmt, f).await,
        Cmd::Balance(b) => cmd::balance::run(&mut c, fmt, b).await,
        Cmd::Srr(a) => cmd::srr::run(&mut c, a).await,
        Cmd::Ns(n) => cmd::ns::ns(&mut c, fmt, n).await,
        Cmd::Fs(f) => cmd::fs::fs(&mut c, fmt, f).await,
        Cmd::Space(s) => cmd::fs::space(&mut c, fmt, s).await,
        Cmd::Fsck(f) => cmd::fsck::fsck(&mut c, fmt, f).await,
        Cmd::Fed(cmd::fed::FedCmd::Endpoint(e)) => cmd::fed::endpoint(&mut c, fmt, e).await,
        // Run before (a probe's exit code is its Nagios state).
        Cmd::Token(_) | Cmd::Fed(_) | Cmd::Passwd { .. } => unreachable!("handled above"),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn cli_definition_is_consistent() {
        use clap::CommandFactory;
        super::Cli::command().debug_assert();
    }
}
