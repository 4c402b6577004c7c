/* aaimd: adaptive AIMD (adaptive backoff), seed 001, sections III, IV-D and V.
 *
 * Reno's slow start and loss detection, with the AIMD parameters adapted at each congestion
 * event:
 *     beta  = RTTmin / RTTmax, clamped to [0.5, beta_max]                  (eq. 4, 7; III)
 *     alpha = 2 (1 - beta)   segments per RTT in congestion avoidance      (eq. 5)
 *     cwnd  = beta * cwnd    at the congestion event (what ssthresh returns)
 * RTTmin is the smallest RTT sample observed (V). RTTmax is the largest *smoothed* RTT observed
 * (V: the kernel's srtt, which filters delayed-ACK spikes), and after each congestion event it
 * fades towards RTTmin (eq. 9):
 *     RTTmax <- RTTmin + a (RTTmax - RTTmin),    a = 7/8.
 * The seed uses beta_max = 0.8. Before the first congestion event beta = 0.5 and alpha = 1
 * (standard TCP).
 *
 * variant = 1 selects the throughput form of the backoff factor (V, "Smoothed RTT and
 * Throughput", eq. 10):
 *     beta(k+1) = beta(k) * B-(k) / B+(k),   clamped to [0.5, beta_max],
 * where B-(k) is the flow's throughput over the round trip before the k-th congestion event and
 * B+(k) over the round trip immediately after it. After a backoff that empties the queue,
 * B+ = beta w / RTTmin and B- = w / RTTmax, so the product is RTTmin / RTTmax again. beta(k+1)
 * is known one round trip after event k and is applied at event k+1.
 *
 * Choices forced by BPF or by Linux:
 * - Integer arithmetic only: beta and alpha are fixed point over 256 (beta_x256 = 128 is 0.5,
 *   alpha_x256 = 2 * (256 - beta_x256)); the fractional increase alpha/cwnd per acked segment is
 *   counted in tp->snd_cwnd_cnt in 1/256 segments (the kernel resets it at each window cut,
 *   as for Reno), one segment added per cwnd * 256 counted.
 * - Throughput is measured from tp->delivered (segments delivered, SACKed included) and
 *   tp->tcp_mstamp (microseconds) over round trips delimited by snd_una passing the snd_nxt of
 *   the round's start, in pkts_acked (called on every ACK, loss recovery included). B-(k) is the
 *   last round completed before the event. B+(k) is measured over the first round trip whose
 *   data was all sent after the backoff, i.e. starting when snd_una passes the snd_nxt of the
 *   event (earlier ACKs still report data sent at the old window). A timeout, an undo, or a
 *   second event before B+ is measured cancels the update (beta is then kept): after a timeout
 *   the flow slow-starts and its throughput says nothing about the queue.
 * - The seed writes eq. 10 with a minimum over j, min_j beta(j) B-(j)/B+(j); its text does not
 *   say over which events. This controller uses the last event (j = k) only.
 * - An undo (spurious loss) restores beta and RTTmax as they were before the event.
 */
#include "ccbench_cc.h"

char _license[] SEC("license") = "GPL";

/* Tunables: written by ccbench's loader from the spec (schemas/algorithms.py is the source of
 * their names, units and defaults; ccb_defaults.h is generated from it). */
const volatile __u32 beta_max_x256 = CCB_DEFAULT_BETA_MAX_X256;
const volatile __u32 rtt_max_fade_x256 = CCB_DEFAULT_RTT_MAX_FADE_X256; /* a */
const volatile __u32 variant = CCB_DEFAULT_VARIANT; /* 0: RTT ratio (eq. 4), 1: throughput (eq. 10) */

#define AAIMD_BETA_MIN_X256 128U

/* Traced per round trip and at each congestion event (with the event's beta and the RTTmax it
 * came from, before RTTmax fades). */
CCB_STATE_FIELDS("beta_x256,alpha_x256,rtt_min_us,rtt_max_us");

enum { MEASURE_IDLE = 0, MEASURE_WAIT = 1, MEASURE_ROUND = 2 };

struct aaimd {
	__u64 round_mstamp;     /* tcp_mstamp when the current throughput round began */
	__u64 rate_last;        /* throughput of the last completed round, segments/us << 24 */
	__u64 rate_before;      /* B-(k): rate_last at the last congestion event */
	__u32 round_end;        /* throughput rounds: snd_nxt when the round began */
	__u32 round_delivered;  /* tp->delivered when the round began */
	__u32 measure;          /* MEASURE_*: where B+(k) stands */
	__u32 measure_seq;      /* MEASURE_WAIT: snd_nxt at the event */
	__u32 rtt_min_us;
	__u32 rtt_max_us;       /* max of the smoothed RTT, faded at each event */
	__u32 beta_x256;
	__u32 undo_beta_x256;
	__u32 undo_rtt_max_us;
	__u32 trace_round_end;
};

