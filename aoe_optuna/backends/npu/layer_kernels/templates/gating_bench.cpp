/*
 * gating_bench.cpp: host program of the MoE gating kernel (moe_gating_kernel.cpp: softmax
 * over the experts, then the top k per token). Allocates the logits and the three outputs
 * on the device through ACL once, times `launches` launches between two ACL events per
 * sample with the timing rules of aoe_bench_common.h (timing.py's), copies the outputs
 * back, checks them against a host reference and prints the result line the GEMM's
 * main.cpp prints (status ok | accuracy, exit 3 | runtime, exit 4 | usage, exit 2).
 *
 * usage: gating_bench rows warmup launches min_samples max_samples rel_precision
 *                     max_seconds device
 * Experts, k, cores and dtype are the kernel's, rendered into aoe_gating_config.h by
 * aoe_optuna/backends/npu/layer_kernels/moe_gating_kernel.py.
 *
 * The check, per token and rank j: the weight is softmax's j-th largest (double
 * precision, to AOE_RTOL of the element type plus AOE_ATOL); the expert index names an
 * expert whose logit is the j-th largest (ties among equal logits may come in either
 * order) and no expert twice; the row index is j * rows + row (MoeGatingTopKSoftmax's).
 */
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

#include "acl/acl.h"
#include "aoe_bench_common.h"
#include "aoe_gating_config.h"
#include "aoe_host_numbers.h"

// Defined at the bottom of moe_gating_kernel.cpp (compiled by bisheng with the kernel).
extern "C" void aoe_launch_moe_gating(uint32_t blockDim, void *stream, uint8_t *logits,
                                      uint8_t *y, uint8_t *expertIdx, uint8_t *rowIdx,
                                      uint32_t rows);

namespace {

using namespace aoe_bench;  // exit codes, CHECK_ACL, TimeSamples

constexpr bool BF16 = AOE_INPUT_BF16 != 0;

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
};

void CheckRow(const std::vector<uint16_t> &logits, const std::vector<uint16_t> &y,
              const std::vector<int32_t> &experts, const std::vector<int32_t> &rowIdx,
              uint64_t rows, uint64_t row, Check &chk)
{
    std::vector<double> x(AOE_EXPERTS);
    for (uint32_t e = 0; e < AOE_EXPERTS; ++e)
        x[e] = aoe_numbers::Decode(logits[row * AOE_EXPERTS + e], BF16);
    std::vector<double> sorted(x);
    std::sort(sorted.begin(), sorted.end(), std::greater<double>());
    double sum = 0.0;
    for (double v : x) sum += std::exp(v - sorted[0]);
    std::vector<bool> taken(AOE_EXPERTS, false);
    for (uint32_t j = 0; j < AOE_TOP_K; ++j) {
        const size_t at = row * AOE_TOP_K + j;
        const double want = std::exp(sorted[j] - sorted[0]) / sum;
        const double got = aoe_numbers::Decode(y[at], BF16);
        chk.maxAbsErr = std::max(chk.maxAbsErr, std::fabs(got - want));
        chk.One("y", row, j, got, want, aoe_numbers::Close(got, want, AOE_RTOL, AOE_ATOL));
        const int32_t e = experts[at];
        const bool known = e >= 0 && e < static_cast<int32_t>(AOE_EXPERTS) && !taken[e];
        chk.One("expert_idx", row, j, e, sorted[j], known && x[e] == sorted[j]);
        if (known) taken[e] = true;
        const int64_t wantRow = static_cast<int64_t>(j * rows + row);
        chk.One("row_idx", row, j, rowIdx[at], static_cast<double>(wantRow), rowIdx[at] == wantRow);
    }
}

