/* An unmodified OpenMP program: repeated parallel reductions over an array
 * (a dot product and a norm per round), default wait policy, no
 * heartbeats. Usage: omp_reduce [N [ROUNDS]]; prints the last result. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 200000;
    int rounds = argc > 2 ? atoi(argv[2]) : 2000;
    if (n < 1 || rounds < 1) {
        fprintf(stderr, "usage: omp_reduce [N>=1 [ROUNDS>=1]]\n");
        return 2;
    }
    double *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
    if (!x || !y) return 1;
    for (long i = 0; i < n; i++) {
        x[i] = 1.0 / (double)(i + 1);
        y[i] = (double)(i % 7);
    }
    double result = 0;
    for (int r = 0; r < rounds; r++) {
        double dot = 0, norm = 0;
#pragma omp parallel for reduction(+ : dot, norm)
        for (long i = 0; i < n; i++) {
            dot += x[i] * y[i];
            norm += sqrt(x[i] * x[i] + y[i]);
        }
        result = dot / norm;
        x[r % n] += 1e-9 * result; /* each round depends on the last */
    }
    printf("%.9f\n", result);
    return 0;
}
