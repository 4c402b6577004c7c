use std::time::Duration;

use ccbench_cc::bfa::Bfa;
use ccbench_cc::Controller;
use ccbench_sim::{Link, Report, Sim};

use crate::support::config;

fn run(controller: Box<dyn Controller>, buffer: usize) -> Report {
    // Seed 000 §4.1: a 64 kbit/s bottleneck, 1000-byte packets (8 packets/s), tail drop,
    // 400 s runs. Its Figure 3's propagation delays are not in the text: 50 ms each way.
    let link = Link::new(8000.0, Duration::from_millis(50), buffer);
    Sim::new(link)
        .measure_from(Duration::from_secs(50))
        .flow(controller)
        .run(Duration::from_secs(450))
}

#[test]
fn holds_the_queue_well_below_renos_with_similar_throughput() {
    // Buffer 20 packets as in seed 000 Fig. 4 (BDP: 8 packets/s x 225 ms = 1.8 packets).
    let bfa = run(Box::new(Bfa::new(&config(&[])).unwrap()), 20);
    let reno = run(Box::new(ccbench_cc::reno::new(&config(&[])).unwrap()), 20);
    let (b, r) = (&bfa.flows[0], &reno.flows[0]);
    eprintln!(
        "64 kbit/s, buffer 20: bfa {:.3} packets/s, mean queue {:.2}, drops {}, flag set in \
         {} of {} rounds; reno {:.3} packets/s, mean queue {:.2}, drops {}",
        b.goodput_bytes_per_s / 1000.0,
        bfa.mean_queue_pkts,
        b.drops,
        b.rounds.iter().filter(|s| s.state[0] == 1.0).count(),
        b.rounds.len(),
        r.goodput_bytes_per_s / 1000.0,
        reno.mean_queue_pkts,
        r.drops
    );
    assert!(bfa.mean_queue_pkts < 0.25 * reno.mean_queue_pkts);
    assert!(b.goodput_bytes_per_s > 0.97 * r.goodput_bytes_per_s);
    assert!(b.drops < r.drops);
    // The flag was set in steady state and the window then held.
    assert!(b.rounds.iter().any(|s| s.state[0] == 1.0));
}
