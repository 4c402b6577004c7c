//! paced_westwood: Paced Westwood, seed 003 §III-C.1: TCP Westwood (§III-A, see `westwood`)
//! paced during slow start only, at the bandwidth share estimate itself: the inter-departure
//! time is 1/BSE (eq. 5 with alpha = 1). Outside slow start (congestion avoidance, fast
//! recovery) the sender is not paced; before the first BSE sample the rate is cwnd·MSS/SRTT.
//! The seed reports that this variant under-performs because pacing at an under-estimated BSE
//! spaces the ACKs further and lowers the next BSE (positive feedback); alpha_paced_westwood is
//! its correction. Tunables: bse_gain, bse_sample_min.
//!
//! `PacedWestwood` is the one implementation of both paced variants, which differ only in
//! alpha (pacing at RE = alpha·BSE, eq. 4-5): 1 here, a tunable for alpha_paced_westwood
//! (§III-C.2), as agents/kernel/bpf/paced_westwood_common.h is for the BPF versions. Shared
//! parts with unpaced Westwood in `westwood_common` (kernel version:
//! agents/kernel/bpf/paced_westwood.bpf.c).

use crate::params::Params;
use crate::westwood_common::{BseParams, WestwoodCore};
use crate::{Ack, Config, ConfigError, CongestionEvent, Controller, Recovery, Time};

/// Where a paced variant's alpha comes from.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Alpha {
    /// A constant, not a tunable (Paced Westwood: 1).
    Fixed(f64),
    /// The tunable `alpha` with this default (alpha-paced Westwood: 2).
    Tunable { default: f64 },
}

/// Paced Westwood (seed 003 §III-C.1): alpha = 1, pace at BSE itself.
pub fn new(config: &Config) -> Result<PacedWestwood, ConfigError> {
    PacedWestwood::new("paced_westwood", Alpha::Fixed(1.0), config)
}

/// TCP Westwood paced in slow start at alpha·BSE.
pub struct PacedWestwood {
    id: &'static str,
    alpha: f64,
    core: WestwoodCore,
}

impl PacedWestwood {
    /// `id` is the algorithm id this variant serves (its tunables are read under that name).
    pub fn new(
        id: &'static str,
        alpha: Alpha,
        config: &Config,
    ) -> Result<PacedWestwood, ConfigError> {
        let mut p = Params::new(id, config);
        let bse = BseParams::from_params(&mut p)?;
        let alpha = match alpha {
            Alpha::Fixed(alpha) => alpha,
            // Range as schemas/algorithms.py declares it.
            Alpha::Tunable { default } => p.real("alpha", default, 0.125, 16.0)?,
        };
        p.finish()?;
        Ok(PacedWestwood {
            id,
            alpha,
            core: WestwoodCore::new(bse, config.mss, Some(alpha)),
        })
    }

    pub fn core(&self) -> &WestwoodCore {
        &self.core
    }

    pub fn alpha(&self) -> f64 {
        self.alpha
    }
}

