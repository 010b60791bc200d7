/* How much equal rounds of work vary: a loop of STEPS strided reads over a
 * 8 MiB array, ROUNDS times, printing each round's wall time in seconds, one
 * a line. Run it alone on one CPU (taskset -c N): scripts/round-times.
 *
 *   round_times STEPS ROUNDS
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: round_times STEPS ROUNDS\n");
        return 2;
    }
    long steps = atol(argv[1]);
    int rounds = atoi(argv[2]);
    enum { N = 1 << 20 };
    double *a = malloc(sizeof(double) * N);
    if (!a)
        return 1;
    volatile double sum = 0;
    for (int i = 0; i < N; i++)
        a[i] = i;
    for (int r = 0; r < rounds; r++) {
        double t0 = now();
        for (long i = 0; i < steps; i++)
            sum += a[(i * 7919) & (N - 1)] * 1.0000001;
        printf("%.6f\n", now() - t0);
    }
    return 0;
}