static __always_inline __u32 aaimd_alpha_x256(const struct aaimd *ca)
{
	return 2 * (256 - CCB_MIN(ca->beta_x256, 256U));
}

static __always_inline __u32 aaimd_clamp_beta(__u64 beta_x256)
{
	__u32 b = beta_x256 > beta_max_x256 ? beta_max_x256 : (__u32)beta_x256;

	return CCB_MAX(b, AAIMD_BETA_MIN_X256);
}

static __always_inline void aaimd_trace(struct sock *sk, struct aaimd *ca, enum ccb_event event)
{
	ccb_trace(sk, event, ca->beta_x256, aaimd_alpha_x256(ca), ca->rtt_min_us, ca->rtt_max_us);
}

static __always_inline void aaimd_new_round(struct sock *sk, struct aaimd *ca)
{
	const struct tcp_sock *tp = ccb_tcp_sk(sk);

	ca->round_end = tp->snd_nxt;
	ca->round_delivered = tp->delivered;
	ca->round_mstamp = tp->tcp_mstamp;
}

SEC("struct_ops/ccb_aaimd_init")
void BPF_PROG(ccb_aaimd_init, struct sock *sk)
{
	struct aaimd *ca = ccb_priv(sk);

	sk->sk_pacing_status = SK_PACING_NONE;
	ca->rate_last = 0;
	ca->rate_before = 0;
	ca->measure = MEASURE_IDLE;
	ca->measure_seq = 0;
	ca->rtt_min_us = 0;
	ca->rtt_max_us = 0;
	ca->beta_x256 = AAIMD_BETA_MIN_X256;
	ca->undo_beta_x256 = AAIMD_BETA_MIN_X256;
	ca->undo_rtt_max_us = 0;
	ca->trace_round_end = ccb_tcp_sk(sk)->snd_nxt;
	aaimd_new_round(sk, ca);
}

/* Eq. 10: beta(k+1) = beta(k) * B-(k) / B+(k), once B+(k) is measured. */
static __always_inline void aaimd_throughput_update(struct sock *sk, struct aaimd *ca,
						    __u64 rate_after)
{
	if (!ca->rate_before || !rate_after)
		return;
	ca->beta_x256 = aaimd_clamp_beta((ca->beta_x256 * ca->rate_before) / rate_after);
	aaimd_trace(sk, ca, CCB_EV_CHANGE);
}

/* Throughput rounds, for variant 1. */
static __always_inline void aaimd_measure(struct sock *sk, struct aaimd *ca)
{
	const struct tcp_sock *tp = ccb_tcp_sk(sk);
	__u64 elapsed, rate;

	if (ca->measure == MEASURE_WAIT && (__s32)(tp->snd_una - ca->measure_seq) >= 0) {
		/* Everything sent before the backoff is acknowledged: B+ starts now. */
		ca->measure = MEASURE_ROUND;
		aaimd_new_round(sk, ca);
		return;
	}
	if ((__s32)(tp->snd_una - ca->round_end) < 0)
		return;
	elapsed = tp->tcp_mstamp - ca->round_mstamp;
	rate = elapsed ? ((__u64)(tp->delivered - ca->round_delivered) << 24) / elapsed : 0;
	if (ca->measure == MEASURE_ROUND) {
		ca->measure = MEASURE_IDLE;
		aaimd_throughput_update(sk, ca, rate);
	}
	ca->rate_last = rate;
	aaimd_new_round(sk, ca);
}

SEC("struct_ops/ccb_aaimd_pkts_acked")
void BPF_PROG(ccb_aaimd_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct tcp_sock *tp = ccb_tcp_sk(sk);
	struct aaimd *ca = ccb_priv(sk);
	__u32 srtt = tp->srtt_us >> 3;

	if (variant == 1)
		aaimd_measure(sk, ca);
	if (sample->rtt_us <= 0)
		return;
	if (ca->rtt_min_us == 0 || (__u32)sample->rtt_us < ca->rtt_min_us)
		ca->rtt_min_us = sample->rtt_us;
	ca->rtt_max_us = CCB_MAX(ca->rtt_max_us, srtt);
}

