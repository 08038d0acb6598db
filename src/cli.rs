//! The command line: clap definitions only; `main.rs` dispatches.

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, Parser)]
#[command(
    name = "aro-gitops",
    version,
    about = "GitOps reconciliation agent for ARO HCP clusters"
)]
pub struct Cli {
    #[command(flatten)]
    pub logging: LogArgs,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Args)]
pub struct LogArgs {
    /// Log format on stderr.
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    /// Log filter (tracing-subscriber EnvFilter syntax), e.g. `info,aro_gitops=debug`.
    #[arg(long, global = true, env = "ARO_GITOPS_LOG", default_value = "info")]
    pub log: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

// Parsed once per process: the size of `run`'s arguments does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Reconcile the clusters a git repository defines: render, plan, apply, report.
    Run(RunArgs),
    /// Preview what a change would do, per cluster: for a pull request (`--base`/`--head`), or for
    /// the current revision against live state. Exit code as `terraform plan -detailed-exitcode`:
    /// 0 no changes, 2 changes, 1 error.
    Plan(PlanArgs),
    /// Compare live state with the revision last applied: list the fields that drifted and the
    /// field managers that changed them. Changes nothing. Exit code 0 no drift, 2 drift, 1 error.
    Drift(DriftArgs),
    /// Render one folder (or file) to multi-document YAML on stdout, like `kustomize build`.
    Render(RenderArgs),
    /// Render and validate the units under a path (a repository, or one unit's folder).
    Validate(ValidateArgs),
    /// The local control plane: a Kubernetes-compatible API server with a durable store.
    #[command(subcommand, name = "control-plane")]
    ControlPlane(ControlPlaneCommand),
    /// Secrets kept in git as SOPS files (age).
    #[command(subcommand)]
    Secrets(SecretsCommand),
    /// Fleet rollouts (the repository's `rollout:` settings): steer a rollout in progress.
    #[command(subcommand)]
    Rollout(RolloutCommand),
    /// Run the Azure simulator against any API server (a real kube-apiserver, or `control-plane
    /// serve`) until SIGTERM or SIGINT: it plays ASO and the ARO service there, serves simulated
    /// Entra ID / Key Vault / IMDS endpoints on loopback, and publishes where they are
    /// (ConfigMap and Lease aro-gitops-system/aro-gitops-azure-simulator) for agents run with
    /// --use-azure-simulator. Nothing is created in Azure. Needs the project's CRDs
    /// (`aro-gitops crds`).
    #[command(name = "azure-simulator")]
    AzureSimulator(AzureSimulatorArgs),
    /// Print every CustomResourceDefinition the project's kinds need (Cluster API, CAPZ's ARO
    /// kinds and AzureClusterIdentity, AutoNodePolicy, ASO's kinds, the Azure simulator's
    /// inventory) as multi-document YAML. Install them with
    /// `aro-gitops crds | kubectl apply --server-side -f -` (server-side apply: large CRDs do not
    /// fit the annotation a client-side apply keeps).
    Crds,
}

#[derive(Debug, Args)]
pub struct AzureSimulatorArgs {
    /// The API server to play Azure on (its current context).
    #[arg(long)]
    pub kubeconfig: PathBuf,
    /// The provisioning delay per resource (as `run`'s).
    #[arg(long, default_value = "1s", value_parser = humantime::parse_duration)]
    pub sim_delay: Duration,
}

