//! aaimd: adaptive AIMD / adaptive backoff (seed 001 §III, §IV-D, §V), the userspace twin of
//! agents/kernel/bpf/aaimd.bpf.c (same parameters; traced state beta, alpha, rtt_min_us,
//! rtt_max_us: the kernel's beta_x256 and alpha_x256 once the reports scale them).
//!
//! Standard slow start and loss detection (NewReno recovery, as the kernel's), with the AIMD
//! parameters adapted at each congestion event:
//!     beta  = RTTmin / RTTmax, clamped to [0.5, beta_max]       (eq. 4; §III "[0.5, beta_max]")
//!     alpha = 2 (1 - beta) packets per RTT                      (eq. 5)
//!     cwnd  = beta * cwnd at the event.
//! RTTmin is the smallest RTT sample; RTTmax the largest *smoothed* RTT (§V: the smoothed RTT
//! filters delayed-ACK spikes; Jacobson's gain 1/8 per sample, as the kernel's srtt), faded
//! towards RTTmin after each event (eq. 9): RTTmax <- RTTmin + a (RTTmax - RTTmin). Before the
//! first event beta = 0.5 and alpha = 1 (standard TCP). A timeout computes ssthresh the same
//! way (the kernel calls ssthresh on an RTO too) and restarts from one packet.
//!
//! variant = 1: the throughput form of §V, eq. 10, beta(k+1) = beta(k) B-(k) / B+(k), clamped,
//! with B-(k) the throughput of the round trip before event k and B+(k) of the first round trip
//! whose data was all sent after it; beta(k+1) applies at event k+1. As in the BPF version the
//! minimum over j of eq. 10 is taken over the last event only, and a timeout or a second event
//! before B+ is measured cancels the update.

use crate::params::Params;
use crate::window::{acked_packets, micros, Rounds, Window};
use crate::{Ack, Config, ConfigError, CongestionEvent, Controller, Recovery, Sent, Time};

/// The lower clamp of beta: standard TCP's backoff (seed 001 §III).
pub const BETA_MIN: f64 = 0.5;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AaimdParams {
    pub beta_max: f64,
    /// a of eq. 9.
    pub rtt_max_fade: f64,
    /// 0: RTT ratio (eq. 4); 1: throughput ratio (eq. 10).
    pub variant: i64,
}

impl AaimdParams {
    pub fn from_config(config: &Config) -> Result<AaimdParams, ConfigError> {
        let mut p = Params::new("aaimd", config);
        // Seed 001 §III: beta_max = 0.8; eq. 9: a = 7/8.
        let beta_max = p.real("beta_max", 0.8, 0.5, 255.0 / 256.0)?;
        let rtt_max_fade = p.real("rtt_max_fade", 0.875, 0.0, 1.0)?;
        let variant = p.integer("variant", 0, 0, 1)?;
        p.finish()?;
        Ok(AaimdParams {
            beta_max,
            rtt_max_fade,
            variant,
        })
    }
}

/// Where the measurement of B+(k) stands (variant 1).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Measure {
    Idle,
    /// Waiting for the first ACK of data sent after the event (sequence >= this).
    Wait(u64),
    /// Measuring B+ over the current round.
    Round,
}

pub struct Aaimd {
    params: AaimdParams,
    window: Window,
    beta: f64,
    rtt_min: Option<f64>,
    /// Seconds; 0 before the first sample.
    rtt_max: f64,
    srtt: Option<f64>,
    // variant 1: throughput rounds
    rounds: Rounds,
    round_start: Time,
    round_delivered: u64,
    /// Throughput of the last completed round, bytes per second.
    rate_last: f64,
    /// B-(k).
    rate_before: f64,
    measure: Measure,
}

impl Aaimd {
    pub fn new(config: &Config) -> Result<Aaimd, ConfigError> {
        Ok(Aaimd::with_params(AaimdParams::from_config(config)?))
    }

    pub fn with_params(params: AaimdParams) -> Aaimd {
        Aaimd {
            params,
            window: Window::new(),
            beta: BETA_MIN,
            rtt_min: None,
            rtt_max: 0.0,
            srtt: None,
            rounds: Rounds::default(),
            round_start: Time::ZERO,
            round_delivered: 0,
            rate_last: 0.0,
            rate_before: 0.0,
            measure: Measure::Idle,
        }
    }

    pub fn beta(&self) -> f64 {
        self.beta
    }

