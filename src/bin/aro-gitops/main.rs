use anyhow::Context;
use aro_gitops::agent::{self, RunConfig};
use aro_gitops::cli::{
    Cli, Command, ControlPlaneCommand, DriftArgs, LogFormat, PlanArgs, PlanFormat, RolloutCommand,
    RolloutResumeArgs, RunArgs, SecretsCommand,
};
use aro_gitops::output::{self, eprintln, print, println};
use aro_gitops::plan::preview;
use aro_gitops::source::{GitRef, ReportTarget};
use clap::Parser;
use std::io::IsTerminal;
use std::process::ExitCode;

mod local;
mod offline;
use local::{azure_simulator, serve};
use offline::{render, secrets_encrypt, validate};

/// mimalloc: rendering and diffing allocate many small JSON values; it is markedly faster than the
/// system allocator for that (see BENCHMARKS.md). The `system-alloc` feature leaves it out, for
/// heap profilers that watch the system allocator (heaptrack).
/// Built without transparent huge pages (`no_thp`). The long-running commands set it to give
/// freed memory back at once ([`tune_allocator`]); both measured in BENCHMARKS.md.
#[cfg(not(feature = "system-alloc"))]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// For the long-running commands (`run`, `control-plane serve`): freed memory goes back to the
/// system at once. By default mimalloc waits a second and then acts only when allocating again, so
/// an idle agent kept what its last burst freed. A one-shot command keeps the default: purging at
/// once costs a cold plan 0.4 s of 3.
#[cfg(not(feature = "system-alloc"))]
fn tune_allocator(command: &Command) {
    if !matches!(
        command,
        Command::Run(_) | Command::ControlPlane(ControlPlaneCommand::Serve(_))
    ) {
        return;
    }
    // `mi_option_purge_delay`, the 16th of mimalloc's `mi_option_t` (mimalloc.h, v2 and v3).
    const PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;
    // SAFETY: sets an option mimalloc reads on each purge; any value is valid.
    unsafe { libmimalloc_sys::mi_option_set(PURGE_DELAY, 0) };
}

fn init_tracing(cli: &Cli) {
    let filter = tracing_subscriber::EnvFilter::try_new(&cli.logging.log)
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    // Every log line is redacted on its way to stderr, and coloured only on a terminal.
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(output::stderr_colors())
        .with_writer(output::LogWriter);
    match cli.logging.log_format {
        LogFormat::Json => builder.json().init(),
        LogFormat::Text => builder.init(),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    #[cfg(not(feature = "system-alloc"))]
    tune_allocator(&cli.command);
    init_tracing(&cli);
    let result = match cli.command {
        // Rendering starts no runtime: a render per process costs its start-up (BENCHMARKS.md).
        Command::Render(args) => render(args),
        Command::Crds => {
            // Definitions, not user data: printed as they are.
            output::print_verbatim(&aro_gitops::yaml::to_multi_string(
                &aro_gitops::crds::preloaded(),
            ));
            Ok(ExitCode::SUCCESS)
        }
        command => match tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
        {
            Ok(runtime) => runtime.block_on(with_runtime(command)),
            Err(e) => Err(anyhow::Error::new(e).context("starting the async runtime")),
        },
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln(&format!("error: {e:#}"));
            ExitCode::FAILURE
        }
    }
}

/// The commands that run on the async runtime.
async fn with_runtime(command: Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::Run(args) => run(args).await,
        Command::Plan(args) => plan(args).await,
        Command::Drift(args) => drift(args).await,
        Command::Validate(args) => validate(args),
        Command::ControlPlane(ControlPlaneCommand::Serve(args)) => {
            serve(args).await.map(|()| ExitCode::SUCCESS)
        }
        Command::Secrets(SecretsCommand::Encrypt(args)) => secrets_encrypt(args),
        Command::Rollout(RolloutCommand::Resume(args)) => rollout_resume(args).await,
        Command::AzureSimulator(args) => azure_simulator(args).await,
        Command::Render(_) | Command::Crds => unreachable!("run without the runtime"),
    }
}

/// `--commit-status` and its flags, the token read once at start.
fn commit_status(
    args: &RunArgs,
) -> anyhow::Result<Option<aro_gitops::notify::commit_status::Config>> {
    use aro_gitops::cli::{CommitStatusContext, CommitStatusHost};
    use aro_gitops::notify::commit_status::{Config, Contexts, Flags, Host, Token};
    let Some(host) = args.commit_status else {
        return Ok(None);
    };
    let flags = Flags {
        host: match host {
            CommitStatusHost::Github => Host::GitHub,
            CommitStatusHost::Gitlab => Host::GitLab,
        },
        api: args.commit_status_api.as_deref(),
        repo: args.commit_status_repo.as_deref(),
        repo_url: &args.source.repo,
        contexts: match args.commit_status_context {
            CommitStatusContext::Unit => Contexts::Unit,
            CommitStatusContext::Fleet => Contexts::Fleet,
        },
        page: args.status_page_url.as_deref(),
    };
    let token = Token::load(args.commit_status_token_file.as_deref())?;
    Ok(Some(Config::new(flags, token)?))
}