/// Where the desired state comes from and where live state is.
#[derive(Debug, Args)]
pub struct SourceArgs {
    /// Git URL (https, ssh, git, file) or a local path; a plain folder becomes a local bare origin.
    #[arg(long)]
    pub repo: String,
    /// Branch, tag or commit (`branch:x`, `tag:v1`, `commit:<sha>`, or a name), or any revision
    /// `git rev-parse` reads (`HEAD~1`, a short id, `origin/main`, `refs/pull/1/merge`), read in a
    /// local repository itself; default: the remote HEAD (a local repository's HEAD).
    #[arg(long = "ref", default_value = "")]
    pub reference: String,
    /// The cluster to work on (its current context); without it or --in-cluster the embedded
    /// local control plane is used (Azure simulated).
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// Work on the cluster this process runs in, through its pod's service account (what kube
    /// reads: KUBERNETES_SERVICE_HOST/PORT and /var/run/secrets/kubernetes.io/serviceaccount).
    #[arg(long, conflicts_with = "kubeconfig")]
    pub in_cluster: bool,
    /// State directory: the embedded control plane, the git mirror and checkouts.
    #[arg(long, default_value = ".aro-gitops")]
    pub state: PathBuf,
    /// An age identity file (`AGE-SECRET-KEY-1...` lines) to decrypt the repository's SOPS files
    /// with, in memory. Without a key a unit with SOPS files fails (`plan --base` compares their
    /// ciphertext instead).
    #[arg(long, value_name = "PATH")]
    pub decryption_key_file: Option<PathBuf>,
    /// With --kubeconfig or --in-cluster: Azure is the simulator running against that API server
    /// (`aro-gitops azure-simulator`), found through what it publishes in the cluster; Entra ID
    /// and Key Vault requests go to it, and reports say Azure is simulated. Without this flag no
    /// simulator endpoint is used. With the embedded control plane it changes nothing.
    #[arg(long)]
    pub use_azure_simulator: bool,
    /// This repository's fleet: the name written on every inventory and object the agent applies.
    /// An agent acts only on its own fleet's; others sharing the cluster are left alone. Default:
    /// the `fleet` of the repository's aro-gitops.yaml, else the repository's URL.
    #[arg(long, value_name = "NAME")]
    pub fleet: Option<String>,
    /// Take the units of the fleet NAME over: its inventories and objects become this fleet's
    /// (pruned, adopted and updated as its own). `plan` shows what it takes over.
    #[arg(long, value_name = "NAME")]
    pub take_over_fleet: Option<String>,
}

impl SourceArgs {
    /// What the flags say of fleets.
    pub fn fleet_naming(&self) -> crate::plan::ownership::scope::FleetNaming {
        crate::plan::ownership::scope::FleetNaming {
            flag: self.fleet.clone(),
            take_over: self.take_over_fleet.clone(),
        }
    }
}

