/* An unmodified OpenMP program made of many short parallel regions in one
 * of two forms the preload library must count besides GOMP_parallel:
 *   combined: `parallel for schedule(monotonic:dynamic)`, which GCC compiles
 *             to GOMP_parallel_loop_dynamic (each thread's share ends with
 *             GOMP_loop_end_nowait);
 *   old:      the GOMP_parallel_start / GOMP_parallel_end pair of binaries
 *             built by GCC before 4.9 (called here by hand: the body runs on
 *             the team and on the calling thread).
 * Usage: omp_region_forms combined|old. Prints the same sum either way. */
#include <stdio.h>
#include <string.h>

void GOMP_parallel_start(void (*body)(void *), void *data, unsigned threads);
void GOMP_parallel_end(void);
int omp_get_thread_num(void);
int omp_get_num_threads(void);

#define N (1 << 16)
static double a[N];

/* One region's work, split by thread number. */
static void step(void *data) {
    int t = *(int *)data;
    int id = omp_get_thread_num(), team = omp_get_num_threads();
    for (int i = id; i < N; i += team) a[i] = a[i] * 0.5 + t;
}

int main(int argc, char **argv) {
    int old = argc > 1 && strcmp(argv[1], "old") == 0;
    for (int t = 0; t < 20000; t++) {
        if (old) {
            GOMP_parallel_start(step, &t, 0);
            step(&t);
            GOMP_parallel_end();
        } else {
#pragma omp parallel for schedule(monotonic : dynamic, 1024)
            for (int i = 0; i < N; i++) a[i] = a[i] * 0.5 + t;
        }
    }
    printf("%f\n", a[7]);
    return 0;
}