/// `--verify-signatures[=all]` with `--trusted-keys FILE`, read once at start.
fn verification(
    mode: Option<&str>,
    trusted_keys: Option<&std::path::Path>,
) -> anyhow::Result<Option<std::sync::Arc<aro_gitops::source::signature::Verification>>> {
    use aro_gitops::source::signature::{Mode, TrustStore, Verification};
    let (Some(mode), Some(file)) = (mode, trusted_keys) else {
        return Ok(None);
    };
    let mode: Mode = mode
        .parse()
        .map_err(|e| anyhow::anyhow!("--verify-signatures: {e}"))?;
    let trust = TrustStore::load(file)?;
    Ok(Some(std::sync::Arc::new(Verification { mode, trust })))
}

async fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    let once = args.once;
    let reference: GitRef = args.source.reference.parse().context("--ref")?;
    let commit_status = commit_status(&args)?;
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
        fleet: args.source.fleet_naming(),
        repo: args.source.repo,
        reference,
        state_dir: args.source.state,
        kubeconfig: args.source.kubeconfig,
        in_cluster: args.source.in_cluster,
        once,
        timeout: args.timeout,
        sim_delay: args.sim_delay,
        interval: args.interval,
        report_target,
        progress_bars: std::io::stderr().is_terminal(),
        safety: safety(&args.safety),
        self_heal: args.self_heal,
        drift_interval: args.drift_interval,
        concurrency: usize::from(args.concurrency),
        metrics_bind_address: args.metrics_bind_address,
        status_bind_address: args.status_bind_address,
        health_probe_bind_address: args.health_probe_bind_address,
        webhook_bind_address: args.webhook_bind_address,
        webhook_secret: match args.webhook_bind_address {
            Some(_) => {
                aro_gitops::trigger::webhook::Secret::load(args.webhook_secret_file.as_deref())?
            }
            None => None,
        },
        shard: agent::Shard::new(args.shard_index, args.shard_count)?,
        faults: args.faults.config(),
        verify_signatures: verification(
            args.verify_signatures.as_deref(),
            args.trusted_keys.as_deref(),
        )?,
        decryption: aro_gitops::decrypt::keys::KeySource::from_flags(
            args.source.decryption_key_file.as_deref(),
            args.decryption_secret.as_deref(),
        ),
        use_azure_simulator: args.source.use_azure_simulator,
        commit_status,
        clock: args
            .rollout_clock
            .map(aro_gitops::rollout::Clock::starting_at)
            .unwrap_or_default(),
    };
    let lifecycle = agent::Lifecycle {
        shutdown: watch_signals().context("watching for SIGTERM and SIGINT")?,
        shutdown_timeout: args.shutdown_timeout,
        leader_election: leader_election(&args.leader_election, config.shard)?,
    };
    let summary = agent::run_with(config, lifecycle).await?;
    println("");
    print(&aro_gitops::report::summary_table(&summary.outcomes, None));
    println(&format!(
        "requests to the cluster: {} reads, {} writes",
        summary.reads, summary.writes
    ));
    if let Some(azure) = &summary.azure_requests {
        println(&azure.summary_line());
    }
    if let Some(faults) = &summary.faults {
        println(&faults.line());
    }
    match (&summary.report_commit, &summary.report_error) {
        (_, Some(e)) => println(&format!("reports NOT committed: {e}")),
        (Some(c), None) => println(&format!("reports committed: {c}")),
        (None, None) => println("reports unchanged: nothing committed"),
    }
    if let Some(line) = summary.stale_line() {
        println(&line);
    }
    for u in &summary.timed_out {
        println(&format!("not settled before the deadline: {u}"));
    }
    if summary.shut_down {
        tracing::info!("shutdown complete");
        // A `--once` run stopped before its work was done did not do its job; a long-running
        // one asked to stop did.
        return Ok(
            if summary.report_error.is_some() || (once && summary.cut_short()) {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            },
        );
    }
    Ok(if summary.failed() {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// The first SIGTERM or SIGINT asks the run to shut down (it stops taking work, lets the passes in
/// flight end, publishes, releases its Lease); a second one exits at once with 130.
fn watch_signals() -> std::io::Result<agent::Shutdown> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    let (trigger, shutdown) = agent::Shutdown::channel();
    tokio::spawn(async move {
        let name = tokio::select! {
            _ = term.recv() => "SIGTERM",
            _ = int.recv() => "SIGINT",
        };
        tracing::info!(
            signal = name,
            "shutting down: no new work, waiting for the passes in flight (a second signal exits at once)"
        );
        trigger.ask();
        let name = tokio::select! {
            _ = term.recv() => "SIGTERM",
            _ = int.recv() => "SIGINT",
        };
        tracing::warn!(signal = name, "second signal: exiting at once");
        std::process::exit(130);
    });
    Ok(shutdown)
}

/// `--leader-elect` and its settings, checked; each shard has a Lease of its own.
fn leader_election(
    args: &aro_gitops::cli::LeaderElectionArgs,
    shard: agent::Shard,
) -> anyhow::Result<Option<agent::leader::LeaderElection>> {
    if !args.leader_elect {
        return Ok(None);
    }
    let timings = agent::leader::Timings {
        lease_duration: args.leader_election_lease_duration,
        renew_deadline: args.leader_election_renew_deadline,
        retry_period: args.leader_election_retry_period,
    };
    timings.check().context("--leader-election-*")?;
    Ok(Some(agent::leader::LeaderElection {
        namespace: args.leader_election_namespace.clone(),
        name: agent::shard::lease_name(&args.leader_election_id, shard),
        identity: agent::leader::default_identity(),
        timings,
    }))
}

fn safety(args: &aro_gitops::cli::SafetyArgs) -> agent::Safety {
    agent::Safety {
        allow_deletion: args.allow_deletion,
        max_delete_share: args.max_delete_share,
        allow_empty_render: args.allow_empty_render,
    }
}

async fn plan(args: PlanArgs) -> anyhow::Result<ExitCode> {
    let head = args.head.as_deref().unwrap_or(&args.source.reference);
    let head: GitRef = head.parse().context("--head")?;
    let base = match &args.base {
        Some(b) => Some(b.parse::<GitRef>().context("--base")?),
        None => None,
    };
    let _decryption = decryption_key_file(&args.source)?;
    let request = agent::PlanRequest {
        fleet: args.source.fleet_naming(),
        repo: args.source.repo,
        head,
        base,
        state_dir: args.source.state,
        kubeconfig: args.source.kubeconfig,
        in_cluster: args.source.in_cluster,
        safety: safety(&args.safety),
        use_azure_simulator: args.source.use_azure_simulator,
        verify_signatures: verification(
            args.verify_signatures.as_deref(),
            args.trusted_keys.as_deref(),
        )?,
    };
    let preview = match agent::plan(request).await {
        Ok(p) => p.preview,
        Err(e) => {
            eprintln(&format!("error: {e}"));
            return Ok(ExitCode::FAILURE);
        }
    };
    let out = match args.output {
        PlanFormat::Markdown => preview::markdown(&preview),
        PlanFormat::Json => preview::json(&preview),
        PlanFormat::Text => {
            let color = match args.color.as_str() {
                "always" => true,
                "never" => false,
                _ => output::stdout_colors(),
            };
            preview::text(&preview, color)
        }
    };
    print(&out);
    // As `terraform plan -detailed-exitcode`: 0 no changes, 2 changes, 1 error.
    Ok(ExitCode::from(preview.exit_code()))
}

async fn drift(args: DriftArgs) -> anyhow::Result<ExitCode> {
    let reference: GitRef = args.source.reference.parse().context("--ref")?;
    let target =
        agent::LiveTarget::select(args.source.kubeconfig.as_deref(), args.source.in_cluster)?;
    let _decryption = decryption_key_file(&args.source)?;
    let report = match agent::drift(
        &args.source.repo,
        reference,
        &args.source.fleet_naming(),
        &args.source.state,
        &target,
        args.source.use_azure_simulator,
    )
    .await
    {
        Ok(r) => r,
        Err(e) => {
            eprintln(&format!("error: {e}"));
            return Ok(ExitCode::FAILURE);
        }
    };
    if args.output == "json" {
        println(&serde_json::to_string_pretty(&report)?);
    } else {
        print(&report.text());
    }
    Ok(ExitCode::from(report.exit_code()))
}

/// `rollout resume --revision SHA`: one line on success; exit 1 with the reason otherwise.
async fn rollout_resume(args: RolloutResumeArgs) -> anyhow::Result<ExitCode> {
    let reference: GitRef = args.source.reference.parse().context("--ref")?;
    let target =
        agent::LiveTarget::select(args.source.kubeconfig.as_deref(), args.source.in_cluster)?;
    let resumed = agent::resume_rollout(
        &args.source.repo,
        reference,
        &args.source.fleet_naming(),
        &args.source.state,
        &target,
        &args.revision,
    )
    .await?;
    println(&agent::resumed_line(&resumed));
    Ok(ExitCode::SUCCESS)
}

/// With `--decryption-key-file`: its identities, decrypting the checkouts under the state
/// directory while the registration lives.
fn decryption_key_file(
    source: &aro_gitops::cli::SourceArgs,
) -> anyhow::Result<Option<aro_gitops::decrypt::Registration>> {
    let Some(path) = &source.decryption_key_file else {
        return Ok(None);
    };
    let keyring = aro_gitops::decrypt::keys::from_file(path)?;
    std::fs::create_dir_all(&source.state)
        .with_context(|| format!("state directory {}", source.state.display()))?;
    Ok(Some(aro_gitops::decrypt::register(
        &source.state,
        aro_gitops::decrypt::Decryption::Keys(keyring),
    )))
}
