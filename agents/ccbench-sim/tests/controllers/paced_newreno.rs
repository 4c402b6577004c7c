use std::time::Duration;

use ccbench_cc::paced_newreno::PacedNewReno;
use ccbench_sim::{Link, Sim};

use crate::support::{check_paced_gaps, config, Watched};

#[test]
fn every_packet_after_the_first_rtt_is_paced_at_cwnd_over_srtt() {
    let watched = Watched::new(PacedNewReno::new(&config(&[])).unwrap(), |_, _| ());
    let (_, departures, _) = watched.handles();
    let report = Sim::new(Link::mbit(1.5, Duration::from_millis(140), 10))
        .per_ack_samples(true)
        .flow(Box::new(watched))
        .run(Duration::from_secs(60));
    let flow = &report.flows[0];
    for s in &flow.acks {
        let srtt = s.srtt.expect("an ACK brings an RTT sample").as_secs_f64();
        let rate = s.pacing_rate.expect("paced once an RTT sample exists");
        // The controller's SRTT follows the same samples with the same gain as the
        // transport's RFC 6298 SRTT (the transport rounds it to whole nanoseconds).
        let want = s.cwnd * 1000.0 / srtt;
        assert!(
            (rate / want - 1.0).abs() < 1e-6,
            "{rate} vs cwnd/SRTT {want}"
        );
    }
    let departures = departures.lock().unwrap();
    let unpaced = departures
        .iter()
        .filter(|d| d.pacing_rate.is_none())
        .count();
    assert_eq!(
        unpaced, 1,
        "only the first packet leaves before any RTT sample"
    );
    let slow_start = departures.iter().filter(|d| d.cwnd < d.ssthresh).count();
    let (checked, smallest) = check_paced_gaps(&departures, 1000);
    println!(
        "paced_newreno: {} departures ({slow_start} in slow start), {checked} paced gaps, \
         smallest {smallest:.3} x MSS/rate, goodput {:.3} Mbit/s, {} congestion events",
        departures.len(),
        flow.goodput_bytes_per_s * 8e-6,
        flow.congestion_events().count()
    );
    assert_eq!(checked, departures.len() - 2, "every pair but the first");
    assert!(slow_start > 20);
}
