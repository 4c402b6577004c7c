//! alpha_paced_westwood: alpha-paced Westwood, seed 003 §III-C.2: TCP Westwood (§III-A, see
//! `westwood`) paced during slow start only, at RE = alpha·BSE (eq. 4), i.e. one segment every
//! MSS/RE (eq. 5). alpha > 1 breaks the positive feedback between pacing and the estimate that
//! stalls Paced Westwood (§III-C.1, §V-B). Outside slow start the sender is not paced; before
//! the first BSE sample the rate is cwnd·MSS/SRTT (not scaled by alpha). The seed's evaluation
//! uses alpha = 2.0 (Fig. 6), the default. The implementation is `paced_westwood`'s, with alpha
//! a tunable (kernel version: agents/kernel/bpf/alpha_paced_westwood.bpf.c). Tunables: alpha,
//! bse_gain, bse_sample_min.

use crate::paced_westwood::{Alpha, PacedWestwood};
use crate::{Config, ConfigError};

/// alpha-paced Westwood: alpha a tunable, 2 by default (seed 003 §III-C.2, Fig. 6).
pub fn new(config: &Config) -> Result<PacedWestwood, ConfigError> {
    PacedWestwood::new(
        "alpha_paced_westwood",
        Alpha::Tunable { default: 2.0 },
        config,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::config;

    #[test]
    fn alpha_out_of_range_is_refused() {
        let err = new(&config(&[("alpha", 0.0)])).err().unwrap();
        assert!(err.0.contains("params.alpha"), "{err}");
    }
}
