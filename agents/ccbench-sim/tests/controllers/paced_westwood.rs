use std::time::Duration;

use ccbench_cc::paced_westwood::new;
use ccbench_cc::westwood::Westwood;
use ccbench_sim::{Flow, Link, Sim};

use crate::support::{check_paced_gaps, config, Watched};

/// Seed 003 §IV-B's single flow: 1.5 Mbit/s bottleneck, 280 ms of propagation RTT, and a
/// small buffer (10 packets, about a fifth of the pipe).
fn satellite() -> Link {
    Link::mbit(1.5, Duration::from_millis(140), 10)
}

#[test]
fn pacing_at_bse_feeds_back_into_bse_as_the_seed_warns() {
    // Seed 003 §III-C.1: pacing at the estimate spaces the ACKs at the estimate, so the
    // first (small) estimate of the first window is never revised upwards. alpha > 1 is
    // the seed's cure (§III-C.2): alpha-paced Westwood on the same path is not stuck.
    let watched = Watched::new(new(&config(&[])).unwrap(), |_, _| ());
    let (_, departures, _) = watched.handles();
    let report = Sim::new(satellite())
        .flow(Box::new(watched))
        .run(Duration::from_secs(60));
    let departures = departures.lock().unwrap();
    let (checked, smallest) = check_paced_gaps(&departures, 1000);
    let slow_start = departures.iter().filter(|d| d.cwnd < d.ssthresh).count();
    let paced_goodput = report.flows[0].goodput_bytes_per_s;
    let alpha = Sim::new(satellite())
        .flow(Box::new(
            ccbench_cc::alpha_paced_westwood::new(&config(&[])).unwrap(),
        ))
        .run(Duration::from_secs(60));
    let alpha_goodput = alpha.flows[0].goodput_bytes_per_s;
    println!(
        "paced_westwood: {} departures, {slow_start} in slow start, {checked} paced gaps \
         (smallest {smallest:.3} x MSS/rate); goodput {:.3} Mbit/s vs alpha-paced {:.3}",
        departures.len(),
        paced_goodput * 8e-6,
        alpha_goodput * 8e-6
    );
    assert!(checked > 100, "{checked}");
    assert!(
        smallest >= 1.0 - 1e-6,
        "the transport never sends early: {smallest}"
    );
    assert_eq!(
        slow_start,
        departures.len(),
        "never left slow start: no loss at that rate"
    );
    assert!(alpha_goodput > 10.0 * paced_goodput);
}

#[test]
fn only_slow_start_is_paced() {
    // A loss at packet 40 ends the stalled slow start: Westwood's ssthresh, congestion
    // avoidance unpaced, and the window (not pacing) then drives the estimate up.
    let watched = Watched::new(new(&config(&[])).unwrap(), |_, _| ());
    let (_, departures, _) = watched.handles();
    let report = Sim::new(satellite())
        .flow_with(Flow::new(Box::new(watched)).drop_first_transmission_of([40]))
        .run(Duration::from_secs(60));
    let departures = departures.lock().unwrap();
    let (checked, _) = check_paced_gaps(&departures, 1000);
    let in_ca = departures.iter().filter(|d| d.cwnd >= d.ssthresh).count();
    println!(
        "paced_westwood with a loss at packet 40: {} departures, {in_ca} in congestion \
         avoidance, {checked} paced gaps, goodput {:.3} Mbit/s",
        departures.len(),
        report.flows[0].goodput_bytes_per_s * 8e-6
    );
    assert!(checked > 20);
    assert!(in_ca > 1000, "{in_ca}");
    for d in departures.iter() {
        if d.pacing_rate.is_some() {
            assert!(
                d.cwnd < d.ssthresh,
                "paced outside slow start at {:?}",
                d.now
            );
        }
        if d.cwnd >= d.ssthresh {
            assert_eq!(d.pacing_rate, None);
        }
    }
}

#[test]
fn unpaced_westwood_sends_back_to_back_in_slow_start() {
    // The contrast that makes the test above meaningful: the same check fails unpaced.
    let watched = Watched::new(Westwood::new(&config(&[])).unwrap(), |_, _| ());
    let (_, departures, _) = watched.handles();
    Sim::new(satellite())
        .flow(Box::new(watched))
        .run(Duration::from_secs(5));
    let departures = departures.lock().unwrap();
    let back_to_back = departures
        .windows(2)
        .filter(|p| p[0].cwnd < p[0].ssthresh && p[1].now == p[0].now)
        .count();
    assert!(back_to_back > 10, "{back_to_back}");
}
