//! Shared by the emulator's integration tests.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

pub const LINK: &str = env!("CARGO_BIN_EXE_ccbench-link");

/// Start `ccbench-link ARGS` inside network namespace `ns` and wait for its ready line.
pub fn spawn_link(ns: &str, args: &[&str]) -> Child {
    let mut link = Command::new("ip")
        .args(["netns", "exec", ns, LINK])
        .args(args)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut ready = String::new();
    BufReader::new(link.stdout.as_mut().unwrap())
        .read_line(&mut ready)
        .unwrap();
    assert!(ready.contains("\"ready\""), "{ready}");
    link
}

/// SIGTERM the emulator and check that it exits cleanly.
pub fn stop_link(mut link: Child) {
    // SAFETY: plain kill(2) on our child.
    unsafe { libc::kill(link.id() as i32, libc::SIGTERM) };
    assert!(link.wait().unwrap().success());
}
