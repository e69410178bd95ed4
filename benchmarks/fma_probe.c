/* The machine's float32 FMA peak, for the benchmark report's floor.
 *
 * Built by benchmarks/fma_probe.py with the system C compiler (cc -O2 -march=native) and
 * called through ctypes. Each thread runs CHAINS independent accumulator chains of
 * `acc = acc * mul + add` over full vector registers: enough chains to cover the FMA
 * latency times the number of FMA ports, so the loop is bound by FMA throughput alone.
 * AVX-512 where the compiler targets it (-march=native on a CPU with avx512f), AVX2+FMA
 * otherwise, plain C as the last resort.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#if defined(__AVX512F__)
#include <immintrin.h>
typedef __m512 vec;
#define LANES 16
#define CHAINS 16 /* 16 accumulators + 2 constants of 32 zmm registers */
#define ISA "avx512f"
#define SPLAT(x) _mm512_set1_ps(x)
#define FMA(a, b, c) _mm512_fmadd_ps(a, b, c)
static float first_lane(vec v) { return _mm512_cvtss_f32(v); }
#elif defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
typedef __m256 vec;
#define LANES 8
#define CHAINS 12 /* 12 accumulators + 2 constants of 16 ymm registers */
#define ISA "avx2+fma"
#define SPLAT(x) _mm256_set1_ps(x)
#define FMA(a, b, c) _mm256_fmadd_ps(a, b, c)
static float first_lane(vec v) { return _mm256_cvtss_f32(v); }
#else
typedef float vec;
#define LANES 1
#define CHAINS 12
#define ISA "scalar"
#define SPLAT(x) (x)
#define FMA(a, b, c) ((a) * (b) + (c))
static float first_lane(vec v) { return v; }
#endif

#define STEP(i) acc##i = FMA(acc##i, mul, add);
#define STEPS12 STEP(0) STEP(1) STEP(2) STEP(3) STEP(4) STEP(5) STEP(6) STEP(7) STEP(8) STEP(9) STEP(10) STEP(11)
#if CHAINS == 16
#define ALL_STEPS STEPS12 STEP(12) STEP(13) STEP(14) STEP(15)
#else
#define ALL_STEPS STEPS12
#endif

const char *fma_probe_isa(void) { return ISA; }
int fma_probe_lanes(void) { return LANES; }
int fma_probe_chains(void) { return CHAINS; }

static double now_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* The chains converge to add / (1 - mul) = 1: no overflow, no denormals. The sum of the
 * accumulators is returned so that the compiler keeps every chain. */
static float run_chains(long iterations, float seed) {
    const vec mul = SPLAT(0.999f), add = SPLAT(0.001f);
    /* distinct starting values, or the compiler merges the identical chains into one */
#define START(i) vec acc##i = SPLAT(seed + 0.01f * (float)(i));
    START(0) START(1) START(2) START(3) START(4) START(5) START(6) START(7) START(8) START(9) START(10) START(11)
#if CHAINS == 16
    START(12) START(13) START(14) START(15)
#endif
    for (long n = 0; n < iterations; n++) {
        ALL_STEPS
    }
    float total = first_lane(acc0) + first_lane(acc1) + first_lane(acc2) + first_lane(acc3) + first_lane(acc4) +
                  first_lane(acc5) + first_lane(acc6) + first_lane(acc7) + first_lane(acc8) + first_lane(acc9) +
                  first_lane(acc10) + first_lane(acc11);
#if CHAINS == 16
    total += first_lane(acc12) + first_lane(acc13) + first_lane(acc14) + first_lane(acc15);
#endif
    return total;
}

struct job {
    long iterations;
    atomic_int *go; /* 0: wait, 1: run, -1: give up (a thread could not be started) */
    double start, end;
    float sink;
};

static void *run_job(void *arg) {
    struct job *job = arg;
    int go;
    while ((go = atomic_load(job->go)) == 0) {
    }
    if (go < 0) return NULL;
    job->start = now_seconds();
    job->sink = run_chains(job->iterations, 0.5f + 1e-3f * (float)job->iterations);
    job->end = now_seconds();
    return NULL;
}

/* GFLOP/s of `threads` threads, each running `iterations` rounds of all chains at once,
 * over the wall time from the first start to the last end. Each FMA counts 2 FLOPs per
 * lane. Returns a negative number if the threads cannot be started. */
double fma_probe_gflops(int threads, long iterations) {
    if (threads < 1 || iterations < 1) return -1.0;
    struct job *jobs = calloc((size_t)threads, sizeof *jobs);
    pthread_t *ids = calloc((size_t)threads, sizeof *ids);
    atomic_int go = 0;
    if (jobs == NULL || ids == NULL) {
        free(jobs);
        free(ids);
        return -1.0;
    }
    int started = 1; /* job 0 runs on the calling thread */
    for (int t = 0; t < threads; t++) {
        jobs[t].iterations = iterations;
        jobs[t].go = &go;
    }
    for (int t = 1; t < threads; t++) {
        if (pthread_create(&ids[t], NULL, run_job, &jobs[t]) != 0) break;
        started++;
    }
    double result = -1.0;
    atomic_store(&go, started == threads ? 1 : -1);
    if (started == threads) run_job(&jobs[0]);
    for (int t = 1; t < started; t++) pthread_join(ids[t], NULL);
    if (started == threads) {
        double first = jobs[0].start, last = jobs[0].end, sink = 0.0;
        for (int t = 0; t < threads; t++) {
            if (jobs[t].start < first) first = jobs[t].start;
            if (jobs[t].end > last) last = jobs[t].end;
            sink += jobs[t].sink;
        }
        double flops = 2.0 * LANES * CHAINS * (double)iterations * (double)threads;
        /* sink is about CHAINS * threads; the comparison keeps it alive and never fails */
        result = (sink == sink && last > first) ? flops / (last - first) / 1e9 : -1.0;
    }
    free(jobs);
    free(ids);
    return result;
}
