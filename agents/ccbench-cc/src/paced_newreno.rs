//! paced_newreno: Paced NewReno, seed 003 §II-A.2, eq. 3: NewReno (Reno's window growth and
//! halving, the transport's NewReno recovery) with every packet paced, for the whole
//! connection, at the sender's own rate cwnd/RTT, i.e. one packet every
//! delta = 1 / (cwnd / RTT). As in the BPF version (agents/kernel/bpf/paced_newreno.bpf.c), RTT
//! is the smoothed RTT (gain 1/8), not the seed's "latestRTT", whose single samples carry the
//! delayed-ACK noise; before the first RTT sample the sender is not paced. No tunables.

use std::time::Duration;

use crate::reno::StandardTcp;
use crate::{Ack, Config, ConfigError, CongestionEvent, Controller, Recovery, Time};

pub struct PacedNewReno {
    /// NewReno's window rules (newreno.rs); pacing is the only addition.
    tcp: StandardTcp,
    mss: u32,
    srtt: Option<Duration>,
}

impl PacedNewReno {
    pub fn new(config: &Config) -> Result<PacedNewReno, ConfigError> {
        Ok(PacedNewReno {
            tcp: StandardTcp::new("paced_newreno", Recovery::NewReno, config)?,
            mss: config.mss,
            srtt: None,
        })
    }
}

impl Controller for PacedNewReno {
    fn id(&self) -> &'static str {
        "paced_newreno"
    }

    fn recovery(&self) -> Recovery {
        Recovery::NewReno
    }

    fn set_initial_window(&mut self, packets: f64) {
        self.tcp.set_initial_window(packets);
    }

    fn set_max_window(&mut self, packets: f64) {
        self.tcp.set_max_window(packets);
    }

    fn on_ack(&mut self, ack: &Ack) {
        if let Some(rtt) = ack.rtt {
            // The kernel's SRTT gain, 1/8; the first sample is taken as is.
            self.srtt = Some(match self.srtt {
                None => rtt,
                Some(srtt) => srtt.mul_f64(0.875) + rtt.mul_f64(0.125),
            });
        }
        self.tcp.on_ack(ack);
    }

    fn on_congestion_event(&mut self, event: &CongestionEvent) {
        self.tcp.on_congestion_event(event);
    }

    fn on_timeout(&mut self, now: Time) {
        self.tcp.on_timeout(now);
    }

    fn cwnd(&self) -> f64 {
        self.tcp.cwnd()
    }

    fn ssthresh(&self) -> f64 {
        self.tcp.ssthresh()
    }

    /// cwnd·MSS/SRTT (eq. 3).
    fn pacing_rate(&self) -> Option<f64> {
        let srtt = self.srtt?.as_secs_f64();
        (srtt > 0.0).then(|| self.cwnd() * f64::from(self.mss) / srtt)
    }

    fn state_names(&self) -> &'static [&'static str] {
        &["pacing_rate_bps"]
    }

    fn state_values(&self, out: &mut [f64]) {
        out[0] = self.pacing_rate().unwrap_or(0.0) * 8.0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::config;

    #[test]
    fn rate_is_cwnd_over_srtt() {
        let mut c = PacedNewReno::new(&config(&[])).unwrap();
        let rtt = Duration::from_millis(100);
        let ack = |now: u64, seq: u64| Ack {
            now: Duration::from_millis(now),
            seq,
            rtt: Some(rtt),
            newly_acked: &[],
            newly_acked_bytes: 0,
            highest_acked: seq,
            in_flight: 0,
            delivered_bytes: 0,
            in_recovery: false,
            growth_packets: 0.0,
        };
        assert_eq!(c.pacing_rate(), None);
        c.on_ack(&ack(100, 0));
        assert_eq!(c.pacing_rate(), Some(1.0 * 1000.0 / 0.1));
        // Slow start: 7 packets acknowledged take the window from 1 to 8.
        c.on_ack(&Ack {
            newly_acked: &[0, 1, 2, 3, 4, 5, 6],
            growth_packets: 7.0,
            rtt: Some(Duration::from_millis(500)),
            ..ack(200, 1)
        });
        // SRTT = 7/8·100 + 1/8·500 = 150 ms.
        assert!((c.pacing_rate().unwrap() - 8.0 * 1000.0 / 0.15).abs() < 1e-6);
        c.on_congestion_event(&CongestionEvent {
            now: Duration::from_millis(300),
            in_flight: 8,
            lost_sent_at: Duration::from_millis(100),
        });
        assert_eq!((c.cwnd(), c.ssthresh()), (4.0, 4.0));
        c.on_timeout(Duration::from_millis(400));
        assert_eq!((c.cwnd(), c.ssthresh()), (1.0, 2.0));
    }
}
