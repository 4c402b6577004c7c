//! dual: Wang and Crowcroft's Dual as seed 002 §2 ("Dual") describes it, the userspace twin of
//! agents/kernel/bpf/dual.bpf.c (same parameters; traced state threshold_us, dmin_us, dmax_us,
//! rtt_us).
//!
//! Dmin and Dmax are the smallest and largest RTT samples over the connection's lifetime, the
//! delay threshold D = (1 - a) Dmin + a Dmax (a = 1/2). Slow start and congestion avoidance are
//! Reno's, except that every other round trip the latest RTT sample is compared with D, and
//!     if (rtt > D)  cwnd -= min(cwnd, wnd) / 8
//! (the transport advertises no receiver window, so wnd never binds). The cut
//! also lowers ssthresh to the new window, as the BPF version does, so that a cut ends slow
//! start. ss_every_other = 1 is the seed's TCP/Dual, whose slow start (like its Vegas) doubles
//! only every other round trip; 0 keeps Reno's. Dmin and Dmax are not reset after a timeout
//! (seed 002 chose not to). Loss recovery: Reno's, halving on loss.

use crate::params::Params;
use crate::window::{acked_packets, micros, Rounds, Window, MIN_CWND_AFTER_DECREASE};
use crate::{Ack, Config, ConfigError, CongestionEvent, Controller, Recovery, Sent, Time};

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DualParams {
    pub a: f64,
    pub ss_every_other: bool,
}

impl DualParams {
    pub fn from_config(config: &Config) -> Result<DualParams, ConfigError> {
        let mut p = Params::new("dual", config);
        // Seed 002 §2: a = 1/2; its TCP/Dual doubles every other RTT in slow start.
        let a = p.real("a", 0.5, 0.0, 1.0)?;
        let ss_every_other = p.flag("ss_every_other", true)?;
        p.finish()?;
        Ok(DualParams { a, ss_every_other })
    }
}

pub struct Dual {
    params: DualParams,
    window: Window,
    rounds: Rounds,
    /// Seconds; None before the first sample.
    dmin: Option<f64>,
    dmax: f64,
    /// The latest RTT sample.
    rtt: Option<f64>,
    /// This round ends with Dual's comparison (every other round).
    check: bool,
    /// Rounds ended so far and the round of the last cut (for tests and traces).
    round: u64,
    last_cut_round: Option<u64>,
    cuts: u64,
}

impl Dual {
    pub fn new(config: &Config) -> Result<Dual, ConfigError> {
        Ok(Dual::with_params(DualParams::from_config(config)?))
    }

    pub fn with_params(params: DualParams) -> Dual {
        Dual {
            params,
            window: Window::new(),
            rounds: Rounds::default(),
            dmin: None,
            dmax: 0.0,
            rtt: None,
            check: false,
            round: 0,
            last_cut_round: None,
            cuts: 0,
        }
    }

    /// D = (1 - a) Dmin + a Dmax, seconds (0 before any sample).
    pub fn threshold(&self) -> f64 {
        let dmin = self.dmin.unwrap_or(0.0);
        (1.0 - self.params.a) * dmin + self.params.a * self.dmax.max(dmin)
    }

    pub fn cuts(&self) -> u64 {
        self.cuts
    }

    /// Dual's decrease by one eighth, never below two packets.
    fn cut(&mut self) {
        let w = &mut self.window;
        w.cwnd = (w.cwnd - w.cwnd / 8.0).max(MIN_CWND_AFTER_DECREASE);
        w.ssthresh = w.ssthresh.min(w.cwnd).max(MIN_CWND_AFTER_DECREASE);
        debug_assert!(self.last_cut_round.is_none_or(|r| self.round >= r + 2));
        self.last_cut_round = Some(self.round);
        self.cuts += 1;
    }
}

impl Controller for Dual {
    fn id(&self) -> &'static str {
        "dual"
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
            // Seed 002: TCP/Dual times every packet.
            let rtt = rtt.as_secs_f64();
            self.rtt = Some(rtt);
            self.dmin = Some(self.dmin.map_or(rtt, |d| d.min(rtt)));
            self.dmax = self.dmax.max(rtt);
        }
        if ack.in_recovery {
            return;
        }
        if self.rounds.ended(ack) {
            self.round += 1;
            let check = self.check;
            self.check = !check;
            if check && self.rtt.is_some_and(|rtt| rtt > self.threshold()) {
                self.cut();
                return;
            }
        }
        if self.params.ss_every_other && self.check && self.window.in_slow_start() {
            return; // the seed's TCP/Dual: slow start grows every other round
        }
        self.window.reno_grow(acked_packets(ack));
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
        &["threshold_us", "dmin_us", "dmax_us", "rtt_us"]
    }

    fn state_values(&self, out: &mut [f64]) {
        out[0] = micros(self.threshold());
        out[1] = micros(self.dmin.unwrap_or(0.0));
        out[2] = micros(self.dmax);
        out[3] = micros(self.rtt.unwrap_or(0.0));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::config;
    use std::time::Duration;

    #[test]
    fn parameters_are_checked() {
        let err = Dual::new(&config(&[("ss_every_other", 2.0)]))
            .err()
            .unwrap();
        assert!(err.0.starts_with("params.ss_every_other:"), "{err}");
        let err = Dual::new(&config(&[("a", 1.5)])).err().unwrap();
        assert!(err.0.starts_with("params.a:"), "{err}");
        let dual = Dual::new(&config(&[("a", 0.25)])).unwrap();
        assert_eq!(dual.params.a, 0.25);
    }

    /// Drives one round trip: one packet sent, its ACK with this RTT.
    fn round(dual: &mut Dual, seq: &mut u64, rtt_ms: u64) {
        dual.on_sent(&Sent {
            now: Duration::ZERO,
            seq: *seq,
            bytes: 1000,
            in_flight: 1,
            retransmission: false,
        });
        let newly = [*seq];
        dual.on_ack(&Ack {
            now: Duration::ZERO,
            seq: *seq,
            rtt: Some(Duration::from_millis(rtt_ms)),
            newly_acked: &newly,
            newly_acked_bytes: 1000,
            highest_acked: *seq,
            in_flight: 0,
            delivered_bytes: 0,
            in_recovery: false,
            growth_packets: 1.0,
        });
        *seq += 1;
    }

    #[test]
    fn cuts_one_eighth_every_other_round_when_above_the_threshold() {
        let mut dual = Dual::new(&config(&[])).unwrap();
        dual.window.cwnd = 40.0;
        dual.window.ssthresh = 20.0;
        let mut seq = 0;
        round(&mut dual, &mut seq, 100); // round 1: no comparison
        round(&mut dual, &mut seq, 200); // round 2: D = 150 ms, rtt 200 > D: cut
        assert_eq!(dual.cuts(), 1);
        assert_eq!(dual.cwnd(), (40.0 + 1.0 / 40.0) * 7.0 / 8.0);
        assert!((dual.threshold() - 0.150).abs() < 1e-12);
        let after_cut = dual.cwnd();
        round(&mut dual, &mut seq, 200); // round 3: above, but no comparison this round
        assert_eq!(dual.cuts(), 1);
        assert!(dual.cwnd() > after_cut);
        round(&mut dual, &mut seq, 140); // round 4: below D: no cut
        assert_eq!(dual.cuts(), 1);
        round(&mut dual, &mut seq, 190); // round 5: no comparison
        round(&mut dual, &mut seq, 190); // round 6: 190 > 150: cut
        assert_eq!(dual.cuts(), 2);
    }
}
