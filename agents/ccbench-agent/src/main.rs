//! ccbench-agent: the flow agent that runs on experiment hosts (Mininet hosts or real machines).
//! Its flags and JSON-lines outputs are the contract in docs/contracts.md.

use ccbench_common as common;
mod qmon;
mod recv;
mod send;
mod sock;
mod tcpinfo;
mod urecv;
mod usend;

use clap::{Parser, Subcommand};
use std::net::SocketAddr;
use std::path::PathBuf;

#[derive(Parser)]
#[command(name = "ccbench-agent", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Accept TCP connections, discard the data, log goodput per interval.
    Recv {
        #[arg(long)]
        listen: SocketAddr,
        #[arg(long, default_value_t = 10)]
        interval_ms: u64,
        #[arg(long)]
        out: PathBuf,
        #[arg(long)]
        duration_s: Option<f64>,
    },
    /// Send over kernel TCP with the given congestion controller and traffic model (bulk by
    /// default), sampling tcp_info.
    Send {
        #[arg(long)]
        dst: SocketAddr,
        #[arg(long)]
        cc: String,
        #[arg(long)]
        duration_s: f64,
        #[arg(long, default_value_t = 10)]
        interval_ms: u64,
        #[arg(long)]
        out: PathBuf,
        /// Unix time at which to start sending (a common start for several senders).
        #[arg(long)]
        start_at: Option<f64>,
        #[arg(long, default_value_t = 0)]
        flow_id: u32,
        #[command(flatten)]
        traffic: common::traffic::TrafficArgs,
    },
    /// Receive flows of ccbench's userspace UDP transport: verify every byte, acknowledge,
    /// log goodput per interval and one close line per flow.
    Urecv {
        #[arg(long)]
        listen: SocketAddr,
        #[arg(long, default_value_t = 10)]
        interval_ms: u64,
        #[arg(long)]
        out: PathBuf,
        #[arg(long)]
        duration_s: Option<f64>,
        /// Acknowledge every second packet (or after 40 ms) instead of every packet.
        #[arg(long)]
        delayed_acks: bool,
    },
    /// Send one flow over ccbench's userspace UDP transport with a userspace controller (or at
    /// a constant rate with --cbr-rate-bps), logging the transport state every interval.
    Usend {
        #[arg(long)]
        dst: SocketAddr,
        /// Algorithm id (see ccbench_cc::ALGORITHMS); not needed with --cbr-rate-bps.
        #[arg(long)]
        cc: Option<String>,
        /// The algorithm's parameters as a JSON object of numbers.
        #[arg(long)]
        params: Option<String>,
        #[arg(long)]
        duration_s: f64,
        #[arg(long, default_value_t = 10)]
        interval_ms: u64,
        #[arg(long)]
        out: PathBuf,
        #[arg(long)]
        start_at: Option<f64>,
        #[arg(long, default_value_t = 0)]
        flow_id: u32,
        /// Payload bytes per packet (1448 fills a 1500-byte MTU).
        #[arg(long, default_value_t = 1448)]
        mss: u32,
        #[arg(long, default_value_t = 200.0)]
        min_rto_ms: f64,
        /// Timer granularity of the RTO (500 for seed 000's coarse timer).
        #[arg(long, default_value_t = 1.0)]
        rto_granularity_ms: f64,
        /// One log line per ACK.
        #[arg(long)]
        per_ack: bool,
        /// Constant-rate UDP background at this many payload bits per second: no controller,
        /// no retransmission.
        #[arg(long)]
        cbr_rate_bps: Option<f64>,
        /// Seed of controllers that draw random numbers (TFRC's S3 rounds).
        #[arg(long, default_value_t = 1)]
        seed: u64,
        #[command(flatten)]
        traffic: common::traffic::TrafficArgs,
    },
    /// Sample the qdiscs of a device over rtnetlink.
    Qmon {
        #[arg(long)]
        dev: String,
        #[arg(long, default_value_t = 10)]
        interval_ms: u64,
        #[arg(long)]
        out: PathBuf,
        #[arg(long)]
        duration_s: Option<f64>,
    },
}

