/* bfa: TCP-BFA, Buffer Fill Avoidance (seed 000, section 3).
 *
 * Reno, plus a signed RTT variance srv that tracks the drift of the RTT:
 *     srv <- alpha_srv * srv + (1 - alpha_srv) * delta,  delta = measured RTT - smoothed RTT,
 * and a BFA flag with hysteresis: set when srv > sigma_on, cleared when srv <= sigma_off. While
 * the flag is set the congestion window is held constant (neither slow start nor congestion
 * avoidance grows it). The flag is cleared whenever the window drops after a timeout or a fast
 * retransmit. The seed uses alpha_srv = 1/2, sigma_on = 10 ms, sigma_off = -10 ms.
 *
 * Choices forced by BPF or by Linux, each kept close to the seed's FreeBSD implementation:
 * - One RTT sample per round trip, as BSD timed one segment per window: the first segment sent
 *   after the previous sample is timed (BSD's t_rtseq), so the sample comes with the first ACK
 *   beyond the snd_nxt of the previous sample, as in the userspace twin (ccbench-cc's Rounds).
 *   Waiting only for snd_una to reach that snd_nxt would time the last segment of the
 *   previous flight instead, which in slow start is the tail of a burst: with Linux's initial
 *   window of 10 on a 10-packet BDP the second sample then saw the whole burst queued
 *   (120 ms against 66 ms) and froze the window at 19 packets where the userspace twin held
 *   32 (issue 21; docs/runtimes.md). The smoothed RTT is ccbench's own Jacobson estimator
 *   (gain 1/8) over those samples. Linux updates srtt_us on every ACK, which would make delta
 *   (and srv) shrink with the ACK rate.
 * - alpha_srv is fixed point over 256 (alpha_srv_x256 = 128 is 1/2); srv is in microseconds and
 *   filtered with an arithmetic shift (no signed division in clang 14).
 */
#include "ccbench_cc.h"

char _license[] SEC("license") = "GPL";

/* Tunables: written by ccbench's loader from the spec (schemas/algorithms.py is the source of
 * their names, units and defaults; ccb_defaults.h is generated from it). */
const volatile __s32 sigma_on_us = CCB_DEFAULT_SIGMA_ON_US;
const volatile __s32 sigma_off_us = CCB_DEFAULT_SIGMA_OFF_US;
const volatile __u32 alpha_srv_x256 = CCB_DEFAULT_ALPHA_SRV_X256;

/* Traced per round trip: the flag, srv and ccbench's own smoothed RTT of the seed's formula. */
CCB_STATE_FIELDS("flag,srv_us,bfa_srtt_us");

struct bfa {
	__u32 sample_seq;  /* the segment timed this round starts here: sampled once acked */
	__u32 srtt_us_x8;  /* own smoothed RTT over per-round samples, x8 */
	__s64 srv_us;      /* signed RTT variance */
	__u32 flag;        /* BFA flag: hold cwnd */
	__u32 samples;
	__u32 trace_round_end;
};

static __always_inline void bfa_trace(struct sock *sk, struct bfa *ca, enum ccb_event event)
{
	ccb_trace(sk, event, ca->flag, ca->srv_us, ca->srtt_us_x8 >> 3, 0);
}

static __always_inline void bfa_clear(struct sock *sk, struct bfa *ca, enum ccb_event event)
{
	bfa_trace(sk, ca, event);
	ca->flag = 0;
}

SEC("struct_ops/ccb_bfa_init")
void BPF_PROG(ccb_bfa_init, struct sock *sk)
{
	struct bfa *ca = ccb_priv(sk);

	sk->sk_pacing_status = SK_PACING_NONE;
	ca->sample_seq = ccb_tcp_sk(sk)->snd_nxt;
	ca->srtt_us_x8 = 0;
	ca->srv_us = 0;
	ca->flag = 0;
	ca->samples = 0;
	ca->trace_round_end = ccb_tcp_sk(sk)->snd_nxt;
}

SEC("struct_ops/ccb_bfa_pkts_acked")
void BPF_PROG(ccb_bfa_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct tcp_sock *tp = ccb_tcp_sk(sk);
	struct bfa *ca = ccb_priv(sk);
	__s64 delta, alpha = alpha_srv_x256;
	__u32 rtt;

	/* The timed segment (the first sent after the previous sample) is acknowledged once
	 * snd_una has moved beyond its first byte; rtt_us is then its RTT (or, when one ACK covers
	 * more, the RTT of the newest segment it acknowledges). */
	if (sample->rtt_us <= 0 || (__s32)(tp->snd_una - ca->sample_seq) <= 0)
		return;
	ca->sample_seq = tp->snd_nxt;
	rtt = sample->rtt_us;
	if (ca->samples++ == 0) {
		ca->srtt_us_x8 = rtt << 3;
		return;
	}
	delta = (__s64)rtt - (__s64)(ca->srtt_us_x8 >> 3);
	ca->srv_us = (alpha * ca->srv_us + (256 - alpha) * delta) >> 8;
	ca->srtt_us_x8 = ca->srtt_us_x8 - (ca->srtt_us_x8 >> 3) + rtt;
	if (ca->flag) {
		if (ca->srv_us <= sigma_off_us) {
			ca->flag = 0;
			bfa_trace(sk, ca, CCB_EV_CHANGE);
		}
	} else if (ca->srv_us > sigma_on_us) {
		ca->flag = 1;
		bfa_trace(sk, ca, CCB_EV_CHANGE);
	}
}

SEC("struct_ops/ccb_bfa_cong_avoid")
void BPF_PROG(ccb_bfa_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct bfa *ca = ccb_priv(sk);

	if (ccb_round_ended(sk, &ca->trace_round_end))
		bfa_trace(sk, ca, CCB_EV_ROUND);
	if (ca->flag)
		return; /* Buffer Fill Avoidance: the window is held */
	ccb_reno_grow(sk, acked);
}

SEC("struct_ops/ccb_bfa_ssthresh")
__u32 BPF_PROG(ccb_bfa_ssthresh, struct sock *sk)
{
	/* Called when the window is cut: fast retransmit or timeout. */
	bfa_clear(sk, ccb_priv(sk), CCB_EV_LOSS);
	return ccb_reno_halve(sk);
}

SEC("struct_ops/ccb_bfa_set_state")
void BPF_PROG(ccb_bfa_set_state, struct sock *sk, __u8 new_state)
{
	if (new_state == TCP_CA_Loss)
		bfa_clear(sk, ccb_priv(sk), CCB_EV_TIMEOUT);
}

SEC("struct_ops/ccb_bfa_undo_cwnd")
__u32 BPF_PROG(ccb_bfa_undo_cwnd, struct sock *sk)
{
	return ccb_reno_undo(sk);
}

SEC(".struct_ops")
struct tcp_congestion_ops bfa_ops = {
	.init = (void *)ccb_bfa_init,
	.pkts_acked = (void *)ccb_bfa_pkts_acked,
	.cong_avoid = (void *)ccb_bfa_cong_avoid,
	.ssthresh = (void *)ccb_bfa_ssthresh,
	.set_state = (void *)ccb_bfa_set_state,
	.undo_cwnd = (void *)ccb_bfa_undo_cwnd,
	.name = "ccb_bfa",
};
