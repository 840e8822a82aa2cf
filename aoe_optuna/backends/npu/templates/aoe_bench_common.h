/*
 * aoe_bench_common.h: what the npu backend's host programs (main.cpp, catlass_bench.cpp,
 * catlass_fai_bench.cpp, catlass_mla_bench.cpp, vector_bench.cpp, gating_bench.cpp)
 * share: their exit codes, the ACL check that ends a program with a "runtime" result
 * line, the timing rules of aoe_optuna/backends/timing.py, the event-timed loop that
 * applies them on the device (TimeOnStream), and the device, stream and buffers of an
 * ACL program (OpenStream, DeviceBytes, WarmUpAndTime, CloseStream).
 * Shipped beside each program in its build tree (simple_gemm/render.py, catlass/build.py,
 * catlass/fai.py, catlass/mla.py, layer_kernels/program.py), so a fix to the timing
 * reaches every program at once.
 *
 * Include it after acl/acl.h (or, built with ASCENDC_CPU_DEBUG, without: no CHECK_ACL).
 */
#ifndef AOE_BENCH_COMMON_H
#define AOE_BENCH_COMMON_H

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace aoe_bench {

constexpr int EXIT_USAGE = 2;
constexpr int EXIT_WRONG_RESULT = 3;
constexpr int EXIT_RUNTIME = 4;
constexpr int MAX_WARMUP_BATCHES = 20;  // timing.py MAX_WARMUP_BATCHES

inline double Median(std::vector<double> x)
{
    std::sort(x.begin(), x.end());
    const size_t h = x.size() / 2;
    return x.size() % 2 ? x[h] : 0.5 * (x[h - 1] + x[h]);
}

// The stopping rule of timing.py: the 95% half-width of the median.
inline bool PreciseEnough(const std::vector<double> &s, double relPrecision)
{
    if (s.size() < 2) return false;
    const double med = Median(s);
    std::vector<double> dev;
    for (double v : s) dev.push_back(std::fabs(v - med));
    const double sigma = 1.4826 * Median(dev);
    const double halfWidth = 1.96 * 1.2533 * sigma / std::sqrt(static_cast<double>(s.size()));
    return med > 0 && halfWidth / med <= relPrecision;
}

// Two warm-up batches agree (timing.py settled()): the clocks and caches have settled.
inline bool Settled(double previous, double current, double relPrecision)
{
    const double lo = std::min(previous, current);
    return lo > 0 && std::fabs(current - previous) / lo <= relPrecision;
}

// timing.py's rule over `batch()` (seconds of `launches` launches): warm-up batches
// until two agree to relPrecision (at most MAX_WARMUP_BATCHES), then samples (seconds
// per launch, appended to `samples`) until the median is known to relPrecision, once
// minSamples are taken, or maxSeconds are spent. Returns the warm-up batches run.
template <class Batch>
int TimeSamples(Batch batch, int launches, int minSamples, int maxSamples, double relPrecision,
                double maxSeconds, std::vector<double> &samples)
{
    int warmupBatches = 0;
    for (double previous = -1.0; warmupBatches < MAX_WARMUP_BATCHES; ++warmupBatches) {
        const double s = batch();
        if (previous > 0 && Settled(previous, s, relPrecision)) break;
        previous = s;
    }
    double spent = 0.0;
    while (static_cast<int>(samples.size()) < maxSamples) {
        const double s = batch();
        samples.push_back(s / launches);
        spent += s;
        if (static_cast<int>(samples.size()) >= minSamples &&
            (spent >= maxSeconds || PreciseEnough(samples, relPrecision)))
            break;
    }
    return warmupBatches;
}

}  // namespace aoe_bench

