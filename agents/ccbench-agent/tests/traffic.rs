//! Traffic models on real kernel-TCP flows between two network namespaces this test creates
//! (prefix `ccbm-`, always deleted): on/off sources deliver their model's long-run rate, a CBR
//! flow its constant rate, a fixed-size flow exactly its size and then ends on its own.
//! Needs root; skipped (with a message) otherwise.

mod common;

use ccbench_common::traffic::{OnOff, Traffic};
use common::{lines, skip_unless_root, Pair, Running, TempFile};
use serde_json::Value;
use std::path::Path;
use std::time::{Duration, Instant};

/// Names this file's namespaces and temporary files.
const PREFIX: &str = "ccbm";

/// Start a receiver on 10.78.0.1:5001 logging every 10 ms, once it is listening.
fn start_recv(pair: &Pair, out: &TempFile) -> Running {
    let (recv, first) = pair.start_recv("10.78.0.1:5001", out, "10");
    assert!(first.contains("\"listening\""), "{first}");
    recv
}

fn summary(path: &Path) -> Value {
    let summary = lines(path).pop().unwrap();
    assert_eq!(summary["type"], "summary", "{summary}");
    summary
}

/// Bytes the receiver logged per connection (`close` lines carry the total).
fn received_per_conn(path: &Path) -> Vec<u64> {
    let received = lines(path);
    let closes: Vec<&Value> = received.iter().filter(|l| l["type"] == "close").collect();
    closes
        .iter()
        .map(|l| l["total_bytes"].as_u64().unwrap())
        .collect()
}

fn assert_close(what: &str, measured: f64, expected: f64, relative: f64) {
    assert!(
        (measured - expected).abs() <= relative * expected,
        "{what}: measured {measured:.0}, expected {expected:.0} within {:.0}%",
        relative * 100.0
    );
}

#[test]
fn on_off_and_cbr_flows_deliver_their_long_run_rates() {
    if skip_unless_root() {
        return;
    }
    let pair = Pair::new(PREFIX, "rate");
    let recv_out = TempFile::new(PREFIX, "rate-recv.jsonl");
    let recv = start_recv(&pair, &recv_out);
    // Three on/off sources (shape 2.5, 10 ms ON / 20 ms OFF on average, 8 Mbit/s while ON:
    // 2.67 Mbit/s each in the long run; about 330 cycles each in 10 s) and one 4 Mbit/s CBR
    // flow, sharing the unshaped veth pair (far faster than their sum).
    let duration_s = 10.0;
    let (rate_bps, on_s, off_s, shape) = (8_000_000u64, 0.01, 0.02, 2.5);
    let expected_onoff_bps = rate_bps as f64 * on_s / (on_s + off_s);
    let seeds = [1u64, 2, 3];
    let onoff_outs: Vec<TempFile> = seeds
        .iter()
        .map(|seed| TempFile::new(PREFIX, &format!("onoff-{seed}.jsonl")))
        .collect();
    let cbr_out = TempFile::new(PREFIX, "cbr.jsonl");
    let mut senders: Vec<Running> = seeds
        .iter()
        .zip(&onoff_outs)
        .map(|(seed, out)| {
            let flow = *seed as u32;
            let seed = seed.to_string();
            let mut cmd = pair.send(
                out,
                flow,
                "10",
                &[
                    "--traffic",
                    "onoff",
                    "--pareto-shape",
                    "2.5",
                    "--on-mean-s",
                    "0.01",
                    "--off-mean-s",
                    "0.02",
                    "--rate-bps",
                    "8000000",
                    "--traffic-seed",
                    &seed,
                ],
            );
            Running::spawn(&mut cmd)
        })
        .collect();
    senders.push(Running::spawn(&mut pair.send(
        &cbr_out,
        9,
        "10",
        &["--traffic", "cbr", "--rate-bps", "4000000"],
    )));
    for sender in senders {
        assert!(sender.wait().success());
    }
    assert!(recv.terminate().success());

    // The receiver numbers connections in accept order; match them by the summaries' totals.
    let mut received = received_per_conn(recv_out.path());
    assert_eq!(received.len(), 4, "{received:?}");
    let mut take_closest = |acked: u64| -> u64 {
        let index = (0..received.len())
            .min_by_key(|&i| received[i].abs_diff(acked))
            .unwrap();
        received.remove(index)
    };

    let mut onoff_goodputs = Vec::new();
    for (seed, out) in seeds.iter().zip(&onoff_outs) {
        let summary = summary(out.path());
        assert_eq!(summary["traffic"], "onoff");
        assert_eq!(summary["completed"], false);
        let ran_s = summary["end_ts"].as_f64().unwrap() - summary["start_ts"].as_f64().unwrap();
        assert!(
            (duration_s..duration_s + 0.2).contains(&ran_s),
            "ran {ran_s}"
        );
        // The sender offered exactly what the model (same parameters and seed) makes
        // available over the flow's duration, give or take the timing of the last units.
        let offered = summary["bytes_offered"].as_u64().unwrap();
        let mut model = OnOff::new(shape, on_s, off_s, rate_bps, *seed).unwrap();
        let modelled = model.available(ran_s);
        assert!(
            offered.abs_diff(modelled) <= 20_000,
            "seed {seed}: offered {offered}, model {modelled}"
        );
        // Everything offered was received (+1 acked byte for the SYN), bar the last units in
        // flight at the end.
        let acked = summary["bytes_acked"].as_u64().unwrap();
        let got = take_closest(acked);
        assert!(
            got <= offered && got + 20_000 >= offered,
            "seed {seed}: received {got} of {offered} offered"
        );
        let goodput = got as f64 * 8.0 / duration_s;
        // One source over ~330 heavy-ish tailed cycles: within 20% of rate·on/(on+off).
        assert_close(
            &format!("on/off goodput, seed {seed}"),
            goodput,
            expected_onoff_bps,
            0.20,
        );
        onoff_goodputs.push(goodput);
    }
    let mean_goodput = onoff_goodputs.iter().sum::<f64>() / onoff_goodputs.len() as f64;
    assert_close(
        "mean on/off goodput",
        mean_goodput,
        expected_onoff_bps,
        0.10,
    );

    let summary = summary(cbr_out.path());
    assert_eq!(summary["traffic"], "cbr");
    let got = take_closest(summary["bytes_acked"].as_u64().unwrap());
    assert_close("cbr goodput", got as f64 * 8.0 / duration_s, 4e6, 0.02);
    eprintln!(
        "on/off goodputs {onoff_goodputs:.0?} bit/s (expected {expected_onoff_bps:.0}), \
         cbr {:.0} bit/s",
        got as f64 * 8.0 / duration_s
    );
}

