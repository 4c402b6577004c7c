//! reno: standard TCP congestion control (RFC 5681: slow start, congestion avoidance with one
//! packet per round trip, halving on a congestion event) with Reno's fast recovery: the
//! transport ends recovery at the first ACK that advances the cumulative point, so several
//! losses in one window cost several halvings or a timeout. The seeds' baseline (seed 000 §4
//! compares TCP-BFA with Reno; seed 002 §2 Vegas and Dual with Reno).
//!
//! `StandardTcp` also serves `tahoe` (tahoe.rs) and `newreno` (newreno.rs): the window rules
//! are the same, only the loss response and the recovery semantics differ. Same rules as
//! agents/kernel/bpf/reno.bpf.c (no state variables of its own).

use crate::params::Params;
use crate::window::{acked_packets, Window};
use crate::{Ack, Config, ConfigError, CongestionEvent, Controller, Recovery, Time};

pub struct StandardTcp {
    id: &'static str,
    recovery: Recovery,
    window: Window,
}

impl StandardTcp {
    /// `recovery` is Tahoe, Reno or NewReno; `id` the algorithm id it serves.
    pub fn new(
        id: &'static str,
        recovery: Recovery,
        config: &Config,
    ) -> Result<StandardTcp, ConfigError> {
        assert!(
            recovery != Recovery::None,
            "standard TCP needs a window recovery"
        );
        Params::new(id, config).finish()?; // no tunables
        Ok(StandardTcp {
            id,
            recovery,
            window: Window::new(),
        })
    }
}

pub fn new(config: &Config) -> Result<StandardTcp, ConfigError> {
    StandardTcp::new("reno", Recovery::Reno, config)
}

impl Controller for StandardTcp {
    fn id(&self) -> &'static str {
        self.id
    }

    fn recovery(&self) -> Recovery {
        self.recovery
    }

    fn set_initial_window(&mut self, packets: f64) {
        self.window.set_initial(packets);
    }

    fn set_max_window(&mut self, packets: f64) {
        self.window.set_max(packets);
    }

    fn on_ack(&mut self, ack: &Ack) {
        if !ack.in_recovery {
            self.window.reno_grow(acked_packets(ack));
        }
    }

    fn on_congestion_event(&mut self, _event: &CongestionEvent) {
        match self.recovery {
            // Tahoe (Jacobson 1988): no fast recovery, slow start from one packet.
            Recovery::Tahoe => self.window.timeout(0.5),
            _ => self.window.halve(),
        }
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::config;

    #[test]
    fn refuses_parameters() {
        let err = new(&config(&[("alpha", 1.0)])).err().unwrap();
        assert_eq!(
            err.0,
            "params.alpha: reno has no such parameter (it takes: none)"
        );
    }
}
