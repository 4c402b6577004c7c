//! ccbench-agent: the flow agent that runs on experiment hosts (Mininet hosts or real machines).
//! Its flags and JSON-lines outputs are the contract in docs/contracts.md.

use ccbench_common as common;
mod args;
mod qmon;
mod recv;
mod send;
mod sock;
mod tcpinfo;
mod urecv;
mod usend;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "ccbench-agent", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// Each subcommand's flags are its module's payload struct, handed over whole.
#[derive(Subcommand)]
enum Command {
    /// Accept TCP connections, discard the data, log goodput per interval.
    Recv(recv::RecvArgs),
    /// Send over kernel TCP with the given congestion controller and traffic model (bulk by
    /// default), sampling tcp_info.
    Send(send::SendArgs),
    /// Receive flows of ccbench's userspace UDP transport: verify every byte, acknowledge,
    /// log goodput per interval and one close line per flow.
    Urecv(urecv::URecvArgs),
    /// Send one flow over ccbench's userspace UDP transport with a userspace controller (or at
    /// a constant rate with --cbr-rate-bps), logging the transport state every interval.
    Usend(usend::USendArgs),
    /// Sample the qdiscs of a device over rtnetlink.
    Qmon(qmon::QmonArgs),
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
        Command::Recv(args) => recv::run(args),
        Command::Send(args) => send::run(args),
        Command::Urecv(args) => urecv::run(args),
        Command::Usend(args) => usend::run(args),
        Command::Qmon(args) => qmon::run(args),
    };
    if let Err(e) = result {
        common::exit_with(e);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    /// A send command line with only its required flags.
    const SEND_REQUIRED: [&str; 10] = [
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

    #[test]
    fn the_cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn send_takes_the_contract_flags() {
        let optional = [
            "--interval-ms",
            "10",
            "--start-at",
            "1763880000.5",
            "--flow-id",
            "3",
        ];
        let cli = Cli::try_parse_from(SEND_REQUIRED.iter().chain(&optional)).unwrap();
        let Command::Send(send::SendArgs { dst, cc, flow, .. }) = cli.command else {
            panic!("not send");
        };
        assert_eq!(dst, "10.2.1.1:5001".parse().unwrap());
        assert_eq!(
            (cc.as_str(), flow.duration_s, flow.output.interval_ms),
            ("reno", 20.0, 10)
        );
        assert_eq!((flow.start_at, flow.flow_id), (Some(1_763_880_000.5), 3));
    }

    #[test]
    fn a_start_time_comes_from_the_flag_or_from_stdin_never_both() {
        let base = SEND_REQUIRED;
        let cli = Cli::try_parse_from(base.iter().chain(&["--start-at-from-stdin"])).unwrap();
        let Command::Send(send::SendArgs { flow, .. }) = cli.command else {
            panic!("not send");
        };
        assert!(flow.start_at_from_stdin && flow.start_at.is_none());
        let both = ["--start-at-from-stdin", "--start-at", "1763880000.5"];
        assert!(Cli::try_parse_from(base.iter().chain(&both)).is_err());
    }

    #[test]
    fn send_takes_the_traffic_flags_and_defaults_to_bulk() {
        let base = SEND_REQUIRED;
        let traffic_of = |extra: &[&str]| {
            let args: Vec<&str> = base.iter().chain(extra).copied().collect();
            match Cli::try_parse_from(args).unwrap().command {
                Command::Send(args) => args.traffic,
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
        let Command::Recv(recv) = cli.command else {
            panic!("not recv");
        };
        assert_eq!(
            (recv.monitor.output.interval_ms, recv.monitor.duration_s),
            (10, None)
        );
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
