use anyhow::Context;
use aro_gitops::cli::{Cli, Command, ControlPlaneCommand, LogFormat, ServeArgs};
use aro_gitops::controlplane::{self, ControlPlane};
use clap::Parser;

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
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    init_tracing(&cli);
    match cli.command {
        Command::ControlPlane(ControlPlaneCommand::Serve(args)) => serve(args).await,
    }
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
