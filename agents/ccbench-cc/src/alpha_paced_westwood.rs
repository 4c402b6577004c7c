//! alpha_paced_westwood: alpha-paced Westwood, seed 003 §III-C.2: TCP Westwood (§III-A, see
//! `westwood`) paced during slow start only, at RE = alpha·BSE (eq. 4), i.e. one segment every
//! MSS/RE (eq. 5). alpha > 1 breaks the positive feedback between pacing and the estimate that
//! stalls Paced Westwood (§III-C.1, §V-B). Outside slow start the sender is not paced; before
//! the first BSE sample the rate is cwnd·MSS/SRTT (not scaled by alpha). The seed's evaluation
//! uses alpha = 2.0 (Fig. 6), the default. Shared parts in `westwood_common` (kernel version:
//! agents/kernel/bpf/alpha_paced_westwood.bpf.c). Tunables: alpha, bse_gain, bse_sample_min.

use crate::params::Params;
use crate::westwood_common::{BseParams, WestwoodCore};
use crate::{Ack, Config, ConfigError, CongestionEvent, Controller, Recovery, Time};

pub struct AlphaPacedWestwood {
    core: WestwoodCore,
    alpha: f64,
}

impl AlphaPacedWestwood {
    pub fn new(config: &Config) -> Result<AlphaPacedWestwood, ConfigError> {
        let mut p = Params::new("alpha_paced_westwood", config);
        let bse = BseParams::from_params(&mut p)?;
        let alpha = p.real("alpha", 2.0, 0.125, 16.0)?;
        p.finish()?;
        Ok(AlphaPacedWestwood {
            core: WestwoodCore::new(bse, config.mss, Some(alpha)),
            alpha,
        })
    }

    pub fn core(&self) -> &WestwoodCore {
        &self.core
    }

    pub fn alpha(&self) -> f64 {
        self.alpha
    }
}

impl Controller for AlphaPacedWestwood {
    fn id(&self) -> &'static str {
        "alpha_paced_westwood"
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
    use crate::harness::{Link, Sim};
    use crate::test_support::{check_paced_gaps, Watched};
    use std::collections::BTreeMap;
    use std::time::Duration;

    fn config(alpha: Option<f64>) -> Config {
        Config {
            mss: 1000,
            params: alpha
                .map(|a| ("alpha".to_string(), a))
                .into_iter()
                .collect::<BTreeMap<_, _>>(),
            seed: 0,
        }
    }

    #[test]
    fn slow_start_is_paced_at_alpha_times_bse() {
        for alpha in [2.0, 1.5] {
            let watched = Watched::new(
                AlphaPacedWestwood::new(&config(Some(alpha))).unwrap(),
                |_, _| (),
            );
            let (_, departures, _) = watched.handles();
            let report = Sim::new(Link::mbit(1.5, Duration::from_millis(140), 10))
                .per_ack_samples(true)
                .flow(Box::new(watched))
                .run(Duration::from_secs(60));
            let flow = &report.flows[0];
            let (bse, pacing) = (
                flow.state_index("bse_bps"),
                flow.state_index("pacing_rate_bps"),
            );
            let mut compared = 0;
            for s in &flow.acks {
                let slow_start = s.cwnd < s.ssthresh && !s.in_recovery;
                match (slow_start, s.state[bse] > 0.0) {
                    (true, true) => {
                        let want = alpha * s.state[bse] / 8.0;
                        let got = s.pacing_rate.expect("paced in slow start");
                        assert!(
                            (got - want).abs() < 1e-9 * want,
                            "{got} vs alpha·BSE {want}"
                        );
                        assert!((s.state[pacing] - 8.0 * want).abs() < 1e-6 * want);
                        compared += 1;
                    }
                    (false, _) => assert_eq!(s.pacing_rate, None, "at {:?}", s.time),
                    (true, false) => {} // cwnd/SRTT before the first sample
                }
            }
            let departures = departures.lock().unwrap();
            let (checked, smallest) = check_paced_gaps(&departures, 1000);
            println!(
                "alpha_paced_westwood alpha {alpha}: {compared} slow-start ACKs with pacing = \
                 alpha x BSE, {checked} paced gaps (smallest {smallest:.3} x MSS/rate), \
                 goodput {:.3} Mbit/s",
                flow.goodput_bytes_per_s * 8e-6
            );
            assert!(compared > 50, "{compared}");
            assert!(checked > 50, "{checked}");
        }
    }

    #[test]
    fn alpha_out_of_range_is_refused() {
        let err = AlphaPacedWestwood::new(&config(Some(0.0))).err().unwrap();
        assert!(err.0.contains("params.alpha"), "{err}");
    }
}

#[cfg(test)]
mod seed_comparison {
    use crate::harness::{Link, Sim};
    use std::time::Duration;

    #[test]
    fn outperforms_newreno_paced_or_not_in_small_buffers() {
        // Seed 003 §IV-B/§V: 1.5 Mbit/s, 280 ms of propagation RTT (a pipe of ~53 packets of
        // 1000 bytes), buffers well below a third of the pipe (eq. 1's double slow start).
        let config = crate::Config {
            mss: 1000,
            params: Default::default(),
            seed: 0,
        };
        let ids = [
            "newreno",
            "paced_newreno",
            "westwood",
            "alpha_paced_westwood",
        ];
        for buffer in [5usize, 10, 15] {
            let goodput: Vec<f64> = ids
                .iter()
                .map(|id| {
                    Sim::new(Link::mbit(1.5, Duration::from_millis(140), buffer))
                        .flow(crate::new_controller(id, &config).unwrap())
                        .run(Duration::from_secs(100))
                        .flows[0]
                        .goodput_bytes_per_s
                        * 8e-6
                })
                .collect();
            let table: Vec<String> = ids
                .iter()
                .zip(&goodput)
                .map(|(id, g)| format!("{id} {g:.3}"))
                .collect();
            println!("buffer {buffer:>2} packets, Mbit/s: {}", table.join(", "));
            assert!(
                goodput[3] > goodput[0] && goodput[3] > goodput[1],
                "buffer {buffer}"
            );
        }
    }
}