#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub source: SourceArgs,
    /// Work until every unit has converged or is stuck, then print a summary and exit
    /// (non-zero if any unit failed or did not settle in time).
    #[arg(long)]
    pub once: bool,
    /// With --once: how long to wait for units to settle.
    #[arg(long, default_value = "10m", value_parser = humantime::parse_duration)]
    pub timeout: Duration,
    /// How often to fetch the repository when following it.
    #[arg(long, default_value = "30s", value_parser = humantime::parse_duration)]
    pub interval: Duration,
    /// The Azure simulator's provisioning delay per resource (embedded control plane only).
    #[arg(long, default_value = "1s", value_parser = humantime::parse_duration)]
    pub sim_delay: Duration,
    /// For tests: the rollout's clock (maintenance windows, soaks) reads this RFC 3339 instant at
    /// start and runs on from it.
    #[arg(long, hide = true, value_name = "RFC3339", value_parser = instant)]
    pub rollout_clock: Option<chrono::DateTime<chrono::Utc>>,
    /// Branch the reports are committed to (default: a dedicated status branch).
    #[arg(
        long,
        default_value = "aro-gitops/status",
        conflicts_with = "report_path"
    )]
    pub report_branch: String,
    /// Commit reports onto the source branch under this folder instead of a status branch.
    #[arg(long)]
    pub report_path: Option<PathBuf>,
    #[command(flatten)]
    pub safety: SafetyArgs,
    /// Correct drift: re-apply objects whose live state no longer matches what was applied.
    #[arg(long)]
    pub self_heal: bool,
    /// Look for drift on this schedule and write it into the reports (e.g. `10m`).
    #[arg(long, value_parser = humantime::parse_duration)]
    pub drift_interval: Option<Duration>,
    /// How many units are reconciled at once (each unit one at a time).
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..))]
    pub concurrency: u16,
    /// Serve Prometheus metrics (OpenMetrics text) on `/metrics` at this address, e.g.
    /// `127.0.0.1:8080` (port 0: any free port; the line `metrics: serving on ...` says which).
    #[arg(long)]
    pub metrics_bind_address: Option<std::net::SocketAddr>,
    /// Serve the probes `/healthz` (alive) and `/readyz` (watch caches synced) at this address,
    /// e.g. `127.0.0.1:8081` (port 0: any free port; the line `health: serving on ...` says which).
    #[arg(long)]
    pub health_probe_bind_address: Option<std::net::SocketAddr>,
    /// Serve the read-only status page at this address, e.g. `127.0.0.1:8082`: every unit and
    /// cluster with its phase and step on the dependency chain, a page per cluster with its
    /// history, live updates (port 0: any free port; the line `status page: serving on ...` says
    /// which).
    #[arg(long)]
    pub status_bind_address: Option<std::net::SocketAddr>,
    /// Receive push webhooks at this address, e.g. `0.0.0.0:9443`: `POST /hooks/github`
    /// (X-Hub-Signature-256) and `POST /hooks/gitlab` (X-Gitlab-Token); a push to the followed
    /// repository and branch fetches at once (port 0: any free port; the line
    /// `webhook: serving on ...` says which).
    #[arg(long, conflicts_with = "once")]
    pub webhook_bind_address: Option<std::net::SocketAddr>,
    /// A file holding the webhook secret (a trailing line break is ignored); else the environment
    /// variable ARO_GITOPS_WEBHOOK_SECRET. Without a secret every webhook is refused.
    #[arg(long, requires = "webhook_bind_address")]
    pub webhook_secret_file: Option<PathBuf>,
    /// Reconcile only the units of this shard (0 to --shard-count - 1): a unit belongs to the
    /// shard its path hashes to (FNV-1a 64, stable across versions and platforms).
    #[arg(long, default_value_t = 0)]
    pub shard_index: u32,
    /// How many agents share the fleet, each run with its own --shard-index.
    #[arg(long, default_value_t = 1)]
    pub shard_count: u32,
    /// On SIGTERM or SIGINT: how long the passes in flight may take to end before they are cut
    /// short (and reported as interrupted); the reports are then published and the run exits 0.
    /// A second signal exits at once.
    #[arg(long, default_value = "25s", value_parser = humantime::parse_duration)]
    pub shutdown_timeout: Duration,
    #[command(flatten)]
    pub leader_election: LeaderElectionArgs,
    #[command(flatten)]
    pub faults: FaultArgs,
    /// Apply a revision only if its commit is signed by a key of --trusted-keys (SSH or OpenPGP);
    /// `--verify-signatures=all`: every commit since the last applied revision too. A refused
    /// revision is not applied: the last verified one stays in force.
    #[arg(long, value_name = "all", num_args = 0..=1, require_equals = true, default_missing_value = "tip", requires = "trusted_keys")]
    pub verify_signatures: Option<String>,
    /// The trust file: SSH `allowed_signers` lines and ASCII-armored OpenPGP public keys.
    #[arg(long, requires = "verify_signatures")]
    pub trusted_keys: Option<PathBuf>,
    /// A Secret holding the age identities that decrypt SOPS files: `NAME` (in the agent's
    /// namespace: POD_NAMESPACE, else aro-gitops-system) or `NAMESPACE/NAME`; its data keys
    /// ending `.agekey` hold identity files (as Flux's sops-age Secret).
    #[arg(
        long,
        value_name = "[NAMESPACE/]NAME",
        conflicts_with = "decryption_key_file"
    )]
    pub decryption_secret: Option<String>,
    /// Post a commit status on each revision applied, refused or failed: `github` or `gitlab`
    /// (pending while passes run, success when converged, failure with the first error).
    #[arg(long, value_enum, value_name = "HOST")]
    pub commit_status: Option<CommitStatusHost>,
    /// A file holding the API token of --commit-status (a trailing line break is ignored); else
    /// the environment variable ARO_GITOPS_COMMIT_STATUS_TOKEN. Never a flag's value.
    #[arg(long, value_name = "PATH", requires = "commit_status")]
    pub commit_status_token_file: Option<PathBuf>,
    /// The API base of --commit-status, for enterprise hosts (default: https://api.github.com or
    /// https://gitlab.com/api/v4).
    #[arg(long, value_name = "URL", requires = "commit_status")]
    pub commit_status_api: Option<String>,
    /// The repository the statuses go to: OWNER/NAME, or a GitLab project's path or id (default:
    /// what the --repo URL names).
    #[arg(long, value_name = "OWNER/NAME", requires = "commit_status")]
    pub commit_status_repo: Option<String>,
    /// One status context per unit (`aro-gitops/<unit>`) or one for the fleet (`aro-gitops`).
    #[arg(long, value_enum, default_value_t = CommitStatusContext::Unit)]
    pub commit_status_context: CommitStatusContext,
    /// The status page's public address (e.g. `https://aro-gitops.example`): each commit status
    /// links to it (a unit's, to its cluster's page).
    #[arg(long, value_name = "URL")]
    pub status_page_url: Option<String>,
}

