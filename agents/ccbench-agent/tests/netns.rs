//! Real flows between two network namespaces this test creates (and always deletes): the sender
//! logs tcp_info every interval, the receiver logs goodput, qmon reads the shaped qdisc.
//! Needs root; skipped (with a message) otherwise.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

const AGENT: &str = env!("CARGO_BIN_EXE_ccbench-agent");

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

fn sh(args: &[&str]) {
    let status = Command::new(args[0]).args(&args[1..]).status().unwrap();
    assert!(status.success(), "{args:?} failed");
}

/// Two namespaces joined by a veth pair, 10.77.0.1 <-> 10.77.0.2; deleted on drop.
struct Pair {
    a: String,
    b: String,
}

impl Pair {
    fn new(tag: &str) -> Pair {
        let id = std::process::id();
        let pair = Pair {
            a: format!("ccbt-{tag}-a-{id}"),
            b: format!("ccbt-{tag}-b-{id}"),
        };
        sh(&["ip", "netns", "add", &pair.a]);
        sh(&["ip", "netns", "add", &pair.b]);
        sh(&[
            "ip", "link", "add", "va", "netns", &pair.a, "type", "veth", "peer", "name", "vb",
            "netns", &pair.b,
        ]);
        for (ns, dev, addr) in [
            (&pair.a, "va", "10.77.0.1/24"),
            (&pair.b, "vb", "10.77.0.2/24"),
        ] {
            sh(&["ip", "-n", ns, "addr", "add", addr, "dev", dev]);
            sh(&["ip", "-n", ns, "link", "set", dev, "up"]);
            sh(&["ip", "-n", ns, "link", "set", "lo", "up"]);
        }
        pair
    }

    fn exec(&self, ns: &str, args: &[&str]) -> Command {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", ns]).args(args);
        cmd
    }
}

impl Drop for Pair {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.a]).status();
        let _ = Command::new("ip").args(["netns", "del", &self.b]).status();
    }
}

/// A child process that is killed when dropped, so a failing test leaves nothing running.
/// Start a receiver in the pair's first namespace; returns it and its `listening` line.
fn start_recv(pair: &Pair, listen: &str, out: &Path, interval_ms: &str) -> (Running, String) {
    let mut recv = Running(Some(
        pair.exec(
            &pair.a,
            &[
                AGENT,
                "recv",
                "--listen",
                listen,
                "--out",
                out.to_str().unwrap(),
                "--interval-ms",
                interval_ms,
            ],
        )
        .stdout(Stdio::piped())
        .spawn()
        .unwrap(),
    ));
    let mut first = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(recv.child().stdout.as_mut().unwrap()),
        &mut first,
    )
    .unwrap();
    (recv, first)
}

struct Running(Option<Child>);

impl Running {
    fn child(&mut self) -> &mut Child {
        self.0.as_mut().unwrap()
    }

    /// SIGTERM, then the exit status.
    fn terminate(mut self) -> std::process::ExitStatus {
        let mut child = self.0.take().unwrap();
        // SAFETY: plain kill(2) on our child.
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        child.wait().unwrap()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn tmp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("ccbt-{}-{name}", std::process::id()))
}

#[test]
fn bulk_flow_with_tcp_info_goodput_and_queue_samples() {
    if !is_root() {
        eprintln!("skipped: needs root (network namespaces)");
        return;
    }
    let pair = Pair::new("flow");
    // Shape b -> a at 20 Mbit/s with a 50-packet drop-tail buffer.
    let ns_b = pair.b.clone();
    sh(&[
        "ip", "netns", "exec", &ns_b, "tc", "qdisc", "add", "dev", "vb", "root", "handle", "1:",
        "htb", "default", "1",
    ]);
    sh(&[
        "ip", "netns", "exec", &ns_b, "tc", "class", "add", "dev", "vb", "parent", "1:", "classid",
        "1:1", "htb", "rate", "20mbit", "burst", "15140", "cburst", "15140",
    ]);
    sh(&[
        "ip", "netns", "exec", &ns_b, "tc", "qdisc", "add", "dev", "vb", "parent", "1:1", "handle",
        "10:", "pfifo", "limit", "50",
    ]);
    let (recv_out, send_out, q_out) = (tmp("recv.jsonl"), tmp("send.jsonl"), tmp("q.jsonl"));
    let (recv, first) = start_recv(&pair, "10.77.0.1:5001", &recv_out, "10");
    assert!(first.contains("\"listening\""), "{first}");
    let qmon = Running(Some(
        pair.exec(
            &pair.b,
            &[
                AGENT,
                "qmon",
                "--dev",
                "vb",
                "--out",
                q_out.to_str().unwrap(),
            ],
        )
        .spawn()
        .unwrap(),
    ));
    let status = pair
        .exec(
            &pair.b,
            &[
                AGENT,
                "send",
                "--dst",
                "10.77.0.1:5001",
                "--cc",
                "reno",
                "--duration-s",
                "2",
                "--interval-ms",
                "10",
                "--flow-id",
                "4",
                "--out",
                send_out.to_str().unwrap(),
            ],
        )
        .status()
        .unwrap();
    assert!(status.success());
    for child in [recv, qmon] {
        assert!(child.terminate().success());
    }

    let sent = lines(&send_out);
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
    let received = lines(&recv_out);
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
    let queue = lines(&q_out);
    let leaf: Vec<&Value> = queue.iter().filter(|q| q["handle"] == "10:").collect();
    assert!(
        !leaf.is_empty()
            && leaf
                .iter()
                .all(|q| q["kind"] == "pfifo" && q["parent"] == "1:1")
    );
    assert!(leaf.iter().all(|q| q["qlen_pkts"].as_u64().unwrap() <= 50));
    assert!(leaf.iter().any(|q| q["qlen_pkts"].as_u64().unwrap() > 0));
    for f in [recv_out, send_out, q_out] {
        let _ = std::fs::remove_file(f);
    }
}

#[test]
fn two_senders_one_receiver_common_start_and_sigterm() {
    if !is_root() {
        eprintln!("skipped: needs root (network namespaces)");
        return;
    }
    let pair = Pair::new("many");
    let recv_out = tmp("many-recv.jsonl");
    let send_outs = [tmp("many-send0.jsonl"), tmp("many-send1.jsonl")];
    // Port 0: the listening line names the port the kernel picked.
    let (recv, first) = start_recv(&pair, "10.77.0.1:0", &recv_out, "20");
    let listening: Value = serde_json::from_str(&first).unwrap();
    let addr = listening["addr"].as_str().unwrap().to_string();
    assert!(
        addr.starts_with("10.77.0.1:") && !addr.ends_with(":0"),
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
            Running(Some(
                pair.exec(
                    &pair.b,
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
                        out.to_str().unwrap(),
                    ],
                )
                .spawn()
                .unwrap(),
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
        let sent = lines(out);
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
        let _ = std::fs::remove_file(out);
    }
    let received = lines(&recv_out);
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
    let _ = std::fs::remove_file(recv_out);
}

#[test]
fn unavailable_congestion_control_is_a_clear_usage_error() {
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
            tmp("never.jsonl").to_str().unwrap(),
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
    let _ = std::fs::remove_file(tmp("never.jsonl"));
}
