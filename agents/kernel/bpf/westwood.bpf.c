/* westwood: TCP Westwood as seed 003 describes it (§III-A, "Background"): Reno, except that
 * after a congestion episode the slow start threshold and the window are set from the
 * bandwidth share estimate BSE, the low-pass filtered rate of returning ACKs:
 *     ssthresh = BSE * RTTmin / segsize;   three duplicate ACKs: cwnd = min(cwnd, ssthresh);
 *     timeout: cwnd = 1.
 * Window growth between losses is Reno's (slow start, then one segment per RTT). No pacing
 * (sk_pacing_status = SK_PACING_NONE, as the seed's unpaced TCPW).
 *
 * The estimator, the loss response and every choice forced by BPF or by Linux are described
 * in westwood_common.h: the seed names ABSE but gives no constants, so BSE is Linux's
 * Westwood+ estimator (per-RTT samples, >= 50 ms, two cascaded EWMAs of gain 7/8), with
 * integer arithmetic in bytes per second; the kernel's own fast recovery (PRR) runs between
 * the cut and the end of recovery. Tunables (.rodata, written by the loader): bse_gain_x256,
 * bse_sample_min_us.
 */
#include "westwood_common.h"

char _license[] SEC("license") = "GPL";

/* Traced once per round trip and at each loss. */
CCB_STATE_FIELDS("bse_bps,rtt_min_us");

static __always_inline void westwood_trace(struct sock *sk, struct westwood *ca,
					   enum ccb_event event)
{
	ccb_trace(sk, event, (__s64)(ca->bse_Bps * 8), ww_rtt_min_trace(ca), 0, 0);
}

SEC("struct_ops/ccb_westwood_init")
void BPF_PROG(ccb_westwood_init, struct sock *sk)
{
	sk->sk_pacing_status = SK_PACING_NONE;
	ww_init(sk, ccb_priv(sk));
}

SEC("struct_ops/ccb_westwood_pkts_acked")
void BPF_PROG(ccb_westwood_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct westwood *ca = ccb_priv(sk);

	ww_on_ack(sk, ca, sample);
	if (ccb_round_ended(sk, &ca->round_end))
		westwood_trace(sk, ca, CCB_EV_ROUND);
}

SEC("struct_ops/ccb_westwood_cong_avoid")
void BPF_PROG(ccb_westwood_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	ccb_reno_grow(sk, acked);
}

SEC("struct_ops/ccb_westwood_ssthresh")
__u32 BPF_PROG(ccb_westwood_ssthresh, struct sock *sk)
{
	struct westwood *ca = ccb_priv(sk);

	westwood_trace(sk, ca, CCB_EV_LOSS);
	return ww_ssthresh(sk, ca);
}

SEC("struct_ops/ccb_westwood_set_state")
void BPF_PROG(ccb_westwood_set_state, struct sock *sk, __u8 new_state)
{
	if (new_state == TCP_CA_Loss)
		westwood_trace(sk, ccb_priv(sk), CCB_EV_TIMEOUT);
}

SEC("struct_ops/ccb_westwood_cwnd_event")
void BPF_PROG(ccb_westwood_cwnd_event, struct sock *sk, enum tcp_ca_event event)
{
	if (event == CA_EVENT_COMPLETE_CWR)
		ww_complete_cwr(sk, ccb_priv(sk));
}

SEC("struct_ops/ccb_westwood_undo_cwnd")
__u32 BPF_PROG(ccb_westwood_undo_cwnd, struct sock *sk)
{
	return ccb_reno_undo(sk);
}

SEC(".struct_ops")
struct tcp_congestion_ops westwood_ops = {
	.init = (void *)ccb_westwood_init,
	.pkts_acked = (void *)ccb_westwood_pkts_acked,
	.cong_avoid = (void *)ccb_westwood_cong_avoid,
	.ssthresh = (void *)ccb_westwood_ssthresh,
	.set_state = (void *)ccb_westwood_set_state,
	.cwnd_event = (void *)ccb_westwood_cwnd_event,
	.undo_cwnd = (void *)ccb_westwood_undo_cwnd,
	.name = "ccb_westwood",
};
