//! The local control plane and the Azure simulator, served on their own.

use anyhow::Context;
use aro_gitops::agent;
use aro_gitops::cli::{AzureSimulatorArgs, ServeArgs};
use aro_gitops::controlplane::{self, ControlPlane};
use aro_gitops::output::println;
use std::process::ExitCode;

pub(crate) async fn serve(args: ServeArgs) -> anyhow::Result<()> {
    let mut config = controlplane::Config::new(&args.state);
    config.preload_crds = !args.no_preload_crds;
    config.request_body_timeout = args.request_body_timeout;
    config.faults = args.faults.config();
    let state = args.state.clone();
    let cp = tokio::task::spawn_blocking(move || ControlPlane::open(config))
        .await?
        .with_context(|| format!("opening the control plane state in {}", state.display()))?;
    let handle = cp.spawn(args.listen, args.allow_non_loopback).await?;
    if args.simulate_azure {
        agent::mark_simulated(&cp)
            .await
            .context("marking the control plane's Azure as simulated")?;
    }
    let simulator = args.simulate_azure.then(|| {
        tracing::info!(
            state = %args.state.display(),
            sim_delay = ?args.sim_delay,
            "serving the local control plane with the Azure simulator beside it; Azure is SIMULATED"
        );
        agent::simulate_azure(&cp, args.sim_delay, None)
    });
    let kubeconfig = args
        .kubeconfig
        .unwrap_or_else(|| args.state.join("kubeconfig"));
    controlplane::kubeconfig::write(&kubeconfig, &handle.url())?;
    println(&format!(
        "aro-gitops local control plane serving at {}",
        handle.url()
    ));
    println(&format!("kubeconfig: {}", kubeconfig.display()));
    println(&format!(
        "try: kubectl --kubeconfig {} get crds",
        kubeconfig.display()
    ));
    if simulator.is_some() {
        println(&format!(
            "Azure is SIMULATED: the Azure simulator plays ASO on this control plane (provisioning delay {}); nothing is created in Azure",
            humantime::format_duration(args.sim_delay)
        ));
    }
    tokio::signal::ctrl_c()
        .await
        .context("waiting for Ctrl-C")?;
    if let Some(s) = simulator {
        s.abort();
    }
    drop(handle);
    if let Some(faults) = cp.faults_injected() {
        println(&faults.line());
    }
    Ok(())
}

/// `aro-gitops azure-simulator`: the simulator against the kubeconfig's API server until SIGTERM
/// or SIGINT; then it withdraws what it published and exits 0.
pub(crate) async fn azure_simulator(args: AzureSimulatorArgs) -> anyhow::Result<ExitCode> {
    use aro_gitops::azuresim::standalone::Standalone;
    use tokio::signal::unix::{SignalKind, signal};
    let path = &args.kubeconfig;
    let kubeconfig = kube::config::Kubeconfig::read_from(path)
        .with_context(|| format!("--kubeconfig {}", path.display()))?;
    let config = kube::Config::from_custom_kubeconfig(
        kubeconfig,
        &kube::config::KubeConfigOptions::default(),
    )
    .await
    .with_context(|| format!("--kubeconfig {}", path.display()))?;
    let server = config.cluster_url.to_string();
    let client = kube::Client::try_from(config)
        .with_context(|| format!("--kubeconfig {}", path.display()))?;
    let mut term = signal(SignalKind::terminate()).context("watching for SIGTERM")?;
    let mut int = signal(SignalKind::interrupt()).context("watching for SIGINT")?;
    let simulator = Standalone::start(client, args.sim_delay, &server).await?;
    println(&format!(
        "azure simulator: serving on https://{}",
        simulator.addr()
    ));
    println(&format!(
        "azure simulator: playing ASO and the ARO service against the API server {server} (kubeconfig {}), \
         provisioning delay {}; endpoints published in ConfigMap {}/{} for agents run with --use-azure-simulator; \
         Azure is SIMULATED: nothing is created in Azure",
        path.display(),
        humantime::format_duration(args.sim_delay),
        aro_gitops::azure::published::NAMESPACE,
        aro_gitops::azure::published::NAME,
    ));
    let name = tokio::select! {
        _ = term.recv() => "SIGTERM",
        _ = int.recv() => "SIGINT",
    };
    tracing::info!(signal = name, "the Azure simulator is stopping");
    let requests = simulator.requests();
    simulator.stop().await;
    println(&format!(
        "azure simulator: stopped; {}",
        requests.summary_line()
    ));
    Ok(ExitCode::SUCCESS)
}
