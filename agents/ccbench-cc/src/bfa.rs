//! bfa: TCP-BFA, Buffer Fill Avoidance (seed 000, §3), the userspace twin of
//! agents/kernel/bpf/bfa.bpf.c (same parameters, same traced state: flag, srv_us,
//! bfa_srtt_us).
//!
//! Reno (seed 000 §3: "TCP-BFA is similar to Reno"; Reno's recovery), plus a signed RTT
//! variance that tracks the drift of the RTT:
//!     srv <- alpha_srv * srv + (1 - alpha_srv) * delta,   delta = measured RTT - smoothed RTT
//! and a BFA flag with hysteresis: set when srv > sigma_on, cleared when srv <= sigma_off
//! (seed 000 §3's pseudo-code) and whenever the window drops after a timeout or a fast
//! retransmit. While the flag is set the window is held (no slow start, no additive increase).
//! One RTT sample per round trip (BSD timed one segment per window, seed 000 §3), smoothed
//! with Jacobson's gain 1/8 into BFA's own SRTT, as the BPF version does.

use crate::params::Params;
use crate::window::{acked_packets, micros, Rounds, Window};
use crate::{Ack, Config, ConfigError, CongestionEvent, Controller, Recovery, Sent, Time};

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BfaParams {
    /// Seconds.
    pub sigma_on: f64,
    /// Seconds (negative).
    pub sigma_off: f64,
    pub alpha_srv: f64,
}

impl BfaParams {
    pub fn from_config(config: &Config) -> Result<BfaParams, ConfigError> {
        let mut p = Params::new("bfa", config);
        // Seed 000 §3: sigma_on = 10 ms, sigma_off = -10 ms, alpha_srv = 1/2.
        let sigma_on = p.real("sigma_on", 0.010, 0.0, 1.0)?;
        let sigma_off = p.real("sigma_off", -0.010, -1.0, 0.0)?;
        let alpha_srv = p.real("alpha_srv", 0.5, 0.0, 255.0 / 256.0)?;
        p.finish()?;
        Ok(BfaParams {
            sigma_on,
            sigma_off,
            alpha_srv,
        })
    }
}

pub struct Bfa {
    params: BfaParams,
    window: Window,
    /// Rounds of RTT samples: one sample per round trip.
    samples: Rounds,
    /// BFA's own smoothed RTT over the per-round samples, seconds.
    srtt: Option<f64>,
    /// Signed RTT variance, seconds.
    srv: f64,
    flag: bool,
}

impl Bfa {
    pub fn new(config: &Config) -> Result<Bfa, ConfigError> {
        Ok(Bfa::with_params(BfaParams::from_config(config)?))
    }

    pub fn with_params(params: BfaParams) -> Bfa {
        Bfa {
            params,
            window: Window::new(),
            samples: Rounds::default(),
            srtt: None,
            srv: 0.0,
            flag: false,
        }
    }

    pub fn flag(&self) -> bool {
        self.flag
    }

    pub fn srv(&self) -> f64 {
        self.srv
    }

    fn rtt_sample(&mut self, rtt: f64) {
        let Some(srtt) = self.srtt else {
            self.srtt = Some(rtt);
            return;
        };
        let delta = rtt - srtt;
        let a = self.params.alpha_srv;
        self.srv = a * self.srv + (1.0 - a) * delta;
        self.srtt = Some(srtt + (rtt - srtt) / 8.0);
        // Seed 000 §3: hysteresis between sigma_off and sigma_on.
        if self.flag {
            if self.srv <= self.params.sigma_off {
                self.flag = false;
            }
        } else if self.srv > self.params.sigma_on {
            self.flag = true;
        }
    }
}

