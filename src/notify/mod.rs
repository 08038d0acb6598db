//! Telling the outside where a push landed, beyond the reports on the status branch: commit
//! statuses on GitHub or GitLab ([`commit_status`]). What each status says is decided from the
//! run's outcomes without IO; posting is a background task the agent never waits on.

pub mod commit_status;
