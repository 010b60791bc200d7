/*
 * Bubbles from C (paper 001, section 5.2): the program asks pinlearn how
 * many NUMA nodes there are, builds a "job" bubble holding one bubble per
 * node, puts THREADS worker threads in each, wakes the job up, and checks
 * that right after the wake-up every worker runs on the CPUs of one node,
 * the workers of one bubble on the same node and different bubbles on
 * different nodes. Then it stops the manager and checks that every worker
 * got its affinity back.
 *
 * Build (after `cargo build -p pinlearn-capi`):
 *   cc bubbles.c -I ../include -L ../../../target/debug -lpinlearn \
 *      -Wl,-rpath,../../../target/debug -lpthread -o bubbles
 * Run: ./bubbles [THREADS] [TOPOLOGY MAP]
 *   e.g. ./bubbles 2 "node:2 core:1 pu:1" 0-1   (two nodes made of CPUs 0 and 1)
 * or, declaring the bubbles to a pinlearn outside the program (pinlearn_connect):
 *   pinlearn run --policy bubbles --topology "node:2 core:1 pu:1" --topology-map 0-1 -- ./bubbles 2 outside
 * (from outside the wake-up does not wait: the main thread then waits up to
 * 3 s for the placement above, and the masks are pinlearn's to restore when
 * it ends)
 * Exit status: 0 on success; 1 if pinlearn failed; 3 if a worker's affinity
 * was not restored; 4 if the placement after the wake-up was not as above.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "pinlearn.h"

#define MAX_NODES 64
#define MAX_CPUS 1024

static pinlearn_manager *manager;
static int nodes, per_bubble, outside;
static int node_bubble[MAX_NODES];
static cpu_set_t node_cpus[MAX_NODES];
static pthread_barrier_t inserted, woken, stopped, checked;
static volatile int stop_work;
static int restore_failures, insert_failures;

struct worker {
    pthread_t id;
    pid_t tid;
    int bubble; /* index into node_bubble */
    int node;   /* the node whose CPUs it had after the wake-up, or -1 */
};

/* The node whose CPUs thread `tid` (0: the caller) may run on, or -1. */
static int node_of(pid_t tid) {
    cpu_set_t placed;
    sched_getaffinity(tid, sizeof placed, &placed);
    for (int n = 0; n < nodes; n++)
        if (CPU_EQUAL(&placed, &node_cpus[n])) return n;
    return -1;
}

/* Each bubble on one node of its own: every worker on a node, those of
 * one bubble on the same, different bubbles on different ones. */
static int one_node_per_bubble(const struct worker *workers, int threads) {
    int bubble_node[MAX_NODES];
    for (int b = 0; b < nodes; b++) bubble_node[b] = -2;
    for (int i = 0; i < threads; i++) {
        int b = workers[i].bubble, n = workers[i].node;
        if (n < 0 || (bubble_node[b] != -2 && bubble_node[b] != n)) return 0;
        bubble_node[b] = n;
        for (int other = 0; other < b; other++)
            if (bubble_node[other] == n) return 0;
    }
    return 1;
}

static void *work(void *arg) {
    struct worker *w = arg;
    cpu_set_t before, after;
    w->tid = (pid_t)syscall(SYS_gettid);
    sched_getaffinity(0, sizeof before, &before);
    if (pinlearn_bubble_insert_thread(manager, node_bubble[w->bubble], 0) != 0) {
        fprintf(stderr, "insert: %s\n", pinlearn_last_error());
        __sync_fetch_and_add(&insert_failures, 1);
    }
    pthread_barrier_wait(&inserted);
    pthread_barrier_wait(&woken); /* main called pinlearn_bubble_wake_up */
    if (!outside) w->node = node_of(0);
    uint64_t x = (uintptr_t)w + 1;
    while (!stop_work)
        for (int i = 0; i < 100000; i++) x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    pthread_barrier_wait(&stopped); /* main calls pinlearn_stop here */
    pthread_barrier_wait(&checked);
    sched_getaffinity(0, sizeof after, &after);
    if (!outside && !CPU_EQUAL(&before, &after)) __sync_fetch_and_add(&restore_failures, 1);
    return (void *)(uintptr_t)(x & 1);
}

static int fail(const char *what) {
    fprintf(stderr, "%s failed: %s\n", what, pinlearn_last_error());
    return 1;
}

