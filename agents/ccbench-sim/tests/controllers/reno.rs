use std::time::Duration;

use ccbench_cc::reno::new;
use ccbench_sim::{EventKind, Link, Sim};

use crate::support::config;

/// 10 Mbit/s, 20 ms each way, 1000-byte packets: BDP 51 packets.
fn link(buffer_pkts: usize) -> Link {
    Link::mbit(10.0, Duration::from_millis(20), buffer_pkts)
}

#[test]
fn fills_the_link_at_one_bdp_of_buffer_with_a_halving_sawtooth() {
    let report = Sim::new(link(51))
        .measure_from(Duration::from_secs(10))
        .flow(Box::new(new(&config(&[])).unwrap()))
        .run(Duration::from_secs(110));
    let flow = &report.flows[0];
    eprintln!(
        "reno 1 BDP: utilization {:.4}, mean queue {:.2}, events {}, timeouts {}",
        report.utilization,
        report.mean_queue_pkts,
        flow.congestion_events().count(),
        flow.timeouts()
    );
    // Classic Reno: the overshoot that fills the buffer loses two packets one round trip
    // apart; fast recovery ends at the first partial ACK, so the second loss halves again.
    assert!(report.utilization >= 0.9, "{}", report.utilization);
    let steady: Vec<_> = flow
        .events
        .iter()
        .filter(|e| e.time > Duration::from_secs(2))
        .collect();
    assert!(steady.iter().all(|e| e.kind == EventKind::Congestion));
    for event in &steady {
        // Exactly half of the window the loss was detected at.
        assert_eq!(event.ssthresh_after, event.cwnd_before / 2.0);
        assert_eq!(event.cwnd_after, event.ssthresh_after);
    }
    assert!(steady.len() >= 20, "{}", steady.len());
    let peaks: Vec<_> = steady.iter().step_by(2).collect();
    for (peak, second) in steady
        .iter()
        .step_by(2)
        .zip(steady.iter().skip(1).step_by(2))
    {
        // Drops start at 1 BDP + 1 BDP of buffer + 1 in service = 103 packets.
        assert!(
            (peak.cwnd_before - 103.0).abs() < 0.1,
            "{}",
            peak.cwnd_before
        );
        assert!(second.time - peak.time < Duration::from_millis(100));
        assert!((second.cwnd_before - peak.cwnd_after).abs() < 0.1);
    }
    // The sawtooth repeats with a fixed period (deterministic model).
    let periods: Vec<Duration> = peaks.windows(2).map(|w| w[1].time - w[0].time).collect();
    assert!(periods
        .iter()
        .all(|p| p.abs_diff(periods[0]) < Duration::from_millis(2)));
    // Between events the window grows by one packet per round trip.
    let rounds: Vec<_> = flow
        .rounds
        .iter()
        .filter(|r| r.time > steady[1].time && r.time < steady[2].time && !r.in_recovery)
        .collect();
    let growth: Vec<f64> = rounds.windows(2).map(|w| w[1].cwnd - w[0].cwnd).collect();
    assert!(growth.len() > 40);
    let middle = &growth[2..growth.len() - 2];
    assert!(middle.iter().all(|g| (g - 1.0).abs() < 0.1), "{growth:?}");

    // NewReno recovers both losses in one episode: one halving per cycle, a full link.
    let newreno = Sim::new(link(51))
        .measure_from(Duration::from_secs(10))
        .flow(Box::new(ccbench_cc::newreno::new(&config(&[])).unwrap()))
        .run(Duration::from_secs(110));
    let nr = &newreno.flows[0];
    eprintln!(
        "newreno 1 BDP: utilization {:.4}, mean queue {:.2}, events {}, timeouts {}",
        newreno.utilization,
        newreno.mean_queue_pkts,
        nr.congestion_events().count(),
        nr.timeouts()
    );
    assert!(newreno.utilization >= 0.99, "{}", newreno.utilization);
    let nr_steady: Vec<_> = nr
        .events
        .iter()
        .filter(|e| e.time > Duration::from_secs(8))
        .collect();
    assert!(nr_steady
        .iter()
        .all(|e| (e.cwnd_before - 103.0).abs() < 0.1));
    // One halving per cycle: 52 round trips from 51.5 back to 103 packets.
    assert!(nr_steady
        .windows(2)
        .all(|w| w[1].time - w[0].time > Duration::from_secs(3)));
}

#[test]
fn a_timeout_restarts_from_one_packet() {
    let report = Sim::new(link(51))
        .flow_with(
            ccbench_sim::Flow::new(Box::new(new(&config(&[])).unwrap()))
                .drop_first_transmission_of(20..40),
        )
        .run(Duration::from_secs(5));
    let flow = &report.flows[0];
    let timeout = flow
        .events
        .iter()
        .find(|e| e.kind == EventKind::Timeout)
        .unwrap();
    assert_eq!(timeout.cwnd_after, 1.0);
    assert_eq!(timeout.ssthresh_after, (timeout.cwnd_before / 2.0).max(2.0));
}

#[test]
fn starts_at_the_simulations_initial_window() {
    // Sim::initial_window reaches the controller through the simulator's probe: slow start
    // begins at 10 packets (RFC 6928), one more per ACK.
    for initial in [1u32, 10] {
        let report = Sim::new(link(51))
            .initial_window(initial)
            .per_ack_samples(true)
            .flow(Box::new(new(&config(&[])).unwrap()))
            .run(Duration::from_millis(200));
        let first = &report.flows[0].acks[0];
        assert_eq!(
            first.cwnd,
            f64::from(initial) + 1.0,
            "initial window {initial}"
        );
    }
}
