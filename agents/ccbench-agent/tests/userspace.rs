//! Real flows of the userspace UDP transport (`usend` / `urecv`) between two network namespaces
//! this test creates (`ccbu-*`, always deleted): through an htb 20 Mbit/s bottleneck with a
//! pfifo buffer, with a small buffer that drops, at a constant rate, and stopped by SIGTERM.
//! Needs root; skipped (with a message) otherwise. The flag checks need no root.

use serde_json::Value;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const AGENT: &str = env!("CARGO_BIN_EXE_ccbench-agent");

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

fn skip() -> bool {
    if !is_root() {
        eprintln!("skipped: needs root (network namespaces)");
        return true;
    }
    false
}

fn sh(args: &[&str]) {
    let status = Command::new(args[0]).args(&args[1..]).status().unwrap();
    assert!(status.success(), "{args:?} failed");
}

/// Two namespaces joined by a veth pair, 10.78.0.1 (a, receiver) <-> 10.78.0.2 (b, sender);
/// deleted on drop (which takes the veth and qdiscs with them).
struct Pair {
    a: String,
    b: String,
}

impl Pair {
    fn new(tag: &str) -> Pair {
        let id = std::process::id();
        let pair = Pair {
            a: format!("ccbu-{tag}-a-{id}"),
            b: format!("ccbu-{tag}-b-{id}"),
        };
        sh(&["ip", "netns", "add", &pair.a]);
        sh(&["ip", "netns", "add", &pair.b]);
        sh(&[
            "ip", "link", "add", "va", "netns", &pair.a, "type", "veth", "peer", "name", "vb",
            "netns", &pair.b,
        ]);
        for (ns, dev, addr) in [
            (&pair.a, "va", "10.78.0.1/24"),
            (&pair.b, "vb", "10.78.0.2/24"),
        ] {
            sh(&["ip", "-n", ns, "addr", "add", addr, "dev", dev]);
            sh(&["ip", "-n", ns, "link", "set", dev, "up"]);
            sh(&["ip", "-n", ns, "link", "set", "lo", "up"]);
        }
        pair
    }

    /// The sender's side (vb) becomes an htb bottleneck of `rate` with a pfifo of `limit`.
    fn shape(&self, rate: &str, limit: &str) {
        let b = self.b.as_str();
        sh(&[
            "ip", "netns", "exec", b, "tc", "qdisc", "add", "dev", "vb", "root", "handle", "1:",
            "htb", "default", "1",
        ]);
        sh(&[
            "ip", "netns", "exec", b, "tc", "class", "add", "dev", "vb", "parent", "1:", "classid",
            "1:1", "htb", "rate", rate, "burst", "15140", "cburst", "15140",
        ]);
        sh(&[
            "ip", "netns", "exec", b, "tc", "qdisc", "add", "dev", "vb", "parent", "1:1", "handle",
            "10:", "pfifo", "limit", limit,
        ]);
    }

    fn exec(&self, ns: &str, args: &[&str]) -> Command {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", ns]).args(args);
        cmd
    }

    /// `urecv` in namespace a; returns once it printed its `listening` line.
    fn start_urecv(&self, out: &Path) -> Running {
        let mut child = self
            .exec(
                &self.a,
                &[
                    AGENT,
                    "urecv",
                    "--listen",
                    "10.78.0.1:5101",
                    "--out",
                    out.to_str().unwrap(),
                ],
            )
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut first = String::new();
        std::io::BufReader::new(child.stdout.as_mut().unwrap())
            .read_line(&mut first)
            .unwrap();
        assert!(first.contains("\"listening\""), "{first}");
        Running(Some(child))
    }

    fn usend(&self, extra: &[&str], out: &Path) -> Command {
        let mut args = vec![
            AGENT,
            "usend",
            "--dst",
            "10.78.0.1:5101",
            "--out",
            out.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        self.exec(&self.b, &args)
    }
}

impl Drop for Pair {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.a]).status();
        let _ = Command::new("ip").args(["netns", "del", &self.b]).status();
    }
}

/// A child process killed when dropped, so a failing test leaves nothing running.
struct Running(Option<Child>);

impl Running {
    fn pid(&self) -> i32 {
        self.0.as_ref().unwrap().id() as i32
    }

    /// SIGTERM, then the exit status and how long the exit took.
    fn terminate(mut self) -> (std::process::ExitStatus, Duration) {
        let mut child = self.0.take().unwrap();
        let asked = Instant::now();
        // SAFETY: plain kill(2) on our child.
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        let status = child.wait().unwrap();
        (status, asked.elapsed())
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

fn of_type<'a>(lines: &'a [Value], kind: &str) -> Vec<&'a Value> {
    lines.iter().filter(|l| l["type"] == kind).collect()
}

fn tmp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("ccbu-{}-{name}", std::process::id()))
}

