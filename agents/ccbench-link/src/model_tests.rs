//! The link model on a virtual clock.

use super::model::*;

fn link(rate: Rate, buffer: Option<Buffer>, aqm: Aqm) -> Link {
    Link::new(LinkConfig {
        rate,
        delay_us: 20_000,
        jitter: Jitter::None,
        buffer,
        aqm,
        loss: 0.0,
        seed: 1,
    })
    .unwrap()
}

const MBIT10: Rate = Rate::Constant { bps: 10_000_000 };

#[test]
fn serializes_at_the_rate_then_delays() {
    let mut l = link(MBIT10, None, Aqm::DropTail);
    // 1500 bytes at 10 Mbit/s = 1200 µs each; a burst of 3 at t=0.
    let out: Vec<Outcome> = (0..3).map(|_| l.arrive(0, 1500)).collect();
    assert_eq!(
        out.iter().map(|o| o.departure_us).collect::<Vec<_>>(),
        [1200, 2400, 3600]
    );
    assert_eq!(
        out.iter().map(|o| o.release_us).collect::<Vec<_>>(),
        [21_200, 22_400, 23_600]
    );
    assert_eq!(
        out.iter().map(|o| o.qlen_pkts).collect::<Vec<_>>(),
        [0, 1, 2]
    );
    // After the queue drained, a packet starts at once.
    assert_eq!(l.arrive(10_000, 1500).departure_us, 11_200);
}

#[test]
fn drop_tail_drops_exactly_when_full() {
    let mut l = link(MBIT10, Some(Buffer::Packets(5)), Aqm::DropTail);
    let fates: Vec<Fate> = (0..8).map(|_| l.arrive(0, 1500).fate).collect();
    assert_eq!(&fates[..5], &[Fate::Forwarded; 5]);
    assert_eq!(&fates[5..], &[Fate::DroppedFull; 3]);
    // One packet leaves at 1200 µs: exactly one place frees up.
    assert_eq!(l.arrive(1200, 1500).fate, Fate::Forwarded);
    assert_eq!(l.arrive(1200, 1500).fate, Fate::DroppedFull);
    assert_eq!(l.queue_len(1200), (5, 7500));
}

#[test]
fn byte_buffer_counts_bytes() {
    let mut l = link(MBIT10, Some(Buffer::Bytes(3000)), Aqm::DropTail);
    assert_eq!(l.arrive(0, 1500).fate, Fate::Forwarded);
    assert_eq!(l.arrive(0, 1000).fate, Fate::Forwarded);
    assert_eq!(l.arrive(0, 600).fate, Fate::DroppedFull);
    assert_eq!(l.arrive(0, 500).fate, Fate::Forwarded);
}

#[test]
fn occupancy_never_exceeds_the_limit_under_overload() {
    let mut l = link(MBIT10, Some(Buffer::Packets(30)), Aqm::DropTail);
    let mut max_seen = 0;
    // 20 Mbit/s offered into 10 Mbit/s for one second.
    for i in 0..1667u64 {
        let o = l.arrive(i * 600, 1500);
        max_seen = max_seen.max(o.qlen_pkts + u32::from(o.fate == Fate::Forwarded));
    }
    assert_eq!(max_seen, 30);
}

#[test]
fn delivered_rate_matches_configured_rate() {
    let mut l = link(MBIT10, Some(Buffer::Packets(100)), Aqm::DropTail);
    let mut last = 0;
    let mut delivered = 0u64;
    for i in 0..20_000u64 {
        let o = l.arrive(i * 500, 1500);
        if o.fate == Fate::Forwarded {
            delivered += 1500;
            last = o.departure_us;
        }
    }
    let rate = delivered as f64 * 8.0 / (last as f64 / 1e6);
    assert!((rate / 10e6 - 1.0).abs() < 0.001, "{rate}");
}

