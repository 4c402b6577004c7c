//! vegas: TCP/Vegas's congestion avoidance mechanism (CAM) as seed 002 §2 ("TCP-Vegas")
//! studies it, the userspace twin of agents/kernel/bpf/vegas.bpf.c (same parameters; traced
//! state diff, base_rtt_us, round_min_rtt_us: the kernel's diff_x256 once scaled).
//!
//! BaseRTT is the smallest RTT the connection has seen. Once per round trip, with RTT the
//! smallest sample of that round (seed 002 notes Vegas filters its samples; Linux's Vegas and
//! the BPF version take the round's minimum):
//!     Diff = (Expected - Actual) * BaseRTT = cwnd (1 - BaseRTT / RTT)    packets queued
//! In congestion avoidance the window grows by one packet per RTT when Diff < alpha, shrinks by
//! one when Diff > beta, and is held in between (seed 002: alpha = 1, beta = 3). In slow start
//! the window doubles only every other round trip (seed 002, as its ns Vegas), and slow start
//! ends when Diff > gamma, the window trimmed to what the path holds plus one. Rounds with fewer
//! than three RTT samples fall back to Reno's growth, as the BPF and Linux versions do. Loss
//! recovery: Reno's (seed 002 uses Vegas over Reno's retransmission machinery).

use crate::params::Params;
use crate::window::{acked_packets, micros, Rounds, Window, MIN_CWND_AFTER_DECREASE};
use crate::{Ack, Config, ConfigError, CongestionEvent, Controller, Recovery, Sent, Time};

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct VegasParams {
    /// Packets.
    pub alpha: f64,
    pub beta: f64,
    pub gamma: f64,
}

impl VegasParams {
    pub fn from_config(config: &Config) -> Result<VegasParams, ConfigError> {
        let mut p = Params::new("vegas", config);
        // Seed 002 §2: alpha = 1, beta = 3 packets; gamma = 1 as in Vegas's slow start.
        let alpha = p.integer("alpha", 1, 0, 100)?;
        let beta = p.integer("beta", 3, 0, 100)?;
        let gamma = p.integer("gamma", 1, 0, 100)?;
        p.finish()?;
        Ok(VegasParams {
            alpha: alpha as f64,
            beta: beta as f64,
            gamma: gamma as f64,
        })
    }
}

pub struct Vegas {
    params: VegasParams,
    window: Window,
    rounds: Rounds,
    /// Lifetime minimum RTT, seconds.
    base_rtt: f64,
    /// Minimum RTT of the current round.
    round_min_rtt: f64,
    /// The minimum of the last round that ended (traced).
    last_round_min_rtt: f64,
    samples: u32,
    /// Slow start grows in this round (every other one).
    doubling: bool,
    /// The last Diff, packets.
    diff: f64,
}

impl Vegas {
    pub fn new(config: &Config) -> Result<Vegas, ConfigError> {
        Ok(Vegas::with_params(VegasParams::from_config(config)?))
    }

    pub fn with_params(params: VegasParams) -> Vegas {
        Vegas {
            params,
            window: Window::new(),
            rounds: Rounds::default(),
            base_rtt: f64::INFINITY,
            round_min_rtt: f64::INFINITY,
            last_round_min_rtt: 0.0,
            samples: 0,
            doubling: true,
            diff: 0.0,
        }
    }

    pub fn diff(&self) -> f64 {
        self.diff
    }

    fn end_round(&mut self) {
        self.last_round_min_rtt = self.round_min_rtt;
        self.round_min_rtt = f64::INFINITY;
        self.samples = 0;
    }

    /// CAM's once-per-RTT decision.
    fn decide(&mut self) {
        let rtt = self.round_min_rtt;
        let w = &mut self.window;
        self.diff = w.cwnd * (rtt - self.base_rtt) / rtt;
        if w.in_slow_start() {
            if self.diff > self.params.gamma {
                // Leave slow start at the window the path holds without queueing, plus one.
                let target = (w.cwnd * self.base_rtt / rtt).floor();
                w.cwnd = w.cwnd.min(target + 1.0);
                w.ssthresh = w.ssthresh.min(w.cwnd - 1.0);
            }
            self.doubling = !self.doubling;
        } else if self.diff > self.params.beta {
            w.cwnd -= 1.0;
            w.ssthresh = w.ssthresh.min(w.cwnd - 1.0);
        } else if self.diff < self.params.alpha {
            w.cwnd += 1.0;
        }
        w.cwnd = w.cwnd.max(MIN_CWND_AFTER_DECREASE);
        w.clamp();
        w.ssthresh = w.ssthresh.max(MIN_CWND_AFTER_DECREASE);
    }
}

impl Controller for Vegas {
    fn id(&self) -> &'static str {
        "vegas"
    }

    fn recovery(&self) -> Recovery {
        Recovery::Reno
    }

    fn set_initial_window(&mut self, packets: f64) {
        self.window.set_initial(packets);
    }

    fn set_max_window(&mut self, packets: f64) {
        self.window.set_max(packets);
    }

    fn on_sent(&mut self, sent: &Sent) {
        self.rounds.on_sent(sent);
    }

    fn on_ack(&mut self, ack: &Ack) {
        if let Some(rtt) = ack.rtt {
            let rtt = rtt.as_secs_f64();
            self.base_rtt = self.base_rtt.min(rtt);
            self.round_min_rtt = self.round_min_rtt.min(rtt);
            self.samples += 1;
        }
        if ack.in_recovery {
            return;
        }
        let acked = acked_packets(ack);
        if !self.rounds.ended(ack) {
            if self.window.in_slow_start() && self.doubling {
                self.window.slow_start(acked);
            }
            return;
        }
        if self.samples <= 2 {
            self.window.reno_grow(acked);
        } else {
            self.decide();
        }
        self.end_round();
    }

    fn on_congestion_event(&mut self, _event: &CongestionEvent) {
        self.window.halve();
    }

    fn on_timeout(&mut self, _now: Time) {
        self.window.timeout(0.5);
    }

    fn cwnd(&self) -> f64 {
        self.window.cwnd
    }

    fn ssthresh(&self) -> f64 {
        self.window.ssthresh
    }

    fn pacing_rate(&self) -> Option<f64> {
        None
    }

    fn state_names(&self) -> &'static [&'static str] {
        &["diff", "base_rtt_us", "round_min_rtt_us"]
    }

    fn state_values(&self, out: &mut [f64]) {
        let finite = |v: f64| if v.is_finite() { v } else { 0.0 };
        out[0] = self.diff;
        out[1] = micros(finite(self.base_rtt));
        out[2] = micros(finite(self.last_round_min_rtt));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::config;

    #[test]
    fn parameters_are_checked() {
        let err = Vegas::new(&config(&[("beta", 2.5)])).err().unwrap();
        assert!(
            err.0.starts_with("params.beta:") && err.0.contains("integer"),
            "{err}"
        );
        let err = Vegas::new(&config(&[("alpha", 101.0)])).err().unwrap();
        assert!(err.0.starts_with("params.alpha:"), "{err}");
        assert!(Vegas::new(&config(&[("alpha", 2.0), ("beta", 4.0)])).is_ok());
    }
}
