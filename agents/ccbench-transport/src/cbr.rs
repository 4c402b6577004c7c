//! Constant-rate background traffic (issue 5, traffic models: "CBR UDP background"): no
//! congestion control and no retransmission, packets paced at a fixed rate. It is a
//! `Controller` so the same sender carries it (and logs its RTT and losses).

use ccbench_cc::{Ack, CongestionEvent, Controller, Recovery, Time};

pub struct ConstantRate {
    bytes_per_s: f64,
}

impl ConstantRate {
    /// `bits_per_s` counts payload bits.
    pub fn new(bits_per_s: f64) -> ConstantRate {
        ConstantRate {
            bytes_per_s: bits_per_s / 8.0,
        }
    }
}

impl Controller for ConstantRate {
    fn id(&self) -> &'static str {
        "cbr"
    }
    fn recovery(&self) -> Recovery {
        Recovery::None
    }
    fn on_ack(&mut self, _ack: &Ack) {}
    fn on_congestion_event(&mut self, _event: &CongestionEvent) {}
    fn on_timeout(&mut self, _now: Time) {}
    fn cwnd(&self) -> f64 {
        f64::INFINITY
    }
    fn ssthresh(&self) -> f64 {
        f64::INFINITY
    }
    fn pacing_rate(&self) -> Option<f64> {
        Some(self.bytes_per_s)
    }
}
