/*
 * catlass_bench.cpp: host program of the npu backend's catlass kernel. Runs the
 * instantiation of aoe_catlass_gemm.h (rendered per config) through catlass's
 * DeviceGemm adapter, times `launches` launches between two ACL events per sample and
 * prints the same result line as main.cpp (aoe_optuna/backends/npu/results.py reads it):
 *
 *   AOE_RESULT {"status": "ok", "samples_s": [...], ...}
 *
 * NOT COMPILED HERE: no machine of this repository has CANN or catlass; docs/NPU.md.
 * usage: gemm_bench M K N warmup launches min_samples max_samples rel_precision max_seconds
 *                   device
 * `device` is the physical device id (msprof does not support ASCEND_RT_VISIBLE_DEVICES).
 * Timing follows aoe_optuna/backends/timing.py as main.cpp does: `warmup` launches, then
 * warm-up batches until two agree to rel_precision (at most MAX_WARMUP_BATCHES), then
 * samples until the median is known to rel_precision. Workspace and arguments are set up
 * once, before any timed launch.
 *
 * C is checked against a host reference for fp16/bf16 row/column-major operands
 * (inputs are multiples of 1/64, exact in both types; split-K sums fp32 partials, so
 * the tolerance is one rounding of C). zN operands and the int8 path are timed only:
 * "checked": 0 says so.
 */
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "acl/acl.h"
#include "aoe_catlass_gemm.h"
#include "aoe_catlass_bench.h"
#include "aoe_bench_common.h"
#include "tiling/platform/platform_ascendc.h"

namespace {

using namespace aoe_bench;  // the exit codes and timing rules of aoe_bench_common.h

uint16_t Encode(float f)  // exact for the inputs used here (multiples of 1/64 in [-1, 1])
{
    uint32_t x;
    std::memcpy(&x, &f, 4);
    if (AOE_INPUT_BF16) return static_cast<uint16_t>(x >> 16);
    if ((x & 0x7fffffffu) == 0) return static_cast<uint16_t>((x >> 16) & 0x8000u);
    const uint32_t sign = (x >> 16) & 0x8000u;
    const uint32_t exp = ((x >> 23) & 0xffu) - 127 + 15;
    return static_cast<uint16_t>(sign | (exp << 10) | ((x & 0x7fffffu) >> 13));
}

float Decode(uint16_t v)
{
    uint32_t x;
    if (AOE_INPUT_BF16) {
        x = static_cast<uint32_t>(v) << 16;
    } else {
        const uint32_t sign = (v & 0x8000u) << 16, exp = (v >> 10) & 0x1fu, mant = v & 0x3ffu;
        if (exp == 0) return (sign ? -1.0f : 1.0f) * std::ldexp(static_cast<float>(mant), -24);
        x = exp == 31 ? (sign | 0x7f800000u | (mant << 13))
                      : (sign | ((exp + 112) << 23) | (mant << 13));
    }
    float f;
    std::memcpy(&f, &x, 4);
    return f;
}

// The value of A(r, c) / B(r, c): a hash of the logical position, so layouts don't matter.
float Value(uint32_t r, uint32_t c, uint32_t salt)
{
    uint64_t h = (static_cast<uint64_t>(r) * 0x9e3779b97f4a7c15ull) ^ (c + 0x632be59bull * salt);
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 32;
    return (static_cast<int32_t>(h % 129u) - 64) / 64.0f;
}

// Offset of logical (r, c) of a rows x cols operand; -1 for zN (not filled by position).
int64_t Offset(const char *layout, uint32_t r, uint32_t c, uint32_t rows, uint32_t cols)
{
    if (std::strcmp(layout, "RowMajor") == 0) return static_cast<int64_t>(r) * cols + c;
    if (std::strcmp(layout, "ColumnMajor") == 0) return static_cast<int64_t>(c) * rows + r;
    return -1;
}

int Usage(const char *why)
{
    std::printf("AOE_RESULT {\"status\": \"usage\", \"reason\": \"%s\"}\n", why);
    return EXIT_USAGE;
}

void *DeviceBuffer(size_t bytes)
{
    void *p = nullptr;
    CHECK_ACL(aclrtMalloc(&p, std::max<size_t>(bytes, 32), ACL_MEM_MALLOC_HUGE_FIRST));
    return p;
}

}  // namespace

