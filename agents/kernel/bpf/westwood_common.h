/* Shared by the Westwood controllers of seed 003 (westwood, paced_westwood,
 * alpha_paced_westwood): the bandwidth share estimate BSE, Westwood's loss response, and the
 * slow-start pacing of the paced variants. Each object includes it once; the tunables declared
 * here are that object's own .rodata.
 *
 * BSE (seed 003 §III-A: "the bandwidth is estimated by properly low-pass filtering the rate of
 * returning acknowledgments"). The seed names ABSE (§III-C.1) but gives neither its sampling
 * rule nor its filter constants, so this is the Westwood+ estimator that Linux's tcp_westwood.c
 * implements: one sample per window of at least max(SRTT, bse_sample_min_us) microseconds,
 *     sample = data delivered in the window / window length,
 * filtered by two cascaded EWMAs with gain bse_gain_x256/256 (7/8 in Linux):
 *     bw_ns <- g*bw_ns + (1-g)*sample,   BSE <- g*BSE + (1-g)*bw_ns
 * and the first sample initializes both. "Data delivered" is tp->delivered (segments cumulatively
 * acked or SACKed, and duplicate ACKs without SACK) times the MSS, so that duplicate ACKs count
 * as delivered data, as Westwood's ACK accounting intends. BSE is kept in bytes per second
 * (traced in bits per second).
 *
 * Loss response (seed 003 §III-A, with RTTmin the smallest RTT sample of the connection):
 * - ssthresh = max(BSE * RTTmin / segsize, 2) after three duplicate ACKs (or ECN) and after a
 *   timeout. Before the first BSE sample exists the window is halved as Reno does.
 * - After three duplicate ACKs: cwnd = min(cwnd, ssthresh). The kernel keeps its own recovery
 *   (PRR) in between and sets cwnd = ssthresh when recovery ends; at that event
 *   (CA_EVENT_COMPLETE_CWR) cwnd is lowered again to the window at the loss if the estimate
 *   exceeded it, so the window then slow-starts up to ssthresh as in Westwood. (Linux's
 *   westwood instead halves during recovery and sets cwnd = ssthresh afterwards.)
 * - After a timeout the kernel sets cwnd = 1 (tcp_enter_loss), as the seed says.
 *
 * Pacing (paced variants only, §III-C): while in slow start (cwnd < ssthresh, not in fast
 * recovery or CWR) the sender is paced at RE = alpha * BSE (eq. 4-5; alpha = 1 for Paced
 * Westwood); outside slow start the socket is unpaced (SK_PACING_NONE). The kernel on this
 * machine has no fq: with `cong_avoid` the kernel recomputes sk_pacing_rate after every ACK
 * (tcp_update_pacing_rate: 2x cwnd/SRTT when cwnd < ssthresh/2, else 1.2x) and caps it at
 * sk_max_pacing_rate, so RE is written with bpf_setsockopt(SO_MAX_PACING_RATE) and the
 * enforced rate is min(RE, the kernel's rate). The kernel's rate is above the window's own
 * rate cwnd/SRTT, so the cap only matters when RE would space packets closer than the window
 * sends them anyway. When pacing stops, the cap is lifted (~0U, so TSQ and TSO sizing see the
 * kernel's usual rate) and sk_pacing_status is set to SK_PACING_NONE, which the kernel's
 * internal pacing honours at the next send (tcp_needs_internal_pacing). Before the first BSE
 * sample (the first window of a connection) RE falls back to cwnd/SRTT, Paced NewReno's rate
 * (eq. 3): it is the only rate known then and it does not hold the window back; without an
 * RTT sample the socket is not paced. The kernel leaves a connection's first 10 segments
 * unpaced. SO_MAX_PACING_RATE takes 32 bits of bytes per second (up to ~34 Gbit/s).
 * While paced, each send is one segment (min_tso_segs = 1), and when RE is below the window's
 * own rate the window is held at packets in flight + 2 after each ACK (ww_bound_paced_window):
 * RE can be below the ACK clock's rate, and a window the pacer cannot use would otherwise be
 * sent as one back-to-back GSO skb whenever the kernel's TSO sizing ignores min_tso_segs
 * (measured: in about half the runs, one skb of cwnd/2 segments). The departures are the
 * pacer's either way; cwnd in the trace is the bounded one. The bound does not cover the first
 * window (paced at cwnd/SRTT, which a bounded window would slow), where CI saw trains of 7-10
 * packets twice; so the emulated testbed also caps the sender's interface at one segment per
 * skb (gso_max_segs 1, schemas.algorithms.PACED_EACH_SEGMENT), which no TSO sizing can exceed.
 */
#ifndef CCBENCH_WESTWOOD_COMMON_H
#define CCBENCH_WESTWOOD_COMMON_H

#include "ccbench_cc.h"

