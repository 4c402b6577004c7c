//! Real flows of the userspace UDP transport (`usend` / `urecv`) between two network namespaces
//! this test creates (`ccbu-*`, always deleted): through an htb 20 Mbit/s bottleneck with a
//! pfifo buffer, with a small buffer that drops, at a constant rate, and stopped by SIGTERM.
//! Needs root; skipped (with a message) otherwise. The flag checks need no root.

mod common;

use common::{lines, skip_unless_root, Pair, Running, TempFile, AGENT};
use serde_json::Value;
use std::process::Command;
use std::time::Duration;

/// Names this file's namespaces and temporary files.
const PREFIX: &str = "ccbu";

/// `urecv` in the receiver namespace; returns once it printed its `listening` line.
fn start_urecv(pair: &Pair, out: &TempFile) -> Running {
    let (recv, first) = Running::spawn_until_first_line(&mut pair.exec(
        &pair.receiver,
        &[
            AGENT,
            "urecv",
            "--listen",
            "10.78.0.1:5101",
            "--out",
            out.arg(),
        ],
    ));
    assert!(first.contains("\"listening\""), "{first}");
    recv
}

/// `usend` in the sender namespace to the receiver of `start_urecv`, with `extra` flags.
fn usend(pair: &Pair, extra: &[&str], out: &TempFile) -> Command {
    let mut args = vec![
        AGENT,
        "usend",
        "--dst",
        "10.78.0.1:5101",
        "--out",
        out.arg(),
    ];
    args.extend_from_slice(extra);
    pair.exec(&pair.sender, &args)
}

fn of_type<'a>(lines: &'a [Value], kind: &str) -> Vec<&'a Value> {
    lines.iter().filter(|l| l["type"] == kind).collect()
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
    if skip_unless_root() {
        return;
    }
    for cc in ["reno", "newreno"] {
        let pair = Pair::new(PREFIX, "bn");
        pair.shape("20mbit", "50");
        let (recv_out, send_out) = (
            TempFile::new(PREFIX, &format!("{cc}-r.jsonl")),
            TempFile::new(PREFIX, &format!("{cc}-s.jsonl")),
        );
        let recv = start_urecv(&pair, &recv_out);
        let status = usend(
            &pair,
            &["--cc", cc, "--duration-s", "4", "--flow-id", "7"],
            &send_out,
        )
        .status()
        .unwrap();
        assert!(status.success(), "{cc}");
        assert!(recv.terminate().success());

        let sent = lines(send_out.path());
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

        let received = lines(recv_out.path());
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
    }
}

#[test]
fn heavy_loss_from_a_tiny_buffer_still_delivers_every_byte_exactly_once() {
    if skip_unless_root() {
        return;
    }
    for cc in ["tahoe", "reno", "newreno"] {
        let pair = Pair::new(PREFIX, "loss");
        // Three packets of buffer: many drops, retransmissions dropped too.
        pair.shape("10mbit", "3");
        let (recv_out, send_out) = (
            TempFile::new(PREFIX, &format!("{cc}-lr.jsonl")),
            TempFile::new(PREFIX, &format!("{cc}-ls.jsonl")),
        );
        let recv = start_urecv(&pair, &recv_out);
        // Slow start from one packet, as when this test was written: since the default initial
        // window became 10 (Linux's), classic Reno's first burst into three packets of buffer
        // lost most of a window, and Reno, which needs new duplicate ACKs for every hole, spent
        // the 2 s in backed-off timeouts in 2 of 6 runs (~0.48 MB delivered).
        let args = ["--cc", cc, "--duration-s", "2", "--initial-window", "1"];
        let status = usend(&pair, &args, &send_out).status().unwrap();
        assert!(status.success());
        assert!(recv.terminate().success());
        let sent = lines(send_out.path());
        let summary = sent.last().unwrap();
        let lost = summary["lost_pkts"].as_u64().unwrap();
        let pkts = summary["pkts_sent"].as_u64().unwrap();
        assert!(lost * 100 >= pkts, "{cc}: {lost} lost of {pkts}");
        assert_eq!(summary["complete"], true, "{cc}: {summary}");
        let received = lines(recv_out.path());
        let close = of_type(&received, "close")[0].clone();
        assert_eq!(close["integrity"], "ok", "{cc}: {close}");
        assert_eq!(close["missing_pkts"], 0);
        assert_eq!(close["total_bytes"], summary["bytes_acked"]);
        // Far from stalled: a sender stuck after a loss delivers next to nothing. Not a
        // throughput target: Reno's backed-off timeouts at three packets of buffer can take
        // half of the 2 s (0.71 MB delivered in one CI run, 2026-11-24; usually over 1 MB).
        assert!(
            close["total_bytes"].as_u64().unwrap() > 300_000,
            "{cc}: {close}"
        );
    }
}

