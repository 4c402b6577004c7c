//! The traffic flags every sender shares (flattened into its clap subcommand), and their
//! translation into a model with errors that name the flag.

use super::{Bulk, Cbr, FixedSize, OnOff, ParamError, Traffic, Web};
use crate::AgentError;

/// Seed 004 §III-C.4's on/off sources: Pareto shape 1.2, mean ON 1 s, mean OFF 2 s, 12 kbit/s.
const SEED004_SHAPE: f64 = 1.2;
const SEED004_ON_MEAN_S: f64 = 1.0;
const SEED004_OFF_MEAN_S: f64 = 2.0;
const SEED004_RATE_BPS: u64 = 12_000;

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum TrafficKind {
    /// Always more data.
    Bulk,
    /// --size-bytes, then the flow ends once all of it is acknowledged.
    Fixed,
    /// Pareto ON and OFF periods, --rate-bps while ON.
    Onoff,
    /// Pareto transfer sizes arriving with exponential inter-arrival times.
    Web,
    /// Constant --rate-bps.
    Cbr,
}

impl TrafficKind {
    pub fn name(self) -> &'static str {
        match self {
            TrafficKind::Bulk => "bulk",
            TrafficKind::Fixed => "fixed",
            TrafficKind::Onoff => "onoff",
            TrafficKind::Web => "web",
            TrafficKind::Cbr => "cbr",
        }
    }
}

#[derive(clap::Args, Clone, Debug, PartialEq)]
pub struct TrafficArgs {
    /// Traffic model of the flow.
    #[arg(long, value_enum, default_value_t = TrafficKind::Bulk)]
    pub traffic: TrafficKind,
    /// fixed: bytes to transfer.
    #[arg(long, allow_negative_numbers = true)]
    pub size_bytes: Option<u64>,
    /// onoff: mean ON period in seconds [default: 1, seed 004].
    #[arg(long, allow_negative_numbers = true)]
    pub on_mean_s: Option<f64>,
    /// onoff: mean OFF period in seconds [default: 2, seed 004].
    #[arg(long, allow_negative_numbers = true)]
    pub off_mean_s: Option<f64>,
    /// onoff, web: Pareto shape, > 1 [default: 1.2, seed 004].
    #[arg(long, allow_negative_numbers = true)]
    pub pareto_shape: Option<f64>,
    /// onoff: rate while ON [default: 12000, seed 004]; cbr: the constant rate (required).
    #[arg(long, allow_negative_numbers = true)]
    pub rate_bps: Option<u64>,
    /// web: mean transfer size in bytes (required).
    #[arg(long, allow_negative_numbers = true)]
    pub mean_size_bytes: Option<f64>,
    /// web: mean time between transfer arrivals in seconds (required).
    #[arg(long, allow_negative_numbers = true)]
    pub mean_interarrival_s: Option<f64>,
    /// Seed of the onoff and web models' random generator (give each flow its own).
    #[arg(long, default_value_t = 1)]
    pub traffic_seed: u64,
}

impl Default for TrafficArgs {
    fn default() -> Self {
        Self {
            traffic: TrafficKind::Bulk,
            size_bytes: None,
            on_mean_s: None,
            off_mean_s: None,
            pareto_shape: None,
            rate_bps: None,
            mean_size_bytes: None,
            mean_interarrival_s: None,
            traffic_seed: 1,
        }
    }
}

/// The CLI flag of a model parameter.
fn flag_of(param: &str) -> &'static str {
    match param {
        "bytes" => "--size-bytes",
        "on_mean_s" => "--on-mean-s",
        "off_mean_s" => "--off-mean-s",
        "shape" => "--pareto-shape",
        "rate_bps" => "--rate-bps",
        "mean_size_bytes" => "--mean-size-bytes",
        "mean_interarrival_s" => "--mean-interarrival-s",
        _ => "--traffic",
    }
}

fn flag_error(error: ParamError) -> AgentError {
    AgentError::usage(format!("{} {}", flag_of(error.param), error.reason))
}

fn required<T>(kind: TrafficKind, flag: &str, value: Option<T>) -> Result<T, AgentError> {
    value.ok_or_else(|| {
        AgentError::usage(format!("{flag} is required with --traffic {}", kind.name()))
    })
}

impl TrafficArgs {
    /// The model these flags describe. A flag that the chosen model does not use is an
    /// error rather than silently ignored (a typo'd model would otherwise run as another).
    pub fn build(&self) -> Result<Box<dyn Traffic>, AgentError> {
        let kind = self.traffic;
        let given = [
            ("--size-bytes", self.size_bytes.is_some()),
            ("--on-mean-s", self.on_mean_s.is_some()),
            ("--off-mean-s", self.off_mean_s.is_some()),
            ("--pareto-shape", self.pareto_shape.is_some()),
            ("--rate-bps", self.rate_bps.is_some()),
            ("--mean-size-bytes", self.mean_size_bytes.is_some()),
            ("--mean-interarrival-s", self.mean_interarrival_s.is_some()),
        ];
        let used: &[&str] = match kind {
            TrafficKind::Bulk => &[],
            TrafficKind::Fixed => &["--size-bytes"],
            TrafficKind::Onoff => &[
                "--on-mean-s",
                "--off-mean-s",
                "--pareto-shape",
                "--rate-bps",
            ],
            TrafficKind::Web => &[
                "--mean-size-bytes",
                "--pareto-shape",
                "--mean-interarrival-s",
            ],
            TrafficKind::Cbr => &["--rate-bps"],
        };
        if let Some((flag, _)) = given
            .iter()
            .find(|(flag, is_given)| *is_given && !used.contains(flag))
        {
            return Err(AgentError::usage(format!(
                "{flag} does not apply to --traffic {}",
                kind.name()
            )));
        }
        let model: Box<dyn Traffic> = match kind {
            TrafficKind::Bulk => Box::new(Bulk),
            TrafficKind::Fixed => Box::new(
                FixedSize::new(required(kind, "--size-bytes", self.size_bytes)?)
                    .map_err(flag_error)?,
            ),
            TrafficKind::Onoff => Box::new(
                OnOff::new(
                    self.pareto_shape.unwrap_or(SEED004_SHAPE),
                    self.on_mean_s.unwrap_or(SEED004_ON_MEAN_S),
                    self.off_mean_s.unwrap_or(SEED004_OFF_MEAN_S),
                    self.rate_bps.unwrap_or(SEED004_RATE_BPS),
                    self.traffic_seed,
                )
                .map_err(flag_error)?,
            ),
            TrafficKind::Web => Box::new(
                Web::new(
                    required(kind, "--mean-size-bytes", self.mean_size_bytes)?,
                    // Seed 001 gives no shape; 1.2 is the one seed 004 uses for its web-like
                    // sources.
                    self.pareto_shape.unwrap_or(SEED004_SHAPE),
                    required(kind, "--mean-interarrival-s", self.mean_interarrival_s)?,
                    self.traffic_seed,
                )
                .map_err(flag_error)?,
            ),
            TrafficKind::Cbr => Box::new(
                Cbr::new(required(kind, "--rate-bps", self.rate_bps)?).map_err(flag_error)?,
            ),
        };
        Ok(model)
    }
}
