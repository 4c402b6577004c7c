//! ccbench-agent: the flow agent that runs on experiment hosts (Mininet hosts or real machines).
//! Its flags and JSON-lines outputs are the contract in docs/contracts.md.

use ccbench_common as common;
mod qmon;
mod recv;
mod send;
mod sock;
mod tcpinfo;

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
    /// Send bulk data over kernel TCP with the given congestion controller, sampling tcp_info.
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
