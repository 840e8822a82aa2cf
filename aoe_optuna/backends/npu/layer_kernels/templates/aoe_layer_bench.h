/*
 * aoe_layer_bench.h: what the layer kernels' host programs (vector_bench.cpp,
 * gating_bench.cpp) share beyond aoe_bench_common.h: their command line (rows, then the
 * timing arguments), its usage line, the check of each output entry, the result line
 * results.py reads, and device buffers to and from the host.
 * Shipped beside each program in its build tree (layer_kernels/program.py).
 *
 * Include it after acl/acl.h and the program's config header, which defines AOE_RTOL,
 * AOE_ATOL, AOE_RUN_MODE, AOE_SOC_VERSION and AOE_CORES.
 */
#ifndef AOE_LAYER_BENCH_H
#define AOE_LAYER_BENCH_H

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "aoe_bench_common.h"
#include "aoe_host_numbers.h"

namespace aoe_layer {

// `program rows warmup launches min_samples max_samples rel_precision max_seconds device`
struct Args {
    uint64_t rows = 0;
    int warmup = 0, launches = 0, minSamples = 0, maxSamples = 0, device = 0;
    double relPrecision = 0.0, maxSeconds = 0.0;
};

inline int Usage(const char *program, const char *why)
{
    std::printf("AOE_RESULT {\"status\": \"usage\", \"reason\": \"%s\"}\n", why);
    std::fprintf(stderr, "usage: %s rows warmup launches min_samples max_samples "
                         "rel_precision max_seconds device (%s)\n", program, why);
    return aoe_bench::EXIT_USAGE;
}

// 0 with `args` filled, or the usage exit code once the usage line is printed.
inline int ParseArgs(int argc, char **argv, const char *program, Args &args)
{
    if (argc != 9) return Usage(program, "expected 8 arguments");
    const long long rowsArg = std::atoll(argv[1]);
    args.warmup = std::atoi(argv[2]);
    args.launches = std::atoi(argv[3]);
    args.minSamples = std::atoi(argv[4]);
    args.maxSamples = std::atoi(argv[5]);
    args.relPrecision = std::atof(argv[6]);
    args.maxSeconds = std::atof(argv[7]);
    args.device = std::atoi(argv[8]);
    if (rowsArg < 1 || rowsArg > (1 << 20)) return Usage(program, "rows must be 1..2^20");
    if (args.warmup < 0 || args.launches < 1 || args.minSamples < 1 ||
        args.maxSamples < args.minSamples || args.device < 0)
        return Usage(program, "bad timing arguments");
    args.rows = static_cast<uint64_t>(rowsArg);
    return 0;
}

// The checked entries of the outputs: how many, how many bad, the first bad one.
struct Check {
    uint64_t checked = 0, bad = 0;
    double maxAbsErr = 0.0;
    uint64_t firstRow = 0, firstCol = 0;
    double firstGot = 0.0, firstWant = 0.0;
    const char *firstOutput = "";

    void One(const char *output, uint64_t row, uint64_t col, double got, double want, bool good)
    {
        ++checked;
        if (!good && bad++ == 0) {
            firstRow = row;
            firstCol = col;
            firstGot = got;
            firstWant = want;
            firstOutput = output;
        }
    }

    // A value right within AOE_RTOL |want| + AOE_ATOL; its error counts in max_abs_err.
    void Near(const char *output, uint64_t row, uint64_t col, double got, double want)
    {
        maxAbsErr = std::max(maxAbsErr, std::fabs(got - want));
        One(output, row, col, got, want, aoe_numbers::Close(got, want, AOE_RTOL, AOE_ATOL));
    }
};

// The result line: `shape` is the kernel's own fields after "rows" (", \"width\": 4096",
// or "" for none).
inline void PrintResult(const char *status, const char *kernel, uint64_t rows, const char *shape,
                        const std::vector<double> &samples, int launches, int warmupBatches,
                        int device, const Check &chk)
{
    std::printf("AOE_RESULT {\"status\": \"%s\", \"kernel\": \"%s\", \"mode\": \"%s\", "
                "\"soc\": \"%s\", \"rows\": %llu%s, \"block_dim\": %u, \"launches\": %d, "
                "\"warmup_batches\": %d, \"device\": %d, \"samples_s\": [",
                status, kernel, AOE_RUN_MODE, AOE_SOC_VERSION,
                static_cast<unsigned long long>(rows), shape, static_cast<unsigned>(AOE_CORES),
                launches, warmupBatches, device);
    for (size_t i = 0; i < samples.size(); ++i) std::printf("%s%.9e", i ? ", " : "", samples[i]);
    std::printf("], \"output\": \"%s\", \"checked\": %llu, \"bad\": %llu, \"max_abs_err\": %.6e",
                chk.bad ? chk.firstOutput : "all", static_cast<unsigned long long>(chk.checked),
                static_cast<unsigned long long>(chk.bad), chk.maxAbsErr);
    if (chk.bad)
        std::printf(", \"first_bad\": {\"row\": %llu, \"col\": %llu, \"got\": %.6e, "
                    "\"want\": %.6e}", static_cast<unsigned long long>(chk.firstRow),
                    static_cast<unsigned long long>(chk.firstCol), chk.firstGot, chk.firstWant);
    std::printf("}\n");
}

// `bytes` of zeroed device memory (32 at least).
inline uint8_t *DeviceZeros(size_t bytes)
{
    bytes = std::max<size_t>(bytes, 32);
    uint8_t *p = aoe_bench::DeviceBytes(bytes);
    CHECK_ACL(aclrtMemset(p, bytes, 0, bytes));
    return p;
}

// `host` filled from the device memory at `device` (host.size() elements).
template <class T>
void ToHost(std::vector<T> &host, const uint8_t *device)
{
    const size_t bytes = host.size() * sizeof(T);
    CHECK_ACL(aclrtMemcpy(host.data(), bytes, device, bytes, ACL_MEMCPY_DEVICE_TO_HOST));
}

}  // namespace aoe_layer

#endif  // AOE_LAYER_BENCH_H
