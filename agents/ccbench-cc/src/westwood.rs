//! westwood: TCP Westwood as seed 003 describes it (§III-A, "Background"): Reno, except that
//! after a congestion episode (three duplicate ACKs or a timeout) the slow start threshold and
//! the window are set from the bandwidth share estimate BSE, the low-pass filtered rate of
//! returning ACKs:
//!     ssthresh = BSE·RTTmin/segsize;   congestion event: cwnd = min(cwnd, ssthresh);
//!     timeout: cwnd = 1.
//! Window growth between losses is Reno's; the transport runs NewReno recovery; no pacing (the
//! seed's unpaced TCPW). The estimator and the loss response are in `westwood_common`, shared
//! with the paced variants (agents/kernel/bpf/westwood.bpf.c is the kernel version).
//! Tunables: bse_gain, bse_sample_min.

use crate::params::Params;
use crate::westwood_common::{BseParams, WestwoodCore};
use crate::{Ack, Config, ConfigError, CongestionEvent, Controller, Recovery, Time};

pub struct Westwood {
    core: WestwoodCore,
}

impl Westwood {
    pub fn new(config: &Config) -> Result<Westwood, ConfigError> {
        let mut p = Params::new("westwood", config);
        let bse = BseParams::from_params(&mut p)?;
        p.finish()?;
        Ok(Westwood {
            core: WestwoodCore::new(bse, config.mss, None),
        })
    }

    pub fn core(&self) -> &WestwoodCore {
        &self.core
    }
}

impl Controller for Westwood {
    fn id(&self) -> &'static str {
        "westwood"
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
        None
    }

    fn state_names(&self) -> &'static [&'static str] {
        &["bse_bps", "rtt_min_us"]
    }

    fn state_values(&self, out: &mut [f64]) {
        self.core.state_values(out);
    }
}
