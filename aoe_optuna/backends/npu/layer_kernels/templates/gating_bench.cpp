/*
 * gating_bench.cpp: host program of the MoE gating kernel (moe_gating_kernel.cpp: softmax
 * over the experts, then the top k per token). Allocates the logits and the three outputs
 * on the device through ACL once, times `launches` launches between two ACL events per
 * sample with the timing rules of aoe_bench_common.h (timing.py's), copies the outputs
 * back, checks them against a host reference and prints the result line the GEMM's
 * main.cpp prints (status ok | accuracy, exit 3 | runtime, exit 4 | usage, exit 2).
 * Its command line, check and result line are aoe_layer_bench.h's, as vector_bench.cpp's.
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
#include "aoe_layer_bench.h"

// Defined at the bottom of moe_gating_kernel.cpp (compiled by bisheng with the kernel).
extern "C" void aoe_launch_moe_gating(uint32_t blockDim, void *stream, uint8_t *logits,
                                      uint8_t *y, uint8_t *expertIdx, uint8_t *rowIdx,
                                      uint32_t rows);

namespace {

using namespace aoe_bench;  // exit codes, CHECK_ACL, the device and its timing
using aoe_layer::Check;

constexpr bool BF16 = AOE_INPUT_BF16 != 0;

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
        chk.Near("y", row, j, got, want);
        const int32_t e = experts[at];
        const bool known = e >= 0 && e < static_cast<int32_t>(AOE_EXPERTS) && !taken[e];
        chk.One("expert_idx", row, j, e, sorted[j], known && x[e] == sorted[j]);
        if (known) taken[e] = true;
        const int64_t wantRow = static_cast<int64_t>(j * rows + row);
        chk.One("row_idx", row, j, rowIdx[at], static_cast<double>(wantRow), rowIdx[at] == wantRow);
    }
}

}  // namespace

int main(int argc, char **argv)
{
    aoe_layer::Args args;
    if (const int usage = aoe_layer::ParseArgs(argc, argv, "gating_bench", args)) return usage;
    const uint64_t rows = args.rows;
    const size_t nLogits = rows * AOE_EXPERTS, nOut = rows * AOE_TOP_K;
    std::vector<uint16_t> logits(nLogits);
    aoe_numbers::Lcg rng{0x6a7e + rows};
    for (uint16_t &v : logits) v = aoe_numbers::Encode(4.0f * rng.Value(), BF16);

    aclrtStream stream = OpenStream(args.device);
    uint8_t *dLogits = aoe_layer::DeviceZeros(nLogits * 2), *dY = aoe_layer::DeviceZeros(nOut * 2);
    uint8_t *dExperts = aoe_layer::DeviceZeros(nOut * 4), *dRows = aoe_layer::DeviceZeros(nOut * 4);
    CHECK_ACL(aclrtMemcpy(dLogits, nLogits * 2, logits.data(), nLogits * 2,
                          ACL_MEMCPY_HOST_TO_DEVICE));
    const uint32_t r32 = static_cast<uint32_t>(rows);
    auto launch = [&]() { aoe_launch_moe_gating(AOE_CORES, stream, dLogits, dY, dExperts, dRows, r32); };
    std::vector<double> samples;
    const int warmupBatches = WarmUpAndTime(stream, launch, args.warmup, args.launches,
                                            args.minSamples, args.maxSamples, args.relPrecision,
                                            args.maxSeconds, samples);
    std::vector<uint16_t> y(nOut);
    std::vector<int32_t> experts(nOut), rowIdx(nOut);
    aoe_layer::ToHost(y, dY);
    aoe_layer::ToHost(experts, dExperts);
    aoe_layer::ToHost(rowIdx, dRows);
    for (uint8_t *p : {dLogits, dY, dExperts, dRows}) CHECK_ACL(aclrtFree(p));
    CloseStream(stream, args.device);

    Check chk;
    for (uint64_t row = 0; row < rows; ++row) CheckRow(logits, y, experts, rowIdx, rows, row, chk);
    const bool ok = chk.bad == 0;
    aoe_layer::PrintResult(ok ? "ok" : "accuracy", "moe_gating", rows, "", samples, args.launches,
                           warmupBatches, args.device, chk);
    return ok ? 0 : EXIT_WRONG_RESULT;
}
