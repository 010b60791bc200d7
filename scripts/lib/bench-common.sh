# Shared by the scripts/bench-* scripts (sourced, not run): the two CPUs a
# benchmark uses and a wall-clock reading. Each function takes the calling
# script's name for its error messages.

# Sets `first` and `second` to the first two CPUs this shell may use, or
# exits 2 saying the benchmark needs two.
pick_two_cpus() {
    local name=$1
    read -r first second < <(python3 -c 'import os; c=sorted(os.sched_getaffinity(0)); print(c[0], c[1]) if len(c) > 1 else exit(1)') ||
        { echo "$name: needs 2 CPUs" >&2; exit 2; }
}

# Prints the wall-clock time in seconds, to the millisecond.
seconds() { python3 -c 'import time; print(f"{time.time():.3f}")'; }