#[test]
fn red_drop_probability_follows_its_curve() {
    // A queue held at a constant length: RED's average converges to it, and the fraction of
    // arrivals dropped approaches p_b / (1 + p_b) ... for the count-spread "uniform" variant
    // the mean inter-drop gap is 1/(2 p_b) + 1/2 arrivals, so the drop rate is 2 p_b / (1 + p_b).
    let params = RedParams {
        min_th: 5.0,
        max_th: 15.0,
        max_p: 0.1,
        w_q: 0.02,
    };
    for (held, expected_pb) in [(11u32, 0.05f64), (14, 0.08)] {
        let mut l = Link::new(LinkConfig {
            rate: Rate::Constant { bps: 1_000_000 },
            delay_us: 0,
            jitter: Jitter::None,
            buffer: None,
            aqm: Aqm::Red(params),
            loss: 0.0,
            seed: 7,
        })
        .unwrap();
        // Fill the queue to `held` packets, then keep it there: one arrival per departure.
        let tx = 12_000u64; // 1500 bytes at 1 Mbit/s
        let mut now = 0;
        let (mut arrivals, mut drops) = (0u64, 0u64);
        for i in 0..200_000u64 {
            let (q, _) = l.queue_len(now);
            if q < held {
                let o = l.arrive(now, 1500);
                if i > 5_000 {
                    arrivals += 1;
                    drops += u64::from(o.fate == Fate::DroppedRed);
                }
            } else {
                now += tx / 4;
            }
        }
        // Arrivals see the queue before they join it: held - 1 packets.
        let measured = drops as f64 / arrivals as f64;
        let expected = 2.0 * expected_pb / (1.0 + expected_pb);
        assert!(
            (l.red_average() - (held - 1) as f64).abs() < 0.5,
            "avg {}",
            l.red_average()
        );
        assert!(
            (measured / expected - 1.0).abs() < 0.15,
            "held {held}: {measured} vs {expected}"
        );
    }
}

#[test]
fn random_loss_rate() {
    let mut l = Link::new(LinkConfig {
        rate: Rate::Unlimited,
        delay_us: 1000,
        jitter: Jitter::None,
        buffer: None,
        aqm: Aqm::DropTail,
        loss: 0.02,
        seed: 3,
    })
    .unwrap();
    let lost = (0..100_000u64)
        .filter(|&i| l.arrive(i, 100).fate == Fate::DroppedLoss)
        .count();
    assert!((1800..2200).contains(&lost), "{lost}");
}

#[test]
fn jitter_never_reorders() {
    let mut l = Link::new(LinkConfig {
        rate: MBIT10,
        delay_us: 5000,
        jitter: Jitter::Uniform { max_us: 3000 },
        buffer: None,
        aqm: Aqm::DropTail,
        loss: 0.0,
        seed: 9,
    })
    .unwrap();
    let releases: Vec<u64> = (0..1000u64)
        .map(|i| l.arrive(i * 100, 100).release_us)
        .collect();
    assert!(releases.windows(2).all(|w| w[0] <= w[1]));
    assert!(releases
        .iter()
        .enumerate()
        .all(|(i, &r)| r >= i as u64 * 100 + 5000));
    assert!(releases
        .iter()
        .enumerate()
        .any(|(i, &r)| r > i as u64 * 100 + 5080 + 1000));
}

/// Extra delays of packets far enough apart that jitter never has to hold one back.
fn jitter_draws(jitter: Jitter, n: u64) -> Vec<f64> {
    let mut l = Link::new(LinkConfig {
        rate: Rate::Unlimited,
        delay_us: 1000,
        jitter,
        buffer: None,
        aqm: Aqm::DropTail,
        loss: 0.0,
        seed: 3,
    })
    .unwrap();
    (0..n)
        .map(|i| (l.arrive(i * 1_000_000, 100).release_us - i * 1_000_000 - 1000) as f64)
        .collect()
}

#[test]
fn uniform_jitter_fills_its_range() {
    let d = jitter_draws(Jitter::Uniform { max_us: 4000 }, 20_000);
    let mean = d.iter().sum::<f64>() / d.len() as f64;
    assert!((mean - 2000.0).abs() < 40.0, "mean {mean}");
    assert!(d.iter().all(|&x| (0.0..=4000.0).contains(&x)));
    // Each quarter of the range holds about a quarter of the draws.
    for q in 0..4 {
        let (lo, hi) = (q as f64 * 1000.0, (q + 1) as f64 * 1000.0);
        let share = d.iter().filter(|&&x| lo <= x && x < hi).count() as f64 / d.len() as f64;
        assert!((share - 0.25).abs() < 0.015, "quarter {q}: {share}");
    }
}

