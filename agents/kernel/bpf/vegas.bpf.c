/* vegas: TCP/Vegas congestion avoidance (CAM) as seed 002 studies it (section 2, "TCP-Vegas").
 *
 * BaseRTT is the smallest RTT the connection has seen. Once per round trip, with RTT the
 * smallest sample of that round (the seed notes that Vegas filters its samples; Linux's Vegas
 * also takes the round's minimum):
 *     Diff = (Expected - Actual) * BaseRTT = cwnd * (1 - BaseRTT / RTT)   packets "in the queue"
 * In congestion avoidance the window grows by one segment per RTT when Diff < alpha, shrinks by
 * one when Diff > beta, and is held in between. In slow start the window doubles only every
 * other round trip (as the seed's ns Vegas does), and slow start ends when Diff > gamma, with the
 * window trimmed to what the path holds. Loss recovery is Reno's. The seed uses alpha = 1 and
 * beta = 3 packets.
 *
 * BPF choices: integer arithmetic only. Diff is compared with the thresholds exactly, as
 * cwnd * (RTT - BaseRTT) against threshold * RTT, not truncated to whole packets first (which
 * would let one more packet queue than beta allows); it is kept in 1/256 packets. Fewer than
 * three RTT samples in a round fall back to Reno for that round, as in Linux, because a single
 * ACK's RTT is dominated by delayed-ACK noise.
 */
#include "ccbench_cc.h"

char _license[] SEC("license") = "GPL";

/* Tunables (schemas/algorithms.py; defaults generated into ccb_defaults.h). */
const volatile __u32 alpha_pkts = CCB_DEFAULT_ALPHA_PKTS;
const volatile __u32 beta_pkts = CCB_DEFAULT_BETA_PKTS;
const volatile __u32 gamma_pkts = CCB_DEFAULT_GAMMA_PKTS;

/* Traced once per round trip, after the round's decision. */
CCB_STATE_FIELDS("diff_x256,base_rtt_us,round_min_rtt_us");

struct vegas {
	__u32 base_rtt_us;  /* lifetime minimum */
	__u32 min_rtt_us;   /* minimum of this round */
	__u32 samples;      /* RTT samples this round */
	__u32 round_end;    /* snd_nxt when the round began */
	__u32 doubling;     /* slow start: grow in this round (every other one) */
	__u32 diff_x256;    /* last Diff, 1/256 packets */
};

static __always_inline void vegas_new_round(struct sock *sk, struct vegas *ca)
{
	ca->round_end = ccb_tcp_sk(sk)->snd_nxt;
	ca->min_rtt_us = 0x7fffffff;
	ca->samples = 0;
}

static __always_inline void vegas_end_round(struct sock *sk, struct vegas *ca)
{
	ccb_trace(sk, CCB_EV_ROUND, ca->diff_x256, ca->base_rtt_us, ca->min_rtt_us, 0);
	vegas_new_round(sk, ca);
}

SEC("struct_ops/ccb_vegas_init")
void BPF_PROG(ccb_vegas_init, struct sock *sk)
{
	struct vegas *ca = ccb_priv(sk);

	sk->sk_pacing_status = SK_PACING_NONE;
	ca->base_rtt_us = 0x7fffffff;
	ca->doubling = 1;
	ca->diff_x256 = 0;
	vegas_new_round(sk, ca);
}

SEC("struct_ops/ccb_vegas_pkts_acked")
void BPF_PROG(ccb_vegas_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct vegas *ca = ccb_priv(sk);
	__u32 rtt;

	if (sample->rtt_us <= 0)
		return;
	rtt = sample->rtt_us + 1; /* never zero */
	ca->base_rtt_us = CCB_MIN(ca->base_rtt_us, rtt);
	ca->min_rtt_us = CCB_MIN(ca->min_rtt_us, rtt);
	ca->samples++;
}

SEC("struct_ops/ccb_vegas_cong_avoid")
void BPF_PROG(ccb_vegas_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = ccb_tcp_sk(sk);
	struct vegas *ca = ccb_priv(sk);
	__u64 queued, rtt; /* queued: Diff x RTT, in packet-microseconds */
	__u32 target;

	if ((__s32)(ack - ca->round_end) < 0) {
		/* Within a round: slow start grows only in its doubling rounds. */
		if (ccb_in_slow_start(tp) && ca->doubling && ccb_is_cwnd_limited(sk))
			ccb_slow_start(tp, acked);
		return;
	}
	/* A round trip ended: decide once for the next one. */
	if (ca->samples <= 2) {
		ccb_reno_grow(sk, acked);
		vegas_end_round(sk, ca);
		return;
	}
	rtt = ca->min_rtt_us;
	queued = (__u64)tp->snd_cwnd * (rtt - ca->base_rtt_us);
	ca->diff_x256 = (__u32)((queued << 8) / rtt);
	if (ccb_in_slow_start(tp)) {
		if (queued > gamma_pkts * rtt) {
			/* Leave slow start at the window the path holds without queueing, plus one. */
			target = (__u32)(((__u64)tp->snd_cwnd * ca->base_rtt_us) / rtt);
			tp->snd_cwnd = CCB_MIN(tp->snd_cwnd, target + 1);
			tp->snd_ssthresh = CCB_MIN(tp->snd_ssthresh, tp->snd_cwnd - 1);
		}
		ca->doubling = !ca->doubling;
	} else if (queued > beta_pkts * rtt) {
		tp->snd_cwnd--;
		tp->snd_ssthresh = CCB_MIN(tp->snd_ssthresh, tp->snd_cwnd - 1);
	} else if (queued < alpha_pkts * rtt) {
		tp->snd_cwnd++;
	}
	tp->snd_cwnd = CCB_MAX(tp->snd_cwnd, 2U);
	tp->snd_cwnd = CCB_MIN(tp->snd_cwnd, tp->snd_cwnd_clamp);
	tp->snd_ssthresh = CCB_MAX(tp->snd_ssthresh, 2U);
	vegas_end_round(sk, ca);
}

SEC("struct_ops/ccb_vegas_ssthresh")
__u32 BPF_PROG(ccb_vegas_ssthresh, struct sock *sk)
{
	struct vegas *ca = ccb_priv(sk);

	ccb_trace(sk, CCB_EV_LOSS, ca->diff_x256, ca->base_rtt_us, ca->min_rtt_us, 0);
	return ccb_reno_halve(sk);
}

SEC("struct_ops/ccb_vegas_undo_cwnd")
__u32 BPF_PROG(ccb_vegas_undo_cwnd, struct sock *sk)
{
	return ccb_reno_undo(sk);
}

SEC(".struct_ops")
struct tcp_congestion_ops vegas_ops = {
	.init = (void *)ccb_vegas_init,
	.pkts_acked = (void *)ccb_vegas_pkts_acked,
	.cong_avoid = (void *)ccb_vegas_cong_avoid,
	.ssthresh = (void *)ccb_vegas_ssthresh,
	.undo_cwnd = (void *)ccb_vegas_undo_cwnd,
	.name = "ccb_vegas",
};
