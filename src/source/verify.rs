//! Verifying a fetched revision's signatures before it is checked out (`--verify-signatures`):
//! the IO side of [`super::signature`].

use super::signature;
use super::{Source, SourceError};
use git2::{Oid, Repository};

impl Source {
    /// With `--verify-signatures`: refuses `commit` unless it (and with `all` every commit since
    /// the last good revision) is signed by a trusted key; remembers the result for the metrics.
    pub(super) fn verify_revision(
        &mut self,
        repo: &Repository,
        commit: Oid,
    ) -> Result<(), SourceError> {
        let Some(verification) = self.verification.clone() else {
            return Ok(());
        };
        let tip = commit.to_string();
        let git_error = self.remote.git_error(&tip, "read the commits' signatures");
        // A local repository's revision may be in the mirror without its history: read it there.
        let local = self
            .local
            .as_ref()
            .and_then(|p| Repository::open(p).ok())
            .filter(|r| r.find_commit(commit).is_ok());
        let repo = local.as_ref().unwrap_or(repo);
        let applied = self
            .last_good
            .as_ref()
            .and_then(|r| Oid::from_str(&r.commit).ok());
        let oids = signature::commits::to_check(repo, commit, verification.mode, applied)
            .map_err(&git_error)?;
        let commits = oids
            .iter()
            .map(|oid| signature::commits::read(repo, *oid))
            .collect::<Result<Vec<_>, _>>()
            .map_err(&git_error)?;
        let (_, result) = signature::judge(&tip, &commits, &verification.trust);
        self.verification_result = Some(result.clone());
        match result {
            Ok(verdict) => {
                tracing::info!(commit = %tip, checked = commits.len(), %verdict, "revision verified");
                Ok(())
            }
            Err(refusal) => Err(SourceError::Refused {
                url: self.remote.shown().to_string(),
                refusal: Box::new(refusal),
            }),
        }
    }
}