impl Controller for Bfa {
    fn id(&self) -> &'static str {
        "bfa"
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
        self.samples.on_sent(sent);
    }

    fn on_ack(&mut self, ack: &Ack) {
        if let Some(rtt) = ack.rtt {
            if self.samples.ended(ack) {
                self.rtt_sample(rtt.as_secs_f64());
            }
        }
        if !ack.in_recovery && !self.flag {
            self.window.reno_grow(acked_packets(ack));
        }
    }

    fn on_congestion_event(&mut self, _event: &CongestionEvent) {
        self.flag = false;
        self.window.halve();
    }

    fn on_timeout(&mut self, _now: Time) {
        self.flag = false;
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
        &["flag", "srv_us", "bfa_srtt_us"]
    }

    fn state_values(&self, out: &mut [f64]) {
        out[0] = f64::from(u8::from(self.flag));
        out[1] = micros(self.srv);
        out[2] = micros(self.srtt.unwrap_or(0.0));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::config;
    use std::time::Duration;

    #[test]
    fn parameters_are_checked() {
        let err = Bfa::new(&config(&[("sigma_on", -0.1)])).err().unwrap();
        assert!(err.0.starts_with("params.sigma_on:"), "{err}");
        let err = Bfa::new(&config(&[("sigma", 0.1)])).err().unwrap();
        assert!(err.0.starts_with("params.sigma:"), "{err}");
        let p = BfaParams::from_config(&config(&[("alpha_srv", 0.75)])).unwrap();
        assert_eq!(p.alpha_srv, 0.75);
    }

    fn ack(seq: u64, rtt_ms: u64, newly: &[u64]) -> Ack<'_> {
        Ack {
            now: Duration::ZERO,
            seq,
            rtt: Some(Duration::from_millis(rtt_ms)),
            newly_acked: newly,
            newly_acked_bytes: 1000 * newly.len() as u64,
            highest_acked: seq,
            in_flight: 0,
            delivered_bytes: 0,
            in_recovery: false,
            growth_packets: newly.len() as f64,
        }
    }

    /// Drives one ACK per round trip with the given RTT.
    fn round(bfa: &mut Bfa, seq: &mut u64, rtt_ms: u64) {
        bfa.on_sent(&Sent {
            now: Duration::ZERO,
            seq: *seq,
            bytes: 1000,
            in_flight: 1,
            retransmission: false,
        });
        let newly = [*seq];
        bfa.on_ack(&ack(*seq, rtt_ms, &newly));
        *seq += 1;
    }

    #[test]
    fn signed_variance_and_hysteresis_follow_the_seed() {
        let mut bfa = Bfa::new(&config(&[])).unwrap();
        let mut seq = 0;
        round(&mut bfa, &mut seq, 100); // first sample: srtt only
        assert_eq!((bfa.srv(), bfa.flag()), (0.0, false));
        round(&mut bfa, &mut seq, 140); // delta 40 ms: srv = 20 ms > 10 ms
        assert!((bfa.srv() - 0.020).abs() < 1e-12);
        assert!(bfa.flag());
        let held = bfa.cwnd();
        // srtt is now 105 ms; a steady 105 ms RTT makes srv decay but not below sigma_off:
        // the flag stays and the window is held.
        for _ in 0..10 {
            round(&mut bfa, &mut seq, 105);
            assert!(bfa.flag());
            assert_eq!(bfa.cwnd(), held);
        }
        // A sustained decrease clears it (srv <= -10 ms), and the window grows again.
        round(&mut bfa, &mut seq, 60);
        round(&mut bfa, &mut seq, 60);
        assert!(!bfa.flag(), "srv {}", bfa.srv());
        round(&mut bfa, &mut seq, 60);
        assert!(bfa.cwnd() > held);
        // A congestion event clears the flag too.
        round(&mut bfa, &mut seq, 200);
        assert!(bfa.flag());
        bfa.on_congestion_event(&CongestionEvent {
            now: Duration::ZERO,
            in_flight: 1,
            lost_sent_at: Duration::ZERO,
        });
        assert!(!bfa.flag());
    }
}
