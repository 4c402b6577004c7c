/* dual: Wang and Crowcroft's Dual as seed 002 describes it (section 2, "Dual").
 *
 * Dmin and Dmax are the smallest and largest RTT the connection has observed over its lifetime,
 * and the delay threshold is
 *     D = (1 - a) * Dmin + a * Dmax,    a = 1/2 by default.
 * Slow start and congestion avoidance are Reno's, except that every other round trip the
 * current RTT sample is compared with D, and
 *     if (rtt > D)  cwnd -= min(cwnd, wnd) / 8        (wnd: the receiver's window)
 * Loss recovery is Reno's (halve on loss). The seed's TCP/Dual times every packet (so every ACK's
 * RTT sample updates Dmin and Dmax, and "the current RTT sample" is the latest one) and, like its
 * Vegas, doubles the window only every other round trip in slow start: the tunable
 * ss_every_other selects that (1, the seed's TCP/Dual) or Reno's slow start (0, Dual as
 * originally described: "slow start and congestion avoidance remain unchanged"). Dual resets
 * Dmin and Dmax after a timeout; the seed chose not to, and neither does this controller.
 *
 * Choices forced by BPF or by Linux:
 * - Integer arithmetic only: a is fixed point over 256 (a_x256 = 128 is 1/2), the threshold is
 *   Dmin + ((Dmax - Dmin) * a_x256 >> 8) in microseconds, all unsigned.
 * - The window is counted in segments, not bytes, so the 1/8 cut is rounded to the nearest
 *   segment ((w + 4) / 8: nothing below 4 segments) and never leaves fewer than 2 segments.
 * - A cut also lowers ssthresh to the new window, so that a cut in slow start ends it (Dual's aim
 *   is to stop slow start's overshoot; Linux's Vegas does the same when it shrinks the window).
 * - Round trips are counted when snd_una passes the snd_nxt of the round's start, in cong_avoid,
 *   i.e. outside loss recovery (as for the other controllers' traces).
 */
#include "ccbench_cc.h"

char _license[] SEC("license") = "GPL";

/* Tunables: written by ccbench's loader from the spec (schemas/algorithms.py is the source of
 * their names, units and defaults; ccb_defaults.h is generated from it). */
const volatile __u32 a_x256 = CCB_DEFAULT_A_X256;
const volatile __u32 ss_every_other = CCB_DEFAULT_SS_EVERY_OTHER;

/* Traced per round trip, at each cut and at each loss. rtt_us is the RTT sample the last
 * decision (or the latest ACK) used. */
CCB_STATE_FIELDS("threshold_us,dmin_us,dmax_us,rtt_us");

struct dual {
	__u32 dmin_us;    /* lifetime minimum RTT sample */
	__u32 dmax_us;    /* lifetime maximum RTT sample */
	__u32 rtt_us;     /* the latest RTT sample */
	__u32 round_end;  /* snd_nxt when the round began */
	__u32 check;      /* this round ends with Dual's comparison (every other round) */
};

static __always_inline __u32 dual_threshold(const struct dual *ca)
{
	if (ca->dmax_us <= ca->dmin_us)
		return ca->dmin_us;
	return ca->dmin_us + (__u32)(((__u64)(ca->dmax_us - ca->dmin_us) * a_x256) >> 8);
}

static __always_inline void dual_trace(struct sock *sk, struct dual *ca, enum ccb_event event)
{
	ccb_trace(sk, event, dual_threshold(ca), ca->dmin_us, ca->dmax_us, ca->rtt_us);
}

SEC("struct_ops/ccb_dual_init")
void BPF_PROG(ccb_dual_init, struct sock *sk)
{
	struct dual *ca = ccb_priv(sk);

	sk->sk_pacing_status = SK_PACING_NONE;
	ca->dmin_us = 0;
	ca->dmax_us = 0;
	ca->rtt_us = 0;
	ca->round_end = ccb_tcp_sk(sk)->snd_nxt;
	ca->check = 0;
}

SEC("struct_ops/ccb_dual_pkts_acked")
void BPF_PROG(ccb_dual_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct dual *ca = ccb_priv(sk);
	__u32 rtt;

	if (sample->rtt_us <= 0)
		return;
	rtt = sample->rtt_us;
	ca->rtt_us = rtt;
	if (ca->dmin_us == 0 || rtt < ca->dmin_us)
		ca->dmin_us = rtt;
	if (rtt > ca->dmax_us)
		ca->dmax_us = rtt;
}

/* Dual's decrease: cwnd -= min(cwnd, wnd) / 8, rounded to the nearest segment. */
static __always_inline void dual_cut(struct sock *sk, struct dual *ca)
{
	struct tcp_sock *tp = ccb_tcp_sk(sk);
	__u32 w = tp->snd_cwnd, mss = tp->mss_cache, cut;

	/* Traced before the cut (the window it cut); the round sample that follows shows after. */
	dual_trace(sk, ca, CCB_EV_CHANGE);
	if (mss)
		w = CCB_MIN(w, tp->snd_wnd / mss);
	cut = (w + 4) >> 3;
	tp->snd_cwnd = tp->snd_cwnd > cut + 2 ? tp->snd_cwnd - cut : 2;
	tp->snd_ssthresh = CCB_MAX(CCB_MIN(tp->snd_ssthresh, tp->snd_cwnd), 2U);
}

SEC("struct_ops/ccb_dual_cong_avoid")
void BPF_PROG(ccb_dual_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = ccb_tcp_sk(sk);
	struct dual *ca = ccb_priv(sk);

	if (ccb_round_ended(sk, &ca->round_end)) {
		__u32 check = ca->check;

		ca->check = !check;
		if (check && ca->rtt_us && ca->rtt_us > dual_threshold(ca)) {
			dual_cut(sk, ca);
			dual_trace(sk, ca, CCB_EV_ROUND);
			return;
		}
		dual_trace(sk, ca, CCB_EV_ROUND);
	}
	/* The seed's TCP/Dual: in slow start, grow only in every other round (the rounds that do
	 * not end with the comparison), like its Vegas. */
	if (ss_every_other && ca->check && ccb_in_slow_start(tp))
		return;
	ccb_reno_grow(sk, acked);
}

SEC("struct_ops/ccb_dual_ssthresh")
__u32 BPF_PROG(ccb_dual_ssthresh, struct sock *sk)
{
	dual_trace(sk, ccb_priv(sk), CCB_EV_LOSS);
	return ccb_reno_halve(sk);
}

SEC("struct_ops/ccb_dual_set_state")
void BPF_PROG(ccb_dual_set_state, struct sock *sk, __u8 new_state)
{
	if (new_state == TCP_CA_Loss)
		dual_trace(sk, ccb_priv(sk), CCB_EV_TIMEOUT);
}

SEC("struct_ops/ccb_dual_undo_cwnd")
__u32 BPF_PROG(ccb_dual_undo_cwnd, struct sock *sk)
{
	return ccb_reno_undo(sk);
}

SEC(".struct_ops")
struct tcp_congestion_ops dual_ops = {
	.init = (void *)ccb_dual_init,
	.pkts_acked = (void *)ccb_dual_pkts_acked,
	.cong_avoid = (void *)ccb_dual_cong_avoid,
	.ssthresh = (void *)ccb_dual_ssthresh,
	.set_state = (void *)ccb_dual_set_state,
	.undo_cwnd = (void *)ccb_dual_undo_cwnd,
	.name = "ccb_dual",
};