#[test]
fn fixed_size_flow_delivers_exactly_its_size_and_ends_early() {
    if skip_unless_root() {
        return;
    }
    let pair = Pair::new(PREFIX, "fixed");
    // 20 Mbit/s htb bottleneck with a 50-packet drop-tail buffer, sender to receiver.
    pair.shape("20mbit", "50");
    let recv_out = TempFile::new(PREFIX, "fixed-recv.jsonl");
    let send_out = TempFile::new(PREFIX, "fixed-send.jsonl");
    let recv = start_recv(&pair, &recv_out);
    let size: u64 = 3_000_000;
    let started = Instant::now();
    let status = pair
        .send(
            &send_out,
            0,
            "30",
            &["--traffic", "fixed", "--size-bytes", &size.to_string()],
        )
        .status()
        .unwrap();
    let wall = started.elapsed();
    assert!(status.success());
    // The sender closed normally; give the receiver a moment to read the FIN.
    std::thread::sleep(Duration::from_millis(200));
    assert!(recv.terminate().success());

    let summary = summary(send_out.path());
    assert_eq!(summary["traffic"], "fixed");
    assert_eq!(summary["completed"], true);
    assert_eq!(summary["bytes_offered"], size);
    assert_eq!(summary["bytes_acked"], size + 1, "data plus the SYN");
    // 3 MB at 20 Mbit/s takes at least 1.2 s; it ended long before its 30 s duration.
    let fct = summary["end_ts"].as_f64().unwrap() - summary["start_ts"].as_f64().unwrap();
    assert!((1.2..3.0).contains(&fct), "flow completion time {fct} s");
    assert!(wall < Duration::from_secs(5), "sender ran {wall:?}");
    // Exactly the size arrived, on one connection that the sender closed.
    assert_eq!(received_per_conn(recv_out.path()), vec![size]);
    eprintln!("fixed {size} bytes: flow completion time {fct:.3} s");
}
