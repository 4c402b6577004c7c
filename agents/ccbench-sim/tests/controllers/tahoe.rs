use std::time::Duration;

use ccbench_cc::tahoe::new;
use ccbench_sim::{Flow, Link, Sim};

use crate::support::config;

// A buffer of 1000 packets: slow start reaches the injected losses without tail drops.

#[test]
fn a_loss_sends_the_window_to_one_packet_and_slow_start_resumes() {
    let link = Link::mbit(10.0, Duration::from_millis(20), 1000);
    let report = Sim::new(link)
        .per_ack_samples(true)
        .flow_with(
            Flow::new(Box::new(new(&config(&[])).unwrap())).drop_first_transmission_of([200, 205]),
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
