/* Shared by ccbench's BPF congestion controllers: Reno's building blocks, written out (not the
 * kernel's kfuncs) so that the `reno` clone checks this harness against the built-in reno.
 *
 * Conventions (docs/contracts.md, "BPF congestion controllers"):
 * - Tunables are `const volatile` globals in .rodata. ccbench's loader (workers/bpf.py) writes
 *   the spec's values into the object before registering it, so no recompilation is needed.
 *   Their initial values are the macros of ccb_defaults.h, generated from schemas/algorithms.py
 *   (`make schemas`); tests/test_bpf_defaults.py checks every compiled object against it.
 * - The struct_ops `.name` is a placeholder `ccb_<id>`; the loader renames each registration
 *   per run so that concurrent runs cannot collide.
 * - No floating point and no signed division (clang 14): fractions are fixed point with a
 *   power-of-two denominator, signed values are scaled with arithmetic shifts.
 * - State trace: every controller declares up to four variables of its own with
 *   CCB_STATE_FIELDS("a,b") and reports them with ccb_trace() once per round trip
 *   (ccb_trace_round) and at each congestion event. Samples go to a ring buffer whose name the
 *   loader makes unique per run; the worker reads it while the run lasts (workers/bpf_trace.py)
 *   and the reports plot the variables per flow. A name ending in `_x256` is fixed point over
 *   256; the reports divide it and drop the suffix.
 */
#ifndef CCBENCH_CC_H
#define CCBENCH_CC_H

#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "ccb_defaults.h"

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

/* --- state trace ------------------------------------------------------------------------- */

enum ccb_event {
	CCB_EV_ROUND = 0,   /* one per round trip */
	CCB_EV_LOSS = 1,    /* the window was cut (ssthresh called: fast retransmit or timeout) */
	CCB_EV_TIMEOUT = 2, /* retransmission timeout (TCP_CA_Loss) */
	CCB_EV_CHANGE = 3,  /* the algorithm's own state changed (e.g. BFA's flag) */
};

/* 64 bytes; workers/bpf_trace.py decodes exactly this layout. */
struct ccb_sample {
	__u64 t_ns;      /* bpf_ktime_get_ns(): CLOCK_MONOTONIC */
	__u32 seq;       /* per registration; a gap means the reader fell behind */
	__u32 saddr;     /* the sender's IPv4 address, network order */
	__u16 sport;     /* the sender's port, host order */
	__u16 event;     /* enum ccb_event */
	__u32 cwnd;      /* segments */
	__u32 ssthresh;  /* segments */
	__u32 srtt_us;   /* the kernel's smoothed RTT */
	__s64 state[4];  /* the algorithm's variables, in CCB_STATE_FIELDS order */
};

/* The loader renames this map per run (the placeholder is exactly 15 bytes, like its names). */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} ccb_trace_ring_ SEC(".maps");

__u32 ccb_trace_seq = 0;

#define CCB_STATE_FIELDS(names) const volatile char ccb_state_fields[64] = names

static __always_inline void ccb_trace(const struct sock *sk, enum ccb_event event, __s64 s0,
				      __s64 s1, __s64 s2, __s64 s3)
{
	const struct tcp_sock *tp = (const struct tcp_sock *)sk;
	struct ccb_sample *s = bpf_ringbuf_reserve(&ccb_trace_ring_, sizeof(*s), 0);

	if (!s)
		return; /* the reader fell behind; the gap in seq tells it */
	s->t_ns = bpf_ktime_get_ns();
	s->seq = __sync_fetch_and_add(&ccb_trace_seq, 1);
	s->saddr = sk->__sk_common.skc_rcv_saddr;
	s->sport = sk->__sk_common.skc_num;
	s->event = event;
	s->cwnd = tp->snd_cwnd;
	s->ssthresh = tp->snd_ssthresh;
	s->srtt_us = tp->srtt_us >> 3;
	s->state[0] = s0;
	s->state[1] = s1;
	s->state[2] = s2;
	s->state[3] = s3;
	bpf_ringbuf_submit(s, 0);
}

/* Trace once per round trip: when snd_una passes `*round_end` (kept in the algorithm's state). */
static __always_inline bool ccb_round_ended(const struct sock *sk, __u32 *round_end)
{
	const struct tcp_sock *tp = (const struct tcp_sock *)sk;

	if ((__s32)(tp->snd_una - *round_end) < 0)
		return false;
	*round_end = tp->snd_nxt;
	return true;
}

/* --- pacing (paced variants) ------------------------------------------------------------- */

#ifndef SOL_SOCKET
#define SOL_SOCKET 1
#endif
#ifndef SO_MAX_PACING_RATE
#define SO_MAX_PACING_RATE 47
#endif
#define CCB_PACING_UNLIMITED 0xffffffffU /* SO_MAX_PACING_RATE: no cap */

/* A `cong_avoid` controller caps the kernel's own pacing rate: bytes per second, 32 bits. */
static __always_inline void ccb_set_max_pacing(struct sock *sk, __u32 rate_Bps)
{
	bpf_setsockopt(sk, SOL_SOCKET, SO_MAX_PACING_RATE, &rate_Bps, sizeof(rate_Bps));
}

/* The window's own rate cwnd / SRTT in bytes per second (seed 003 eq. 3); 0 without an RTT. */
static __always_inline __u32 ccb_window_rate_Bps(const struct sock *sk)
{
	const struct tcp_sock *tp = (const struct tcp_sock *)sk;
	__u32 srtt = tp->srtt_us >> 3;
	__u64 rate;

	if (!srtt)
		return 0;
	rate = (__u64)tp->snd_cwnd * tp->mss_cache * 1000000ULL / srtt;
	/* At least 1 (0 means "not paced" to callers), below ~0U (which means no cap). */
	return (__u32)CCB_MAX(CCB_MIN(rate, (__u64)CCB_PACING_UNLIMITED - 1), 1ULL);
}

/* --- Reno's building blocks ---------------------------------------------------------------- */

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
