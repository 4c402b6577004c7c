use std::time::Duration;

use ccbench_cc::westwood::Westwood;
use ccbench_sim::{EventKind, Link, Sim};

use crate::support::config;

#[test]
fn bse_converges_to_the_bottleneck_rate() {
    // 10 Mbit/s, 40 ms base RTT, a buffer of one BDP: the link stays busy, so the ACK rate
    // is the bottleneck rate.
    let link = Link::mbit(10.0, Duration::from_millis(20), 50);
    let report = Sim::new(link)
        .measure_from(Duration::from_secs(10))
        .flow(Box::new(Westwood::new(&config(&[])).unwrap()))
        .run(Duration::from_secs(40));
    let flow = &report.flows[0];
    let bse = flow.state_index("bse_bps");
    let late: Vec<f64> = flow
        .rounds
        .iter()
        .filter(|s| s.time >= Duration::from_secs(10))
        .map(|s| s.state[bse])
        .collect();
    let mean = late.iter().sum::<f64>() / late.len() as f64;
    let (lo, hi) = late
        .iter()
        .fold((f64::MAX, 0.0f64), |(lo, hi), &v| (lo.min(v), hi.max(v)));
    println!(
        "westwood BSE over 10..40 s: mean {:.3} Mbit/s, min {:.3}, max {:.3}; utilization \
         {:.4}, congestion events {}",
        mean / 1e6,
        lo / 1e6,
        hi / 1e6,
        report.utilization,
        flow.congestion_events().count()
    );
    assert!(report.utilization > 0.97, "{}", report.utilization);
    assert!((mean / 10e6 - 1.0).abs() < 0.03, "mean BSE {mean}");
    assert!(lo > 0.97 * 10e6 && hi < 1.02 * 10e6, "{lo}..{hi}");
}

#[test]
fn after_a_loss_ssthresh_is_bse_times_rtt_min_over_mss() {
    let link = Link::mbit(10.0, Duration::from_millis(20), 30);
    let report = Sim::new(link)
        .flow(Box::new(Westwood::new(&config(&[])).unwrap()))
        .run(Duration::from_secs(30));
    let flow = &report.flows[0];
    let events: Vec<_> = flow.congestion_events().collect();
    assert!(events.len() >= 3, "{} congestion events", events.len());
    let (bse, rtt_min) = (flow.state_index("bse_bps"), flow.state_index("rtt_min_us"));
    let mut checked = 0;
    for e in &events {
        let (bse_bps, rtt_min_us) = (e.state_before[bse], e.state_before[rtt_min]);
        if bse_bps == 0.0 {
            // The first window has no estimate yet: Reno's halving.
            assert_eq!(e.ssthresh_after, (e.cwnd_before / 2.0).max(2.0));
            continue;
        }
        let expected = (bse_bps / 8.0 * rtt_min_us / 1e6 / 1000.0).max(2.0);
        assert!(
            (e.ssthresh_after - expected).abs() < 1e-9 * expected,
            "at {:?}: ssthresh {} vs BSE·RTTmin/MSS {expected}",
            e.time,
            e.ssthresh_after
        );
        assert_eq!(e.cwnd_after, e.cwnd_before.min(e.ssthresh_after));
        checked += 1;
    }
    let last = events.last().unwrap();
    println!(
        "westwood: {} congestion events; last at {:?}: BSE {:.3} Mbit/s, RTTmin {} us, \
         ssthresh {:.2} (BDP {:.2}), cwnd {:.2} -> {:.2}",
        events.len(),
        last.time,
        last.state_before[bse] / 1e6,
        last.state_before[rtt_min],
        last.ssthresh_after,
        link.bdp_pkts(1000),
        last.cwnd_before,
        last.cwnd_after
    );
    assert!(checked >= 2);
    // The estimate-based threshold is near the pipe size, not half the window at the loss.
    assert!((last.ssthresh_after / link.bdp_pkts(1000) - 1.0).abs() < 0.15);
    assert_eq!(flow.timeouts(), 0);
    assert!(flow.events.iter().all(|e| e.kind == EventKind::Congestion));
}
