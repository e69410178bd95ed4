/* How long it takes to hand work to another thread that waits, on this machine: the cost of
 * the wake to the thread that gives the work, and the time until the waiting thread runs.
 * Built and called by wake_latency.py (through ctypes), as fma_probe.c is by fma_probe.py. */
#define _GNU_SOURCE
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

enum { PARKED = 0, SPINNING = 1, NAPPING = 2 };

/* A napping waiter sleeps this long between looks, with a timer slack of 1 µs. */
static const struct timespec NAP = {0, 10000};

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

struct shared {
    _Atomic int work;    /* 1: work handed over; 2: stop */
    _Atomic int mode;
    _Atomic double started_at;
    int cpu;             /* the waiter's CPU, or -1 */
};

static void pin_to(int cpu) {
    if (cpu < 0) return;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    sched_setaffinity(0, sizeof set, &set);
}

static void *waiter(void *arg) {
    struct shared *s = arg;
    pin_to(s->cpu);
    prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
    for (;;) {
        int work;
        while ((work = atomic_load(&s->work)) == 0) {
            int mode = atomic_load(&s->mode);
            if (mode == PARKED)
                syscall(SYS_futex, &s->work, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
            else if (mode == NAPPING)
                nanosleep(&NAP, NULL);
            else
                sched_yield();
        }
        if (work == 2) return NULL;
        atomic_store(&s->started_at, now_us());
        atomic_store(&s->work, 0);
    }
}

/* Two CPUs this process may use (the caller's and the waiter's), or -1 each. */
static void two_cpus(int *mine, int *theirs) {
    cpu_set_t set;
    *mine = *theirs = -1;
    if (sched_getaffinity(0, sizeof set, &set) != 0) return;
    for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
        if (!CPU_ISSET(cpu, &set)) continue;
        if (*mine < 0) *mine = cpu;
        else { *theirs = cpu; return; }
    }
    *mine = -1;
}

/* Hands work `rounds` times to a thread that waits as `mode` says, each time after the caller
 * was busy for `gap_us`; returns the mean µs until that thread ran (and the mean µs the wake
 * cost the caller in *caller_us), or -1 when no thread could be started. */
double wake_latency_us(int mode, int rounds, double gap_us, double *caller_us) {
    struct shared s = {0};
    int mine, theirs;
    two_cpus(&mine, &theirs);
    s.cpu = theirs;
    atomic_store(&s.mode, mode);
    cpu_set_t before;
    int restore = sched_getaffinity(0, sizeof before, &before) == 0;
    pthread_t thread;
    if (pthread_create(&thread, NULL, waiter, &s) != 0) return -1;
    pin_to(mine);
    double started = 0, handing = 0;
    for (int round = 0; round < rounds; round++) {
        double busy_until = now_us() + gap_us;
        while (now_us() < busy_until) {}
        atomic_store(&s.started_at, 0.0);
        double t0 = now_us();
        atomic_store(&s.work, 1);
        if (mode == PARKED) syscall(SYS_futex, &s.work, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
        double t1 = now_us();
        double at;
        while ((at = atomic_load(&s.started_at)) == 0.0) {}
        handing += t1 - t0;
        started += at - t0;
        while (atomic_load(&s.work) != 0) {}
    }
    atomic_store(&s.work, 2);
    syscall(SYS_futex, &s.work, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
    pthread_join(thread, NULL);
    if (restore) sched_setaffinity(0, sizeof before, &before);
    *caller_us = handing / rounds;
    return started / rounds;
}