#ifndef ASCENDC_CPU_DEBUG
// An ACL call that fails ends the program with a "runtime" result line (results.py).
#define CHECK_ACL(call)                                                                      \
    do {                                                                                     \
        aclError status_ = (call);                                                           \
        if (status_ != ACL_SUCCESS) {                                                        \
            std::printf("AOE_RESULT {\"status\": \"runtime\", \"call\": \"%s\", "             \
                        "\"code\": %d, \"line\": %d}\n", #call, static_cast<int>(status_),   \
                        __LINE__);                                                           \
            std::fprintf(stderr, "%s failed with ACL error %d\n", #call,                     \
                         static_cast<int>(status_));                                         \
            std::exit(aoe_bench::EXIT_RUNTIME);                                              \
        }                                                                                    \
    } while (0)

namespace aoe_bench {

// TimeSamples over batches of `launches` calls of `launch` timed between two events
// recorded on `stream`. The events live and die here, before the program frees its
// stream and resets the device.
template <class Launch>
int TimeOnStream(aclrtStream stream, Launch launch, int launches, int minSamples,
                 int maxSamples, double relPrecision, double maxSeconds,
                 std::vector<double> &samples)
{
    aclrtEvent start = nullptr, end = nullptr;
    CHECK_ACL(aclrtCreateEvent(&start));
    CHECK_ACL(aclrtCreateEvent(&end));
    auto batch = [&]() {  // seconds of `launches` launches between the two events
        CHECK_ACL(aclrtRecordEvent(start, stream));
        for (int i = 0; i < launches; ++i) launch();
        CHECK_ACL(aclrtRecordEvent(end, stream));
        CHECK_ACL(aclrtSynchronizeEvent(end));
        float ms = 0.0f;
        CHECK_ACL(aclrtEventElapsedTime(&ms, start, end));
        return ms * 1e-3;
    };
    const int warmupBatches = TimeSamples(batch, launches, minSamples, maxSamples,
                                          relPrecision, maxSeconds, samples);
    CHECK_ACL(aclrtDestroyEvent(start));
    CHECK_ACL(aclrtDestroyEvent(end));
    return warmupBatches;
}

// ACL, the device and one stream on it: where a program's device work starts.
inline aclrtStream OpenStream(int device)
{
    CHECK_ACL(aclInit(nullptr));
    CHECK_ACL(aclrtSetDevice(device));
    aclrtStream stream = nullptr;
    CHECK_ACL(aclrtCreateStream(&stream));
    return stream;
}

// `bytes` of device memory (32 at least: never a null pointer), `host`'s bytes copied in
// when given.
inline uint8_t *DeviceBytes(size_t bytes, const void *host = nullptr)
{
    void *p = nullptr;
    CHECK_ACL(aclrtMalloc(&p, std::max<size_t>(bytes, 32), ACL_MEM_MALLOC_HUGE_FIRST));
    if (host != nullptr) CHECK_ACL(aclrtMemcpy(p, bytes, host, bytes, ACL_MEMCPY_HOST_TO_DEVICE));
    return static_cast<uint8_t *>(p);
}

// `warmup` launches, then TimeOnStream's samples, the stream drained before and after.
template <class Launch>
int WarmUpAndTime(aclrtStream stream, Launch launch, int warmup, int launches, int minSamples,
                  int maxSamples, double relPrecision, double maxSeconds,
                  std::vector<double> &samples)
{
    for (int i = 0; i < warmup; ++i) launch();
    CHECK_ACL(aclrtSynchronizeStream(stream));
    const int warmupBatches = TimeOnStream(stream, launch, launches, minSamples, maxSamples,
                                           relPrecision, maxSeconds, samples);
    CHECK_ACL(aclrtSynchronizeStream(stream));
    return warmupBatches;
}

// The end of OpenStream, once the program has freed the device memory it needs freed.
inline void CloseStream(aclrtStream stream, int device)
{
    CHECK_ACL(aclrtDestroyStream(stream));
    CHECK_ACL(aclrtResetDevice(device));
    CHECK_ACL(aclFinalize());
}

}  // namespace aoe_bench
#endif

#endif  // AOE_BENCH_COMMON_H
