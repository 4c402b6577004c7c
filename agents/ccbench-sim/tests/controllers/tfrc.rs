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

/// Seed 004 Fig. 2(a) / 3 with 10 flows as `schemas/examples/seeds/004/fig02a-03-s1.yaml` runs
/// it: 1.5 Mbit/s, 50 ms, 50-packet buffer, 1448-byte packets, initial window 10, five TFRC
/// (S1, M) and five Reno flows alternating 0.1 s apart (`shift` ms more, for variety), each
/// sender's packets delayed uniform [0, 8] ms, the first 10 s skipped. `delayed_acks`: the
/// Reno receivers ACK every second packet (the template's do since this test found the
/// cause; TFRC keeps its default 1 s lower bound of B here, the template's is 0.2 s).
/// Returns (F, FC, TFRC loss rate, Reno loss rate).
fn fig2a(m: f64, secs: u64, delayed_acks: bool, shift: u64) -> (f64, f64, f64, f64) {
    let link = ccbench_sim::Link::mbit(1.5, ms(50), 50);
    let mut sim = ccbench_sim::Sim::new(link)
        .packet_bytes(1448)
        .initial_window(10)
        .measure_from(Duration::from_secs(10));
    for i in 0..5u64 {
        let tfrc = Tfrc::new(&Config::with_params(1448, &[("m", m)], i)).unwrap();
        let reno = ccbench_cc::new_controller("reno", &Config::with_params(1448, &[], 0)).unwrap();
        let jitter =
            |flow: ccbench_sim::Flow, k: u64| flow.send_jitter(ms(8), 1000 * shift + 2 * i + k);
        sim = sim
            .flow_with(jitter(
                ccbench_sim::Flow::new(Box::new(tfrc)).start_at(ms(200 * i + shift)),
                0,
            ))
            .flow_with(jitter(
                ccbench_sim::Flow::new(reno)
                    .start_at(ms(100 + 200 * i + shift))
                    .delayed_acks(delayed_acks),
                1,
            ));
    }
    let report = sim.run(Duration::from_secs(secs));
    let of = |id: &str| -> Vec<&ccbench_sim::FlowReport> {
        report.flows.iter().filter(|f| f.algorithm == id).collect()
    };
    let (tfrc, reno) = (of("tfrc"), of("reno"));
    let goodputs =
        |flows: &[&ccbench_sim::FlowReport]| flows.iter().map(|f| f.goodput_bytes_per_s).collect();
    let (g_t, g_r): (Vec<f64>, Vec<f64>) = (goodputs(&tfrc), goodputs(&reno));
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let max = g_t.iter().cloned().fold(0.0, f64::max);
    let min = g_t.iter().cloned().fold(f64::INFINITY, f64::min);
    let loss = |flows: &[&ccbench_sim::FlowReport]| {
        let drops: u64 = flows.iter().map(|f| f.drops).sum();
        let delivered: u64 = flows.iter().map(|f| f.total_delivered_bytes / 1448).sum();
        drops as f64 / (drops + delivered) as f64
    };
    (mean(&g_t) / mean(&g_r), max / min, loss(&tfrc), loss(&reno))
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

#[test]
fn seed_004_ten_flows_short_runs_and_the_formulas_delayed_acks() {
    // What the stack measured (docs/reproductions.md, 40 s runs: E = 1.78 / 1.60 / 1.84, FC =
    // 2.8 / 2.3 / 2.7 at M = 2 / 3.5 / 5 s; issue 21: TFRC losing 10-13% of its packets, TCP
    // 4.4-5.2%) comes out of the simulator too, and has two causes, neither a departure of
    // `tfrc.rs` from the seed:
    // 1. The start. Five TFRC flows at r_0 = 40 packets/s (2.3 Mbit/s of 1448-byte packets)
    //    and five Reno slow starts overload the link in the first round; the round's loss
    //    frequency (and the next round's, which counts the first round's tail) is tens of
    //    percent, the formula's rate a fraction of a packet per second, and the rate only
    //    doubles per loss-free round back to the ~13 packets/s fair share: tens of seconds,
    //    most of a 40 s run (§II-B; the paper's runs last 1000 s). FC: short runs only.
    // 2. The formula's delayed ACKs. The Appendix is Padhye et al.'s model with b = 2 packets
    //    per ACK (W(p) = 2/3 + sqrt(4(1-p)/(3p) + 4/9), R·(W + 1)); the template's Reno
    //    receivers ACKed every packet (b = 1), which at the same p and R is about sqrt(2) more
    //    throughput. With the Reno receivers delaying ACKs (the template's now do), F comes
    //    close to 1.
    let shifts = 0..5u64;
    println!("M, run: F / FC / TFRC loss / Reno loss (medians of 5)");
    for m in [2.0, 3.5, 5.0] {
        let points = |secs: u64, delayed: bool| {
            let runs: Vec<_> = shifts.clone().map(|s| fig2a(m, secs, delayed, s)).collect();
            let col = |k: usize| {
                median(
                    runs.iter()
                        .map(|r| [r.0, r.1, r.2, r.3][k])
                        .collect::<Vec<_>>(),
                )
            };
            (col(0), col(1), col(2), col(3))
        };
        let short = points(40, false);
        let long = points(1000, false);
        let long_delayed = points(1000, true);
        println!(
            "M = {m}: 40 s {short:.2?}; 1000 s {long:.2?}; 1000 s, Reno delaying ACKs \
             {long_delayed:.2?}"
        );
        // 40 s: TFRC loses about twice Reno's share of its packets, and is below Reno.
        assert!(short.2 > 1.8 * short.3, "M = {m}: {short:?}");
        assert!(short.0 < 0.8, "M = {m}: {short:?}");
        // 1000 s: fair among themselves; below Reno while Reno ACKs every packet.
        assert!(long.1 < 1.3, "M = {m}: {long:?}");
        assert!(long.0 < 0.9, "M = {m}: {long:?}");
        // With the Reno receivers delaying ACKs (the formula's b = 2) E is within 1.25.
        let e = long_delayed.0.max(1.0 / long_delayed.0);
        assert!(e < 1.25, "M = {m}: {long_delayed:?}");
        assert!(long_delayed.0 > long.0 * 1.2, "M = {m}");
    }
}
