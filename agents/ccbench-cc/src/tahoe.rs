//! tahoe: TCP Tahoe (Jacobson 1988; RFC 5681 without fast recovery): slow start, congestion
//! avoidance, and on a loss detected by three duplicate ACKs: ssthresh = cwnd / 2 and slow
//! start again from one packet, the transport resending from the first hole (go-back-N). The
//! window rules are Reno's (reno.rs); only the loss response differs.

use crate::reno::StandardTcp;
use crate::{Config, ConfigError, Recovery};

pub fn new(config: &Config) -> Result<StandardTcp, ConfigError> {
    StandardTcp::new("tahoe", Recovery::Tahoe, config)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::{Flow, Link, Sim};
    use crate::test_support::config;
    use std::time::Duration;

    // A buffer of 1000 packets: slow start reaches the injected losses without tail drops.

    #[test]
    fn a_loss_sends_the_window_to_one_packet_and_slow_start_resumes() {
        let link = Link::mbit(10.0, Duration::from_millis(20), 1000);
        let report = Sim::new(link)
            .per_ack_samples(true)
            .flow_with(
                Flow::new(Box::new(new(&config(&[])).unwrap()))
                    .drop_first_transmission_of([200, 205]),
            )
            .run(Duration::from_secs(4));
        let flow = &report.flows[0];
        let events: Vec<_> = flow.congestion_events().collect();
        assert_eq!(events.len(), 1, "two losses in one window: one event");
        let event = events[0];
        assert_eq!(event.cwnd_after, 1.0);
        assert_eq!(event.ssthresh_after, event.cwnd_before / 2.0);
        assert_eq!(flow.timeouts(), 0);
        assert_eq!(flow.retransmissions, 2);
        // Slow start again: the window doubles per round trip up to ssthresh.
        let after: Vec<f64> = flow
            .acks
            .iter()
            .filter(|a| a.time > event.time && !a.in_recovery)
            .map(|a| a.cwnd)
            .take(4)
            .collect();
        assert_eq!(after, vec![2.0, 3.0, 4.0, 5.0]);
    }
}
