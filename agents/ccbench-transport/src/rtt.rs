//! RTT estimation and the retransmission timeout, RFC 6298, with a configurable clock
//! granularity G: RTO = max(min_rto, SRTT + max(G, 4·RTTVAR)), rounded up to a whole number of
//! ticks of G. With G = 1 ms this is today's fine-grained RTO; with G = 500 ms it is the coarse
//! timer of seed 000 (TCP-BFA) §3.1: RTT samples stay fine-grained, only the RTO is coarse.

use std::time::Duration;

/// RFC 6298 (2.1): the RTO before the first sample.
pub const INITIAL_RTO: Duration = Duration::from_secs(1);
/// RFC 6298 (2.5): an upper bound of at least 60 s.
pub const MAX_RTO: Duration = Duration::from_secs(60);

#[derive(Clone, Debug)]
pub struct RttEstimator {
    srtt: Option<Duration>,
    rttvar: Duration,
    min_rtt: Option<Duration>,
    latest: Option<Duration>,
    min_rto: Duration,
    granularity: Duration,
    /// Consecutive timeouts without a fresh sample (RFC 6298 (5.5): each doubles the RTO).
    backoff: u32,
}

impl RttEstimator {
    pub fn new(min_rto: Duration, granularity: Duration) -> RttEstimator {
        RttEstimator {
            srtt: None,
            rttvar: Duration::ZERO,
            min_rtt: None,
            latest: None,
            min_rto,
            granularity: granularity.max(Duration::from_micros(1)),
            backoff: 0,
        }
    }

    /// One RTT measurement from a packet that was not retransmitted (Karn's rule).
    pub fn on_sample(&mut self, rtt: Duration) {
        self.latest = Some(rtt);
        self.min_rtt = Some(self.min_rtt.map_or(rtt, |m| m.min(rtt)));
        match self.srtt {
            None => {
                // (2.2)
                self.srtt = Some(rtt);
                self.rttvar = rtt / 2;
            }
            Some(srtt) => {
                // (2.3): beta = 1/4, alpha = 1/8.
                let delta = srtt.abs_diff(rtt);
                self.rttvar = (self.rttvar * 3 + delta) / 4;
                self.srtt = Some((srtt * 7 + rtt) / 8);
            }
        }
        // A fresh sample ends the backoff (Karn: the timer is recomputed from the estimate).
        self.backoff = 0;
    }

    pub fn on_timeout(&mut self) {
        self.backoff = (self.backoff + 1).min(16);
    }

    /// The current RTO including backoff.
    pub fn rto(&self) -> Duration {
        let base = match self.srtt {
            None => INITIAL_RTO,
            Some(srtt) => srtt + self.granularity.max(self.rttvar * 4),
        };
        let base = base.max(self.min_rto);
        // A coarse timer can only fire on its ticks.
        // In u64 nanoseconds (584 years; u128 division costs ~10x more, once per ACK).
        let nanos = |d: Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        let g = nanos(self.granularity);
        let rounded = Duration::from_nanos(nanos(base).div_ceil(g).saturating_mul(g));
        rounded
            .saturating_mul(1u32 << self.backoff.min(16))
            .min(MAX_RTO)
    }

    pub fn srtt(&self) -> Option<Duration> {
        self.srtt
    }
    pub fn rttvar(&self) -> Duration {
        self.rttvar
    }
    pub fn min_rtt(&self) -> Option<Duration> {
        self.min_rtt
    }
    pub fn latest(&self) -> Option<Duration> {
        self.latest
    }
    pub fn backoff(&self) -> u32 {
        self.backoff
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    #[test]
    fn rfc6298_estimates_and_bounds() {
        let mut e = RttEstimator::new(ms(200), ms(1));
        assert_eq!(e.rto(), INITIAL_RTO);
        e.on_sample(ms(100));
        assert_eq!((e.srtt(), e.rttvar()), (Some(ms(100)), ms(50)));
        assert_eq!(e.rto(), ms(300)); // 100 + 4·50
        e.on_sample(ms(60));
        // rttvar = 3/4·50 + 1/4·40 = 47.5; srtt = 7/8·100 + 1/8·60 = 95.
        assert_eq!(e.srtt(), Some(ms(95)));
        assert_eq!(e.rttvar(), Duration::from_micros(47_500));
        assert_eq!(e.rto(), ms(285));
        assert_eq!(e.min_rtt(), Some(ms(60)));
        // Stable small RTTs: the minimum RTO binds.
        for _ in 0..50 {
            e.on_sample(ms(10));
        }
        assert_eq!(e.rto(), ms(200));
    }

    #[test]
    fn backoff_doubles_until_a_fresh_sample_and_is_capped() {
        let mut e = RttEstimator::new(ms(200), ms(1));
        e.on_sample(ms(100));
        e.on_timeout();
        assert_eq!(e.rto(), ms(600));
        e.on_timeout();
        assert_eq!(e.rto(), ms(1200));
        for _ in 0..20 {
            e.on_timeout();
        }
        assert_eq!(e.rto(), MAX_RTO);
        e.on_sample(ms(100));
        assert_eq!(e.backoff(), 0);
        assert!(e.rto() < ms(400));
    }

    #[test]
    fn coarse_granularity_rounds_the_rto_up_to_ticks_but_not_the_rtt() {
        // Seed 000 §3.1: 500 ms RTO ticks, fine RTT samples.
        let mut e = RttEstimator::new(ms(0), ms(500));
        e.on_sample(ms(40));
        assert_eq!(e.srtt(), Some(ms(40)));
        assert_eq!(e.rto(), ms(1000)); // 40 + max(500, 80) = 540 -> two ticks
        let mut fine = RttEstimator::new(ms(0), ms(1));
        fine.on_sample(ms(40));
        assert_eq!(fine.rto(), ms(120));
    }
}