#[test]
fn exponential_jitter_has_its_mean_and_tail() {
    let d = jitter_draws(Jitter::Exponential { mean_us: 1000 }, 20_000);
    let mean = d.iter().sum::<f64>() / d.len() as f64;
    assert!((mean - 1000.0).abs() < 30.0, "mean {mean}");
    // P(X > 3 mean) = e^-3 = 0.0498; the median is mean ln 2 = 693 µs.
    let tail = d.iter().filter(|&&x| x > 3000.0).count() as f64 / d.len() as f64;
    assert!((tail - 0.0498).abs() < 0.006, "tail {tail}");
    let below_median = d.iter().filter(|&&x| x <= 693.0).count() as f64 / d.len() as f64;
    assert!((below_median - 0.5).abs() < 0.015, "{below_median}");
}

#[test]
fn trace_delivers_one_mtu_per_opportunity_with_byte_accounting() {
    // Opportunities at 1, 2, 3 ms, period 3 ms: 1500 bytes per ms = 12 Mbit/s.
    let rate = parse_mahimahi_trace("1\n2\n3\n").unwrap();
    assert_eq!(
        rate,
        Rate::Trace {
            opportunities_us: vec![0, 1000, 2000],
            period_us: 3000
        }
    );
    let mut l = link(rate, None, Aqm::DropTail);
    // Two 750-byte packets share one opportunity; the third takes the next one.
    assert_eq!(l.arrive(0, 750).departure_us, 0);
    assert_eq!(l.arrive(0, 750).departure_us, 0);
    assert_eq!(l.arrive(0, 750).departure_us, 1000);
    // Opportunities pass unused while idle: the next packet takes the first at or after it.
    assert_eq!(l.arrive(7_500, 1500).departure_us, 8_000);
    // A 3000-byte packet needs two opportunities.
    assert_eq!(l.arrive(8_000, 3000).departure_us, 10_000);
    // Long-run rate: saturate for 3 s.
    let mut last = 0;
    for _ in 0..3000 {
        last = l.arrive(10_000, 1500).departure_us;
    }
    assert_eq!(last, 10_000 + 3000 * 1000);
}

#[test]
fn bad_configurations_are_refused() {
    assert!(parse_mahimahi_trace("").is_err());
    assert!(parse_mahimahi_trace("5\nx\n")
        .unwrap_err()
        .contains("line 2"));
    let red = Aqm::Red(RedParams {
        min_th: 10.0,
        max_th: 5.0,
        max_p: 0.1,
        w_q: 0.002,
    });
    assert!(Link::new(LinkConfig {
        rate: MBIT10,
        delay_us: 0,
        jitter: Jitter::None,
        buffer: None,
        aqm: red,
        loss: 0.0,
        seed: 0
    })
    .is_err());
}

// --- GSO/GRO aggregates (`arrive_aggregate`) ---------------------------------------------

const GBIT5: Rate = Rate::Constant { bps: 5_000_000_000 };

#[test]
fn an_aggregate_is_serialized_as_its_packets_back_to_back() {
    // 10 packets of 1500 bytes at 10 Mbit/s leave 12 ms after they arrive, one by one or as
    // one aggregate; the queue holds 10 packets and 15000 bytes either way.
    let mut single = link(MBIT10, None, Aqm::DropTail);
    let last = (0..10).map(|_| single.arrive(0, 1500)).last().unwrap();
    let mut whole = link(MBIT10, None, Aqm::DropTail);
    let agg = whole.arrive_aggregate(0, 15_000, 10);
    assert_eq!(
        (agg.departure_us, agg.release_us),
        (last.departure_us, last.release_us)
    );
    assert_eq!(agg.departure_us, 12_000);
    assert_eq!(whole.queue_len(0), single.queue_len(0));
    assert_eq!(whole.queue_len(0), (10, 15_000));
    // The next arrival sees all of it, then none once it has left.
    let next = whole.arrive_aggregate(1_000, 3_000, 2);
    assert_eq!((next.qlen_pkts, next.qlen_bytes), (10, 15_000));
    assert_eq!(next.departure_us, 14_400);
    assert_eq!(whole.queue_len(12_000), (2, 3_000));
    assert_eq!(whole.queue_len(14_400), (0, 0));
}

