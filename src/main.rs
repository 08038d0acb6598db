use anyhow::{Context, bail};
use aro_gitops::agent::{self, RunConfig};
use aro_gitops::cli::{
    Cli, Command, ControlPlaneCommand, LogFormat, PlanArgs, RenderArgs, RunArgs, ServeArgs,
    ValidateArgs,
};
use aro_gitops::controlplane::{self, ControlPlane};
use aro_gitops::source::{GitRef, ReportTarget};
use clap::Parser;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// mimalloc: rendering and diffing allocate many small JSON values; it is markedly faster than the
/// system allocator for that (see BENCHMARKS.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn init_tracing(cli: &Cli) {
    let filter = tracing_subscriber::EnvFilter::try_new(&cli.logging.log)
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match cli.logging.log_format {
        LogFormat::Json => builder.json().init(),
        LogFormat::Text => builder.init(),
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    init_tracing(&cli);
    let result = match cli.command {
        Command::Run(args) => run(args).await,
        Command::Plan(args) => plan(args).await,
        Command::Render(args) => render(args),
        Command::Validate(args) => validate(args),
        Command::ControlPlane(ControlPlaneCommand::Serve(args)) => {
            serve(args).await.map(|()| ExitCode::SUCCESS)
        }
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    let reference: GitRef = args.source.reference.parse().context("--ref")?;
    let report_target = match args.report_path {
        Some(prefix) => {
            let branch = match &reference {
                GitRef::Branch(b) => b.clone(),
                _ => "main".to_string(),
            };
            ReportTarget::SourceBranch { branch, prefix }
        }
        None => ReportTarget::StatusBranch {
            branch: args.report_branch,
        },
    };
    let config = RunConfig {
        repo: args.source.repo,
        reference,
        state_dir: args.source.state,
        kubeconfig: args.source.kubeconfig,
        once: args.once,
        timeout: args.timeout,
        sim_delay: args.sim_delay,
        interval: args.interval,
        report_target,
        progress_bars: std::io::stderr().is_terminal(),
    };
    let summary = agent::run(config).await?;
    println!();
    print!(
        "{}",
        aro_gitops::report::summary_table(&summary.outcomes, None)
    );
    println!(
        "requests to the cluster: {} reads, {} writes",
        summary.reads, summary.writes
    );
    match (&summary.report_commit, &summary.report_error) {
        (_, Some(e)) => println!("reports NOT committed: {e}"),
        (Some(c), None) => println!("reports committed: {c}"),
        (None, None) => println!("reports unchanged: nothing committed"),
    }
    for o in &summary.outcomes {
        if let Some(stale) = &o.stale_source {
            println!(
                "warning: {}: the source was unreachable, the last good revision was used: {stale}",
                o.unit
            );
            break;
        }
    }
    for u in &summary.timed_out {
        println!("not settled before the deadline: {u}");
    }
    Ok(if summary.failed() {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

async fn plan(args: PlanArgs) -> anyhow::Result<ExitCode> {
    let reference: GitRef = args.source.reference.parse().context("--ref")?;
    let out = agent::plan(
        &args.source.repo,
        reference,
        &args.source.state,
        args.source.kubeconfig.as_deref(),
    )
    .await?;
    println!("plan of {} against {}", out.commit, out.against);
    for u in &out.units {
        println!("\n== {}: {}", u.unit, u.summary);
        for d in u.diffs.iter().filter(|d| !d.diff.is_empty()) {
            print!("{}", d.diff);
        }
        for e in &u.errors {
            println!("error: {}", e.message);
        }
    }
    // As `terraform plan -detailed-exitcode`: 0 no changes, 2 changes, 1 error.
    Ok(if out.has_errors() {
        ExitCode::FAILURE
    } else if out.has_changes() {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    })
}

/// The enclosing git work tree of `path`, else the current directory.
fn default_root(path: &Path) -> anyhow::Result<PathBuf> {
    let abs =
        std::fs::canonicalize(path).with_context(|| format!("{}: not found", path.display()))?;
    let mut dir = Some(abs.as_path());
    while let Some(d) = dir {
        if d.join(".git").exists() {
            return Ok(d.to_path_buf());
        }
        dir = d.parent();
    }
    Ok(std::env::current_dir()?)
}

fn render(args: RenderArgs) -> anyhow::Result<ExitCode> {
    let root = match args.root {
        Some(r) => r,
        None => default_root(&args.dir)?,
    };
    let dir = std::fs::canonicalize(&args.dir)
        .with_context(|| format!("{}: not found", args.dir.display()))?;
    let objects = aro_gitops::render::render(&root, &dir)?;
    let docs: Vec<serde_json::Value> = objects.into_iter().map(|o| o.object).collect();
    print!("{}", aro_gitops::yaml::to_multi_string(&docs));
    Ok(ExitCode::SUCCESS)
}

fn validate(args: ValidateArgs) -> anyhow::Result<ExitCode> {
    let root = match args.root {
        Some(r) => r,
        None => default_root(&args.path)?,
    };
    let path = std::fs::canonicalize(&args.path)
        .with_context(|| format!("{}: not found", args.path.display()))?;
    let root = std::fs::canonicalize(root)?;
    let units = match aro_gitops::unit::discover(&path) {
        Ok(units) => units
            .into_iter()
            .map(|u| aro_gitops::unit::Unit {
                path: path.join(u.path),
            })
            .collect(),
        Err(_) => vec![aro_gitops::unit::Unit { path: path.clone() }],
    };
    let mut failed = false;
    for unit in units {
        let rel = unit
            .path
            .strip_prefix(&root)
            .unwrap_or(&unit.path)
            .to_path_buf();
        let unit = aro_gitops::unit::Unit { path: rel };
        match aro_gitops::agent::prepare::prepare(&root, &unit) {
            Ok(p) => println!(
                "{}: ok ({} objects, {} embedded)",
                unit.name(),
                p.objects.iter().filter(|o| o.embedded_in.is_none()).count(),
                p.objects.iter().filter(|o| o.embedded_in.is_some()).count()
            ),
            Err(errors) => {
                failed = true;
                for e in errors {
                    println!("{}: {}", unit.name(), e.message);
                }
            }
        }
    }
    if failed {
        bail!("validation failed");
    }
    Ok(ExitCode::SUCCESS)
}

async fn serve(args: ServeArgs) -> anyhow::Result<()> {
    let mut config = controlplane::Config::new(&args.state);
    config.preload_crds = !args.no_preload_crds;
    let state = args.state.clone();
    let cp = tokio::task::spawn_blocking(move || ControlPlane::open(config))
        .await?
        .with_context(|| format!("opening the control plane state in {}", state.display()))?;
    let handle = cp.spawn(args.listen, args.allow_non_loopback).await?;
    let kubeconfig = args
        .kubeconfig
        .unwrap_or_else(|| args.state.join("kubeconfig"));
    controlplane::kubeconfig::write(&kubeconfig, &handle.url())?;
    println!("aro-gitops local control plane serving at {}", handle.url());
    println!("kubeconfig: {}", kubeconfig.display());
    println!(
        "try: kubectl --kubeconfig {} get crds",
        kubeconfig.display()
    );
    tokio::signal::ctrl_c()
        .await
        .context("waiting for Ctrl-C")?;
    drop(handle);
    Ok(())
}
