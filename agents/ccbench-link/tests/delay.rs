//! The delay line in a namespace this test creates: the NFQUEUE rule lives only in that
//! namespace, ping's RTT grows by the configured delay, and the counters are written on SIGTERM.

use serde_json::Value;
use std::process::Command;

mod common;

fn run(args: &[&str]) -> std::process::Output {
    Command::new(args[0]).args(&args[1..]).output().unwrap()
}

struct Netns(String);

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = run(&["ip", "netns", "del", &self.0]);
    }
}

fn min_rtt_ms(ns: &str) -> f64 {
    let out = run(&[
        "ip",
        "netns",
        "exec",
        ns,
        "ping",
        "-c",
        "10",
        "-i",
        "0.05",
        "-q",
        "127.0.0.1",
    ]);
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    // rtt min/avg/max/mdev = 20.101/20.164/20.238/0.040 ms
    let stats = text
        .lines()
        .find(|l| l.contains("min/avg"))
        .unwrap_or_else(|| panic!("{text}"));
    stats
        .split('=')
        .nth(1)
        .unwrap()
        .trim()
        .split('/')
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

#[test]
fn delays_packets_by_the_configured_time() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: needs root (network namespaces, NFQUEUE)");
        return;
    }
    let ns = Netns(format!("ccbt-link-{}", std::process::id()));
    assert!(run(&["ip", "netns", "add", &ns.0]).status.success());
    assert!(run(&["ip", "-n", &ns.0, "link", "set", "lo", "up"])
        .status
        .success());
    let base = min_rtt_ms(&ns.0);
    let stats = std::env::temp_dir().join(format!("ccbt-link-{}.json", std::process::id()));
    let link = common::spawn_link(
        &ns.0,
        &[
            "run",
            "--queue-num",
            "3",
            "--delay-us",
            "10000",
            "--stats-out",
            stats.to_str().unwrap(),
        ],
    );
    // Echo requests only: one 10 ms delay per round trip.
    let rule = [
        "-w",
        "-A",
        "OUTPUT",
        "-p",
        "icmp",
        "--icmp-type",
        "echo-request",
        "-j",
        "NFQUEUE",
        "--queue-num",
        "3",
    ];
    let mut args = vec!["ip", "netns", "exec", &ns.0, "iptables"];
    args.extend(rule);
    assert!(run(&args).status.success());
    let delayed = min_rtt_ms(&ns.0);
    common::stop_link(link);
    let added = delayed - base;
    assert!(
        (10.0..=11.0).contains(&added),
        "added {added:.3} ms for 10 ms configured"
    );
    let counters: Value = serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
    assert!(counters["packets"].as_u64().unwrap() >= 10);
    assert_eq!(
        counters["bytes"].as_u64().unwrap(),
        counters["packets"].as_u64().unwrap() * 84
    );
    assert!(counters["late_us_p99"].as_f64().unwrap() < 1000.0);
    // As root it runs as a real-time task, and says how punctually it woke.
    assert_eq!(
        counters["scheduling"],
        serde_json::json!({"policy": "fifo", "priority": 10})
    );
    let wakeups = &counters["wakeups"];
    assert!(wakeups["count"].as_u64().unwrap() >= 10, "{wakeups}");
    assert!(wakeups["late"]["us_p99"].as_f64().is_some(), "{wakeups}");
    assert!(
        wakeups["run_delay"]["us_p99"].as_f64().is_some(),
        "{wakeups}"
    );
    let _ = std::fs::remove_file(stats);
}

/// A device going down flushes the packets the kernel holds for the queue; the verdicts that
/// follow are refused (ENOENT). The emulator counts them and keeps running.
#[test]
fn survives_held_packets_flushed_by_a_device_going_down() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: needs root (network namespaces, NFQUEUE)");
        return;
    }
    let id = std::process::id();
    let a = Netns(format!("ccbt-flush-a-{id}"));
    let b = Netns(format!("ccbt-flush-b-{id}"));
    for ns in [&a, &b] {
        assert!(run(&["ip", "netns", "add", &ns.0]).status.success());
    }
    let veth = [
        "ip", "link", "add", "va", "netns", &a.0, "type", "veth", "peer", "name", "vb", "netns",
        &b.0,
    ];
    assert!(run(&veth).status.success());
    for (ns, dev, addr) in [(&a, "va", "10.76.0.1/24"), (&b, "vb", "10.76.0.2/24")] {
        assert!(run(&["ip", "-n", &ns.0, "addr", "add", addr, "dev", dev])
            .status
            .success());
        assert!(run(&["ip", "-n", &ns.0, "link", "set", dev, "up"])
            .status
            .success());
    }
    let stats = std::env::temp_dir().join(format!("ccbt-flush-{id}.json"));
    let mut link = common::spawn_link(
        &a.0,
        &[
            "run",
            "--queue-num",
            "4",
            "--delay-us",
            "400000",
            "--stats-out",
            stats.to_str().unwrap(),
        ],
    );
    let rule = [
        "ip",
        "netns",
        "exec",
        &a.0,
        "iptables",
        "-w",
        "-A",
        "OUTPUT",
        "-o",
        "va",
        "-j",
        "NFQUEUE",
        "--queue-num",
        "4",
    ];
    assert!(run(&rule).status.success());
    let ping = [
        "ip",
        "netns",
        "exec",
        &a.0,
        "ping",
        "-c",
        "3",
        "-i",
        "0.05",
        "-W",
        "1",
        "10.76.0.2",
    ];
    let mut pinger = common::Running(Some(
        Command::new(ping[0])
            .args(&ping[1..])
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    ));
    std::thread::sleep(std::time::Duration::from_millis(250));
    assert!(run(&["ip", "-n", &a.0, "link", "set", "va", "down"])
        .status
        .success());
    std::thread::sleep(std::time::Duration::from_millis(400));
    assert!(
        link.child().try_wait().unwrap().is_none(),
        "the emulator exited"
    );
    let _ = pinger.child().wait();
    common::stop_link(link);
    let counters: Value = serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
    // Every echo request was still held (400 ms) when the device went down.
    assert_eq!(counters["packets"], 3);
    assert_eq!(counters["forwarded"], 3);
    assert_eq!(counters["verdict_errors"], 3);
    let _ = std::fs::remove_file(stats);
}