#[test]
fn constant_rate_background_holds_its_rate_without_retransmitting() {
    if skip_unless_root() {
        return;
    }
    let pair = Pair::new(PREFIX, "cbr");
    pair.shape("20mbit", "50");
    let (recv_out, send_out) = (
        TempFile::new(PREFIX, "cbr-r.jsonl"),
        TempFile::new(PREFIX, "cbr-s.jsonl"),
    );
    let recv = start_urecv(&pair, &recv_out);
    let status = usend(
        &pair,
        &["--cbr-rate-bps", "8000000", "--duration-s", "2"],
        &send_out,
    )
    .status()
    .unwrap();
    assert!(status.success());
    assert!(recv.terminate().success());
    let sent = lines(send_out.path());
    let summary = sent.last().unwrap();
    assert_eq!(summary["cc"], "cbr");
    assert_eq!(summary["retransmits"], 0);
    let samples = of_type(&sent, "transport");
    assert!(samples
        .iter()
        .all(|s| s["pacing_rate_bps"] == 8_000_000.0 && s["cwnd_pkts"].is_null()));
    let received = lines(recv_out.path());
    let close = of_type(&received, "close")[0].clone();
    assert_eq!(close["integrity"], "ok", "{close}");
    let mbit = goodput_mbit(&close);
    assert!((7.9..=8.1).contains(&mbit), "goodput {mbit:.3} Mbit/s");
}

#[test]
fn sigterm_ends_sender_and_receiver_cleanly() {
    if skip_unless_root() {
        return;
    }
    let pair = Pair::new(PREFIX, "term");
    pair.shape("20mbit", "50");
    let (recv_out, send_out) = (
        TempFile::new(PREFIX, "term-r.jsonl"),
        TempFile::new(PREFIX, "term-s.jsonl"),
    );
    let recv = start_urecv(&pair, &recv_out);
    let sender = Running::spawn(&mut usend(
        &pair,
        &["--cc", "newreno", "--duration-s", "60"],
        &send_out,
    ));
    std::thread::sleep(Duration::from_millis(1500));
    assert!(sender.pid() > 0);
    let (status, took) = sender.terminate_timed();
    assert!(status.success(), "{status:?}");
    assert!(
        took < Duration::from_millis(1500),
        "sender took {took:?} to stop"
    );
    let (status, took) = recv.terminate_timed();
    assert!(status.success());
    assert!(
        took < Duration::from_millis(500),
        "receiver took {took:?} to stop"
    );
    let sent = lines(send_out.path());
    let summary = sent.last().unwrap();
    assert_eq!(summary["type"], "summary");
    let end = summary["end_ts"].as_f64().unwrap() - summary["start_ts"].as_f64().unwrap();
    assert!((1.0..3.0).contains(&end), "ran {end} s");
    let received = lines(recv_out.path());
    let closes = of_type(&received, "close");
    assert_eq!(closes.len(), 1);
    // The FIN reached the receiver: it knows how the flow ended.
    assert!(!closes[0]["missing_pkts"].is_null(), "{}", closes[0]);
}

#[test]
fn a_late_answer_to_hello_still_starts_the_flow_which_ends_on_time() {
    if skip_unless_root() {
        return;
    }
    let pair = Pair::new(PREFIX, "late");
    pair.shape("20mbit", "50");
    let (recv_out, send_out) = (
        TempFile::new(PREFIX, "late-r.jsonl"),
        TempFile::new(PREFIX, "late-s.jsonl"),
    );
    // Nobody listens for 2 s: the HELLOs at 0 and 1 s go unanswered, the one at 3 s is
    // answered. The flow was to end 5 s after its start, and does.
    let sender = Running::spawn(&mut usend(
        &pair,
        &["--cc", "reno", "--duration-s", "5"],
        &send_out,
    ));
    std::thread::sleep(Duration::from_secs(2));
    let recv = start_urecv(&pair, &recv_out);
    assert!(sender.wait().success());
    assert!(recv.terminate().success());
    let summary = lines(send_out.path()).last().unwrap().clone();
    let sent_for = summary["end_ts"].as_f64().unwrap() - summary["start_ts"].as_f64().unwrap();
    assert!(
        (1.5..2.8).contains(&sent_for),
        "sent for {sent_for} s, not 5 - 3"
    );
}

#[test]
fn without_an_answer_the_sender_gives_up_at_its_flows_end() {
    if skip_unless_root() {
        return;
    }
    let pair = Pair::new(PREFIX, "deaf");
    let send_out = TempFile::new(PREFIX, "deaf-s.jsonl");
    let result = usend(&pair, &["--cc", "reno", "--duration-s", "2"], &send_out)
        .output()
        .unwrap();
    assert!(!result.status.success());
    let stderr = String::from_utf8_lossy(&result.stderr);
    let error: Value = serde_json::from_str(stderr.trim()).unwrap();
    let message = error["error"].as_str().unwrap();
    let waited: f64 = message
        .strip_prefix("no answer to HELLO after ")
        .and_then(|rest| rest.split(' ').next())
        .and_then(|number| number.parse().ok())
        .unwrap_or_else(|| panic!("{message}"));
    assert!((2.0..3.0).contains(&waited), "{message}");
}

#[test]
fn bad_flags_unknown_algorithms_and_bad_params_are_usage_errors() {
    let out_file = TempFile::new(PREFIX, "usage.jsonl");
    let out = out_file.arg();
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
}
