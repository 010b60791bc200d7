/*
 * The papers' in-process mode from C: start the pinlearn manager inside the
 * program, register the worker threads, report progress with heartbeats,
 * stop the manager and print its JSON summary on stdout.
 *
 * Build (after `cargo build -p pinlearn-capi`):
 *   cc in_process.c -I ../include -L ../../../target/debug -lpinlearn \
 *      -Wl,-rpath,../../../target/debug -lpthread -o in_process
 * Run: ./in_process [THREADS] [SECONDS] [POLICY]   (POLICY: learn, static or os)
 * Exit status: 0 on success; 1 if the manager failed; 3 if a thread's
 * affinity was not restored after pinlearn_stop.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pinlearn.h"

static pinlearn_manager *manager;
static volatile int stop_work;
static pthread_barrier_t registered, stopped, checked;
static int restore_failures;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void *worker(void *arg) {
    (void)arg;
    cpu_set_t before, after;
    sched_getaffinity(0, sizeof before, &before);
    pinlearn_register_thread(manager);
    pthread_barrier_wait(&registered);
    uint64_t x = (uintptr_t)arg + 1;
    while (!stop_work) {
        for (int i = 0; i < 100000; i++) x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        pinlearn_heartbeat(1);
    }
    pthread_barrier_wait(&stopped);  /* main calls pinlearn_stop here */
    pthread_barrier_wait(&checked);
    sched_getaffinity(0, sizeof after, &after);
    if (!CPU_EQUAL(&before, &after)) __sync_fetch_and_add(&restore_failures, 1);
    return (void *)(uintptr_t)(x & 1);
}

int main(int argc, char **argv) {
    int threads = argc > 1 ? atoi(argv[1]) : 4;
    double seconds = argc > 2 ? atof(argv[2]) : 1.5;
    const char *policy = argc > 3 ? argv[3] : "learn";
    if (threads < 1 || seconds <= 0 || strlen(policy) > 32) {
        fprintf(stderr, "usage: %s [THREADS >= 1] [SECONDS > 0] [POLICY]\n", argv[0]);
        return 2;
    }
    char config[128];
    snprintf(config, sizeof config, "interval = \"20ms\"\nmetric = \"cpu\"\npolicy = \"%s\"\n", policy);
    manager = pinlearn_start(config, PINLEARN_REGISTERED_THREADS);
    if (!manager) {
        fprintf(stderr, "pinlearn_start failed: %s\n", pinlearn_last_error());
        return 1;
    }
    pthread_barrier_init(&registered, NULL, threads + 1);
    pthread_barrier_init(&stopped, NULL, threads + 1);
    pthread_barrier_init(&checked, NULL, threads + 1);
    pthread_t *ids = calloc(threads, sizeof *ids);
    for (intptr_t i = 0; i < threads; i++) pthread_create(&ids[i], NULL, worker, (void *)i);
    pthread_barrier_wait(&registered);
    double start = now();
    while (now() - start < seconds) {
        struct timespec pause = {0, 10 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
    stop_work = 1;
    pthread_barrier_wait(&stopped);
    char *summary = pinlearn_stop(manager);
    pthread_barrier_wait(&checked);
    for (int i = 0; i < threads; i++) pthread_join(ids[i], NULL);
    free(ids);
    if (!summary) {
        fprintf(stderr, "pinlearn_stop failed: %s\n", pinlearn_last_error());
        return 1;
    }
    printf("%s\n", summary);
    pinlearn_free_string(summary);
    if (restore_failures) {
        fprintf(stderr, "%d threads kept a changed affinity\n", restore_failures);
        return 3;
    }
    return 0;
}
