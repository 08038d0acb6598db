//! `aro_gitops_rollout_wave` and `aro_gitops_rollout_paused`: where the rollout of the newest
//! revision stands (see [`crate::rollout`]).

use crate::rollout::RolloutView;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

#[derive(Debug, Default)]
pub(super) struct RolloutGauges {
    wave: Gauge,
    paused: Gauge,
}

impl RolloutGauges {
    pub(super) fn register(registry: &mut Registry) -> RolloutGauges {
        let gauges = RolloutGauges::default();
        registry.register(
            "aro_gitops_rollout_wave",
            "The wave in progress of the newest revision's rollout (1 for the first), 0 when none \
             is in progress or every wave is done",
            gauges.wave.clone(),
        );
        registry.register(
            "aro_gitops_rollout_paused",
            "1 while the newest revision's rollout is paused by failures, else 0",
            gauges.paused.clone(),
        );
        gauges
    }

    pub(super) fn set(&self, view: Option<&RolloutView>) {
        let (wave, paused) = values(view);
        self.wave.set(wave);
        self.paused.set(paused);
    }
}

/// The gauges' values for `view`.
fn values(view: Option<&RolloutView>) -> (i64, i64) {
    let Some(v) = view else { return (0, 0) };
    let wave = v.current.map_or(0, |i| i as i64 + 1);
    (wave, i64::from(v.paused.is_some()))
}
