/* alpha_paced_westwood: alpha-paced Westwood, seed 003 §III-C.2: TCP Westwood (§III-A; see
 * westwood.bpf.c) paced during slow start only, at RE = alpha * BSE (eq. 4), i.e. one segment
 * every 1/RE (eq. 5). alpha > 1 breaks the positive feedback between pacing and the estimate
 * that stalls Paced Westwood (§III-C.1, §V-B). Outside slow start the sender is not paced. The
 * seed's evaluation uses alpha = 2.0 (Fig. 6, "typically larger than 1"), the default here.
 *
 * alpha is fixed point over 256 (alpha_x256 = 512 is 2.0). Everything shared with the other
 * Westwood variants (BSE estimator, loss response, the pacing mechanism and its limits, the
 * rate before the first BSE sample) is described in westwood_common.h. In short: BPF
 * `cong_avoid` with the kernel's recovery; RE is set with bpf_setsockopt(SO_MAX_PACING_RATE)
 * and SK_PACING_NEEDED in slow start, lifted and SK_PACING_NONE otherwise; before the first BSE
 * sample the rate is cwnd/SRTT (not scaled by alpha). The kernel paces at min(RE, its own
 * 2x or 1.2x cwnd/SRTT), so alpha above ~2 no longer changes the spacing much.
 * The callbacks are paced_westwood_common.h's, shared with the other paced Westwood variant.
 * Tunables (.rodata, written by the loader): alpha_x256, bse_gain_x256, bse_sample_min_us.
 */
#include "paced_westwood_common.h"

char _license[] SEC("license") = "GPL";

const volatile __u32 alpha_x256 = CCB_DEFAULT_ALPHA_X256; /* RE = alpha * BSE */

PACED_WESTWOOD_CONTROLLER(alpha_paced_westwood, alpha_x256, "ccb_alpha_paced");
