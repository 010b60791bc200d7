/* What a perf event attached to a thread costs it on every switch: two
 * threads pass a byte back and forth over pipes ROUNDS times (each round
 * trip is two sleeps and two wake-ups), with MODE 0 no event, 1 a CPU-clock
 * sampling event opened on each thread and left disabled, 2 that event
 * sampling at 250 Hz (what pinlearn's `useful` metric opens), 3 a
 * page-fault event sampling every fault's address (what
 * `move_thread_memory` opens on each thread of a multi-node machine). Prints
 * "MODE SECONDS". Run it on one CPU (taskset -c N) to time the switches
 * themselves: scripts/bench-switch-cost.
 *
 *   switch_cost MODE ROUNDS
 */
#define _GNU_SOURCE
#include <linux/perf_event.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static int mode;
static long rounds;
static int to_echo[2], to_main[2];

static void attach_event(void)
{
    if (mode == 0)
        return;
    struct perf_event_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.size = sizeof attr;
    attr.type = PERF_TYPE_SOFTWARE;
    if (mode == 3) {
        attr.config = PERF_COUNT_SW_PAGE_FAULTS;
        attr.sample_period = 1;
        attr.sample_type = PERF_SAMPLE_ADDR;
    } else {
        attr.config = PERF_COUNT_SW_CPU_CLOCK;
        attr.sample_period = 4000000; /* 250 Hz of the thread's CPU time */
        attr.sample_type = PERF_SAMPLE_IP;
        attr.exclude_kernel = 1;
    }
    attr.disabled = 1;
    int fd = (int)syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0);
    if (fd < 0) {
        perror("perf_event_open");
        exit(1);
    }
    if (mmap(NULL, 9 * 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) == MAP_FAILED) {
        perror("mmap");
        exit(1);
    }
    if (mode >= 2)
        ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
}

static void *echo(void *unused)
{
    (void)unused;
    attach_event();
    char c;
    for (long i = 0; i < rounds; i++)
        if (read(to_echo[0], &c, 1) != 1 || write(to_main[1], &c, 1) != 1)
            exit(1);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 3 || (mode = atoi(argv[1])) < 0 || mode > 3 || (rounds = atol(argv[2])) < 1) {
        fprintf(stderr, "usage: switch_cost MODE(0|1|2|3) ROUNDS\n");
        return 2;
    }
    if (pipe(to_echo) || pipe(to_main)) {
        perror("pipe");
        return 1;
    }
    pthread_t thread;
    pthread_create(&thread, NULL, echo, NULL);
    attach_event();
    struct timespec start, end;
    clock_gettime(CLOCK_MONOTONIC, &start);
    char c = 'x';
    for (long i = 0; i < rounds; i++)
        if (write(to_echo[1], &c, 1) != 1 || read(to_main[0], &c, 1) != 1)
            return 1;
    pthread_join(thread, NULL);
    clock_gettime(CLOCK_MONOTONIC, &end);
    printf("%d %.3f\n", mode, (double)(end.tv_sec - start.tv_sec) + (double)(end.tv_nsec - start.tv_nsec) / 1e9);
    return 0;
}
