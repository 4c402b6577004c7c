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
 * The callbacks are paced_westwood_common.h's, shared with the other paced Westwood variant.
 * Tunables (.rodata, written by the loader): bse_gain_x256, bse_sample_min_us.
 */
#include "paced_westwood_common.h"

char _license[] SEC("license") = "GPL";

#define PACED_WESTWOOD_ALPHA_X256 256 /* alpha = 1: pace at BSE itself */

PACED_WESTWOOD_CONTROLLER(paced_westwood, PACED_WESTWOOD_ALPHA_X256, "ccb_paced_westw");
