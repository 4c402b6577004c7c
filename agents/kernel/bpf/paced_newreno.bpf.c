/* paced_newreno: Paced NewReno, seed 003 §II-A.2, eq. 3: NewReno's window (the kernel's
 * NewReno loss recovery around Reno's growth, as reno.bpf.c) with every segment paced, for the
 * whole connection, at the sender's own rate cwnd/RTT, i.e. one segment every
 * delta = 1 / (cwnd / RTT).
 *
 * Choices forced by BPF or by this kernel (6.18, no fq qdisc):
 * - RTT is the kernel's smoothed RTT (srtt_us), not the seed's "latestRTT": a single ACK's RTT
 *   is dominated by delayed-ACK noise. Before the first RTT sample the socket is not paced.
 * - A `cong_avoid` controller cannot own sk_pacing_rate: the kernel recomputes it after every ACK
 *   (tcp_update_pacing_rate: 2x cwnd/SRTT when cwnd < ssthresh/2, else 1.2x, over
 *   max(cwnd, packets_out)) and caps it at sk_max_pacing_rate. The controller writes
 *   cwnd * MSS / SRTT with bpf_setsockopt(SO_MAX_PACING_RATE) (bytes per second, 32 bits: up to
 *   ~34 Gbit/s), which is always below the kernel's own rate, so the enforced rate is exactly
 *   cwnd/SRTT. sk_pacing_status = SK_PACING_NEEDED from init selects the kernel's internal
 *   pacing (no fq here). The rate is rewritten after the window grows (cong_avoid) and on every
 *   ACK of fast recovery or CWR, where the kernel's PRR changes the window without cong_avoid.
 *   The kernel leaves a connection's first 10 segments unpaced.
 * No tunables.
 */
#include "ccbench_cc.h"

char _license[] SEC("license") = "GPL";

/* Traced once per round trip and at each loss: the rate the controller set (0: no RTT yet). */
CCB_STATE_FIELDS("pacing_rate_bps");

struct paced_newreno {
	__u32 round_end;
	__u32 pacing_Bps; /* cap written with SO_MAX_PACING_RATE, 0: none (no RTT yet) */
};

static __always_inline void pnr_trace(struct sock *sk, struct paced_newreno *ca,
				      enum ccb_event event)
{
	ccb_trace(sk, event, (__s64)ca->pacing_Bps * 8, 0, 0, 0);
}

/* Pace at cwnd / SRTT (eq. 3). */
static __always_inline void pnr_pace(struct sock *sk, struct paced_newreno *ca)
{
	__u32 rate = ccb_window_rate_Bps(sk);

	sk->sk_pacing_status = SK_PACING_NEEDED;
	if (!rate || rate == ca->pacing_Bps)
		return;
	ccb_set_max_pacing(sk, rate);
	ca->pacing_Bps = rate;
}

SEC("struct_ops/ccb_paced_newreno_init")
void BPF_PROG(ccb_paced_newreno_init, struct sock *sk)
{
	struct paced_newreno *ca = ccb_priv(sk);

	ca->round_end = ccb_tcp_sk(sk)->snd_nxt;
	ca->pacing_Bps = 0;
	pnr_pace(sk, ca);
}

SEC("struct_ops/ccb_paced_newreno_pkts_acked")
void BPF_PROG(ccb_paced_newreno_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct inet_connection_sock *icsk = ccb_csk(sk);
	struct paced_newreno *ca = ccb_priv(sk);
	__u8 state = BPF_CORE_READ_BITFIELD(icsk, icsk_ca_state);

	/* In fast recovery and CWR the window changes without cong_avoid. */
	if (state == TCP_CA_CWR || state == TCP_CA_Recovery || !ca->pacing_Bps)
		pnr_pace(sk, ca);
	if (ccb_round_ended(sk, &ca->round_end))
		pnr_trace(sk, ca, CCB_EV_ROUND);
}

SEC("struct_ops/ccb_paced_newreno_cong_avoid")
void BPF_PROG(ccb_paced_newreno_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	ccb_reno_grow(sk, acked);
	pnr_pace(sk, ccb_priv(sk));
}

SEC("struct_ops/ccb_paced_newreno_ssthresh")
__u32 BPF_PROG(ccb_paced_newreno_ssthresh, struct sock *sk)
{
	pnr_trace(sk, ccb_priv(sk), CCB_EV_LOSS);
	return ccb_reno_halve(sk);
}

SEC("struct_ops/ccb_paced_newreno_set_state")
void BPF_PROG(ccb_paced_newreno_set_state, struct sock *sk, __u8 new_state)
{
	struct paced_newreno *ca = ccb_priv(sk);

	if (new_state == TCP_CA_Loss) {
		pnr_trace(sk, ca, CCB_EV_TIMEOUT);
		pnr_pace(sk, ca); /* the kernel has just set cwnd = 1 */
	}
}

SEC("struct_ops/ccb_paced_newreno_cwnd_event")
void BPF_PROG(ccb_paced_newreno_cwnd_event, struct sock *sk, enum tcp_ca_event event)
{
	if (event == CA_EVENT_COMPLETE_CWR)
		pnr_pace(sk, ccb_priv(sk)); /* the kernel has just set cwnd = ssthresh */
}

SEC("struct_ops/ccb_paced_newreno_undo_cwnd")
__u32 BPF_PROG(ccb_paced_newreno_undo_cwnd, struct sock *sk)
{
	return ccb_reno_undo(sk);
}

/* One segment per send: the kernel's default minimum of two segments per TSO packet would
 * leave back-to-back pairs, which pacing exists to avoid (seed 003 §II-A.1). */
SEC("struct_ops/ccb_paced_newreno_min_tso_segs")
__u32 BPF_PROG(ccb_paced_newreno_min_tso_segs, struct sock *sk)
{
	return 1;
}

SEC(".struct_ops")
struct tcp_congestion_ops paced_newreno_ops = {
	.init = (void *)ccb_paced_newreno_init,
	.pkts_acked = (void *)ccb_paced_newreno_pkts_acked,
	.cong_avoid = (void *)ccb_paced_newreno_cong_avoid,
	.ssthresh = (void *)ccb_paced_newreno_ssthresh,
	.set_state = (void *)ccb_paced_newreno_set_state,
	.cwnd_event = (void *)ccb_paced_newreno_cwnd_event,
	.undo_cwnd = (void *)ccb_paced_newreno_undo_cwnd,
	.min_tso_segs = (void *)ccb_paced_newreno_min_tso_segs,
	.name = "ccb_paced_newre",
};