impl Controller for PacedWestwood {
    fn id(&self) -> &'static str {
        self.id
    }

    fn recovery(&self) -> Recovery {
        Recovery::NewReno
    }

    fn on_ack(&mut self, ack: &Ack) {
        self.core.on_ack(ack);
    }

    fn on_congestion_event(&mut self, _event: &CongestionEvent) {
        self.core.on_congestion_event();
    }

    fn on_timeout(&mut self, _now: Time) {
        self.core.on_timeout();
    }

    fn cwnd(&self) -> f64 {
        self.core.cwnd()
    }

    fn ssthresh(&self) -> f64 {
        self.core.ssthresh()
    }

    fn pacing_rate(&self) -> Option<f64> {
        self.core.pacing_rate()
    }

    fn state_names(&self) -> &'static [&'static str] {
        &["bse_bps", "rtt_min_us", "pacing_rate_bps"]
    }

    fn state_values(&self, out: &mut [f64]) {
        self.core.state_values(out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::{Flow, Link, Sim};
    use crate::test_support::{check_paced_gaps, config, Watched};
    use crate::westwood::Westwood;
    use std::time::Duration;

    /// Seed 003 §IV-B's single flow: 1.5 Mbit/s bottleneck, 280 ms of propagation RTT, and a
    /// small buffer (10 packets, about a fifth of the pipe).
    fn satellite() -> Link {
        Link::mbit(1.5, Duration::from_millis(140), 10)
    }

    #[test]
    fn pacing_at_bse_feeds_back_into_bse_as_the_seed_warns() {
        // Seed 003 §III-C.1: pacing at the estimate spaces the ACKs at the estimate, so the
        // first (small) estimate of the first window is never revised upwards. alpha > 1 is
        // the seed's cure (§III-C.2): alpha-paced Westwood on the same path is not stuck.
        let watched = Watched::new(new(&config(&[])).unwrap(), |_, _| ());
        let (_, departures, _) = watched.handles();
        let report = Sim::new(satellite())
            .flow(Box::new(watched))
            .run(Duration::from_secs(60));
        let departures = departures.lock().unwrap();
        let (checked, smallest) = check_paced_gaps(&departures, 1000);
        let slow_start = departures.iter().filter(|d| d.cwnd < d.ssthresh).count();
        let paced_goodput = report.flows[0].goodput_bytes_per_s;
        let alpha = Sim::new(satellite())
            .flow(Box::new(
                crate::alpha_paced_westwood::new(&config(&[])).unwrap(),
            ))
            .run(Duration::from_secs(60));
        let alpha_goodput = alpha.flows[0].goodput_bytes_per_s;
        println!(
            "paced_westwood: {} departures, {slow_start} in slow start, {checked} paced gaps \
             (smallest {smallest:.3} x MSS/rate); goodput {:.3} Mbit/s vs alpha-paced {:.3}",
            departures.len(),
            paced_goodput * 8e-6,
            alpha_goodput * 8e-6
        );
        assert!(checked > 100, "{checked}");
        assert!(
            smallest >= 1.0 - 1e-6,
            "the harness never sends early: {smallest}"
        );
        assert_eq!(
            slow_start,
            departures.len(),
            "never left slow start: no loss at that rate"
        );
        assert!(alpha_goodput > 10.0 * paced_goodput);
    }

    #[test]
    fn only_slow_start_is_paced() {
        // A loss at packet 40 ends the stalled slow start: Westwood's ssthresh, congestion
        // avoidance unpaced, and the window (not pacing) then drives the estimate up.
        let watched = Watched::new(new(&config(&[])).unwrap(), |_, _| ());
        let (_, departures, _) = watched.handles();
        let report = Sim::new(satellite())
            .flow_with(Flow::new(Box::new(watched)).drop_first_transmission_of([40]))
            .run(Duration::from_secs(60));
        let departures = departures.lock().unwrap();
        let (checked, _) = check_paced_gaps(&departures, 1000);
        let in_ca = departures.iter().filter(|d| d.cwnd >= d.ssthresh).count();
        println!(
            "paced_westwood with a loss at packet 40: {} departures, {in_ca} in congestion \
             avoidance, {checked} paced gaps, goodput {:.3} Mbit/s",
            departures.len(),
            report.flows[0].goodput_bytes_per_s * 8e-6
        );
        assert!(checked > 20);
        assert!(in_ca > 1000, "{in_ca}");
        for d in departures.iter() {
            if d.pacing_rate.is_some() {
                assert!(
                    d.cwnd < d.ssthresh,
                    "paced outside slow start at {:?}",
                    d.now
                );
            }
            if d.cwnd >= d.ssthresh {
                assert_eq!(d.pacing_rate, None);
            }
        }
    }

    #[test]
    fn unpaced_westwood_sends_back_to_back_in_slow_start() {
        // The contrast that makes the test above meaningful: the same check fails unpaced.
        let watched = Watched::new(Westwood::new(&config(&[])).unwrap(), |_, _| ());
        let (_, departures, _) = watched.handles();
        Sim::new(satellite())
            .flow(Box::new(watched))
            .run(Duration::from_secs(5));
        let departures = departures.lock().unwrap();
        let back_to_back = departures
            .windows(2)
            .filter(|p| p[0].cwnd < p[0].ssthresh && p[1].now == p[0].now)
            .count();
        assert!(back_to_back > 10, "{back_to_back}");
    }
}