/// Where `--commit-status` posts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CommitStatusHost {
    Github,
    Gitlab,
}

/// `--commit-status-context`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CommitStatusContext {
    /// `aro-gitops/<unit>` per unit.
    Unit,
    /// `aro-gitops` for the whole fleet.
    Fleet,
}

/// Fault injection into the local control plane's requests, for testing the agent's resilience.
#[derive(Debug, Clone, Args)]
pub struct FaultArgs {
    /// Fail this share (0 to 1) of the local control plane's resource requests with 500, 409,
    /// 429 (Retry-After), a timeout (504) or a dropped watch; a failed write is not applied.
    /// Only on the embedded control plane (run) or `control-plane serve`.
    #[arg(long, value_name = "RATE", value_parser = share)]
    pub inject_faults: Option<f64>,
    /// The seed of the fault sequence: the same seed gives the same decisions in request order.
    #[arg(
        long,
        value_name = "N",
        default_value_t = 0,
        requires = "inject_faults"
    )]
    pub fault_seed: u64,
    /// How long a timed-out request is held before its 504, and how long a dropped watch streams.
    #[arg(long, default_value = "300ms", value_parser = humantime::parse_duration, requires = "inject_faults")]
    pub fault_delay: Duration,
}

impl FaultArgs {
    /// The faults to inject, when asked.
    pub fn config(&self) -> Option<crate::controlplane::faults::FaultConfig> {
        self.inject_faults
            .map(|rate| crate::controlplane::faults::FaultConfig {
                rate,
                seed: self.fault_seed,
                delay: self.fault_delay,
            })
    }
}

/// Two or more replicas, one leading (`--leader-elect`).
#[derive(Debug, Clone, Args)]
pub struct LeaderElectionArgs {
    /// Elect a leader through a coordination.k8s.io/v1 Lease: only the leader writes; the others
    /// stand by with warm caches and take over when its Lease expires.
    #[arg(long)]
    pub leader_elect: bool,
    /// The Lease's name.
    #[arg(long, default_value = "aro-gitops")]
    pub leader_election_id: String,
    /// The Lease's namespace: the pod's own (POD_NAMESPACE, which deploy/base sets from the
    /// downward API), else aro-gitops-system.
    #[arg(long, env = "POD_NAMESPACE", default_value = "aro-gitops-system")]
    pub leader_election_namespace: String,
    /// How long a Lease holds without a renewal before a standby may take it (whole seconds).
    #[arg(long, default_value = "15s", value_parser = humantime::parse_duration)]
    pub leader_election_lease_duration: Duration,
    /// How long the leader keeps writing without a successful renewal; it then stops and stands
    /// by (shorter than the lease duration).
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration)]
    pub leader_election_renew_deadline: Duration,
    /// How often an instance tries to acquire or renew the Lease.
    #[arg(long, default_value = "2s", value_parser = humantime::parse_duration)]
    pub leader_election_retry_period: Duration,
}

