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

    fn set_initial_window(&mut self, packets: f64) {
        self.core.set_initial_window(packets);
    }

    fn set_max_window(&mut self, packets: f64) {
        self.core.set_max_window(packets);
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
