//! Real flows between two network namespaces this test creates (`ccbt-*`, always deleted): the
//! sender logs tcp_info every interval, the receiver logs goodput, qmon reads the shaped qdisc.
//! Needs root; skipped (with a message) otherwise.

mod common;

use common::{lines, skip_unless_root, Pair, Running, TempFile, AGENT, SENDER_DEV};
use serde_json::Value;
use std::process::Command;

/// Names this file's namespaces and temporary files.
const PREFIX: &str = "ccbt";

#[test]
fn bulk_flow_with_tcp_info_goodput_and_queue_samples() {
    if skip_unless_root() {
        return;
    }
    let pair = Pair::new(PREFIX, "flow");
    // Shape sender -> receiver at 20 Mbit/s with a 50-packet drop-tail buffer.
    pair.shape("20mbit", "50");
    let (recv_out, send_out, q_out) = (
        TempFile::new(PREFIX, "recv.jsonl"),
        TempFile::new(PREFIX, "send.jsonl"),
        TempFile::new(PREFIX, "q.jsonl"),
    );
    let (recv, first) = pair.start_recv("10.78.0.1:5001", &recv_out, "10");
    assert!(first.contains("\"listening\""), "{first}");
    let qmon = Running::spawn(&mut pair.exec(
        &pair.sender,
        &[AGENT, "qmon", "--dev", SENDER_DEV, "--out", q_out.arg()],
    ));
    let status = pair
        .send(&send_out, 4, "2", &["--interval-ms", "10"])
        .status()
        .unwrap();
    assert!(status.success());
    for child in [recv, qmon] {
        assert!(child.terminate().success());
    }

    let sent = lines(send_out.path());
    let samples: Vec<&Value> = sent.iter().filter(|l| l["type"] == "tcp_info").collect();
    assert!(
        (150..=260).contains(&samples.len()),
        "{} tcp_info samples",
        samples.len()
    );
    assert!(samples
        .iter()
        .all(|s| s["flow"] == 4 && s["cwnd_pkts"].as_u64().unwrap() > 0));
    // Sampled on an absolute schedule: the median spacing is the interval.
    let mut gaps: Vec<f64> = samples
        .windows(2)
        .map(|w| w[1]["ts"].as_f64().unwrap() - w[0]["ts"].as_f64().unwrap())
        .collect();
    gaps.sort_by(f64::total_cmp);
    let median = gaps[gaps.len() / 2];
    assert!((0.009..=0.011).contains(&median), "median gap {median}");
    let summary = sent.last().unwrap();
    assert_eq!(summary["type"], "summary");
    assert_eq!(summary["cc"], "reno");
    let received = lines(recv_out.path());
    let total: u64 = received
        .iter()
        .filter(|l| l["type"] == "recv")
        .map(|l| l["bytes"].as_u64().unwrap())
        .sum();
    // The flow stops at its duration: what was acknowledged arrived (+1 for the SYN), and
    // little more (what was in flight when the connection was reset).
    let acked = summary["bytes_acked"].as_u64().unwrap();
    assert!(
        total + 1 >= acked && total < acked + 200_000,
        "received {total}, acked {acked}"
    );
    // About 2 s at 20 Mbit/s (payload is ~96% of the wire rate).
    let mbit = total as f64 * 8.0 / 2.0 / 1e6;
    assert!((17.0..=20.5).contains(&mbit), "goodput {mbit:.2} Mbit/s");
    assert!(received.iter().any(|l| l["type"] == "close"));
    let queue = lines(q_out.path());
    let leaf: Vec<&Value> = queue.iter().filter(|q| q["handle"] == "10:").collect();
    assert!(
        !leaf.is_empty()
            && leaf
                .iter()
                .all(|q| q["kind"] == "pfifo" && q["parent"] == "1:1")
    );
    assert!(leaf.iter().all(|q| q["qlen_pkts"].as_u64().unwrap() <= 50));
    assert!(leaf.iter().any(|q| q["qlen_pkts"].as_u64().unwrap() > 0));
}

