use std::time::Duration;

use ccbench_cc::arb::{Arb, ArbReceiver};
use ccbench_cc::westwood::Westwood;
use ccbench_sim::{Flow, Link, Sim};

use crate::support::config;

#[test]
fn through_a_bottleneck_arb_holds_the_queue_in_its_restrain_band() {
    // 10 Mbit/s, 40 ms RTT, a 100-packet buffer that Reno-style growth fills.
    let link = Link::mbit(10.0, Duration::from_millis(20), 100);
    let c = config(&[]);
    let arb = Sim::new(link)
        .measure_from(Duration::from_secs(5))
        .flow_with(
            Flow::new(Box::new(Arb::new(&c).unwrap()))
                .receiver(Box::new(ArbReceiver::new(&c).unwrap())),
        )
        .run(Duration::from_secs(40));
    let westwood = Sim::new(link)
        .measure_from(Duration::from_secs(5))
        .flow(Box::new(Westwood::new(&c).unwrap()))
        .run(Duration::from_secs(40));
    let late_drops = |r: &ccbench_sim::Report| {
        r.drops
            .iter()
            .filter(|d| d.time >= Duration::from_secs(5))
            .count()
    };
    println!(
        "arb: utilization {:.4}, mean queue {:.2} pkts, max queue {} , drops after 5 s {}; \
         westwood: utilization {:.4}, mean queue {:.2}, drops after 5 s {}",
        arb.utilization,
        arb.mean_queue_pkts,
        arb.max_queue_pkts,
        late_drops(&arb),
        westwood.utilization,
        westwood.mean_queue_pkts,
        late_drops(&westwood)
    );
    assert_eq!(late_drops(&arb), 0);
    assert!(arb.mean_queue_pkts < 12.0, "{}", arb.mean_queue_pkts);
    assert!(arb.utilization > 0.95, "{}", arb.utilization);
    assert!(late_drops(&westwood) > 0 && westwood.mean_queue_pkts > 2.0 * arb.mean_queue_pkts);
}
