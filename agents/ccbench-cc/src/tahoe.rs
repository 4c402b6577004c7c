//! tahoe: TCP Tahoe (Jacobson 1988; RFC 5681 without fast recovery): slow start, congestion
//! avoidance, and on a loss detected by three duplicate ACKs: ssthresh = cwnd / 2 and slow
//! start again from one packet, the transport resending from the first hole (go-back-N). The
//! window rules are Reno's (reno.rs); only the loss response differs.

use crate::reno::StandardTcp;
use crate::{Config, ConfigError, Recovery};

pub fn new(config: &Config) -> Result<StandardTcp, ConfigError> {
    StandardTcp::new("tahoe", Recovery::Tahoe, config)
}
