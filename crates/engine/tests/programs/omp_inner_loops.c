/* An unmodified OpenMP program whose one parallel region lasts the whole
 * run: each step is a worksharing loop inside it, so libgomp is called at
 * GOMP_barrier (schedule(static), the default) or GOMP_loop_end
 * (schedule(dynamic), with any argument) at every step, never at the end of
 * a region until the program ends. Usage: omp_inner_loops [dynamic]. */
#include <stdio.h>

int main(int argc, char **argv) {
    static double a[1 << 16];
    int dynamic = argc > 1;
#pragma omp parallel
    for (int t = 0; t < 20000; t++) {
        if (dynamic) {
#pragma omp for schedule(dynamic, 1024)
            for (int i = 0; i < (1 << 16); i++) a[i] = a[i] * 0.5 + t;
        } else {
#pragma omp for schedule(static)
            for (int i = 0; i < (1 << 16); i++) a[i] = a[i] * 0.5 + t;
        }
    }
    printf("%f\n", a[7]);
    return 0;
}
