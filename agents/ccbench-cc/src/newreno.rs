//! newreno: standard TCP window rules (reno.rs) with NewReno's fast recovery (RFC 6582): a
//! partial ACK retransmits the next hole and recovery lasts until everything outstanding at the
//! loss is acknowledged, so several losses in one window cost one halving.

use crate::reno::StandardTcp;
use crate::{Config, ConfigError, Recovery};

pub fn new(config: &Config) -> Result<StandardTcp, ConfigError> {
    StandardTcp::new("newreno", Recovery::NewReno, config)
}