    /// Eq. 5.
    pub fn alpha(&self) -> f64 {
        2.0 * (1.0 - self.beta)
    }

    fn clamp(&self, beta: f64) -> f64 {
        beta.clamp(BETA_MIN, self.params.beta_max)
    }

    /// The backoff of a congestion event or a timeout: the new beta (variant 0), the fading of
    /// RTTmax (eq. 9), and ssthresh = beta x cwnd.
    fn backoff(&mut self) -> f64 {
        let rtt_min = self.rtt_min.unwrap_or(0.0);
        if self.params.variant == 0 && rtt_min > 0.0 && self.rtt_max > 0.0 {
            self.beta = self.clamp(rtt_min / self.rtt_max); // eq. 4
        }
        if self.rtt_max > rtt_min {
            self.rtt_max = rtt_min + self.params.rtt_max_fade * (self.rtt_max - rtt_min);
            // eq. 9
        }
        self.beta
    }

    /// Variant 1: throughput rounds, on every ACK (recovery included, as pkts_acked).
    fn measure(&mut self, ack: &Ack) {
        if let Measure::Wait(seq) = self.measure {
            if ack.newly_acked.iter().any(|&s| s >= seq) {
                // Everything acknowledged from now on was sent after the backoff: B+ starts.
                self.measure = Measure::Round;
                self.rounds.restart();
                self.new_round(ack);
                return;
            }
        }
        if !self.rounds.ended(ack) {
            return;
        }
        let elapsed = (ack.now - self.round_start).as_secs_f64();
        let rate = if elapsed > 0.0 {
            (ack.delivered_bytes - self.round_delivered) as f64 / elapsed
        } else {
            0.0
        };
        if self.measure == Measure::Round {
            self.measure = Measure::Idle;
            if self.rate_before > 0.0 && rate > 0.0 {
                self.beta = self.clamp(self.beta * self.rate_before / rate); // eq. 10
            }
        }
        self.rate_last = rate;
        self.new_round(ack);
    }

    fn new_round(&mut self, ack: &Ack) {
        self.round_start = ack.now;
        self.round_delivered = ack.delivered_bytes;
    }
}

impl Controller for Aaimd {
    fn id(&self) -> &'static str {
        "aaimd"
    }

    fn recovery(&self) -> Recovery {
        Recovery::NewReno
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
        if self.params.variant == 1 {
            self.measure(ack);
        }
        if let Some(rtt) = ack.rtt {
            let rtt = rtt.as_secs_f64();
            self.rtt_min = Some(self.rtt_min.map_or(rtt, |m| m.min(rtt)));
            let srtt = self.srtt.map_or(rtt, |s| s + (rtt - s) / 8.0);
            self.srtt = Some(srtt);
            self.rtt_max = self.rtt_max.max(srtt);
        }
        if !ack.in_recovery {
            let alpha = self.alpha();
            self.window.grow(alpha, acked_packets(ack));
        }
    }

    fn on_congestion_event(&mut self, _event: &CongestionEvent) {
        if self.params.variant == 1 {
            // beta(k) was set from the previous event's throughputs; measure B+(k) next.
            self.rate_before = self.rate_last;
            self.measure = Measure::Wait(self.rounds.next_seq());
        }
        let beta = self.backoff();
        self.window.decrease(beta);
    }

    fn on_timeout(&mut self, _now: Time) {
        self.measure = Measure::Idle; // the flow slow-starts: no B+ for this event
        let beta = self.backoff();
        self.window.timeout(beta);
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
        &["beta", "alpha", "rtt_min_us", "rtt_max_us"]
    }

    fn state_values(&self, out: &mut [f64]) {
        out[0] = self.beta;
        out[1] = self.alpha();
        out[2] = micros(self.rtt_min.unwrap_or(0.0));
        out[3] = micros(self.rtt_max);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::config;

    #[test]
    fn parameters_are_checked() {
        let err = Aaimd::new(&config(&[("variant", 0.5)])).err().unwrap();
        assert!(
            err.0.contains("params.variant") && err.0.contains("integer"),
            "{err}"
        );
        let err = Aaimd::new(&config(&[("beta_max", 0.4)])).err().unwrap();
        assert!(
            err.0.contains("params.beta_max") && err.0.contains("range"),
            "{err}"
        );
        assert!(Aaimd::new(&config(&[("variant", 1.0), ("beta_max", 0.9)])).is_ok());
    }
}
