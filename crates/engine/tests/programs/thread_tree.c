/* An unmodified program that starts a tree of threads: the main thread
 * starts FAMILIES workers ("fam-0", "fam-1", ...), each worker starts two
 * leaves ("fam-0a", "fam-0b", ...) and waits for them in join; the leaves
 * compute for SECONDS seconds. The two leaves of a family meet at a pthread
 * barrier twice a round, so a preloaded library can count it.
 * Usage: thread_tree [FAMILIES [SECONDS]]; prints the rounds. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double seconds = 2.0;

struct family {
    int index;
    pthread_barrier_t round;
    int stop;
    long rounds[2];
};

struct leaf {
    struct family *family;
    int which;
};

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *leaf_main(void *arg) {
    struct leaf *leaf = arg;
    char name[16];
    snprintf(name, sizeof name, "fam-%d%c", leaf->family->index, 'a' + leaf->which);
    pthread_setname_np(pthread_self(), name);
    double end = now() + seconds;
    volatile double x = 1.0;
    long rounds = 0;
    for (;;) {
        for (int i = 0; i < 200000; i++) x = x * 1.0000001 + 1e-9;
        /* One leaf decides for both whether to go on, between two barriers. */
        if (pthread_barrier_wait(&leaf->family->round) == PTHREAD_BARRIER_SERIAL_THREAD)
            leaf->family->stop = now() >= end;
        pthread_barrier_wait(&leaf->family->round);
        rounds++;
        if (leaf->family->stop) break;
    }
    leaf->family->rounds[leaf->which] = rounds;
    return NULL;
}

static void *family_main(void *arg) {
    struct family *family = arg;
    char name[16];
    snprintf(name, sizeof name, "fam-%d", family->index);
    pthread_setname_np(pthread_self(), name);
    pthread_barrier_init(&family->round, NULL, 2);
    pthread_t leaves[2];
    struct leaf args[2];
    for (int i = 0; i < 2; i++) {
        args[i].family = family;
        args[i].which = i;
        if (pthread_create(&leaves[i], NULL, leaf_main, &args[i]) != 0) abort();
    }
    for (int i = 0; i < 2; i++) pthread_join(leaves[i], NULL);
    return NULL;
}

int main(int argc, char **argv) {
    int families = argc > 1 ? atoi(argv[1]) : 2;
    seconds = argc > 2 ? atof(argv[2]) : 2.0;
    if (families < 1 || families > 64 || !(seconds > 0)) {
        fprintf(stderr, "usage: thread_tree [FAMILIES (1..64) [SECONDS > 0]]\n");
        return 2;
    }
    struct family *all = calloc(families, sizeof *all);
    pthread_t *threads = calloc(families, sizeof *threads);
    if (!all || !threads) return 1;
    for (int f = 0; f < families; f++) {
        all[f].index = f;
        if (pthread_create(&threads[f], NULL, family_main, &all[f]) != 0) abort();
    }
    for (int f = 0; f < families; f++) {
        pthread_join(threads[f], NULL);
        printf("family %d: %ld %ld rounds\n", f, all[f].rounds[0], all[f].rounds[1]);
    }
    return 0;
}
