/* An unmodified OpenMP program, task-parallel: recursive Fibonacci with
 * one task per call down to a cutoff, repeated; idle threads wait for tasks
 * in the runtime. Default wait policy, no heartbeats.
 * Usage: omp_tasks [N [REPEATS]]; prints fib(N). */
#include <stdio.h>
#include <stdlib.h>

static long fib_serial(int n) { return n < 2 ? n : fib_serial(n - 1) + fib_serial(n - 2); }

static long fib(int n) {
    if (n < 20) return fib_serial(n);
    long a, b;
#pragma omp task shared(a)
    a = fib(n - 1);
#pragma omp task shared(b)
    b = fib(n - 2);
#pragma omp taskwait
    return a + b;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 27;
    int repeats = argc > 2 ? atoi(argv[2]) : 100;
    if (n < 0 || n > 60 || repeats < 1) {
        fprintf(stderr, "usage: omp_tasks [0<=N<=60 [REPEATS>=1]]\n");
        return 2;
    }
    long result = 0;
    for (int r = 0; r < repeats; r++) {
#pragma omp parallel
#pragma omp single
        result = fib(n);
    }
    printf("%ld\n", result);
    return 0;
}
