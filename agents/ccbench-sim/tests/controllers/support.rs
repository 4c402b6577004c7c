//! Helpers for the controller tests: `config` builds a `Config`; `Watched` is a controller
//! wrapper that lets a test watch what the transport does with it (every departure, with the
//! controller's outputs at that instant) and inspect the controller after the run, without
//! changing the simulator; `check_paced_gaps` checks the departures of a paced sender.

use std::sync::{Arc, Mutex};

use ccbench_cc::{Ack, Config, CongestionEvent, Controller, Feedback, Recovery, Sent, Time};

/// A `Config` of 1000-byte packets with these parameters.
pub fn config(params: &[(&str, f64)]) -> Config {
    Config::with_params(1000, params, 0)
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

    /// Handles to read after the run (the wrapper itself moves into the simulator).
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
/// 0.9·MSS/rate after the earlier. rate: the higher of the pacing rates when the two left, as
/// the transport paces: a rate that rose since the earlier packet applies to the next one at
/// once, one that fell keeps the slot already given (`Sender::poll_send`).
/// Returns (paced gaps checked, smallest gap as a fraction of MSS/rate).
pub fn check_paced_gaps(departures: &[Departure], mss: u32) -> (usize, f64) {
    let mut checked = 0;
    let mut smallest = f64::INFINITY;
    for pair in departures.windows(2) {
        let (earlier, later) = (pair[0], pair[1]);
        let (Some(rate), Some(later_rate)) = (earlier.pacing_rate, later.pacing_rate) else {
            continue;
        };
        let rate = rate.max(later_rate);
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
