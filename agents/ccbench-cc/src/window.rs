//! Reno's building blocks, shared by the window-based controllers (the userspace counterpart
//! of agents/kernel/bpf/ccbench_cc.h): slow start with appropriate byte counting (RFC 3465),
//! additive increase, multiplicative decrease, and round-trip counting.
//!
//! Windows are in packets and fractional (cwnd += acked / cwnd in congestion avoidance, exactly
//! RFC 5681's per-ACK rule); the transport sends floor(cwnd).

use crate::{Ack, Sent};

/// Window at the start of a flow unless the transport sets another
/// (`Controller::set_initial_window`): what the seeds' simulations use. The userspace
/// transport starts its flows at the spec's `initial_window` (10, Linux's, by default).
pub const INITIAL_CWND: f64 = 1.0;
/// A multiplicative decrease never leaves fewer packets than this (RFC 5681 eq. 4).
pub const MIN_CWND_AFTER_DECREASE: f64 = 2.0;
/// The window after a retransmission timeout (RFC 5681 §3.1, the loss window).
pub const LOSS_WINDOW: f64 = 1.0;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Window {
    pub cwnd: f64,
    pub ssthresh: f64,
    /// The window never grows past this (`Controller::set_max_window`: the receiver's window,
    /// as ns-2's `maxcwnd_`); infinite unless set.
    pub max_cwnd: f64,
}

impl Default for Window {
    fn default() -> Window {
        Window::new()
    }
}

impl Window {
    pub fn new() -> Window {
        Window {
            cwnd: INITIAL_CWND,
            ssthresh: f64::INFINITY,
            max_cwnd: f64::INFINITY,
        }
    }

    /// Never grow past `packets` (and come down to it now).
    pub fn set_max(&mut self, packets: f64) {
        self.max_cwnd = packets;
        self.clamp();
    }

    /// Back within `max_cwnd` after a controller's own increase.
    pub fn clamp(&mut self) {
        self.cwnd = self.cwnd.min(self.max_cwnd);
    }

    /// Start from `packets` instead (before the first packet; ssthresh stays infinite).
    pub fn set_initial(&mut self, packets: f64) {
        self.cwnd = packets;
    }

    pub fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh
    }

    /// One packet per packet acknowledged, up to ssthresh. Returns the acknowledged packets
    /// left over for congestion avoidance (the kernel's tcp_slow_start).
    pub fn slow_start(&mut self, acked: f64) -> f64 {
        let grown = (self.cwnd + acked).min(self.ssthresh).max(self.cwnd);
        let left = acked - (grown - self.cwnd);
        self.cwnd = grown;
        self.clamp();
        left
    }

    /// Additive increase of `alpha` packets per window acknowledged.
    pub fn additive_increase(&mut self, alpha: f64, acked: f64) {
        self.cwnd += alpha * acked / self.cwnd;
        self.clamp();
    }

    /// Reno's growth: slow start, then one packet per round trip.
    pub fn reno_grow(&mut self, acked: f64) {
        self.grow(1.0, acked);
    }

    /// Slow start, then `alpha` packets per round trip.
    pub fn grow(&mut self, alpha: f64, acked: f64) {
        let mut acked = acked;
        if self.in_slow_start() {
            acked = self.slow_start(acked);
        }
        if acked > 0.0 {
            self.additive_increase(alpha, acked);
        }
    }

    /// Multiplicative decrease to `factor` x cwnd (at least two packets), the new ssthresh.
    pub fn decrease(&mut self, factor: f64) {
        self.ssthresh = (self.cwnd * factor).max(MIN_CWND_AFTER_DECREASE);
        self.cwnd = self.ssthresh;
    }

    /// Reno's halving on a congestion event.
    pub fn halve(&mut self) {
        self.decrease(0.5);
    }

    /// A retransmission timeout: ssthresh to `factor` x cwnd, cwnd to the loss window.
    pub fn timeout(&mut self, factor: f64) {
        self.ssthresh = (self.cwnd * factor).max(MIN_CWND_AFTER_DECREASE);
        self.cwnd = LOSS_WINDOW;
    }
}

/// Round trips, counted as the kernel controllers count them: a round ends when a packet sent
/// at or after its start is acknowledged, and the next one then begins.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Rounds {
    next_seq: u64,
    round_end: u64,
}

impl Rounds {
    pub fn on_sent(&mut self, sent: &Sent) {
        self.next_seq = self.next_seq.max(sent.seq + 1);
    }

    /// One past the highest sequence number sent.
    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }

    /// Starts a round now: it ends when a packet sent from now on is acknowledged.
    pub fn restart(&mut self) {
        self.round_end = self.next_seq;
    }

    /// Whether `ack` ends the current round (then the next one starts).
    pub fn ended(&mut self, ack: &Ack) -> bool {
        match ack.newly_acked.iter().max() {
            Some(&highest) if highest >= self.round_end => {
                self.round_end = self.next_seq;
                true
            }
            _ => false,
        }
    }
}

/// Packets an ACK acknowledged for the first time, as the window rules count them.
pub fn acked_packets(ack: &Ack) -> f64 {
    ack.growth_packets
}

/// Seconds to whole microseconds, for state traces named `*_us` like the kernel's.
pub fn micros(seconds: f64) -> f64 {
    (seconds * 1e6).round()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slow_start_stops_at_ssthresh_and_carries_the_rest_over() {
        let mut w = Window {
            cwnd: 8.0,
            ssthresh: 10.0,
            max_cwnd: f64::INFINITY,
        };
        w.grow(1.0, 4.0);
        // 2 packets of slow start to 10, then 2 / 10 in congestion avoidance.
        assert_eq!(w.cwnd, 10.2);
        let mut w = Window {
            cwnd: 4.0,
            ssthresh: 3.0,
            max_cwnd: f64::INFINITY,
        };
        assert_eq!(w.slow_start(2.0), 2.0);
        assert_eq!(w.cwnd, 4.0);
    }

    #[test]
    fn the_window_never_grows_past_its_maximum_so_a_loss_halves_that() {
        let mut w = Window::new();
        w.set_max(100.0);
        for _ in 0..300 {
            w.reno_grow(1.0);
        }
        assert_eq!(w.cwnd, 100.0, "slow start stops at the maximum");
        w.ssthresh = 50.0;
        w.reno_grow(10.0);
        assert_eq!(w.cwnd, 100.0, "and so does congestion avoidance");
        w.halve();
        assert_eq!((w.cwnd, w.ssthresh), (50.0, 50.0));
        // Setting a smaller maximum brings the window down to it.
        w.set_max(20.0);
        assert_eq!(w.cwnd, 20.0);
    }

    #[test]
    fn one_packet_per_window_in_congestion_avoidance() {
        let mut w = Window {
            cwnd: 10.0,
            ssthresh: 5.0,
            max_cwnd: f64::INFINITY,
        };
        w.reno_grow(1.0);
        assert_eq!(w.cwnd, 10.1);
        w.halve();
        assert_eq!((w.cwnd, w.ssthresh), (5.05, 5.05));
        w.cwnd = 3.0;
        w.halve();
        assert_eq!((w.cwnd, w.ssthresh), (2.0, 2.0));
        w.cwnd = 20.0;
        w.timeout(0.5);
        assert_eq!((w.cwnd, w.ssthresh), (1.0, 10.0));
    }
}