int main(int argc, char **argv)
{
    if (argc != 11) return Usage("expected 10 arguments");
    const long long mArg = std::atoll(argv[1]), kArg = std::atoll(argv[2]),
                    nArg = std::atoll(argv[3]);
    const int warmup = std::atoi(argv[4]), launches = std::atoi(argv[5]);
    const int minSamples = std::atoi(argv[6]), maxSamples = std::atoi(argv[7]);
    const double relPrecision = std::atof(argv[8]), maxSeconds = std::atof(argv[9]);
    const int device = std::atoi(argv[10]);
    if (mArg < 1 || kArg < 1 || nArg < 1 || mArg > (1 << 24) || kArg > (1 << 24) ||
        nArg > (1 << 24))
        return Usage("M, K, N must be 1..2^24");
    if (warmup < 0 || launches < 1 || minSamples < 1 || maxSamples < minSamples || device < 0)
        return Usage("bad timing arguments");
    const uint32_t m = uint32_t(mArg), k = uint32_t(kArg), n = uint32_t(nArg);
    const Catlass::GemmCoord shape{m, n, k};
    const bool quant = AOE_CATLASS_ARGS == AOE_CATLASS_ARGS_QUANT;
    const size_t inBytes = quant ? 1 : 2;
    // zN operands: room for the shape rounded up to whole 16 x 16 fractals.
    const size_t aElems = size_t((m + 15) / 16 * 16) * ((k + 31) / 32 * 32);
    const size_t bElems = size_t((k + 31) / 32 * 32) * ((n + 15) / 16 * 16);
    std::vector<uint8_t> aHost(aElems * inBytes, 0), bHost(bElems * inBytes, 0);
    bool checkable = !quant;
    for (uint32_t r = 0; r < m && checkable; ++r)
        for (uint32_t c = 0; c < k; ++c) {
            const int64_t at = Offset(AOE_LAYOUT_A, r, c, m, k);
            if (at < 0) { checkable = false; break; }
            const uint16_t v = Encode(Value(r, c, 1));
            std::memcpy(&aHost[size_t(at) * 2], &v, 2);
        }
    for (uint32_t r = 0; r < k && checkable; ++r)
        for (uint32_t c = 0; c < n; ++c) {
            const int64_t at = Offset(AOE_LAYOUT_B, r, c, k, n);
            if (at < 0) { checkable = false; break; }
            const uint16_t v = Encode(Value(r, c, 2));
            std::memcpy(&bHost[size_t(at) * 2], &v, 2);
        }
    if (quant) {  // int8 values in [-64, 64]
        for (size_t i = 0; i < aHost.size(); ++i) aHost[i] = uint8_t(int8_t(i % 129) - 64);
        for (size_t i = 0; i < bHost.size(); ++i) bHost[i] = uint8_t(int8_t(i % 127) - 63);
    }

    CHECK_ACL(aclInit(nullptr));
    CHECK_ACL(aclrtSetDevice(device));
    aclrtStream stream = nullptr;
    CHECK_ACL(aclrtCreateStream(&stream));
    uint64_t hardwareSyncAddr = 0;
    CHECK_ACL(aclrtGetHardwareSyncAddr(reinterpret_cast<void **>(&hardwareSyncAddr)));
    const uint32_t aicCoreNum =
        platform_ascendc::PlatformAscendCManager::GetInstance()->GetCoreNumAic();
    const size_t cBytes = size_t(m) * n * 2;
    uint8_t *a = static_cast<uint8_t *>(DeviceBuffer(aHost.size()));
    uint8_t *b = static_cast<uint8_t *>(DeviceBuffer(bHost.size()));
    uint8_t *c = static_cast<uint8_t *>(DeviceBuffer(cBytes));
    CHECK_ACL(aclrtMemcpy(a, aHost.size(), aHost.data(), aHost.size(), ACL_MEMCPY_HOST_TO_DEVICE));
    CHECK_ACL(aclrtMemcpy(b, bHost.size(), bHost.data(), bHost.size(), ACL_MEMCPY_HOST_TO_DEVICE));
#if AOE_CATLASS_ARGS == AOE_CATLASS_ARGS_QUANT
    std::vector<uint16_t> ones(std::max(m, n), Encode(1.0f));
    uint8_t *scale = static_cast<uint8_t *>(DeviceBuffer(size_t(n) * 2));
    uint8_t *perToken = static_cast<uint8_t *>(DeviceBuffer(size_t(m) * 2));
    CHECK_ACL(aclrtMemcpy(scale, n * 2, ones.data(), n * 2, ACL_MEMCPY_HOST_TO_DEVICE));
    CHECK_ACL(aclrtMemcpy(perToken, m * 2, ones.data(), m * 2, ACL_MEMCPY_HOST_TO_DEVICE));
    aoe_catlass::MatmulKernel::Arguments args{shape, aicCoreNum, a, b, scale, perToken, c};
#elif AOE_CATLASS_ARGS == AOE_CATLASS_ARGS_SPLITK
    aoe_catlass::MatmulKernel::Arguments args{shape, aicCoreNum, sizeof(float), a, b, c};
#elif AOE_CATLASS_ARGS == AOE_CATLASS_ARGS_PADDING
    aoe_catlass::MatmulKernel::Arguments args{shape, aoe_catlass::kPaddingAlign, sizeof(float),
                                              a, b, c};
#else
    aoe_catlass::MatmulKernel::Arguments args{shape, a, b, c};
#endif
    aoe_catlass::MatmulAdapter op;
    if (op.CanImplement(args) != Catlass::Status::kSuccess)
        return Usage("catlass CanImplement refused the shape");
    const size_t wsBytes = op.GetWorkspaceSize(args);
    uint8_t *ws = wsBytes ? static_cast<uint8_t *>(DeviceBuffer(wsBytes)) : nullptr;
    op.Initialize(args, ws);
    auto launch = [&]() { op(stream, aicCoreNum, hardwareSyncAddr); };
    for (int i = 0; i < warmup; ++i) launch();
    CHECK_ACL(aclrtSynchronizeStream(stream));
    std::vector<double> samples;
    const int warmupBatches = aoe_bench::TimeOnStream(
        stream, launch, launches, minSamples, maxSamples, relPrecision, maxSeconds, samples);
    std::vector<uint16_t> cHost(size_t(m) * n, 0);
    CHECK_ACL(aclrtMemcpy(cHost.data(), cBytes, c, cBytes, ACL_MEMCPY_DEVICE_TO_HOST));

    unsigned long long checked = 0, bad = 0;
    double maxAbsErr = 0.0;
    for (int i = 0; checkable && i < 2048; ++i) {
        const uint32_t r = uint32_t((i * 2654435761ull) % m), col = uint32_t((i * 40503ull) % n);
        double want = 0.0;
        for (uint32_t j = 0; j < k; ++j) want += double(Value(r, j, 1)) * Value(j, col, 2);
        const double err = std::fabs(Decode(cHost[size_t(r) * n + col]) - want);
        maxAbsErr = std::max(maxAbsErr, err);
        ++checked;
        if (!(err <= AOE_RTOL * std::fabs(want) + 1e-6)) ++bad;
    }
    const bool ok = bad == 0;
    std::printf("AOE_RESULT {\"status\": \"%s\", \"mode\": \"%s\", \"soc\": \"%s\", \"kernel\": "
                "\"catlass-%s\", \"m\": %u, \"k\": %u, \"n\": %u, \"block_dim\": %u, "
                "\"launches\": %d, \"warmup_batches\": %d, \"device\": %d, \"samples_s\": [",
                ok ? "ok" : "accuracy", AOE_RUN_MODE, AOE_SOC_VERSION, AOE_CATLASS_VARIANT, m, k,
                n, aicCoreNum, launches, warmupBatches, device);
    for (size_t i = 0; i < samples.size(); ++i) std::printf("%s%.9e", i ? ", " : "", samples[i]);
    std::printf("], \"checked\": %llu, \"bad\": %llu, \"max_abs_err\": %.6e}\n", checked, bad,
                maxAbsErr);
    CHECK_ACL(aclrtDestroyStream(stream));
    CHECK_ACL(aclrtResetDevice(device));
    CHECK_ACL(aclFinalize());
    return ok ? 0 : EXIT_WRONG_RESULT;
}
