#!/bin/sh
# The worker image's entrypoint: build the BPF congestion controllers for the kernel this
# container runs on, then exec the command (default `ccbench worker`).
#
# A struct_ops controller is compiled against the kernel's own type information
# (/sys/kernel/btf/vmlinux -> vmlinux.h), so objects built elsewhere may not load here. The
# objects are built at start (~10 s on 2 cores) into /opt/ccbench/agents/kernel/build and kept
# with the BTF's checksum: a restarted container on the same kernel reuses them.
#
# CCBENCH_WORKER_BPF=auto (default): without BTF, or if the build fails, say so and start the
#   worker anyway: it probes which controllers the kernel accepts and registers only those, so
#   runs with `runtime: bpf` are sent to other workers (or refused with the reason).
# CCBENCH_WORKER_BPF=required: exit with an error instead (a worker without BPF is a fault).
# CCBENCH_WORKER_BPF=off: build nothing.
set -eu

KERNEL_DIR=/opt/ccbench/agents/kernel
BUILD="$KERNEL_DIR/build"
BTF=/sys/kernel/btf/vmlinux
MODE=${CCBENCH_WORKER_BPF:-auto}

say() { echo "ccbench-worker-entrypoint: $*" >&2; }
fail_bpf() {
  if [ "$MODE" = required ]; then
    say "error: $* (CCBENCH_WORKER_BPF=required)"
    exit 1
  fi
  say "error: $*; BPF controllers (runtime: bpf) are unavailable on this worker"
}

case "$MODE" in
  off) say "CCBENCH_WORKER_BPF=off: BPF controllers not built" ;;
  auto | required)
    if [ ! -r "$BTF" ]; then
      fail_bpf "$BTF is missing: the kernel has no BTF, or /sys/kernel/btf is not mounted"
    else
      sum=$(sha256sum "$BTF" | cut -d' ' -f1)
      if [ "$(cat "$BUILD/.btf-sha256" 2>/dev/null || true)" = "$sum" ]; then
        say "BPF controllers already built for this kernel ($(uname -r))"
      else
        say "building the BPF controllers against this kernel's BTF ($(uname -r))"
        rm -rf "$BUILD"
        if log=$(make -s -C "$KERNEL_DIR" 2>&1); then
          echo "$sum" > "$BUILD/.btf-sha256"
          say "built: $(cd "$BUILD" && ls -- *.bpf.o | tr '\n' ' ')"
        else
          echo "$log" >&2
          rm -rf "$BUILD"
          fail_bpf "building the BPF controllers for kernel $(uname -r) failed (output above)"
        fi
      fi
    fi
    ;;
  *)
    say "error: CCBENCH_WORKER_BPF must be auto, required or off (got '$MODE')"
    exit 2
    ;;
esac

exec "$@"