/// When objects that left git may be deleted.
#[derive(Debug, Clone, Args)]
pub struct SafetyArgs {
    /// Allow deletions that destroy Azure resources, and plans over the share guard (otherwise
    /// they need the annotation aro-gitops.dev/allow-deletion=true on the object or its cluster).
    #[arg(long)]
    pub allow_deletion: bool,
    /// The largest share (0 to 1) of a cluster's objects one plan may delete without consent.
    #[arg(long, default_value_t = 0.5, value_parser = share)]
    pub max_delete_share: f64,
    /// Let a unit that renders no objects prune what it has (otherwise it fails with "refusing to
    /// prune: the unit rendered no objects"; per unit: the annotation
    /// aro-gitops.dev/allow-empty-render=true on its inventory).
    #[arg(long, alias = "allow-empty")]
    pub allow_empty_render: bool,
}

fn share(s: &str) -> Result<f64, String> {
    let v: f64 = s.parse().map_err(|e| format!("{e}"))?;
    if (0.0..=1.0).contains(&v) {
        Ok(v)
    } else {
        Err(format!("{v} is not between 0 and 1"))
    }
}

/// An RFC 3339 instant (`2031-05-06T02:59:58Z`).
fn instant(s: &str) -> Result<chrono::DateTime<chrono::Utc>, String> {
    chrono::DateTime::parse_from_rfc3339(s)
        .map(|t| t.with_timezone(&chrono::Utc))
        .map_err(|e| format!("{s:?} is not an RFC 3339 instant (2031-05-06T02:59:58Z): {e}"))
}

/// How a plan is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PlanFormat {
    /// Colored text on a terminal, plain otherwise.
    Text,
    /// Markdown for a pull-request comment (at most 65,000 characters).
    Markdown,
    /// JSON, as `schemas/plan.schema.json` describes.
    Json,
}