int main(int argc, char **argv) {
    per_bubble = argc > 1 ? atoi(argv[1]) : 2;
    outside = argc > 2 && strcmp(argv[2], "outside") == 0;
    const char *topology = argc > 2 && !outside ? argv[2] : NULL;
    const char *map = argc > 3 ? argv[3] : NULL;
    if (per_bubble < 1 || per_bubble > 64) {
        fprintf(stderr, "usage: %s [THREADS 1..64] [TOPOLOGY [MAP] | outside]\n", argv[0]);
        return 2;
    }
    if (outside) {
        manager = pinlearn_connect();
        if (!manager) return fail("pinlearn_connect");
    } else {
        manager = pinlearn_start_on("policy = \"bubbles\"\nmetric = \"cpu\"\ninterval = \"50ms\"\n",
                                    PINLEARN_REGISTERED_THREADS, topology, map);
        if (!manager) return fail("pinlearn_start_on");
    }

    /* One bubble per NUMA node, all in one job bubble. */
    nodes = pinlearn_places(manager, "node");
    if (nodes < 1) return fail("pinlearn_places");
    if (nodes > MAX_NODES) nodes = MAX_NODES;
    int job = pinlearn_bubble_create(manager, PINLEARN_ROOT, "job");
    if (job < 0) return fail("pinlearn_bubble_create");
    for (int n = 0; n < nodes; n++) {
        int cpus[MAX_CPUS];
        int count = pinlearn_place_cpus(manager, "node", n, cpus, MAX_CPUS);
        if (count < 0) return fail("pinlearn_place_cpus");
        CPU_ZERO(&node_cpus[n]);
        for (int i = 0; i < count && i < MAX_CPUS; i++) CPU_SET(cpus[i], &node_cpus[n]);
        char name[32];
        snprintf(name, sizeof name, "node %d", n);
        node_bubble[n] = pinlearn_bubble_create(manager, job, name);
        if (node_bubble[n] < 0) return fail("pinlearn_bubble_create");
        if (pinlearn_bubble_set_burst(manager, node_bubble[n], "node") != 0) return fail("pinlearn_bubble_set_burst");
    }

    int threads = nodes * per_bubble;
    struct worker *workers = calloc(threads, sizeof *workers);
    pthread_barrier_init(&inserted, NULL, threads + 1);
    pthread_barrier_init(&woken, NULL, threads + 1);
    pthread_barrier_init(&stopped, NULL, threads + 1);
    pthread_barrier_init(&checked, NULL, threads + 1);
    for (int i = 0; i < threads; i++) {
        workers[i].bubble = i / per_bubble;
        pthread_create(&workers[i].id, NULL, work, &workers[i]);
    }
    pthread_barrier_wait(&inserted);
    int woke = pinlearn_bubble_wake_up(manager, job);
    if (woke != 0) fprintf(stderr, "pinlearn_bubble_wake_up failed: %s\n", pinlearn_last_error());
    pthread_barrier_wait(&woken);
    /* From outside, the placement comes at pinlearn's next period. */
    for (int tries = 0; outside && tries < 300; tries++) {
        for (int i = 0; i < threads; i++) workers[i].node = node_of(workers[i].tid);
        if (one_node_per_bubble(workers, threads)) break;
        struct timespec pause = {0, 10 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
    struct timespec pause = {0, 200 * 1000 * 1000};
    nanosleep(&pause, NULL);
    stop_work = 1;
    pthread_barrier_wait(&stopped);
    char *summary = pinlearn_stop(manager);
    pthread_barrier_wait(&checked);
    for (int i = 0; i < threads; i++) pthread_join(workers[i].id, NULL);
    if (!summary) return fail("pinlearn_stop");
    printf("%s\n", summary);
    pinlearn_free_string(summary);

    int wrong = woke != 0 || insert_failures != 0 || !one_node_per_bubble(workers, threads);
    for (int i = 0; i < threads; i++)
        fprintf(stderr, "worker %d of bubble \"node %d\": on node %d\n", i, workers[i].bubble, workers[i].node);
    free(workers);
    if (restore_failures) {
        fprintf(stderr, "%d workers kept a changed affinity\n", restore_failures);
        return 3;
    }
    if (wrong) {
        fprintf(stderr, "the bubbles were not placed one per node right after the wake-up\n");
        return 4;
    }
    return 0;
}
