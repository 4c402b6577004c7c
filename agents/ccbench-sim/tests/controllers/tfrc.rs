use std::time::Duration;

use ccbench_cc::tfrc::{RoundOutcome, Tfrc};
use ccbench_cc::{Config, Time};

#[path = "../../../ccbench-cc/src/tfrc_appendix.rs"]
mod appendix;
use appendix::appendix_f;

/// The tests' usual `Config` with a seed of its own.
fn config(params: &[(&str, f64)], seed: u64) -> Config {
    Config::with_params(1000, params, seed)
}

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

/// What the test needs from each round end: the outcome and the R and B it used.
type RoundSnapshot = (Option<RoundOutcome>, f64, f64);

fn snapshot(tfrc: &Tfrc, _now: Time) -> RoundSnapshot {
    (
        tfrc.last_round(),
        tfrc.rtt_estimate_s(),
        tfrc.base_timeout_s(),
    )
}

#[test]
fn through_a_bottleneck_every_round_follows_the_rules() {
    // Seed 004 §III-C.1's bottleneck (1.5 Mbit/s, 50 ms) with a 20-packet drop-tail buffer,
    // TFRC alone for 300 s (100 rounds of M = 3 s).
    let watched = crate::support::Watched::new(Tfrc::new(&config(&[], 1)).unwrap(), snapshot);
    let (_, _, snapshots) = watched.handles();
    let link = ccbench_sim::Link::mbit(1.5, ms(50), 20);
    let report = ccbench_sim::Sim::new(link)
        .measure_from(Duration::from_secs(30))
        .flow(Box::new(watched))
        .run(Duration::from_secs(300));
    let snapshots = snapshots.lock().unwrap();
    assert_eq!(snapshots.len(), 100);
    let mut rate = 40.0;
    let (mut doubled, mut formula) = (0, 0);
    for (i, &(round, r, b)) in snapshots.iter().enumerate() {
        let round = round.expect("a round ended");
        assert_eq!(round.ended_at, ms(3000 * (i as u64 + 1)));
        if round.lost == 0 {
            assert!(round.received > 0);
            assert_eq!(round.next_rate_pps, 2.0 * rate, "round {i}");
            doubled += 1;
        } else {
            let p = round.lost as f64 / (round.received + round.lost) as f64;
            let want = appendix_f(100.0, p, r, b);
            assert!(
                (round.next_rate_pps - want).abs() < 1e-9 * want,
                "round {i}"
            );
            formula += 1;
        }
        rate = round.next_rate_pps;
    }
    let flow = &report.flows[0];
    println!(
        "tfrc alone on 1.5 Mbit/s: {doubled} loss-free rounds (doubled), {formula} lossy \
         (formula); goodput {:.3} Mbit/s, utilization {:.3}, drops {}, abandoned {}",
        flow.goodput_bytes_per_s * 8e-6,
        report.utilization,
        flow.drops,
        flow.abandoned
    );
    assert!(
        doubled >= 5 && formula >= 5,
        "{doubled} doubled, {formula} by the formula"
    );
    assert_eq!(flow.retransmissions, 0, "TFRC never retransmits");
    // Alone, a doubling from just below the link rate overshoots it up to twice, the round's
    // loss frequency is then high and the formula's rate low (the seed's flows always
    // shared the link): the rules above hold, the utilization is what they give.
}

#[test]
fn friendliness_against_newreno_on_a_shared_bottleneck() {
    // Seed 004 §III-C.1: equal numbers of TFRC and TCP flows over a 1.5 Mbit/s, 50 ms
    // bottleneck, started slightly apart; F = mean TFRC throughput / mean TCP throughput.
    for (pairs, buffer) in [(1usize, 20usize), (5, 40)] {
        let link = ccbench_sim::Link::mbit(1.5, ms(50), buffer);
        let mut sim = ccbench_sim::Sim::new(link).measure_from(Duration::from_secs(100));
        for i in 0..pairs {
            let tfrc = Tfrc::new(&config(&[], i as u64)).unwrap();
            let tcp = ccbench_cc::new_controller("newreno", &config(&[], 0)).unwrap();
            sim = sim
                .flow_with(ccbench_sim::Flow::new(Box::new(tfrc)).start_at(ms(97 * i as u64)))
                .flow_with(ccbench_sim::Flow::new(tcp).start_at(ms(53 + 97 * i as u64)));
        }
        let report = sim.run(Duration::from_secs(1000));
        let mean = |id: &str| {
            let flows: Vec<_> = report.flows.iter().filter(|f| f.algorithm == id).collect();
            flows.iter().map(|f| f.goodput_bytes_per_s).sum::<f64>() / flows.len() as f64
        };
        let (t_c, t_t) = (mean("tfrc"), mean("newreno"));
        let f = t_c / t_t;
        println!(
            "tfrc vs newreno, {pairs}+{pairs} flows, buffer {buffer}: F = {f:.3} (TFRC \
             {:.1} kbit/s, NewReno {:.1} kbit/s per flow), utilization {:.3}",
            t_c * 8e-3,
            t_t * 8e-3,
            report.utilization
        );
        assert!(t_c > 0.0 && t_t > 0.0);
        assert!((0.5..2.0).contains(&f), "F = {f}");
    }
}
