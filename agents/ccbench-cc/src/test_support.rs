//! Test-only helpers for the controllers' tests: `config` builds a `Config`; `Watched` is a
//! controller wrapper that lets a test watch what the harness does with it (every departure,
//! with the controller's outputs at that instant) and inspect the controller after the run,
//! without changing the harness; `check_paced_gaps` checks the departures of a paced sender.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use crate::{Ack, Config, CongestionEvent, Controller, Feedback, Recovery, Sent, Time};

/// A `Config` of 1000-byte packets with these parameters.
pub fn config(params: &[(&str, f64)]) -> Config {
    Config {
        mss: 1000,
        params: params
            .iter()
            .map(|(name, value)| (name.to_string(), *value))
            .collect::<BTreeMap<_, _>>(),
        seed: 0,
    }
}

/// One packet handed to the network, with the controller's outputs when it left.
#[derive(Clone, Copy, Debug)]
pub struct Departure {
    pub now: Time,
    pub seq: u64,
    pub pacing_rate: Option<f64>,
    pub cwnd: f64,
    pub ssthresh: f64,
}

/// The controller, its departures and its snapshots, shared with the test.
pub type Handles<C, S> = (Shared<C>, Shared<Vec<Departure>>, Shared<Vec<S>>);
pub type Shared<T> = Arc<Mutex<T>>;

/// Shares the controller with the test (`controller`) and records departures (`departures`)
/// and, after every `on_timer`, a snapshot of the controller (`snapshots`).
pub struct Watched<C: Controller, S: Send + 'static> {
    pub controller: Arc<Mutex<C>>,
    pub departures: Arc<Mutex<Vec<Departure>>>,
    pub snapshots: Arc<Mutex<Vec<S>>>,
    snapshot: fn(&C, Time) -> S,
    id: &'static str,
    recovery: Recovery,
    state_names: &'static [&'static str],
}

impl<C: Controller, S: Send + 'static> Watched<C, S> {
    pub fn new(controller: C, snapshot: fn(&C, Time) -> S) -> Self {
        Watched {
            id: controller.id(),
            recovery: controller.recovery(),
            state_names: controller.state_names(),
            controller: Arc::new(Mutex::new(controller)),
            departures: Arc::default(),
            snapshots: Arc::default(),
            snapshot,
        }
    }

    /// Handles to read after the run (the wrapper itself moves into the harness).
    pub fn handles(&self) -> Handles<C, S> {
        (
            Arc::clone(&self.controller),
            Arc::clone(&self.departures),
            Arc::clone(&self.snapshots),
        )
    }

    fn inner(&self) -> std::sync::MutexGuard<'_, C> {
        self.controller.lock().expect("controller lock")
    }
}

impl<C: Controller, S: Send + 'static> Controller for Watched<C, S> {
    fn id(&self) -> &'static str {
        self.id
    }

    fn recovery(&self) -> Recovery {
        self.recovery
    }

    fn on_sent(&mut self, sent: &Sent) {
        let departure = {
            let inner = self.inner();
            Departure {
                now: sent.now,
                seq: sent.seq,
                pacing_rate: inner.pacing_rate(),
                cwnd: inner.cwnd(),
                ssthresh: inner.ssthresh(),
            }
        };
        self.departures.lock().expect("lock").push(departure);
        self.inner().on_sent(sent);
    }

    fn on_ack(&mut self, ack: &Ack) {
        self.inner().on_ack(ack);
    }

    fn on_congestion_event(&mut self, event: &CongestionEvent) {
        self.inner().on_congestion_event(event);
    }

    fn on_timeout(&mut self, now: Time) {
        self.inner().on_timeout(now);
    }

    fn on_feedback(&mut self, now: Time, feedback: Feedback) {
        self.inner().on_feedback(now, feedback);
    }

    fn next_timer(&self) -> Option<Time> {
        self.inner().next_timer()
    }

    fn on_timer(&mut self, now: Time) {
        let snapshot = {
            let mut inner = self.inner();
            inner.on_timer(now);
            (self.snapshot)(&inner, now)
        };
        self.snapshots.lock().expect("lock").push(snapshot);
    }

    fn cwnd(&self) -> f64 {
        self.inner().cwnd()
    }

    fn ssthresh(&self) -> f64 {
        self.inner().ssthresh()
    }

    fn pacing_rate(&self) -> Option<f64> {
        self.inner().pacing_rate()
    }

    fn state_names(&self) -> &'static [&'static str] {
        self.state_names
    }

    fn state_values(&self, out: &mut [f64]) {
        self.inner().state_values(out);
    }
}

/// Checks that of two successive departures that were both paced, the later left at least
/// 0.9·MSS/rate after the earlier (rate: the pacing rate when the earlier packet left).
/// Returns (paced gaps checked, smallest gap as a fraction of MSS/rate).
pub fn check_paced_gaps(departures: &[Departure], mss: u32) -> (usize, f64) {
    let mut checked = 0;
    let mut smallest = f64::INFINITY;
    for pair in departures.windows(2) {
        let (earlier, later) = (pair[0], pair[1]);
        let (Some(rate), Some(_)) = (earlier.pacing_rate, later.pacing_rate) else {
            continue;
        };
        let interval = f64::from(mss) / rate;
        let gap = (later.now - earlier.now).as_secs_f64();
        let ratio = gap / interval;
        assert!(
            ratio >= 0.9,
            "packets {} and {} left {gap:.6} s apart at {:?}, pacing rate {rate:.0} B/s wants \
             {interval:.6} s",
            earlier.seq,
            later.seq,
            earlier.now
        );
        smallest = smallest.min(ratio);
        checked += 1;
    }
    (checked, smallest)
}

#[cfg(test)]
mod tests {
    use super::config;

    /// `CCB_STATE_FIELDS("a,b")` of agents/kernel/bpf/<id>.bpf.c, named as the reports name
    /// them (`<name>_x256` becomes `<name>`, workers/bpf_trace.py), or None without a BPF file.
    fn bpf_state_fields(id: &str) -> Option<Vec<String>> {
        let path = format!("{}/../kernel/bpf/{id}.bpf.c", env!("CARGO_MANIFEST_DIR"));
        let source = std::fs::read_to_string(path).ok()?;
        let start = source.find("CCB_STATE_FIELDS(\"")? + "CCB_STATE_FIELDS(\"".len();
        let end = start + source[start..].find('"')?;
        Some(
            source[start..end]
                .split(',')
                .filter(|name| !name.is_empty())
                .map(|name| name.trim_end_matches("_x256").to_string())
                .collect(),
        )
    }

    #[test]
    fn state_names_match_the_bpf_traces() {
        // The window-based controllers of this crate trace exactly the BPF versions' variables.
        for id in ["reno", "bfa", "aaimd", "vegas", "dual"] {
            let controller = crate::new_controller(id, &config(&[])).unwrap();
            let bpf = bpf_state_fields(id).unwrap_or_else(|| panic!("no {id}.bpf.c"));
            assert_eq!(controller.state_names(), bpf, "{id}");
        }
    }
}
