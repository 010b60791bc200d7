/* An unmodified OpenMP program: a 2D Jacobi stencil, one parallel loop per
 * sweep (each ends at the runtime's barrier), default wait policy, no
 * heartbeats. Usage: omp_stencil [N [SWEEPS]]; prints a checksum. */
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 512;
    int sweeps = argc > 2 ? atoi(argv[2]) : 2000;
    if (n < 3 || sweeps < 1) {
        fprintf(stderr, "usage: omp_stencil [N>=3 [SWEEPS>=1]]\n");
        return 2;
    }
    double *a = calloc((size_t)n * n, sizeof *a), *b = calloc((size_t)n * n, sizeof *b);
    if (!a || !b) return 1;
    for (int j = 0; j < n; j++) a[j] = b[j] = 1.0;
    for (int t = 0; t < sweeps; t++) {
#pragma omp parallel for
        for (int i = 1; i < n - 1; i++)
            for (int j = 1; j < n - 1; j++)
                b[i * n + j] = 0.25 * (a[(i - 1) * n + j] + a[(i + 1) * n + j] + a[i * n + j - 1] + a[i * n + j + 1]);
        double *c = a;
        a = b;
        b = c;
    }
    double sum = 0;
    for (long i = 0; i < (long)n * n; i++) sum += a[i];
    printf("%.6f\n", sum);
    return 0;
}