/// Receiver goodput in Mbit/s from its `recv` lines in (from, to].
fn goodput_between(received: &[Value], from: f64, to: f64) -> f64 {
    let bytes: u64 = of_type(received, "recv")
        .iter()
        .filter(|l| (from..=to).contains(&l["ts"].as_f64().unwrap()))
        .map(|l| l["bytes"].as_u64().unwrap())
        .sum();
    bytes as f64 * 8.0 / (to - from) / 1e6
}

/// Receiver goodput in Mbit/s between its first and last byte.
fn goodput_mbit(close: &Value) -> f64 {
    let span = close["last_byte_ts"].as_f64().unwrap() - close["first_byte_ts"].as_f64().unwrap();
    close["total_bytes"].as_f64().unwrap() * 8.0 / span / 1e6
}

#[test]
fn reno_and_newreno_fill_a_20mbit_bottleneck_with_exact_integrity() {
    if skip() {
        return;
    }
    for cc in ["reno", "newreno"] {
        let pair = Pair::new("bn");
        pair.shape("20mbit", "50");
        let (recv_out, send_out) = (tmp(&format!("{cc}-r.jsonl")), tmp(&format!("{cc}-s.jsonl")));
        let recv = pair.start_urecv(&recv_out);
        let status = pair
            .usend(
                &["--cc", cc, "--duration-s", "4", "--flow-id", "7"],
                &send_out,
            )
            .status()
            .unwrap();
        assert!(status.success(), "{cc}");
        let (status, _) = recv.terminate();
        assert!(status.success());

        let sent = lines(&send_out);
        let samples = of_type(&sent, "transport");
        assert!(
            (390..=600).contains(&samples.len()),
            "{cc}: {} transport lines",
            samples.len()
        );
        for key in [
            "cwnd_pkts",
            "srtt_s",
            "rttvar_s",
            "min_rtt_s",
            "retransmits",
            "lost_pkts",
            "bytes_acked",
            "bytes_sent",
            "mss",
        ] {
            assert!(samples.iter().all(|s| !s[key].is_null()), "{cc}: {key}");
        }
        assert!(samples.iter().all(|s| s["flow"] == 7 && s["mss"] == 1448));
        // Reno fills the 50-packet buffer: drops, each answered by a congestion event.
        let losses = of_type(&sent, "loss");
        assert!(
            !losses.is_empty(),
            "{cc}: no loss in 3 s of bulk into 50 packets"
        );
        assert!(
            losses.iter().any(|l| l["event"] == "congestion"),
            "{cc}: {losses:?}"
        );
        let summary = sent.last().unwrap();
        assert_eq!(summary["type"], "summary");
        assert_eq!(
            (summary["cc"].as_str(), summary["runtime"].as_str()),
            (Some(cc), Some("userspace"))
        );
        assert_eq!(summary["complete"], true, "{summary}");
        assert!(summary["retransmits"].as_u64().unwrap() > 0);

        let received = lines(&recv_out);
        let closes = of_type(&received, "close");
        assert_eq!(closes.len(), 1, "{cc}");
        let close = closes[0];
        assert_eq!(close["integrity"], "ok", "{cc}: {close}");
        assert_eq!(close["flow"], 7);
        assert_eq!(close["total_bytes"], summary["bytes_acked"], "{cc}");
        let recv_total: u64 = of_type(&received, "recv")
            .iter()
            .map(|l| l["bytes"].as_u64().unwrap())
            .sum();
        assert_eq!(recv_total, close["total_bytes"].as_u64().unwrap());
        // The payload is 1448 of every 1514 bytes htb counts: 19.13 Mbit/s at most. After the
        // first second (slow start's overshoot into the 50-packet buffer costs these classic
        // controllers several halvings or a timeout) the link stays full.
        let first = close["first_byte_ts"].as_f64().unwrap();
        let end = summary["end_ts"].as_f64().unwrap();
        assert!(goodput_mbit(close) > 15.0, "{cc}: {close}");
        let mbit = goodput_between(&received, first + 1.0, end);
        assert!(
            (18.0..=19.3).contains(&mbit),
            "{cc}: goodput {mbit:.2} Mbit/s"
        );
        for f in [recv_out, send_out] {
            let _ = std::fs::remove_file(f);
        }
    }
}

#[test]
fn heavy_loss_from_a_tiny_buffer_still_delivers_every_byte_exactly_once() {
    if skip() {
        return;
    }
    for cc in ["tahoe", "reno", "newreno"] {
        let pair = Pair::new("loss");
        // Three packets of buffer: many drops, retransmissions dropped too.
        pair.shape("10mbit", "3");
        let (recv_out, send_out) = (
            tmp(&format!("{cc}-lr.jsonl")),
            tmp(&format!("{cc}-ls.jsonl")),
        );
        let recv = pair.start_urecv(&recv_out);
        let status = pair
            .usend(&["--cc", cc, "--duration-s", "2"], &send_out)
            .status()
            .unwrap();
        assert!(status.success());
        assert!(recv.terminate().0.success());
        let sent = lines(&send_out);
        let summary = sent.last().unwrap();
        let lost = summary["lost_pkts"].as_u64().unwrap();
        let pkts = summary["pkts_sent"].as_u64().unwrap();
        assert!(lost * 100 >= pkts, "{cc}: {lost} lost of {pkts}");
        assert_eq!(summary["complete"], true, "{cc}: {summary}");
        let received = lines(&recv_out);
        let close = of_type(&received, "close")[0].clone();
        assert_eq!(close["integrity"], "ok", "{cc}: {close}");
        assert_eq!(close["missing_pkts"], 0);
        assert_eq!(close["total_bytes"], summary["bytes_acked"]);
        assert!(
            close["total_bytes"].as_u64().unwrap() > 1_000_000,
            "{cc}: {close}"
        );
        for f in [recv_out, send_out] {
            let _ = std::fs::remove_file(f);
        }
    }
}

