/* Blocking barriers with several threads to a CPU: THREADS threads each work
 * STEPS additions a round and meet at a pthread barrier, ROUNDS times; with
 * PIN 1 thread i is pinned to CPU i mod CPUS first. Prints the wall time in
 * seconds: scripts/barrier-pin runs it under Linux and pinned.
 *
 *   barrier_rounds THREADS STEPS ROUNDS PIN CPUS
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static pthread_barrier_t barrier;
static long steps;
static int rounds, pin, cpus;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static void *work(void *arg)
{
    long id = (long)arg;
    if (pin) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(id % cpus, &set);
        pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    }
    volatile double x = 0;
    for (int r = 0; r < rounds; r++) {
        for (long i = 0; i < steps; i++)
            x += i * 1e-9;
        pthread_barrier_wait(&barrier);
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 6) {
        fprintf(stderr, "usage: barrier_rounds THREADS STEPS ROUNDS PIN CPUS\n");
        return 2;
    }
    int threads = atoi(argv[1]);
    steps = atol(argv[2]);
    rounds = atoi(argv[3]);
    pin = atoi(argv[4]);
    cpus = atoi(argv[5]);
    if (threads < 1 || cpus < 1)
        return 2;
    pthread_t *t = malloc(sizeof(pthread_t) * threads);
    if (!t)
        return 1;
    pthread_barrier_init(&barrier, 0, threads);
    double t0 = now();
    for (long i = 0; i < threads; i++)
        pthread_create(&t[i], 0, work, (void *)i);
    for (int i = 0; i < threads; i++)
        pthread_join(t[i], 0);
    printf("%.3f\n", now() - t0);
    return 0;
}