#define WW_NO_RTT 0xffffffffU
#define WW_USEC_PER_SEC 1000000ULL

/* Tunables shared by the three Westwood objects (schemas/algorithms.py names them; their
 * defaults are generated into ccb_defaults.h). */
const volatile __u32 bse_gain_x256 = CCB_DEFAULT_BSE_GAIN_X256; /* weight of the old estimate */
const volatile __u32 bse_sample_min_us = CCB_DEFAULT_BSE_SAMPLE_MIN_US; /* shortest BSE window */

struct westwood {
	__u64 bse_Bps;       /* bandwidth share estimate, bytes per second (0: none yet) */
	__u64 bw_ns_Bps;     /* first filter stage */
	__u64 win_start_us;  /* tcp_mstamp when the sampling window began, 0: not yet */
	__u32 win_delivered; /* tp->delivered then */
	__u32 rtt_min_us;    /* smallest RTT sample (WW_NO_RTT: none yet) */
	__u32 round_end;     /* trace once per round trip */
	__u32 cwnd_at_loss;  /* cwnd when ssthresh was last called */
	__u32 pacing_Bps;    /* rate cap written with SO_MAX_PACING_RATE, 0: not paced */
	__u32 pad;
};

static __always_inline __u8 ww_ca_state(const struct sock *sk)
{
	const struct inet_connection_sock *icsk = ccb_csk(sk);

	return BPF_CORE_READ_BITFIELD(icsk, icsk_ca_state);
}

static __always_inline void ww_init(struct sock *sk, struct westwood *ca)
{
	struct tcp_sock *tp = ccb_tcp_sk(sk);

	ca->bse_Bps = 0;
	ca->bw_ns_Bps = 0;
	ca->win_start_us = 0; /* the first window opens at the first ACK of data */
	ca->win_delivered = tp->delivered;
	ca->rtt_min_us = WW_NO_RTT;
	ca->round_end = tp->snd_nxt;
	ca->cwnd_at_loss = tp->snd_cwnd;
	ca->pacing_Bps = 0;
	ca->pad = 0;
}

static __always_inline __u64 ww_filter(__u64 old, __u64 sample)
{
	__u64 g = bse_gain_x256;

	if (g > 256)
		g = 256;
	return (g * old + (256 - g) * sample) >> 8;
}

/* Per ACK (pkts_acked): RTTmin, and one BSE sample when the sampling window has closed. */
static __always_inline void ww_on_ack(struct sock *sk, struct westwood *ca,
				      const struct ack_sample *sample)
{
	struct tcp_sock *tp = ccb_tcp_sk(sk);
	__u64 now = tp->tcp_mstamp, delta, bytes, bw;
	__u32 srtt = tp->srtt_us >> 3, window;

	if (sample->rtt_us > 0)
		ca->rtt_min_us = CCB_MIN(ca->rtt_min_us, (__u32)sample->rtt_us);
	if (!ca->win_start_us) {
		/* Measure from the first ACK of data: the time between connect() and the first
		 * send (ccbench's agents wait for a common start) is not the path's rate. */
		ca->win_start_us = now;
		ca->win_delivered = tp->delivered;
		return;
	}
	if (!srtt)
		return;
	window = CCB_MAX(srtt, bse_sample_min_us);
	delta = now - ca->win_start_us;
	if (now < ca->win_start_us || delta <= window)
		return;
	bytes = (__u64)(tp->delivered - ca->win_delivered) * tp->mss_cache;
	bw = bytes * WW_USEC_PER_SEC / delta;
	if (!ca->bse_Bps && !ca->bw_ns_Bps) {
		ca->bw_ns_Bps = bw;
		ca->bse_Bps = bw;
	} else {
		ca->bw_ns_Bps = ww_filter(ca->bw_ns_Bps, bw);
		ca->bse_Bps = ww_filter(ca->bse_Bps, ca->bw_ns_Bps);
	}
	ca->win_start_us = now;
	ca->win_delivered = tp->delivered;
}

static __always_inline __s64 ww_rtt_min_trace(const struct westwood *ca)
{
	return ca->rtt_min_us == WW_NO_RTT ? 0 : ca->rtt_min_us;
}

/* ssthresh = BSE * RTTmin / segsize, at least 2; Reno's halving while no estimate exists. */
static __always_inline __u32 ww_ssthresh(struct sock *sk, struct westwood *ca)
{
	struct tcp_sock *tp = ccb_tcp_sk(sk);
	__u64 segs;

	ca->cwnd_at_loss = tp->snd_cwnd;
	if (!ca->bse_Bps || ca->rtt_min_us == WW_NO_RTT || !tp->mss_cache)
		return ccb_reno_halve(sk);
	segs = ca->bse_Bps * ca->rtt_min_us / (WW_USEC_PER_SEC * tp->mss_cache);
	segs = CCB_MIN(segs, (__u64)TCP_INFINITE_SSTHRESH - 1);
	return CCB_MAX((__u32)segs, 2U);
}

