//! Shared by the emulator's integration tests.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

pub const LINK: &str = env!("CARGO_BIN_EXE_ccbench-link");

/// A child process that is killed when dropped, so a failing test leaves nothing running.
pub struct Running(pub Option<Child>);

impl Running {
    pub fn child(&mut self) -> &mut Child {
        self.0.as_mut().unwrap()
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

/// Start `ccbench-link ARGS` inside network namespace `ns` and wait for its ready line.
pub fn spawn_link(ns: &str, args: &[&str]) -> Running {
    let mut link = Running(Some(
        Command::new("ip")
            .args(["netns", "exec", ns, LINK])
            .args(args)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap(),
    ));
    let mut ready = String::new();
    BufReader::new(link.child().stdout.as_mut().unwrap())
        .read_line(&mut ready)
        .unwrap();
    assert!(ready.contains("\"ready\""), "{ready}");
    link
}

/// SIGTERM the emulator and check that it exits cleanly.
pub fn stop_link(mut link: Running) {
    let mut child = link.0.take().unwrap();
    // SAFETY: plain kill(2) on our child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    assert!(child.wait().unwrap().success());
}