#[test]
fn constant_rate_background_holds_its_rate_without_retransmitting() {
    if skip() {
        return;
    }
    let pair = Pair::new("cbr");
    pair.shape("20mbit", "50");
    let (recv_out, send_out) = (tmp("cbr-r.jsonl"), tmp("cbr-s.jsonl"));
    let recv = pair.start_urecv(&recv_out);
    let status = pair
        .usend(
            &["--cbr-rate-bps", "8000000", "--duration-s", "2"],
            &send_out,
        )
        .status()
        .unwrap();
    assert!(status.success());
    assert!(recv.terminate().0.success());
    let sent = lines(&send_out);
    let summary = sent.last().unwrap();
    assert_eq!(summary["cc"], "cbr");
    assert_eq!(summary["retransmits"], 0);
    let samples = of_type(&sent, "transport");
    assert!(samples
        .iter()
        .all(|s| s["pacing_rate_bps"] == 8_000_000.0 && s["cwnd_pkts"].is_null()));
    let received = lines(&recv_out);
    let close = of_type(&received, "close")[0].clone();
    assert_eq!(close["integrity"], "ok", "{close}");
    let mbit = goodput_mbit(&close);
    assert!((7.9..=8.1).contains(&mbit), "goodput {mbit:.3} Mbit/s");
    for f in [recv_out, send_out] {
        let _ = std::fs::remove_file(f);
    }
}

#[test]
fn sigterm_ends_sender_and_receiver_cleanly() {
    if skip() {
        return;
    }
    let pair = Pair::new("term");
    pair.shape("20mbit", "50");
    let (recv_out, send_out) = (tmp("term-r.jsonl"), tmp("term-s.jsonl"));
    let recv = pair.start_urecv(&recv_out);
    let sender = Running(Some(
        pair.usend(&["--cc", "newreno", "--duration-s", "60"], &send_out)
            .spawn()
            .unwrap(),
    ));
    std::thread::sleep(Duration::from_millis(1500));
    assert!(sender.pid() > 0);
    let (status, took) = sender.terminate();
    assert!(status.success(), "{status:?}");
    assert!(
        took < Duration::from_millis(1500),
        "sender took {took:?} to stop"
    );
    let (status, took) = recv.terminate();
    assert!(status.success());
    assert!(
        took < Duration::from_millis(500),
        "receiver took {took:?} to stop"
    );
    let sent = lines(&send_out);
    let summary = sent.last().unwrap();
    assert_eq!(summary["type"], "summary");
    let end = summary["end_ts"].as_f64().unwrap() - summary["start_ts"].as_f64().unwrap();
    assert!((1.0..3.0).contains(&end), "ran {end} s");
    let received = lines(&recv_out);
    let closes = of_type(&received, "close");
    assert_eq!(closes.len(), 1);
    // The FIN reached the receiver: it knows how the flow ended.
    assert!(!closes[0]["missing_pkts"].is_null(), "{}", closes[0]);
    for f in [recv_out, send_out] {
        let _ = std::fs::remove_file(f);
    }
}

#[test]
fn bad_flags_unknown_algorithms_and_bad_params_are_usage_errors() {
    let out = tmp("usage.jsonl");
    let out = out.to_str().unwrap();
    let cases: [(&[&str], &str); 5] = [
        (&["--cc", "nosuch"], "nosuch"),
        (&["--cc", "reno", "--params", "{\"beta\": \"x\"}"], "'beta'"),
        (&["--cc", "reno", "--params", "[]"], "--params"),
        (&[], "--cc is required"),
        (&["--cbr-rate-bps", "0"], "--cbr-rate-bps"),
    ];
    for (extra, needle) in cases {
        let mut args = vec![
            "usend",
            "--dst",
            "127.0.0.1:9",
            "--duration-s",
            "1",
            "--out",
            out,
        ];
        args.extend_from_slice(extra);
        let result = Command::new(AGENT).args(&args).output().unwrap();
        assert_eq!(result.status.code(), Some(2), "{extra:?}");
        let stderr = String::from_utf8_lossy(&result.stderr);
        let error: Value = serde_json::from_str(stderr.trim()).unwrap();
        assert!(
            error["error"].as_str().unwrap().contains(needle),
            "{extra:?}: {stderr}"
        );
    }
    let _ = std::fs::remove_file(out);
}
