//! Set-up shared by the integration tests that run real flows (netns.rs, traffic.rs,
//! userspace.rs): two network namespaces joined by a veth pair, an htb bottleneck on the
//! sender's side, child processes and temporary files that clean up after themselves even when
//! a test fails. Each test binary passes its own name prefix (ccbt, ccbm, ccbu) so that test
//! binaries running at the same time never share a namespace or a file.

// Each test crate uses a subset of these helpers.
#![allow(dead_code)]

use serde_json::Value;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

pub const AGENT: &str = env!("CARGO_BIN_EXE_ccbench-agent");

/// The veth device in the receiver's namespace.
pub const RECEIVER_DEV: &str = "vr";
/// The veth device in the sender's namespace (where `Pair::shape` puts the bottleneck).
pub const SENDER_DEV: &str = "vs";

pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// True (after saying so) when the test must be skipped: network namespaces need root.
pub fn skip_unless_root() -> bool {
    if is_root() {
        return false;
    }
    eprintln!("skipped: needs root (network namespaces)");
    true
}

/// Runs a command to completion; panics naming it when it fails.
pub fn sh(args: &[&str]) {
    let status = Command::new(args[0]).args(&args[1..]).status().unwrap();
    assert!(status.success(), "{args:?} failed");
}

/// Two namespaces joined by a veth pair, `receiver` (device vr, 10.78.0.1/24) and `sender`
/// (device vs, 10.78.0.2/24), named `<prefix>-<tag>-{r,s}-<pid>`; deleted on drop, which also
/// removes the veth pair and any qdisc on it.
pub struct Pair {
    pub receiver: String,
    pub sender: String,
}

impl Pair {
    pub fn new(prefix: &str, tag: &str) -> Pair {
        let id = std::process::id();
        let pair = Pair {
            receiver: format!("{prefix}-{tag}-r-{id}"),
            sender: format!("{prefix}-{tag}-s-{id}"),
        };
        sh(&["ip", "netns", "add", &pair.receiver]);
        sh(&["ip", "netns", "add", &pair.sender]);
        sh(&[
            "ip",
            "link",
            "add",
            RECEIVER_DEV,
            "netns",
            &pair.receiver,
            "type",
            "veth",
            "peer",
            "name",
            SENDER_DEV,
            "netns",
            &pair.sender,
        ]);
        for (ns, dev, addr) in [
            (&pair.receiver, RECEIVER_DEV, "10.78.0.1/24"),
            (&pair.sender, SENDER_DEV, "10.78.0.2/24"),
        ] {
            sh(&["ip", "-n", ns, "addr", "add", addr, "dev", dev]);
            sh(&["ip", "-n", ns, "link", "set", dev, "up"]);
            sh(&["ip", "-n", ns, "link", "set", "lo", "up"]);
        }
        pair
    }

    /// The sender's device becomes an htb bottleneck of `rate` (tc syntax, e.g. "20mbit")
    /// towards the receiver, with a drop-tail pfifo of `limit` packets (handle 10:, parent 1:1).
    pub fn shape(&self, rate: &str, limit: &str) {
        let ns = self.sender.as_str();
        sh(&[
            "ip", "netns", "exec", ns, "tc", "qdisc", "add", "dev", SENDER_DEV, "root", "handle",
            "1:", "htb", "default", "1",
        ]);
        sh(&[
            "ip", "netns", "exec", ns, "tc", "class", "add", "dev", SENDER_DEV, "parent", "1:",
            "classid", "1:1", "htb", "rate", rate, "burst", "15140", "cburst", "15140",
        ]);
        sh(&[
            "ip", "netns", "exec", ns, "tc", "qdisc", "add", "dev", SENDER_DEV, "parent", "1:1",
            "handle", "10:", "pfifo", "limit", limit,
        ]);
    }

    /// `args` run inside namespace `ns` (one of `receiver`, `sender`).
    pub fn exec(&self, ns: &str, args: &[&str]) -> Command {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", ns]).args(args);
        cmd
    }

    /// The kernel-TCP receiver (`recv`) in the receiver namespace, logging every
    /// `interval_ms`; returned once it printed its first (`listening`) line, with that line.
    pub fn start_recv(&self, listen: &str, out: &TempFile, interval_ms: &str) -> (Running, String) {
        Running::spawn_until_first_line(&mut self.exec(
            &self.receiver,
            &[
                AGENT,
                "recv",
                "--listen",
                listen,
                "--out",
                out.arg(),
                "--interval-ms",
                interval_ms,
            ],
        ))
    }

    /// A kernel-TCP `send` (reno) in the sender namespace to a receiver listening on
    /// 10.78.0.1:5001, with `extra` flags after the common ones.
    pub fn send(&self, out: &TempFile, flow: u32, duration_s: &str, extra: &[&str]) -> Command {
        let flow = flow.to_string();
        let mut args = vec![
            AGENT,
            "send",
            "--dst",
            "10.78.0.1:5001",
            "--cc",
            "reno",
            "--duration-s",
            duration_s,
            "--flow-id",
            &flow,
            "--out",
            out.arg(),
        ];
        args.extend_from_slice(extra);
        self.exec(&self.sender, &args)
    }
}

impl Drop for Pair {
    fn drop(&mut self) {
        for ns in [&self.receiver, &self.sender] {
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
    }
}

/// A child process that is killed when dropped, so a failing test leaves nothing running.
pub struct Running(Option<Child>);

impl Running {
    pub fn spawn(cmd: &mut Command) -> Running {
        Running(Some(cmd.spawn().unwrap()))
    }

    /// Spawns `cmd` with its stdout piped and returns once it printed its first line (a
    /// receiver's `listening` line), with that line.
    pub fn spawn_until_first_line(cmd: &mut Command) -> (Running, String) {
        let mut running = Running::spawn(cmd.stdout(Stdio::piped()));
        let mut first = String::new();
        std::io::BufReader::new(running.child().stdout.as_mut().unwrap())
            .read_line(&mut first)
            .unwrap();
        (running, first)
    }

    pub fn child(&mut self) -> &mut Child {
        self.0.as_mut().unwrap()
    }

    pub fn pid(&self) -> i32 {
        self.0.as_ref().unwrap().id() as i32
    }

    /// SIGTERM, then the exit status.
    pub fn terminate(self) -> ExitStatus {
        self.terminate_timed().0
    }

    /// SIGTERM, then the exit status and how long the exit took.
    pub fn terminate_timed(mut self) -> (ExitStatus, Duration) {
        let mut child = self.0.take().unwrap();
        let asked = Instant::now();
        // SAFETY: plain kill(2) on our child.
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        let status = child.wait().unwrap();
        (status, asked.elapsed())
    }

    /// Waits for the child to exit on its own.
    pub fn wait(mut self) -> ExitStatus {
        self.0.take().unwrap().wait().unwrap()
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

/// The JSON lines of an agent's output file.
pub fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// A temporary file `<prefix>-<pid>-<name>`, removed on drop.
pub struct TempFile(PathBuf);

impl TempFile {
    pub fn new(prefix: &str, name: &str) -> TempFile {
        TempFile(std::env::temp_dir().join(format!("{prefix}-{}-{name}", std::process::id())))
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    /// The path as a command-line argument.
    pub fn arg(&self) -> &str {
        self.0.to_str().unwrap()
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}
