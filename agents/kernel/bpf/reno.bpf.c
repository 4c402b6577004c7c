/* reno: Reno (RFC 5681 with the kernel's NewReno loss recovery around it), written out from
 * the building blocks in ccbench_cc.h. It exists to validate the BPF harness: its throughput
 * must match the kernel's built-in reno (tests/test_bpf.py). No tunables. */
#include "ccbench_cc.h"

char _license[] SEC("license") = "GPL";
CCB_STATE_FIELDS("");

struct reno {
	__u32 trace_round_end;
};

SEC("struct_ops/ccb_reno_init")
void BPF_PROG(ccb_reno_init, struct sock *sk)
{
	/* A socket switched from a pacing controller (bbr) keeps its pacing flag otherwise. */
	sk->sk_pacing_status = SK_PACING_NONE;
	((struct reno *)ccb_priv(sk))->trace_round_end = ccb_tcp_sk(sk)->snd_nxt;
}

SEC("struct_ops/ccb_reno_cong_avoid")
void BPF_PROG(ccb_reno_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct reno *ca = ccb_priv(sk);

	if (ccb_round_ended(sk, &ca->trace_round_end))
		ccb_trace(sk, CCB_EV_ROUND, 0, 0, 0, 0);
	ccb_reno_grow(sk, acked);
}

SEC("struct_ops/ccb_reno_ssthresh")
__u32 BPF_PROG(ccb_reno_ssthresh, struct sock *sk)
{
	ccb_trace(sk, CCB_EV_LOSS, 0, 0, 0, 0);
	return ccb_reno_halve(sk);
}

SEC("struct_ops/ccb_reno_undo_cwnd")
__u32 BPF_PROG(ccb_reno_undo_cwnd, struct sock *sk)
{
	return ccb_reno_undo(sk);
}

SEC(".struct_ops")
struct tcp_congestion_ops reno_ops = {
	.init = (void *)ccb_reno_init,
	.cong_avoid = (void *)ccb_reno_cong_avoid,
	.ssthresh = (void *)ccb_reno_ssthresh,
	.undo_cwnd = (void *)ccb_reno_undo_cwnd,
	.name = "ccb_reno",
};
