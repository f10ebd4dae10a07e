//! `tesserad`: the Tessera server.

use anyhow::Context;
use clap::{Parser, Subcommand};
use std::net::SocketAddr;
use std::path::PathBuf;
use tessera_server::config::{Config, DurabilityCfg, Role};
use tessera_server::dev::DevLayout;

#[derive(Parser)]
#[command(name = "tesserad", version, about = "Tessera storage server")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run the server.
    Serve(ServeArgs),
    /// Parse and validate a configuration file, then exit.
    CheckConfig { file: PathBuf },
    /// Print the effective configuration (defaults filled in) as TOML.
    PrintConfig {
        #[arg(long)]
        config: Option<PathBuf>,
    },
}

#[derive(clap::Args)]
struct ServeArgs {
    /// Configuration file (TOML).
    #[arg(long, short = 'c', env = "TESSERA_CONFIG", conflicts_with = "dev")]
    config: Option<PathBuf>,
    /// The embedded default: every role in one process, local folders for
    /// CephFS, a self-signed CA and an admin token under --data-dir.
    #[arg(long)]
    dev: bool,
    /// Data directory (dev mode).
    #[arg(long, required_if_eq("dev", "true"))]
    data_dir: Option<PathBuf>,
    /// Dev mode: settings (TOML, e.g. `[buffers]`, `[limits]`, `[xrootd]`)
    /// applied over the embedded default.
    #[arg(long, requires = "dev")]
    dev_config: Option<PathBuf>,
    #[arg(long, value_enum)]
    role: Option<RoleArg>,
    #[arg(long)]
    admin_addr: Option<SocketAddr>,
    #[arg(long)]
    metrics_addr: Option<SocketAddr>,
    /// XRootD listener (root:// and roots://); dev mode: 127.0.0.1:1094.
    #[arg(long)]
    xrootd_addr: Option<SocketAddr>,
    /// HTTPS/WebDAV listener; dev mode: 127.0.0.1:8443.
    #[arg(long)]
    https_addr: Option<SocketAddr>,
    /// Acknowledge changes before they reach the disk: no fsync of the
    /// namespace WAL or of sealed stripes (survives a process crash, not a
    /// power loss).
    #[arg(long)]
    buffered: bool,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum RoleArg {
    All,
    Mgm,
    Gateway,
}

fn main() -> std::process::ExitCode {
    tessera_server::alloc::limit_arenas();
    // A panicked task must not leave a half-alive daemon.
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        default_hook(info);
        eprintln!("tesserad: internal error (panic); aborting");
        std::process::abort();
    }));
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("tesserad: {e:#}");
            std::process::ExitCode::from(1)
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.cmd {
        Cmd::CheckConfig { file } => {
            let cfg = Config::load(&file)?;
            println!("{}: ok", file.display());
            if let Some(x) = cfg.x509.open().map_err(anyhow::Error::msg)? {
                let (cas, crls, grid, roles) = x.counts();
                let gsi = cfg
                    .x509
                    .gsi(&cfg.tls)
                    .map_err(anyhow::Error::msg)?
                    .is_some();
                println!(
                    "x509: {cas} CAs, {crls} CRLs, {grid} grid-mapfile lines, {roles} role-map lines; \
                     XRootD gsi {}",
                    if gsi { "offered" } else { "not offered" }
                );
            }
            Ok(())
        }
        Cmd::PrintConfig { config } => {
            let cfg = match config {
                Some(f) => Config::load(&f)?,
                None => Config::default(),
            };
            print!("{}", toml::to_string_pretty(&cfg.effective())?);
            Ok(())
        }
        Cmd::Serve(args) => serve(args),
    }
}

