use std::time::Duration;

use ccbench_cc::newreno::new;
use ccbench_cc::reno::StandardTcp;
use ccbench_sim::{Flow, Link, Sim};

use crate::support::config;

// A buffer of 1000 packets: slow start reaches the injected losses without tail drops.

fn run(controller: StandardTcp) -> ccbench_sim::Report {
    let link = Link::mbit(10.0, Duration::from_millis(20), 1000);
    Sim::new(link)
        .flow_with(
            Flow::new(Box::new(controller))
                .drop_first_transmission_of([100, 2000, 2004, 2008, 2012]),
        )
        .run(Duration::from_secs(6))
}

#[test]
fn several_losses_in_one_window_cost_one_halving() {
    let report = run(new(&config(&[])).unwrap());
    let flow = &report.flows[0];
    // The loss of 100 ends slow start; 2000..2012 are four losses in one window of
    // congestion avoidance.
    let events: Vec<_> = flow.congestion_events().collect();
    assert_eq!(events.len(), 2);
    assert_eq!(events[1].lost_seq, 2000);
    assert_eq!(events[1].cwnd_after, events[1].cwnd_before / 2.0);
    assert_eq!(flow.timeouts(), 0);
    assert_eq!(flow.retransmissions, 5);
    assert_eq!(flow.receiver_duplicates, 0);

    // Reno on the same losses: halves again for a later hole, or times out.
    let reno = run(ccbench_cc::reno::new(&config(&[])).unwrap());
    let reno_flow = &reno.flows[0];
    eprintln!(
        "4 losses in one window: newreno 1 event, reno {} events + {} timeouts",
        reno_flow.congestion_events().count(),
        reno_flow.timeouts()
    );
    assert!(reno_flow.congestion_events().count() + reno_flow.timeouts() >= 3);
}
