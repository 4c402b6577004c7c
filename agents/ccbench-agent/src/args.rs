//! Flag groups that several subcommands share, each flag declared once and flattened into
//! the subcommands' payloads (`<subcommand>::*Args`), which clap hands over whole. The order
//! of the fields is the order of the flags in `--help`.

use ccbench_common::{sleep_until_unix, AgentError};
use std::fs::File;
use std::io::BufWriter;
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

    /// Sleeps until `--start-at`, if given (or until a stop is requested).
    pub fn wait_for_start(&self) {
        if let Some(at) = self.start_at {
            sleep_until_unix(at);
        }
    }
}
