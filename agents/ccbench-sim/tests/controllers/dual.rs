use std::time::Duration;

use ccbench_cc::dual::Dual;
use ccbench_sim::{EventKind, Link, Sim};

use crate::support::config;

#[test]
fn on_a_link_cuts_exactly_an_eighth_never_in_consecutive_round_trips() {
    let link = Link::mbit(10.0, Duration::from_millis(20), 100);
    let base_rtt = link.base_rtt(1000);
    let report = Sim::new(link)
        .per_ack_samples(true)
        .flow(Box::new(Dual::new(&config(&[])).unwrap()))
        .run(Duration::from_secs(60));
    let flow = &report.flows[0];
    let threshold = flow.state_index("threshold_us");
    let rtt = flow.state_index("rtt_us");
    let events: Vec<_> = flow.events.iter().map(|e| e.time).collect();
    let mut cuts = Vec::new();
    for pair in flow.acks.windows(2) {
        let (before, after) = (&pair[0], &pair[1]);
        if after.cwnd < before.cwnd && !events.contains(&after.time) {
            // Exactly one eighth, at an RTT sample above the threshold.
            assert!(
                (after.cwnd - before.cwnd * 7.0 / 8.0).abs() < 1e-9,
                "{after:?}"
            );
            assert!(after.state[rtt] > after.state[threshold]);
            cuts.push(after.time);
        }
    }
    assert!(cuts.len() >= 5, "{}", cuts.len());
    for pair in cuts.windows(2) {
        assert!(pair[1] - pair[0] > 2 * base_rtt, "{pair:?}");
    }
    let losses = flow
        .events
        .iter()
        .filter(|e| e.kind == EventKind::Congestion)
        .count();
    eprintln!(
        "dual: {} cuts, {} losses, utilization {:.4}, mean queue {:.2}",
        cuts.len(),
        losses,
        report.utilization,
        report.mean_queue_pkts
    );
    // The cuts end slow start and keep the queue below the buffer: no loss at all, and
    // the link stays busy.
    assert_eq!(losses, 0);
    assert_eq!(flow.timeouts(), 0);
    assert!(report.max_queue_pkts < 100);
    assert!(report.utilization > 0.98, "{}", report.utilization);
}
