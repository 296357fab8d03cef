//! The hot rollouts: those changed recently keep their parsed lines (an append to one costs
//! only itself), within a bound on their number and on the bytes they hold together.

use super::LiveStore;
use super::rollout::LiveRollout;
use crate::store::RolloutLocation;

/// How many rollouts are kept hot (parsed lines held, so an append costs only itself), and
/// how many bytes they may hold together ([`LiveRollout::resident_bytes`]): whichever bound
/// comes first.
pub const HOT_ROLLOUTS: usize = 64;
/// See [`HOT_ROLLOUTS`].
pub const HOT_BYTES: usize = 160 << 20;

impl LiveStore {
    /// Rollout `location` just changed or is looked at: keep it hot, cooling the least
    /// recently changed beyond [`HOT_ROLLOUTS`] / [`HOT_BYTES`] (never one looked at).
    pub(super) fn warm(&mut self, location: &RolloutLocation) {
        if let Some(at) = self.hot.iter().position(|(l, _)| l == location) {
            self.hot.remove(at);
        }
        let bytes = self
            .rollouts
            .get(location)
            .map_or(0, LiveRollout::resident_bytes);
        self.hot.push_back((location.clone(), bytes));
        let mut held: usize = self.hot.iter().map(|(_, bytes)| bytes).sum();
        let mut at = 0;
        while (self.hot.len() > HOT_ROLLOUTS || held > HOT_BYTES) && at + 1 < self.hot.len() {
            if self.focus.contains(&self.hot[at].0) {
                at += 1;
                continue;
            }
            let Some((coolest, bytes)) = self.hot.remove(at) else {
                break;
            };
            held = held.saturating_sub(bytes);
            if let Some(rollout) = self.rollouts.get_mut(&coolest) {
                rollout.cool();
            }
        }
    }
    /// Memory held for the next reads by every followed rollout (see
    /// [`LiveRollout::resident_bytes`]; bounded by [`HOT_BYTES`] plus the rollouts looked at,
    /// whatever the store's size).
    pub fn resident_bytes(&self) -> usize {
        self.rollouts
            .values()
            .map(LiveRollout::resident_bytes)
            .sum()
    }
    /// Rollouts kept hot.
    pub fn hot_rollouts(&self) -> usize {
        self.hot.len()
    }
}