#[test]
fn two_senders_one_receiver_common_start_and_sigterm() {
    if skip_unless_root() {
        return;
    }
    let pair = Pair::new(PREFIX, "many");
    let recv_out = TempFile::new(PREFIX, "many-recv.jsonl");
    let send_outs = [
        TempFile::new(PREFIX, "many-send0.jsonl"),
        TempFile::new(PREFIX, "many-send1.jsonl"),
    ];
    // Port 0: the listening line names the port the kernel picked.
    let (recv, first) = pair.start_recv("10.78.0.1:0", &recv_out, "20");
    let listening: Value = serde_json::from_str(&first).unwrap();
    let addr = listening["addr"].as_str().unwrap().to_string();
    assert!(
        addr.starts_with("10.78.0.1:") && !addr.ends_with(":0"),
        "{addr}"
    );
    let start_at = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
        + 0.5;
    let start_arg = format!("{start_at:.6}");
    let senders: Vec<Running> = send_outs
        .iter()
        .enumerate()
        .map(|(i, out)| {
            let flow = i.to_string();
            let cc = ["cubic", "reno"][i];
            Running::spawn(&mut pair.exec(
                &pair.sender,
                &[
                    AGENT,
                    "send",
                    "--dst",
                    &addr,
                    "--cc",
                    cc,
                    "--duration-s",
                    "30",
                    "--interval-ms",
                    "10",
                    "--start-at",
                    &start_arg,
                    "--flow-id",
                    &flow,
                    "--out",
                    out.arg(),
                ],
            ))
        })
        .collect();
    std::thread::sleep(std::time::Duration::from_millis(1500));
    // SIGTERM stops a sender cleanly: exit 0, output flushed, summary written.
    for sender in senders {
        assert!(sender.terminate().success());
    }
    assert!(recv.terminate().success());
    for (i, out) in send_outs.iter().enumerate() {
        let sent = lines(out.path());
        let summary = sent.last().unwrap();
        assert_eq!(summary["type"], "summary");
        assert_eq!(summary["flow"], i as u64);
        assert_eq!(summary["cc"], ["cubic", "reno"][i]);
        let start = summary["start_ts"].as_f64().unwrap();
        assert!(
            start >= start_at && start < start_at + 0.05,
            "started {start}, asked {start_at}"
        );
        let ran = summary["end_ts"].as_f64().unwrap() - start;
        assert!((0.8..=1.3).contains(&ran), "ran {ran} s");
        assert!(summary["bytes_acked"].as_u64().unwrap() > 1_000_000);
        let samples = sent.iter().filter(|l| l["type"] == "tcp_info").count();
        assert!((70..=140).contains(&samples), "{samples} samples");
    }
    let received = lines(recv_out.path());
    for conn in [0u64, 1] {
        let of_conn = |kind: &str| {
            received
                .iter()
                .filter(|l| l["type"] == kind && l["conn"] == conn)
                .count()
        };
        assert!(of_conn("recv") > 10, "conn {conn}");
        assert_eq!(of_conn("close"), 1, "conn {conn}");
    }
    // A `recv` line only for a connection that got bytes in that interval.
    assert!(received
        .iter()
        .filter(|l| l["type"] == "recv")
        .all(|l| l["bytes"].as_u64().unwrap() > 0));
}

#[test]
fn unavailable_congestion_control_is_a_clear_usage_error() {
    let never = TempFile::new(PREFIX, "never.jsonl");
    let out = Command::new(AGENT)
        .args([
            "send",
            "--dst",
            "127.0.0.1:9",
            "--cc",
            "nosuchcc",
            "--duration-s",
            "1",
            "--out",
            never.arg(),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err: Value = serde_json::from_slice(&out.stderr).unwrap();
    let msg = err["error"].as_str().unwrap();
    assert!(
        msg.contains("'nosuchcc' is not available on this host (available: "),
        "{msg}"
    );
}