#[test]
fn a_packet_buffer_takes_an_aggregate_only_if_all_its_packets_fit() {
    let mut l = link(MBIT10, Some(Buffer::Packets(10)), Aqm::DropTail);
    assert_eq!(l.arrive_aggregate(0, 9_000, 6).fate, Fate::Forwarded);
    // 6 + 5 > 10: dropped whole, and the queue is unchanged.
    let dropped = l.arrive_aggregate(0, 7_500, 5);
    assert_eq!((dropped.fate, dropped.qlen_pkts), (Fate::DroppedFull, 6));
    assert_eq!(l.queue_len(0), (6, 9_000));
    // 6 + 4 = 10 fits exactly; then not even one packet.
    assert_eq!(l.arrive_aggregate(0, 6_000, 4).fate, Fate::Forwarded);
    assert_eq!(l.arrive(0, 1500).fate, Fate::DroppedFull);
    // The first packet (1200 µs) leaves, not the whole first aggregate: the queue frees up
    // when the aggregate has left (7200 µs), as it counts as one arrival.
    assert_eq!(l.arrive(7_199, 1500).fate, Fate::DroppedFull);
    assert_eq!(l.arrive(7_200, 1500).fate, Fate::Forwarded);
    assert_eq!(l.queue_len(7_200), (5, 7_500));
}

#[test]
fn a_byte_buffer_counts_an_aggregates_bytes() {
    let mut l = link(MBIT10, Some(Buffer::Bytes(20_000)), Aqm::DropTail);
    assert_eq!(l.arrive_aggregate(0, 15_000, 10).fate, Fate::Forwarded);
    assert_eq!(l.arrive_aggregate(0, 6_000, 4).fate, Fate::DroppedFull);
    assert_eq!(l.arrive_aggregate(0, 5_000, 4).fate, Fate::Forwarded);
    assert_eq!(l.queue_len(0), (14, 20_000));
}

#[test]
fn aggregates_keep_the_rate_exact_in_bytes() {
    // 5 Gbit/s for 1 s of back-to-back aggregates of 45 full segments (67500 bytes): the last
    // leaves when its bytes at 5 Gbit/s are done, whatever mix of sizes came before.
    let mut l = link(GBIT5, None, Aqm::DropTail);
    let mut bytes = 0u64;
    let mut last = 0;
    for i in 0..9_000u64 {
        let (len, segs) = if i % 3 == 0 { (1500, 1) } else { (67_500, 45) };
        bytes += len as u64;
        last = l.arrive_aggregate(0, len, segs).departure_us;
    }
    // Each arrival's transmission rounds up to a whole µs, so at most 1 µs each is added.
    let exact = bytes * 8 * 1_000_000 / 5_000_000_000;
    assert!(last >= exact && last <= exact + 9_000, "{last} vs {exact}");
    // The rounding is per arrival, not per packet: 6000 aggregates of 45 packets lose no more
    // than 6000 µs over 405,000 packets.
    assert!((last - exact) as f64 / exact as f64 <= 0.01);
}

#[test]
fn red_counts_an_aggregates_packets_in_its_average() {
    let red = Aqm::Red(RedParams {
        min_th: 5.0,
        max_th: 15.0,
        max_p: 0.1,
        w_q: 0.5,
    });
    let mut l = link(MBIT10, None, red);
    // Two aggregates of 10: the second arrival sees 10 packets queued (average 5).
    l.arrive_aggregate(0, 15_000, 10);
    l.arrive_aggregate(0, 15_000, 10);
    assert_eq!(l.red_average(), 5.0);
}
