//! The command line: clap definitions only; `main.rs` dispatches.

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::net::SocketAddr;
use std::path::PathBuf;

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

#[derive(Debug, Subcommand)]
pub enum Command {
    /// The local control plane: a Kubernetes-compatible API server with a durable store.
    #[command(subcommand, name = "control-plane")]
    ControlPlane(ControlPlaneCommand),
}

#[derive(Debug, Subcommand)]
pub enum ControlPlaneCommand {
    /// Serve the control plane on loopback and write a kubeconfig for it.
    Serve(ServeArgs),
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