/* Additive increase of alpha segments per RTT: alpha_x256 / 256 per window acked. */
static __always_inline void aaimd_cong_avoid_ai(struct tcp_sock *tp, __u32 alpha_x256, __u32 acked)
{
	__u64 w = (__u64)CCB_MAX(tp->snd_cwnd, 1U) << 8;
	__u64 cnt = tp->snd_cwnd_cnt;

	if (cnt >= w) {
		cnt = 0;
		tp->snd_cwnd++;
		w += 256;
	}
	cnt += (__u64)acked * alpha_x256;
	if (cnt >= w) {
		__u64 delta = cnt / w;

		cnt -= delta * w;
		tp->snd_cwnd += (__u32)delta;
	}
	tp->snd_cwnd_cnt = (__u32)cnt;
	tp->snd_cwnd = CCB_MIN(tp->snd_cwnd, tp->snd_cwnd_clamp);
}

SEC("struct_ops/ccb_aaimd_cong_avoid")
void BPF_PROG(ccb_aaimd_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = ccb_tcp_sk(sk);
	struct aaimd *ca = ccb_priv(sk);

	if (ccb_round_ended(sk, &ca->trace_round_end))
		aaimd_trace(sk, ca, CCB_EV_ROUND);
	if (!ccb_is_cwnd_limited(sk))
		return;
	if (ccb_in_slow_start(tp)) {
		acked = ccb_slow_start(tp, acked);
		if (!acked)
			return;
	}
	aaimd_cong_avoid_ai(tp, aaimd_alpha_x256(ca), acked);
}

SEC("struct_ops/ccb_aaimd_ssthresh")
__u32 BPF_PROG(ccb_aaimd_ssthresh, struct sock *sk)
{
	struct tcp_sock *tp = ccb_tcp_sk(sk);
	struct aaimd *ca = ccb_priv(sk);
	__u32 rmin = ca->rtt_min_us, rmax = ca->rtt_max_us;

	ca->undo_beta_x256 = ca->beta_x256;
	ca->undo_rtt_max_us = rmax;
	if (variant == 1) {
		/* beta(k) was set from the previous event's throughputs; measure B+(k) next. */
		ca->rate_before = ca->rate_last;
		ca->measure = MEASURE_WAIT;
		ca->measure_seq = tp->snd_nxt;
	} else if (rmin && rmax) {
		ca->beta_x256 = aaimd_clamp_beta(((__u64)rmin << 8) / rmax);
	}
	/* Traced with the RTTmax the new beta came from, before it fades. */
	aaimd_trace(sk, ca, CCB_EV_LOSS);
	/* Eq. 9: fading memory of RTTmax, applied at each congestion event. */
	if (rmax > rmin)
		ca->rtt_max_us = rmin + (__u32)(((__u64)(rmax - rmin) * rtt_max_fade_x256) >> 8);
	return CCB_MAX((__u32)(((__u64)tp->snd_cwnd * ca->beta_x256) >> 8), 2U);
}

SEC("struct_ops/ccb_aaimd_set_state")
void BPF_PROG(ccb_aaimd_set_state, struct sock *sk, __u8 new_state)
{
	struct aaimd *ca = ccb_priv(sk);

	if (new_state != TCP_CA_Loss)
		return;
	ca->measure = MEASURE_IDLE; /* the flow slow-starts: no B+ for this event */
	aaimd_trace(sk, ca, CCB_EV_TIMEOUT);
}

SEC("struct_ops/ccb_aaimd_undo_cwnd")
__u32 BPF_PROG(ccb_aaimd_undo_cwnd, struct sock *sk)
{
	struct aaimd *ca = ccb_priv(sk);

	/* The loss was spurious: the event did not happen. */
	ca->beta_x256 = ca->undo_beta_x256;
	ca->rtt_max_us = CCB_MAX(ca->rtt_max_us, ca->undo_rtt_max_us);
	ca->measure = MEASURE_IDLE;
	return ccb_reno_undo(sk);
}

SEC(".struct_ops")
struct tcp_congestion_ops aaimd_ops = {
	.init = (void *)ccb_aaimd_init,
	.pkts_acked = (void *)ccb_aaimd_pkts_acked,
	.cong_avoid = (void *)ccb_aaimd_cong_avoid,
	.ssthresh = (void *)ccb_aaimd_ssthresh,
	.set_state = (void *)ccb_aaimd_set_state,
	.undo_cwnd = (void *)ccb_aaimd_undo_cwnd,
	.name = "ccb_aaimd",
};
