use std::time::Duration;

use ccbench_cc::vegas::Vegas;
use ccbench_sim::{Flow, Link, Sim};

use crate::support::config;

#[test]
fn keeps_diff_between_alpha_and_beta_after_slow_start() {
    // 10 Mbit/s, 20 ms: BDP 51 packets; a buffer large enough never to drop.
    let link = Link::mbit(10.0, Duration::from_millis(20), 200);
    let report = Sim::new(link)
        .measure_from(Duration::from_secs(10))
        .flow(Box::new(Vegas::new(&config(&[])).unwrap()))
        .run(Duration::from_secs(60));
    let flow = &report.flows[0];
    assert_eq!(flow.drops, 0);
    let diff = flow.state_index("diff");
    let exit = flow
        .rounds
        .iter()
        .position(|r| r.ssthresh.is_finite())
        .expect("slow start ends");
    assert!(flow.rounds[exit].time < Duration::from_secs(1));
    // Slow start doubles every other round and judges a round by the RTTs of packets sent
    // one round earlier, so it overshoots (to about 2 BDP here, as the BPF version does);
    // CAM then sheds the excess at one packet per round until Diff <= beta.
    let converged = flow.rounds[exit..]
        .iter()
        .position(|r| r.state[diff] >= 1.0 && r.state[diff] <= 3.0)
        .expect("Diff reaches [alpha, beta]")
        + exit;
    for pair in flow.rounds[exit + 3..converged].windows(2) {
        assert!(pair[1].cwnd <= pair[0].cwnd, "{pair:?}");
    }
    let rounds = &flow.rounds[converged..];
    let inside = rounds
        .iter()
        .filter(|r| r.state[diff] >= 1.0 && r.state[diff] <= 3.0)
        .count();
    let share = inside as f64 / rounds.len() as f64;
    let queue = report.mean_queue_pkts;
    eprintln!(
        "vegas: slow start left at cwnd {:.0}, Diff in [1, 3] from {:?}; then {} of {} rounds \
         inside ({share:.3}), cwnd {:.1}, mean queue {queue:.2}",
        flow.rounds[exit].cwnd,
        flow.rounds[converged].time,
        inside,
        rounds.len(),
        rounds.last().unwrap().cwnd
    );
    assert!(flow.rounds[converged].time < Duration::from_secs(10));
    assert!(share > 0.9, "{share}");
    // Diff is the flow's own queue: 1 to 3 packets waiting, and the link stays busy.
    assert!((1.0..=3.0 + 1e-9).contains(&queue), "{queue}");
    assert!(report.utilization > 0.95, "{}", report.utilization);
}

#[test]
fn the_window_moves_by_one_packet_per_round_in_congestion_avoidance() {
    let link = Link::mbit(10.0, Duration::from_millis(20), 200);
    let report = Sim::new(link)
        .measure_from(Duration::from_secs(5))
        .flow_with(Flow::new(Box::new(Vegas::new(&config(&[])).unwrap())))
        .run(Duration::from_secs(30));
    let flow = &report.flows[0];
    let later: Vec<f64> = flow
        .rounds
        .iter()
        .filter(|r| r.time > Duration::from_secs(5))
        .map(|r| r.cwnd)
        .collect();
    assert!(
        later.windows(2).all(|w| (w[1] - w[0]).abs() <= 1.0),
        "{later:?}"
    );
}