fn main() {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if e.use_stderr() => {
            common::exit_with(common::AgentError::usage(e.to_string().trim().to_string()))
        }
        Err(e) => e.exit(), // --help, --version
    };
    common::install_stop_handler();
    let result = match cli.command {
        Command::Recv {
            listen,
            interval_ms,
            out,
            duration_s,
        } => recv::run(recv::RecvArgs {
            listen,
            interval_ms,
            out,
            duration_s,
        }),
        Command::Send {
            dst,
            cc,
            duration_s,
            interval_ms,
            out,
            start_at,
            flow_id,
            traffic,
        } => {
            if duration_s.is_nan() || duration_s <= 0.0 {
                common::exit_with(common::AgentError::usage("--duration-s must be > 0"));
            }
            send::run(send::SendArgs {
                dst,
                cc,
                duration_s,
                interval_ms,
                out,
                start_at,
                flow_id,
                traffic,
            })
        }
        Command::Urecv {
            listen,
            interval_ms,
            out,
            duration_s,
            delayed_acks,
        } => urecv::run(urecv::URecvArgs {
            listen,
            interval_ms,
            out,
            duration_s,
            delayed_acks,
        }),
        Command::Usend {
            dst,
            cc,
            params,
            duration_s,
            interval_ms,
            out,
            start_at,
            flow_id,
            mss,
            min_rto_ms,
            rto_granularity_ms,
            per_ack,
            cbr_rate_bps,
            seed,
            traffic,
        } => {
            if duration_s.is_nan() || duration_s <= 0.0 {
                common::exit_with(common::AgentError::usage("--duration-s must be > 0"));
            }
            usend::run(usend::USendArgs {
                dst,
                cc,
                params,
                duration_s,
                interval_ms,
                out,
                start_at,
                flow_id,
                mss,
                min_rto_ms,
                rto_granularity_ms,
                per_ack,
                cbr_rate_bps,
                seed,
                traffic,
            })
        }
        Command::Qmon {
            dev,
            interval_ms,
            out,
            duration_s,
        } => qmon::run(qmon::QmonArgs {
            dev,
            interval_ms,
            out,
            duration_s,
        }),
    };
    if let Err(e) = result {
        common::exit_with(e);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn send_takes_the_contract_flags() {
        let cli = Cli::try_parse_from([
            "ccbench-agent",
            "send",
            "--dst",
            "10.2.1.1:5001",
            "--cc",
            "reno",
            "--duration-s",
            "20",
            "--interval-ms",
            "10",
            "--out",
            "send.jsonl",
            "--start-at",
            "1763880000.5",
            "--flow-id",
            "3",
        ])
        .unwrap();
        let Command::Send {
            dst,
            cc,
            duration_s,
            interval_ms,
            start_at,
            flow_id,
            ..
        } = cli.command
        else {
            panic!("not send");
        };
        assert_eq!(dst, "10.2.1.1:5001".parse().unwrap());
        assert_eq!((cc.as_str(), duration_s, interval_ms), ("reno", 20.0, 10));
        assert_eq!((start_at, flow_id), (Some(1_763_880_000.5), 3));
    }

    #[test]
    fn send_takes_the_traffic_flags_and_defaults_to_bulk() {
        let base = [
            "ccbench-agent",
            "send",
            "--dst",
            "10.2.1.1:5001",
            "--cc",
            "reno",
            "--duration-s",
            "20",
            "--out",
            "send.jsonl",
        ];
        let traffic_of = |extra: &[&str]| {
            let args: Vec<&str> = base.iter().chain(extra).copied().collect();
            match Cli::try_parse_from(args).unwrap().command {
                Command::Send { traffic, .. } => traffic,
                _ => panic!("not send"),
            }
        };
        assert_eq!(traffic_of(&[]), common::traffic::TrafficArgs::default());
        let onoff = traffic_of(&[
            "--traffic",
            "onoff",
            "--pareto-shape",
            "1.2",
            "--on-mean-s",
            "1",
            "--off-mean-s",
            "2",
            "--rate-bps",
            "12000",
            "--traffic-seed",
            "7",
        ]);
        assert_eq!(onoff.traffic, common::traffic::TrafficKind::Onoff);
        assert_eq!((onoff.rate_bps, onoff.traffic_seed), (Some(12_000), 7));
        assert!(onoff.build().is_ok());
    }

    #[test]
    fn defaults_and_refusals() {
        let cli = Cli::try_parse_from([
            "ccbench-agent",
            "recv",
            "--listen",
            "10.2.1.1:5001",
            "--out",
            "r.jsonl",
        ])
        .unwrap();
        assert!(matches!(
            cli.command,
            Command::Recv {
                interval_ms: 10,
                duration_s: None,
                ..
            }
        ));
        // A missing required flag, a bad address, an unknown subcommand.
        for args in [
            &[
                "ccbench-agent",
                "send",
                "--dst",
                "10.2.1.1:5001",
                "--out",
                "x",
            ][..],
            &["ccbench-agent", "recv", "--listen", "nowhere", "--out", "x"],
            &["ccbench-agent", "bounce"],
        ] {
            assert!(Cli::try_parse_from(args).is_err(), "{args:?}");
        }
    }
}