/* End of fast recovery or CWR: the kernel has just set cwnd = ssthresh (unless the reduction
 * was undone); Westwood keeps cwnd = min(cwnd, ssthresh). */
static __always_inline void ww_complete_cwr(struct sock *sk, struct westwood *ca)
{
	struct tcp_sock *tp = ccb_tcp_sk(sk);

	if (ww_ca_state(sk) != TCP_CA_CWR && !tp->undo_marker)
		return; /* undone: the kernel restored the old window */
	if (tp->snd_cwnd != tp->snd_ssthresh)
		return; /* the kernel did not reset the window (no finite ssthresh) */
	if (tp->snd_cwnd > ca->cwnd_at_loss)
		tp->snd_cwnd = CCB_MAX(ca->cwnd_at_loss, 2U);
}

/* --- pacing (paced variants) ------------------------------------------------------------- */

/* While paced, one segment per send: the kernel's default minimum of two segments per TSO
 * packet would leave back-to-back pairs, which pacing exists to avoid (seed 003 §II-A.1). */
static __always_inline __u32 ww_min_tso_segs(const struct westwood *ca)
{
	return ca->pacing_Bps ? 1 : 2;
}

/* Stop pacing: lift the cap (TSQ and TSO sizing then see the kernel's usual rate) and leave
 * the kernel's internal pacing. */
static __always_inline void ww_unpace(struct sock *sk, struct westwood *ca)
{
	if (ca->pacing_Bps || sk->sk_pacing_status != SK_PACING_NONE) {
		ccb_set_max_pacing(sk, CCB_PACING_UNLIMITED);
		sk->sk_pacing_status = SK_PACING_NONE;
		ca->pacing_Bps = 0;
	}
}

/* Pace at alpha * BSE while in slow start, not at all otherwise. `state` is the congestion
 * state (set_state passes the new one, which the kernel stores only after the call). */
static __always_inline void ww_pace(struct sock *sk, struct westwood *ca, __u32 alpha_x256,
				    __u8 state)
{
	struct tcp_sock *tp = ccb_tcp_sk(sk);
	__u64 re;
	__u32 rate;

	if (!ccb_in_slow_start(tp) || state == TCP_CA_CWR || state == TCP_CA_Recovery) {
		rate = 0;
	} else if (ca->bse_Bps) {
		re = (ca->bse_Bps * alpha_x256) >> 8;
		rate = (__u32)CCB_MAX(CCB_MIN(re, (__u64)CCB_PACING_UNLIMITED - 1), 1ULL);
	} else {
		rate = ccb_window_rate_Bps(sk);
	}
	if (!rate) {
		ww_unpace(sk, ca);
		return;
	}
	sk->sk_pacing_status = SK_PACING_NEEDED;
	if (rate != ca->pacing_Bps) {
		ccb_set_max_pacing(sk, rate);
		ca->pacing_Bps = rate;
	}
}

/* Window slack over the packets in flight while the pacer, not the window, limits the sender. */
#define WW_PACED_WINDOW_SLACK 2U

/* After slow-start growth (cong_avoid): when RE is below the window's own rate, the window is
 * of no use to the pacer beyond what it keeps in flight, so cwnd is held at packets_out + 2.
 * Why it must be: tcp_write_xmit() builds one skb of min(tcp_tso_segs(), tcp_cwnd_test())
 * segments, and with a BPF min_tso_segs op tcp_tso_segs() now and then returns far more than
 * the op's 1 (our program is not seen to run for that call); the skb then covers the whole
 * open window, min(cwnd / 2, cwnd - in flight), and leaves back to back
 * (tcp_update_skb_after_send() charges it to the pacing clock afterwards). Bounding the open
 * window bounds that skb. RE at or above the window's rate (window-limited) is left alone. */
static __always_inline void ww_bound_paced_window(struct sock *sk, const struct westwood *ca)
{
	struct tcp_sock *tp = ccb_tcp_sk(sk);
	__u32 srtt = tp->srtt_us >> 3, limit;
	__u64 pacer_window;

	if (!ca->pacing_Bps || !ca->bse_Bps || !srtt || !tp->mss_cache)
		return; /* not paced, or paced at the window's own rate before the first BSE */
	/* Segments the pacer keeps in flight over one SRTT. */
	pacer_window = (__u64)ca->pacing_Bps * srtt / (WW_USEC_PER_SEC * tp->mss_cache);
	if (tp->snd_cwnd <= pacer_window + WW_PACED_WINDOW_SLACK)
		return;
	limit = tp->packets_out + WW_PACED_WINDOW_SLACK;
	if (tp->snd_cwnd > limit)
		tp->snd_cwnd = limit;
}

#endif
