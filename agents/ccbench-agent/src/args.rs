//! Flag groups that several subcommands share, each flag declared once and flattened into
//! the subcommands' payloads (`<subcommand>::*Args`), which clap hands over whole. The order
//! of the fields is the order of the flags in `--help`.

use ccbench_common::{sleep_until_unix, AgentError};
use serde_json::json;
use std::fs::File;
use std::io::{BufRead, BufWriter, Write};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Every subcommand's log: JSON lines into `--out`, one sample per interval.
#[derive(clap::Args, Debug)]
pub struct OutputArgs {
    #[arg(long, default_value_t = 10)]
    pub interval_ms: u64,
    #[arg(long)]
    pub out: PathBuf,
}

impl OutputArgs {
    /// The log file, created now: a path that cannot be written is a usage error.
    pub fn create(&self) -> Result<BufWriter<File>, AgentError> {
        let file = File::create(&self.out).map_err(|e| {
            AgentError::usage(format!("cannot create --out {}: {e}", self.out.display()))
        })?;
        Ok(BufWriter::with_capacity(1 << 20, file))
    }

    /// The sampling interval, at least 1 ms.
    pub fn interval(&self) -> Duration {
        Duration::from_millis(self.interval_ms.max(1))
    }
}

/// `recv`, `urecv`, `qmon`: log until stopped (SIGTERM/SIGINT) or for `--duration-s`.
#[derive(clap::Args, Debug)]
pub struct MonitorArgs {
    #[command(flatten)]
    pub output: OutputArgs,
    #[arg(long)]
    pub duration_s: Option<f64>,
}

impl MonitorArgs {
    /// When to stop, for a run that started at `start`.
    pub fn until(&self, start: Instant) -> Option<Instant> {
        self.duration_s.map(|d| start + Duration::from_secs_f64(d))
    }
}

/// `send`, `usend`: one flow of `--duration-s` from an optional common start.
#[derive(clap::Args, Debug)]
pub struct FlowArgs {
    #[arg(long)]
    pub duration_s: f64,
    #[command(flatten)]
    pub output: OutputArgs,
    /// Unix time at which to start sending (a common start for several senders).
    #[arg(long)]
    pub start_at: Option<f64>,
    /// Print `{"event":"connected"}` on stdout once the flow's socket is ready, then read the
    /// start time (Unix seconds) from a line on stdin: a caller on the same machine starts its
    /// senders together as soon as all of them are connected, with no margin to guess.
    #[arg(long, conflicts_with = "start_at")]
    pub start_at_from_stdin: bool,
    #[arg(long, default_value_t = 0)]
    pub flow_id: u32,
}

impl FlowArgs {
    /// The checks clap cannot express; each sender runs them first.
    pub fn check(&self) -> Result<(), AgentError> {
        if self.duration_s.is_nan() || self.duration_s <= 0.0 {
            return Err(AgentError::usage("--duration-s must be > 0"));
        }
        Ok(())
    }

    /// Sleeps until `--start-at`, or the time read with `--start-at-from-stdin`, if given (or
    /// until a stop is requested).
    pub fn wait_for_start(&self) -> Result<(), AgentError> {
        let at = if self.start_at_from_stdin {
            let mut stdout = std::io::stdout().lock();
            writeln!(stdout, "{}", json!({"event": "connected"}))?;
            stdout.flush()?;
            let mut line = String::new();
            std::io::stdin().lock().read_line(&mut line)?;
            Some(parse_start_line(&line)?)
        } else {
            self.start_at
        };
        if let Some(at) = at {
            sleep_until_unix(at);
        }
        Ok(())
    }
}

/// The start time of `--start-at-from-stdin`: one Unix time, as `--start-at` takes it.
fn parse_start_line(line: &str) -> Result<f64, AgentError> {
    if line.is_empty() {
        return Err(AgentError::runtime(
            "--start-at-from-stdin: stdin closed before a start time came",
        ));
    }
    match line.trim().parse::<f64>() {
        Ok(at) if at.is_finite() && at > 0.0 => Ok(at),
        _ => Err(AgentError::usage(format!(
            "--start-at-from-stdin: expected a Unix time on stdin, got {:?}",
            line.trim()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::parse_start_line;

    #[test]
    fn the_start_line_is_one_unix_time() {
        assert_eq!(
            parse_start_line("1763880000.25\n").unwrap(),
            1_763_880_000.25
        );
        let closed = parse_start_line("").unwrap_err();
        assert!(
            !closed.usage && closed.message.contains("stdin closed"),
            "{}",
            closed.message
        );
        for bad in ["soon\n", "-1\n", "NaN\n"] {
            let err = parse_start_line(bad).unwrap_err();
            assert!(
                err.usage && err.message.contains("expected a Unix time"),
                "{bad}"
            );
        }
    }
}
