use std::time::Duration;

use ccbench_cc::aaimd::Aaimd;
use ccbench_cc::Controller;
use ccbench_sim::{Link, Report, Sim};

use crate::support::config;

/// 10 Mbit/s, 20 ms each way: BDP 51 packets.
fn run(controller: Box<dyn Controller>, buffer: usize) -> Report {
    Sim::new(Link::mbit(10.0, Duration::from_millis(20), buffer))
        .measure_from(Duration::from_secs(20))
        .flow(controller)
        .run(Duration::from_secs(220))
}

#[test]
fn beta_is_the_clamped_rtt_ratio_at_each_event_and_alpha_follows() {
    let report = run(Box::new(Aaimd::new(&config(&[])).unwrap()), 25);
    let flow = &report.flows[0];
    let (beta, alpha) = (flow.state_index("beta"), flow.state_index("alpha"));
    let (rmin, rmax) = (
        flow.state_index("rtt_min_us"),
        flow.state_index("rtt_max_us"),
    );
    let events: Vec<_> = flow.congestion_events().collect();
    assert!(events.len() >= 10, "{}", events.len());
    for event in &events {
        let (min_us, max_us) = (event.state_before[rmin], event.state_before[rmax]);
        let expected = (min_us / max_us).clamp(0.5, 0.8);
        // The traced RTTs are rounded to microseconds.
        assert!(
            (event.state_after[beta] - expected).abs() < 1e-4,
            "{event:?}"
        );
        assert_eq!(
            event.state_after[alpha],
            2.0 * (1.0 - event.state_after[beta])
        );
        assert!((event.cwnd_after - event.state_after[beta] * event.cwnd_before).abs() < 1e-9);
        // Eq. 9: RTTmax fades towards RTTmin by a = 7/8.
        let faded = min_us + 0.875 * (max_us - min_us);
        assert!((event.state_after[rmax] - faded).abs() <= 1.0, "{event:?}");
    }
    // 25 packets of buffer: RTTmax about 40.8 + 25 x 0.8 = 60.8 ms, beta about 0.67.
    let last = events.last().unwrap();
    eprintln!(
        "aaimd 0.5 BDP: beta {:.3} at the last event",
        last.state_after[beta]
    );
    assert!(last.state_after[beta] > 0.6 && last.state_after[beta] < 0.72);
}

#[test]
fn fills_a_half_bdp_buffer_better_than_standard_tcp() {
    let aaimd = run(Box::new(Aaimd::new(&config(&[])).unwrap()), 25);
    let newreno = run(
        Box::new(ccbench_cc::newreno::new(&config(&[])).unwrap()),
        25,
    );
    let reno = run(Box::new(ccbench_cc::reno::new(&config(&[])).unwrap()), 25);
    eprintln!(
        "buffer 0.5 BDP: utilization aaimd {:.4}, newreno {:.4}, reno {:.4}",
        aaimd.utilization, newreno.utilization, reno.utilization
    );
    assert!(aaimd.utilization > 0.99, "{}", aaimd.utilization);
    assert!(aaimd.utilization > newreno.utilization + 0.02);
    assert!(aaimd.utilization > reno.utilization + 0.02);
}

#[test]
fn throughput_variant_converges_to_a_backoff_that_keeps_the_link_busy() {
    let report = run(
        Box::new(Aaimd::new(&config(&[("variant", 1.0)])).unwrap()),
        25,
    );
    let flow = &report.flows[0];
    let beta = flow.state_index("beta");
    let betas: Vec<f64> = flow
        .congestion_events()
        .map(|e| e.state_after[beta])
        .collect();
    eprintln!(
        "aaimd variant 1: betas {:?}, utilization {:.4}",
        &betas[..6],
        report.utilization
    );
    // The first events back off by 0.5; eq. 10 then raises beta above it.
    assert_eq!(betas[0], 0.5);
    assert!(
        betas[3..].iter().all(|&b| b > 0.55 && b <= 0.8),
        "{betas:?}"
    );
    assert!(report.utilization > 0.98, "{}", report.utilization);
}