#[derive(Debug, Args)]
pub struct PlanArgs {
    #[command(flatten)]
    pub source: SourceArgs,
    /// The revision the change starts from (a pull request's target; any revision `--ref` takes,
    /// e.g. `HEAD~1`). With it and no --kubeconfig or --in-cluster, head is compared with base
    /// instead of live state.
    #[arg(long)]
    pub base: Option<String>,
    /// The revision to plan (a pull request's head); default: --ref.
    #[arg(long)]
    pub head: Option<String>,
    /// Output format.
    #[arg(long, short = 'o', value_enum, default_value_t = PlanFormat::Text)]
    pub output: PlanFormat,
    /// Colors in text output: auto (on a terminal), always, never.
    #[arg(long, default_value = "auto", value_parser = ["auto", "always", "never"])]
    pub color: String,
    #[command(flatten)]
    pub safety: SafetyArgs,
    /// Verify head as `run --verify-signatures` would: a head not signed by a key of
    /// --trusted-keys previews as refused (exit code 1); `--verify-signatures=all`: every commit
    /// since --base too, when head is compared with base.
    #[arg(long, value_name = "all", num_args = 0..=1, require_equals = true, default_missing_value = "tip", requires = "trusted_keys")]
    pub verify_signatures: Option<String>,
    /// The trust file: SSH `allowed_signers` lines and ASCII-armored OpenPGP public keys.
    #[arg(long, requires = "verify_signatures")]
    pub trusted_keys: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct DriftArgs {
    #[command(flatten)]
    pub source: SourceArgs,
    /// Output format: text or json.
    #[arg(long, short = 'o', default_value = "text", value_parser = ["text", "json"])]
    pub output: String,
}

#[derive(Debug, Args)]
pub struct RenderArgs {
    /// The folder (with a kustomization, or of plain YAML files) or file to render.
    pub dir: PathBuf,
    /// The repository root nothing may be read from outside of (default: the git work tree the
    /// folder is in, else the nearest folder above it holding `clusters/` or `aro-gitops.yaml`;
    /// never the working directory). Outside any, there is none, as for `kustomize build`: bases
    /// and components may live anywhere, while each kustomization's files (patches, generator
    /// inputs, resources that are files) must be in or below its own folder.
    #[arg(long)]
    pub root: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// A repository (all its units) or one unit's folder.
    pub path: PathBuf,
    /// The repository root (default: found from the path as for `render`; outside any repository,
    /// the folder itself).
    #[arg(long)]
    pub root: Option<PathBuf>,
    /// An age identity file to decrypt SOPS files with; without it their ciphertext stands in
    /// (the rest of each object is validated).
    #[arg(long, value_name = "PATH")]
    pub decryption_key_file: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum ControlPlaneCommand {
    /// Serve the control plane on loopback and write a kubeconfig for it.
    Serve(ServeArgs),
}

#[derive(Debug, Subcommand)]
pub enum RolloutCommand {
    /// Resume the paused rollout of a revision: the units failing when it paused no longer hold
    /// it. Recorded on the fleet's rollout Lease (aro-gitops-system/aro-gitops-rollout-...),
    /// which the agent reads before each decision. Exit code 1 when no rollout of that revision
    /// is paused.
    Resume(RolloutResumeArgs),
}

#[derive(Debug, Args)]
pub struct RolloutResumeArgs {
    #[command(flatten)]
    pub source: SourceArgs,
    /// The paused revision: its commit id, or a prefix of it of at least 7 characters.
    #[arg(long, value_name = "SHA")]
    pub revision: String,
}

#[derive(Debug, Subcommand)]
pub enum SecretsCommand {
    /// Encrypt a YAML file as SOPS does (AES-256-GCM values, data key wrapped for each age
    /// recipient, MAC), to stdout or in place. Without --age, the recipients and rule come from
    /// the first matching creation rule of the nearest .sops.yaml.
    Encrypt(EncryptArgs),
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("rule").multiple(false).args([
    "encrypted_regex", "unencrypted_regex", "encrypted_suffix", "unencrypted_suffix"
])))]
pub struct EncryptArgs {
    /// The plain YAML file (one or more documents).
    pub file: PathBuf,
    /// An age recipient (age1...) to encrypt the data key for; repeatable or comma-separated.
    #[arg(long = "age", value_name = "RECIPIENT", value_delimiter = ',')]
    pub age: Vec<String>,
    /// Encrypt only the values under keys matching this regex (e.g. '^(data|stringData)$').
    #[arg(long)]
    pub encrypted_regex: Option<String>,
    /// Leave plain the values under keys matching this regex.
    #[arg(long)]
    pub unencrypted_regex: Option<String>,
    /// Encrypt only the values under keys ending with this suffix.
    #[arg(long)]
    pub encrypted_suffix: Option<String>,
    /// Leave plain the values under keys ending with this suffix (default: _unencrypted).
    #[arg(long)]
    pub unencrypted_suffix: Option<String>,
    /// Replace the file with its encrypted form instead of printing it.
    #[arg(short = 'i', long)]
    pub in_place: bool,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// State directory (created if missing); restarting on it gives back the same objects.
    #[arg(long)]
    pub state: PathBuf,
    /// Address to listen on; port 0 picks a free one.
    #[arg(long, default_value = "127.0.0.1:0")]
    pub listen: SocketAddr,
    /// Where to write the kubeconfig (default: STATE/kubeconfig).
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// Do not install the CRDs of the kinds the agent handles.
    #[arg(long)]
    pub no_preload_crds: bool,
    /// Allow listening on an address other than loopback (there is no authentication).
    #[arg(long)]
    pub allow_non_loopback: bool,
    /// How long a request body may take to arrive before the request is answered 408.
    #[arg(long, default_value = "60s", value_parser = humantime::parse_duration)]
    pub request_body_timeout: Duration,
    /// Run the Azure simulator beside the served control plane, playing ASO on its objects (as
    /// `run` does on the embedded one), so agents using the kubeconfig see Azure resources become
    /// ready. Azure is then SIMULATED: nothing is created in Azure.
    #[arg(long)]
    pub simulate_azure: bool,
    /// The Azure simulator's provisioning delay per resource (with --simulate-azure).
    #[arg(
        long,
        default_value = "1s",
        value_parser = humantime::parse_duration,
        requires = "simulate_azure"
    )]
    pub sim_delay: Duration,
    #[command(flatten)]
    pub faults: FaultArgs,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn verify_cli() {
        Cli::command().debug_assert();
    }
}
