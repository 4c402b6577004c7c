//! The emulated link through NFQUEUE in namespaces this test creates: a 20 Mbit/s UDP stream
//! (iperf3) into a 10 Mbit/s link with a 20-packet drop-tail buffer. The per-packet log shows
//! the rate, that drops happen exactly when the buffer is full, and that occupancy never
//! exceeds it.

use std::process::{Command, Stdio};

mod common;

fn run(args: &[&str]) -> std::process::Output {
    Command::new(args[0]).args(&args[1..]).output().unwrap()
}

fn ok(args: &[&str]) {
    let out = run(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

struct Namespaces(Vec<String>);

impl Drop for Namespaces {
    fn drop(&mut self) {
        for ns in &self.0 {
            let _ = run(&["ip", "netns", "del", ns]);
        }
    }
}

struct Rec {
    arrival: u64,
    departure: u64,
    release: u64,
    qlen_pkts: u32,
    len: u16,
    fate: u8,
    due: u64,
    bytes: u32,
    segs: u16,
}

fn read_log(path: &std::path::Path) -> Vec<Rec> {
    let bytes = std::fs::read(path).unwrap();
    assert_eq!(&bytes[..8], b"CCBLINK3");
    let header_len = u32::from_le_bytes(bytes[8..12].try_into().unwrap()) as usize;
    let header: serde_json::Value = serde_json::from_slice(&bytes[12..12 + header_len]).unwrap();
    assert_eq!(header["rate"]["bps"], 10_000_000);
    assert_eq!(header["mode"], "packet");
    let body = &bytes[12 + header_len..];
    assert_eq!(body.len() % 64, 0);
    body.chunks(64)
        .map(|r| Rec {
            arrival: u64::from_le_bytes(r[0..8].try_into().unwrap()),
            departure: u64::from_le_bytes(r[8..16].try_into().unwrap()),
            release: u64::from_le_bytes(r[16..24].try_into().unwrap()),
            qlen_pkts: u32::from_le_bytes(r[28..32].try_into().unwrap()),
            len: u16::from_le_bytes([r[44], r[45]]),
            fate: r[47],
            due: u64::from_le_bytes(r[48..56].try_into().unwrap()),
            bytes: u32::from_le_bytes(r[56..60].try_into().unwrap()),
            segs: u16::from_le_bytes([r[60], r[61]]),
        })
        .collect()
}

#[test]
fn rate_and_drop_tail_buffer_are_exact() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 || run(&["which", "iperf3"]).stdout.is_empty() {
        eprintln!("skipped: needs root and iperf3");
        return;
    }
    let id = std::process::id();
    let (a, b) = (format!("ccbt-emu-a-{id}"), format!("ccbt-emu-b-{id}"));
    let _guard = Namespaces(vec![a.clone(), b.clone()]);
    ok(&["ip", "netns", "add", &a]);
    ok(&["ip", "netns", "add", &b]);
    ok(&[
        "ip", "link", "add", "va", "netns", &a, "type", "veth", "peer", "name", "vb", "netns", &b,
    ]);
    for (ns, dev, addr) in [(&a, "va", "10.78.0.1/24"), (&b, "vb", "10.78.0.2/24")] {
        ok(&["ip", "-n", ns, "addr", "add", addr, "dev", dev]);
        ok(&["ip", "-n", ns, "link", "set", dev, "up"]);
        ok(&["ip", "-n", ns, "link", "set", "lo", "up"]);
    }
    let dir = std::env::temp_dir();
    let (log, stats) = (
        dir.join(format!("ccbt-emu-{id}.bin")),
        dir.join(format!("ccbt-emu-{id}.json")),
    );
    let link = common::spawn_link(
        &b,
        &[
            "run",
            "--queue-num",
            "5",
            "--rate-bps",
            "10000000",
            "--buffer-pkts",
            "20",
            "--delay-us",
            "5000",
            "--log",
            log.to_str().unwrap(),
            "--stats-out",
            stats.to_str().unwrap(),
        ],
    );
    ok(&[
        "ip",
        "netns",
        "exec",
        &b,
        "iptables",
        "-w",
        "-A",
        "OUTPUT",
        "-o",
        "vb",
        "-p",
        "udp",
        "--dport",
        "5201",
        "-j",
        "NFQUEUE",
        "--queue-num",
        "5",
    ]);
    let mut server = common::Running(Some(
        Command::new("ip")
            .args(["netns", "exec", &a, "iperf3", "-s", "-1", "-B", "10.78.0.1"])
            .stdout(Stdio::null())
            .spawn()
            .unwrap(),
    ));
    std::thread::sleep(std::time::Duration::from_millis(300));
    ok(&[
        "ip",
        "netns",
        "exec",
        &b,
        "iperf3",
        "-c",
        "10.78.0.1",
        "-u",
        "-b",
        "20M",
        "-l",
        "1472",
        "-t",
        "2",
    ]);
    let _ = server.child().wait();
    common::stop_link(link);

    let records = read_log(&log);
    let data: Vec<&Rec> = records.iter().filter(|r| r.len == 1500).collect();
    assert!(data.len() > 2000, "{} packets", data.len());
    // Per-packet mode: every record is one packet, its bytes its IP length.
    assert!(records
        .iter()
        .all(|r| r.segs == 1 && r.bytes == u32::from(r.len)));
    let forwarded: Vec<&&Rec> = data.iter().filter(|r| r.fate == 0).collect();
    let dropped: Vec<&&Rec> = data.iter().filter(|r| r.fate == 1).collect();
    assert!(!dropped.is_empty());
    // Drops happen exactly when 20 packets are in the queue; a forwarded one saw fewer.
    assert!(dropped.iter().all(|r| r.qlen_pkts == 20));
    assert!(forwarded.iter().all(|r| r.qlen_pkts < 20));
    // Each forwarded packet was due 5 ms after its transmission ended and left no earlier.
    assert!(forwarded
        .iter()
        .all(|r| r.due == r.departure + 5000 && r.release >= r.due));
    assert!(dropped.iter().all(|r| r.due == 0 && r.release == 0));
    // Departures while backlogged are one transmission time apart: 1500 B at 10 Mbit/s.
    let gaps: Vec<u64> = forwarded
        .windows(2)
        .filter(|w| w[1].arrival < w[0].departure)
        .map(|w| w[1].departure - w[0].departure)
        .collect();
    assert!(
        gaps.len() > 1000 && gaps.iter().all(|&g| g == 1200),
        "{:?}",
        &gaps[..10]
    );
    let span = (forwarded.last().unwrap().departure - forwarded[0].departure) as f64 / 1e6;
    let rate = (forwarded.len() - 1) as f64 * 1500.0 * 8.0 / span;
    assert!((rate / 10e6 - 1.0).abs() < 0.01, "{rate}");
    let counters: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
    assert_eq!(
        counters["dropped_full"].as_u64().unwrap() as usize,
        dropped.len()
    );
    assert!(counters["max_qlen_pkts"].as_u64().unwrap() <= 20);
    let _ = std::fs::remove_file(log);
    let _ = std::fs::remove_file(stats);
}
