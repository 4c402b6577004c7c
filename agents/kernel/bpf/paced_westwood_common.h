/* Shared by paced_westwood and alpha_paced_westwood (seed 003 §III-C): both are TCP Westwood
 * (westwood_common.h) paced during slow start only at RE = alpha * BSE (eq. 4-5) and differ only
 * in alpha (1 for Paced Westwood, §III-C.1; a tunable, default 2, for alpha-paced Westwood,
 * §III-C.2). PACED_WESTWOOD_CONTROLLER(prefix, alpha, ops_name) defines one controller: its
 * state trace, its struct_ops callbacks `ccb_<prefix>_*` and the struct_ops map
 * `<prefix>_ops` whose `.name` is the loader's 15-byte placeholder `ops_name`. `alpha` is an
 * expression of alpha x 256, evaluated at every call (a .rodata tunable stays a tunable).
 */
#ifndef CCBENCH_PACED_WESTWOOD_COMMON_H
#define CCBENCH_PACED_WESTWOOD_COMMON_H

#include "westwood_common.h"

/* Traced once per round trip and at each loss; pacing_rate_bps is the rate cap RE the
 * controller set (0 while unpaced), not the kernel's possibly lower min(RE, 2x cwnd/SRTT). */
#define PACED_WESTWOOD_STATE_FIELDS "bse_bps,rtt_min_us,pacing_rate_bps"

#define PACED_WESTWOOD_CONTROLLER(prefix, alpha, ops_name)                                        \
	CCB_STATE_FIELDS(PACED_WESTWOOD_STATE_FIELDS);                                          \
                                                                                                \
	static __always_inline void prefix##_trace(struct sock *sk, struct westwood *ca,       \
						   enum ccb_event event)                       \
	{                                                                                       \
		ccb_trace(sk, event, (__s64)(ca->bse_Bps * 8), ww_rtt_min_trace(ca),            \
			  (__s64)ca->pacing_Bps * 8, 0);                                        \
	}                                                                                       \
                                                                                                \
	SEC("struct_ops/ccb_" #prefix "_init")                                                  \
	void BPF_PROG(ccb_##prefix##_init, struct sock *sk)                                     \
	{                                                                                       \
		struct westwood *ca = ccb_priv(sk);                                             \
                                                                                                \
		/* Slow start begins paced; sk_pacing_status is set here explicitly (a socket   \
		 * switched from bbr keeps its flag otherwise). */                              \
		sk->sk_pacing_status = SK_PACING_NONE;                                          \
		ww_init(sk, ca);                                                                \
		ww_pace(sk, ca, (alpha), ww_ca_state(sk));                                      \
	}                                                                                       \
                                                                                                \
	SEC("struct_ops/ccb_" #prefix "_pkts_acked")                                            \
	void BPF_PROG(ccb_##prefix##_pkts_acked, struct sock *sk,                               \
		      const struct ack_sample *sample)                                          \
	{                                                                                       \
		struct westwood *ca = ccb_priv(sk);                                             \
                                                                                                \
		ww_on_ack(sk, ca, sample);                                                      \
		/* A new BSE sample changes RE; outside cong_avoid (recovery) this keeps pacing \
		 * off. */                                                                      \
		ww_pace(sk, ca, (alpha), ww_ca_state(sk));                                      \
		if (ccb_round_ended(sk, &ca->round_end))                                        \
			prefix##_trace(sk, ca, CCB_EV_ROUND);                                   \
	}                                                                                       \
                                                                                                \
	SEC("struct_ops/ccb_" #prefix "_cong_avoid")                                            \
	void BPF_PROG(ccb_##prefix##_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)       \
	{                                                                                       \
		struct westwood *ca = ccb_priv(sk);                                             \
                                                                                                \
		ccb_reno_grow(sk, acked);                                                       \
		ww_pace(sk, ca, (alpha), ww_ca_state(sk)); /* slow start may have ended */      \
		ww_bound_paced_window(sk, ca);                                                  \
	}                                                                                       \
                                                                                                \
	SEC("struct_ops/ccb_" #prefix "_ssthresh")                                              \
	__u32 BPF_PROG(ccb_##prefix##_ssthresh, struct sock *sk)                                \
	{                                                                                       \
		struct westwood *ca = ccb_priv(sk);                                             \
                                                                                                \
		prefix##_trace(sk, ca, CCB_EV_LOSS);                                            \
		return ww_ssthresh(sk, ca);                                                     \
	}                                                                                       \
                                                                                                \
	SEC("struct_ops/ccb_" #prefix "_set_state")                                             \
	void BPF_PROG(ccb_##prefix##_set_state, struct sock *sk, __u8 new_state)                \
	{                                                                                       \
		struct westwood *ca = ccb_priv(sk);                                             \
                                                                                                \
		if (new_state == TCP_CA_Loss)                                                   \
			prefix##_trace(sk, ca, CCB_EV_TIMEOUT);                                 \
		/* Recovery and CWR stop pacing; a timeout (cwnd = 1, below ssthresh) starts it \
		 * again. */                                                                    \
		ww_pace(sk, ca, (alpha), new_state);                                            \
	}                                                                                       \
                                                                                                \
	SEC("struct_ops/ccb_" #prefix "_cwnd_event")                                            \
	void BPF_PROG(ccb_##prefix##_cwnd_event, struct sock *sk, enum tcp_ca_event event)      \
	{                                                                                       \
		struct westwood *ca = ccb_priv(sk);                                             \
                                                                                                \
		if (event == CA_EVENT_COMPLETE_CWR) {                                           \
			/* Fast recovery ended (already CA_Open) or CWR ends (CA_Open follows): \
			 * the window may now be below ssthresh, i.e. in slow start, and paced  \
			 * again. */                                                            \
			ww_complete_cwr(sk, ca);                                                \
			ww_pace(sk, ca, (alpha), ww_ca_state(sk));                              \
		}                                                                               \
	}                                                                                       \
                                                                                                \
	SEC("struct_ops/ccb_" #prefix "_undo_cwnd")                                             \
	__u32 BPF_PROG(ccb_##prefix##_undo_cwnd, struct sock *sk)                               \
	{                                                                                       \
		return ccb_reno_undo(sk);                                                       \
	}                                                                                       \
                                                                                                \
	SEC("struct_ops/ccb_" #prefix "_min_tso_segs")                                          \
	__u32 BPF_PROG(ccb_##prefix##_min_tso_segs, struct sock *sk)                            \
	{                                                                                       \
		return ww_min_tso_segs(ccb_priv(sk));                                           \
	}                                                                                       \
                                                                                                \
	SEC(".struct_ops")                                                                      \
	struct tcp_congestion_ops prefix##_ops = {                                              \
		.init = (void *)ccb_##prefix##_init,                                            \
		.pkts_acked = (void *)ccb_##prefix##_pkts_acked,                                \
		.cong_avoid = (void *)ccb_##prefix##_cong_avoid,                                \
		.ssthresh = (void *)ccb_##prefix##_ssthresh,                                    \
		.set_state = (void *)ccb_##prefix##_set_state,                                  \
		.cwnd_event = (void *)ccb_##prefix##_cwnd_event,                                \
		.undo_cwnd = (void *)ccb_##prefix##_undo_cwnd,                                  \
		.min_tso_segs = (void *)ccb_##prefix##_min_tso_segs,                            \
		.name = ops_name,                                                               \
	}

#endif
