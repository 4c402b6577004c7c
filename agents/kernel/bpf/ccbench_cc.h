/* Shared by ccbench's BPF congestion controllers: Reno's building blocks, written out (not the
 * kernel's kfuncs) so that the `reno` clone checks this harness against the built-in reno.
 *
 * Conventions (see DESIGN.md, "BPF congestion controllers"):
 * - Tunables are `const volatile` globals in .rodata. ccbench's loader (workers/bpf.py) writes
 *   the spec's values into the object before registering it, so no recompilation is needed.
 * - The struct_ops `.name` is a placeholder `ccb_<id>`; the loader renames each registration
 *   per run so that concurrent runs cannot collide.
 * - No floating point and no signed division (clang 14): fractions are fixed point with a
 *   power-of-two denominator, signed values are scaled with arithmetic shifts.
 */
#ifndef CCBENCH_CC_H
#define CCBENCH_CC_H

#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#define TCP_INFINITE_SSTHRESH 0x7fffffff
#define CCB_MIN(a, b) ((a) < (b) ? (a) : (b))
#define CCB_MAX(a, b) ((a) > (b) ? (a) : (b))

static __always_inline struct tcp_sock *ccb_tcp_sk(const struct sock *sk)
{
	return (struct tcp_sock *)sk;
}

static __always_inline struct inet_connection_sock *ccb_csk(const struct sock *sk)
{
	return (struct inet_connection_sock *)sk;
}

static __always_inline void *ccb_priv(const struct sock *sk)
{
	return (void *)ccb_csk(sk)->icsk_ca_priv;
}

static __always_inline bool ccb_in_slow_start(const struct tcp_sock *tp)
{
	return tp->snd_cwnd < tp->snd_ssthresh;
}

/* The kernel's tcp_is_cwnd_limited(): grow only when the window, not the application, limits. */
static __always_inline bool ccb_is_cwnd_limited(const struct sock *sk)
{
	const struct tcp_sock *tp = ccb_tcp_sk(sk);

	if (ccb_in_slow_start(tp))
		return tp->snd_cwnd < 2 * tp->max_packets_out;
	return !!BPF_CORE_READ_BITFIELD(tp, is_cwnd_limited);
}

/* Slow start with appropriate byte counting (RFC 3465): one segment per segment acked, up to
 * ssthresh. Returns the acked segments left over for congestion avoidance. */
static __always_inline __u32 ccb_slow_start(struct tcp_sock *tp, __u32 acked)
{
	__u32 cwnd = CCB_MIN(tp->snd_cwnd + acked, tp->snd_ssthresh);

	acked -= cwnd - tp->snd_cwnd;
	tp->snd_cwnd = CCB_MIN(cwnd, tp->snd_cwnd_clamp);
	return acked;
}

/* Additive increase: one segment per window of `w` segments acked. */
static __always_inline void ccb_cong_avoid_ai(struct tcp_sock *tp, __u32 w, __u32 acked)
{
	if (w == 0)
		w = 1;
	if (tp->snd_cwnd_cnt >= w) {
		tp->snd_cwnd_cnt = 0;
		tp->snd_cwnd++;
	}
	tp->snd_cwnd_cnt += acked;
	if (tp->snd_cwnd_cnt >= w) {
		__u32 delta = tp->snd_cwnd_cnt / w;

		tp->snd_cwnd_cnt -= delta * w;
		tp->snd_cwnd += delta;
	}
	tp->snd_cwnd = CCB_MIN(tp->snd_cwnd, tp->snd_cwnd_clamp);
}

/* Reno's window growth: slow start, then one segment per RTT. */
static __always_inline void ccb_reno_grow(struct sock *sk, __u32 acked)
{
	struct tcp_sock *tp = ccb_tcp_sk(sk);

	if (!ccb_is_cwnd_limited(sk))
		return;
	if (ccb_in_slow_start(tp)) {
		acked = ccb_slow_start(tp, acked);
		if (!acked)
			return;
	}
	ccb_cong_avoid_ai(tp, tp->snd_cwnd, acked);
}

/* Multiplicative decrease by half, at least two segments. */
static __always_inline __u32 ccb_reno_halve(const struct sock *sk)
{
	return CCB_MAX(ccb_tcp_sk(sk)->snd_cwnd >> 1U, 2U);
}

static __always_inline __u32 ccb_reno_undo(const struct sock *sk)
{
	const struct tcp_sock *tp = ccb_tcp_sk(sk);

	return CCB_MAX(tp->snd_cwnd, tp->prior_cwnd);
}

#endif
