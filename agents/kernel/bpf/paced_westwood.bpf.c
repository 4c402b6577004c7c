/* paced_westwood: Paced Westwood, seed 003 §III-C.1: TCP Westwood (§III-A; see westwood.bpf.c)
 * paced during slow start only, at the bandwidth share estimate itself: the inter-departure
 * time is 1/BSE (eq. 5 with alpha = 1). Outside slow start (congestion avoidance, fast
 * recovery) the sender is not paced. The seed reports that this variant under-performs because
 * pacing at an under-estimated BSE spaces the ACKs further and lowers the next BSE (positive
 * feedback); alpha_paced_westwood is its correction.
 *
 * Everything shared with the other Westwood variants (BSE estimator, loss response, the
 * pacing mechanism and its limits, the rate before the first BSE sample) is described in
 * westwood_common.h. In short: BPF `cong_avoid` with the kernel's recovery; the rate is set with
 * bpf_setsockopt(SO_MAX_PACING_RATE) and SK_PACING_NEEDED in slow start, lifted and
 * SK_PACING_NONE otherwise; before the first BSE sample the rate is cwnd/SRTT.
 * Tunables (.rodata, written by the loader): bse_gain_x256, bse_sample_min_us.
 */
#include "westwood_common.h"

char _license[] SEC("license") = "GPL";

#define PACED_WESTWOOD_ALPHA_X256 256 /* alpha = 1: pace at BSE itself */

/* Traced once per round trip and at each loss; pacing_rate_bps is the rate cap RE the
 * controller set (0 while unpaced), not the kernel's possibly lower min(RE, 2x cwnd/SRTT). */
CCB_STATE_FIELDS("bse_bps,rtt_min_us,pacing_rate_bps");

static __always_inline void paced_westwood_trace(struct sock *sk, struct westwood *ca,
						 enum ccb_event event)
{
	ccb_trace(sk, event, (__s64)(ca->bse_Bps * 8), ww_rtt_min_trace(ca),
		  (__s64)ca->pacing_Bps * 8, 0);
}

SEC("struct_ops/ccb_paced_westwood_init")
void BPF_PROG(ccb_paced_westwood_init, struct sock *sk)
{
	struct westwood *ca = ccb_priv(sk);

	/* Slow start begins paced; sk_pacing_status is set here explicitly (a socket switched from
	 * bbr keeps its flag otherwise). */
	sk->sk_pacing_status = SK_PACING_NONE;
	ww_init(sk, ca);
	ww_pace(sk, ca, PACED_WESTWOOD_ALPHA_X256, ww_ca_state(sk));
}

SEC("struct_ops/ccb_paced_westwood_pkts_acked")
void BPF_PROG(ccb_paced_westwood_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct westwood *ca = ccb_priv(sk);

	ww_on_ack(sk, ca, sample);
	/* A new BSE sample changes RE; outside cong_avoid (recovery) this keeps pacing off. */
	ww_pace(sk, ca, PACED_WESTWOOD_ALPHA_X256, ww_ca_state(sk));
	if (ccb_round_ended(sk, &ca->round_end))
		paced_westwood_trace(sk, ca, CCB_EV_ROUND);
}

SEC("struct_ops/ccb_paced_westwood_cong_avoid")
void BPF_PROG(ccb_paced_westwood_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct westwood *ca = ccb_priv(sk);

	ccb_reno_grow(sk, acked);
	ww_pace(sk, ca, PACED_WESTWOOD_ALPHA_X256, ww_ca_state(sk)); /* slow start may have ended */
}

SEC("struct_ops/ccb_paced_westwood_ssthresh")
__u32 BPF_PROG(ccb_paced_westwood_ssthresh, struct sock *sk)
{
	struct westwood *ca = ccb_priv(sk);

	paced_westwood_trace(sk, ca, CCB_EV_LOSS);
	return ww_ssthresh(sk, ca);
}

SEC("struct_ops/ccb_paced_westwood_set_state")
void BPF_PROG(ccb_paced_westwood_set_state, struct sock *sk, __u8 new_state)
{
	struct westwood *ca = ccb_priv(sk);

	if (new_state == TCP_CA_Loss)
		paced_westwood_trace(sk, ca, CCB_EV_TIMEOUT);
	/* Recovery and CWR stop pacing; a timeout (cwnd = 1, below ssthresh) starts it again. */
	ww_pace(sk, ca, PACED_WESTWOOD_ALPHA_X256, new_state);
}

SEC("struct_ops/ccb_paced_westwood_cwnd_event")
void BPF_PROG(ccb_paced_westwood_cwnd_event, struct sock *sk, enum tcp_ca_event event)
{
	struct westwood *ca = ccb_priv(sk);

	if (event == CA_EVENT_COMPLETE_CWR) {
		/* Fast recovery ended (already CA_Open) or CWR ends (CA_Open follows): the
		 * window may now be below ssthresh, i.e. in slow start, and paced again. */
		ww_complete_cwr(sk, ca);
		ww_pace(sk, ca, PACED_WESTWOOD_ALPHA_X256, ww_ca_state(sk));
	}
}

SEC("struct_ops/ccb_paced_westwood_undo_cwnd")
__u32 BPF_PROG(ccb_paced_westwood_undo_cwnd, struct sock *sk)
{
	return ccb_reno_undo(sk);
}

SEC("struct_ops/ccb_paced_westwood_min_tso_segs")
__u32 BPF_PROG(ccb_paced_westwood_min_tso_segs, struct sock *sk)
{
	return ww_min_tso_segs(ccb_priv(sk));
}

SEC(".struct_ops")
struct tcp_congestion_ops paced_westwood_ops = {
	.init = (void *)ccb_paced_westwood_init,
	.pkts_acked = (void *)ccb_paced_westwood_pkts_acked,
	.cong_avoid = (void *)ccb_paced_westwood_cong_avoid,
	.ssthresh = (void *)ccb_paced_westwood_ssthresh,
	.set_state = (void *)ccb_paced_westwood_set_state,
	.cwnd_event = (void *)ccb_paced_westwood_cwnd_event,
	.undo_cwnd = (void *)ccb_paced_westwood_undo_cwnd,
	.min_tso_segs = (void *)ccb_paced_westwood_min_tso_segs,
	.name = "ccb_paced_westw",
};