void PrintResult(const char *status, uint64_t rows, const std::vector<double> &samples,
                 int launches, int warmupBatches, int device, const Check &chk)
{
    std::printf("AOE_RESULT {\"status\": \"%s\", \"kernel\": \"moe_gating\", \"mode\": \"%s\", "
                "\"soc\": \"%s\", \"rows\": %llu, \"block_dim\": %u, \"launches\": %d, "
                "\"warmup_batches\": %d, \"device\": %d, \"samples_s\": [",
                status, AOE_RUN_MODE, AOE_SOC_VERSION, static_cast<unsigned long long>(rows),
                static_cast<unsigned>(AOE_CORES), launches, warmupBatches, device);
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

int Usage(const char *why)
{
    std::printf("AOE_RESULT {\"status\": \"usage\", \"reason\": \"%s\"}\n", why);
    std::fprintf(stderr, "usage: gating_bench rows warmup launches min_samples max_samples "
                         "rel_precision max_seconds device (%s)\n", why);
    return EXIT_USAGE;
}

uint8_t *Device(size_t bytes)
{
    void *p = nullptr;
    bytes = std::max<size_t>(bytes, 32);
    CHECK_ACL(aclrtMalloc(&p, bytes, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK_ACL(aclrtMemset(p, bytes, 0, bytes));
    return static_cast<uint8_t *>(p);
}

}  // namespace

int main(int argc, char **argv)
{
    if (argc != 9) return Usage("expected 8 arguments");
    const long long rowsArg = std::atoll(argv[1]);
    const int warmup = std::atoi(argv[2]), launches = std::atoi(argv[3]);
    const int minSamples = std::atoi(argv[4]), maxSamples = std::atoi(argv[5]);
    const double relPrecision = std::atof(argv[6]), maxSeconds = std::atof(argv[7]);
    const int device = std::atoi(argv[8]);
    if (rowsArg < 1 || rowsArg > (1 << 20)) return Usage("rows must be 1..2^20");
    if (warmup < 0 || launches < 1 || minSamples < 1 || maxSamples < minSamples || device < 0)
        return Usage("bad timing arguments");
    const uint64_t rows = static_cast<uint64_t>(rowsArg);
    const size_t nLogits = rows * AOE_EXPERTS, nOut = rows * AOE_TOP_K;
    std::vector<uint16_t> logits(nLogits);
    aoe_numbers::Lcg rng{0x6a7e + rows};
    for (uint16_t &v : logits) v = aoe_numbers::Encode(4.0f * rng.Value(), BF16);

    CHECK_ACL(aclInit(nullptr));
    CHECK_ACL(aclrtSetDevice(device));
    aclrtStream stream = nullptr;
    CHECK_ACL(aclrtCreateStream(&stream));
    uint8_t *dLogits = Device(nLogits * 2), *dY = Device(nOut * 2);
    uint8_t *dExperts = Device(nOut * 4), *dRows = Device(nOut * 4);
    CHECK_ACL(aclrtMemcpy(dLogits, nLogits * 2, logits.data(), nLogits * 2,
                          ACL_MEMCPY_HOST_TO_DEVICE));
    const uint32_t r32 = static_cast<uint32_t>(rows);
    auto launch = [&]() { aoe_launch_moe_gating(AOE_CORES, stream, dLogits, dY, dExperts, dRows, r32); };
    for (int i = 0; i < warmup; ++i) launch();
    CHECK_ACL(aclrtSynchronizeStream(stream));
    std::vector<double> samples;
    const int warmupBatches = aoe_bench::TimeOnStream(
        stream, launch, launches, minSamples, maxSamples, relPrecision, maxSeconds, samples);
    CHECK_ACL(aclrtSynchronizeStream(stream));
    std::vector<uint16_t> y(nOut);
    std::vector<int32_t> experts(nOut), rowIdx(nOut);
    CHECK_ACL(aclrtMemcpy(y.data(), nOut * 2, dY, nOut * 2, ACL_MEMCPY_DEVICE_TO_HOST));
    CHECK_ACL(aclrtMemcpy(experts.data(), nOut * 4, dExperts, nOut * 4, ACL_MEMCPY_DEVICE_TO_HOST));
    CHECK_ACL(aclrtMemcpy(rowIdx.data(), nOut * 4, dRows, nOut * 4, ACL_MEMCPY_DEVICE_TO_HOST));
    for (uint8_t *p : {dLogits, dY, dExperts, dRows}) CHECK_ACL(aclrtFree(p));
    CHECK_ACL(aclrtDestroyStream(stream));
    CHECK_ACL(aclrtResetDevice(device));
    CHECK_ACL(aclFinalize());

    Check chk;
    for (uint64_t row = 0; row < rows; ++row) CheckRow(logits, y, experts, rowIdx, rows, row, chk);
    const bool ok = chk.bad == 0;
    PrintResult(ok ? "ok" : "accuracy", rows, samples, launches, warmupBatches, device, chk);
    return ok ? 0 : EXIT_WRONG_RESULT;
}