fn serve(args: ServeArgs) -> anyhow::Result<()> {
    let (mut cfg, secret, dev) = if args.dev {
        let dir = args.data_dir.clone().context("--dev needs --data-dir")?;
        let (mut cfg, secret) = tessera_server::dev_config(&dir)?;
        cfg.listen = tessera_server::config::Listen {
            xrootd: Some(std::net::SocketAddr::from(([127, 0, 0, 1], 1094))),
            https: Some(std::net::SocketAddr::from(([127, 0, 0, 1], 8443))),
            ..tessera_server::config::Listen::default()
        };
        if let Some(f) = &args.dev_config {
            cfg = tessera_server::overlay::overlay(&cfg, f)?;
        }
        let layout = DevLayout::new(&cfg.data_dir);
        (cfg, secret, Some(layout))
    } else {
        let file = args
            .config
            .clone()
            .context("give --config FILE or --dev --data-dir DIR")?;
        let cfg = Config::load(&file)?;
        let secret = if cfg.role == Role::Gateway {
            String::new() // a gateway has no admin API
        } else {
            let tf = cfg.admin.token_file.clone().context("admin.token_file")?;
            tessera_server::dev::read_secret(&tf)?
        };
        (cfg, secret, None)
    };
    if let Some(r) = args.role {
        cfg.role = match r {
            RoleArg::All => Role::All,
            RoleArg::Mgm => Role::Mgm,
            RoleArg::Gateway => Role::Gateway,
        };
    }
    if let Some(a) = args.admin_addr {
        cfg.listen.admin = a;
    }
    if let Some(a) = args.metrics_addr {
        cfg.listen.metrics = a;
    }
    if args.xrootd_addr.is_some() {
        cfg.listen.xrootd = args.xrootd_addr;
    }
    if args.https_addr.is_some() {
        cfg.listen.https = args.https_addr;
    }
    if args.buffered {
        cfg.meta.durability = DurabilityCfg::Buffered;
    }
    cfg.validate()?;
    init_tracing(&cfg.log.level);

    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let t0 = std::time::Instant::now();
        let running = tessera_server::start(&cfg, secret).await?;
        let boot_ms = t0.elapsed().as_secs_f64() * 1000.0;
        // One machine-readable line first (tests and scripts parse it).
        let xrootd = running
            .xrootd_addr
            .map(|a| a.to_string())
            .unwrap_or_else(|| "-".into());
        let shown = |a: std::net::SocketAddr| {
            if a.port() == 0 {
                "-".to_string()
            } else {
                a.to_string()
            }
        };
        let https = running
            .https_addr
            .map(|a| a.to_string())
            .unwrap_or_else(|| "-".into());
        println!(
            "tesserad ready admin={} metrics={} xrootd={xrootd} https={https} boot_ms={boot_ms:.1}",
            shown(running.admin_addr),
            shown(running.metrics_addr)
        );
        if let Some(l) = &dev {
            print_banner(&running, l);
        }
        use std::io::Write;
        let _ = std::io::stdout().flush();
        wait_for_stop().await;
        tracing::info!("stopping");
        running.shutdown().await?;
        println!("tesserad stopped");
        Ok::<_, anyhow::Error>(())
    })
}

fn print_banner(r: &tessera_server::Running, l: &DevLayout) {
    let cli = std::env::current_exe()
        .map(|p| p.with_file_name("tessera"))
        .ok()
        .filter(|p| p.exists())
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| "tessera".to_string());
    let tessera = cli.as_str();
    println!(
        "\nTessera dev server (all roles in one process), data in {}\n\
         \n  admin API (gRPC):  {admin}\n  metrics:           http://{m}/metrics  (also /healthz, /readyz)\n  CA certificate:    {ca}\n  admin token file:  {tok}\n\
         \nTry the admin CLI:\n  export TESSERA_ADMIN={admin} TESSERA_TOKEN_FILE={tok}\n  {tessera} mkdir -p /data/run1\n  {tessera} ls -l /\n  {tessera} quota set --path /data --uid 1000 --max-bytes 10G --max-inodes 1000\n  {tessera} quota ls /\n  curl http://{m}/metrics\n\
         \nxrdcp and xrdfs (root://, and roots:// trusting the dev CA):\n  export X509_CERT_DIR={cadir}\n  xrdcp /etc/os-release root://{x}//data/run1/os-release\n  xrdfs root://{x} ls -l /data/run1\n  xrdcp -f roots://{x}//data/run1/os-release /tmp/os-release.copy\n\
         \nBearer tokens (the dev issuer; without one, https and other unix users may only read):\n  export BEARER_TOKEN=$({tessera} token issue --data-dir {root} --sub dev-user --scope 'storage.read:/ storage.modify:/data')\n  {tessera} token inspect \"$BEARER_TOKEN\"\n  xrdcp -f /etc/os-release roots://{x}//data/mine/os-release   # ztn: the token acts as uid 1000, which owns /data\n\
         \ncurl and davix (https://, WebDAV):\n  curl --cacert {ca} -H \"Authorization: Bearer $BEARER_TOKEN\" -T /etc/os-release https://{h}/data/mine/os-release.txt\n  curl --cacert {ca} https://{h}/data/mine/os-release.txt\n  curl --cacert {ca} -X PROPFIND -H 'Depth: 1' https://{h}/data/mine/\n",
        l.root.display(),
        root = l.root.display(),
        admin = r.admin_addr,
        m = r.metrics_addr,
        ca = l.ca_pem.display(),
        tok = l.token_file.display(),
        cadir = l.ca_dir.display(),
        h = r
            .https_addr
            .map(|a| a.to_string().replace("127.0.0.1", "localhost"))
            .unwrap_or_else(|| "(off)".into()),
        x = r
            .xrootd_addr
            .map(|a| a.to_string())
            .unwrap_or_else(|| "(off)".into()),
    );
}

async fn wait_for_stop() {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = match signal(SignalKind::terminate()) {
        Ok(s) => s,
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
            return;
        }
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = tokio::signal::ctrl_c() => {}
    }
}

fn init_tracing(level: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(level));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
}
