/*
 * main.cpp: host program of the npu backend. Allocates A, B, C and the workspace on the
 * device through ACL once, warms up until two batches agree, launches gemm_kernel N
 * times between two aclrtRecordEvent calls per timed sample (through the kernel file's
 * aoe_launch_gemm_kernel: the <<<>>> launch, no allocation per launch), reads
 * aclrtEventElapsedTime, copies C back, checks it against a host reference and prints
 * one machine-readable line:
 *
 *   AOE_RESULT {"status": "ok", "samples_s": [...], ...}
 *
 * status: ok | accuracy (exit 3) | runtime (exit 4, an ACL call failed) | usage (exit 2).
 * The kernel's constants and this program's are rendered by
 * aoe_optuna/backends/npu/simple_gemm/render.py into aoe_gemm_config.h. Built with ASCENDC_CPU_DEBUG (RUN_MODE=cpu) it runs the CPU
 * twin through tikicpulib instead, timed with the host clock (functional only).
 *
 * usage: gemm_bench M K N warmup launches min_samples max_samples rel_precision max_seconds
 *                   device
 * `device` is the physical device id (aclrtSetDevice): msprof does not support
 * ASCEND_RT_VISIBLE_DEVICES, so the backend names the device here instead.
 *
 * Timing rules (aoe_optuna/backends/timing.py, in aoe_bench_common.h): `warmup` launches,
 * then warm-up batches of `launches` launches until two consecutive batches agree to
 * rel_precision (at most MAX_WARMUP_BATCHES); then samples until the median is known to
 * rel_precision.
 *
 * Inputs are multiples of 1/64 in [-1, 1]: exact in fp16 and bf16, so every product and
 * partial sum is exact in the fp32 accumulator and the only error left is the rounding
 * of C to its type; the tolerance is that rounding (AOE_RTOL) and nothing more.
 */
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "aoe_gemm_config.h"

#ifndef ASCENDC_CPU_DEBUG
#include "acl/acl.h"
// Defined at the bottom of gemm_kernel.cpp (compiled by bisheng with the kernel).
extern "C" void aoe_launch_gemm_kernel(uint32_t blockDim, void *stream, uint8_t *a, uint8_t *b,
                                       uint8_t *c, uint8_t *workspace, uint8_t *tiling);
#else
#include "tikicpulib.h"
extern "C" void gemm_kernel(uint8_t *a, uint8_t *b, uint8_t *c, uint8_t *workspace,
                            uint8_t *tiling);
#endif
#include "aoe_bench_common.h"

namespace {

using namespace aoe_bench;  // the exit codes and timing rules of aoe_bench_common.h

constexpr uint32_t FRACTAL = 16;
constexpr size_t WORKSPACE_BYTES = 512;  // unused by the kernel; never a null pointer

uint32_t RoundUp(uint32_t a, uint32_t b) { return (a + b - 1) / b * b; }

uint16_t FloatToHalf(float f)
{
    uint32_t x;
    std::memcpy(&x, &f, 4);
    const uint32_t sign = (x >> 16) & 0x8000u;
    int32_t exp = static_cast<int32_t>((x >> 23) & 0xffu) - 127 + 15;
    uint32_t mant = x & 0x7fffffu;
    if (exp <= 0) {  // subnormal or zero (inputs here are never that small but zero)
        if (exp < -10) return static_cast<uint16_t>(sign);
        mant |= 0x800000u;
        const uint32_t shift = static_cast<uint32_t>(14 - exp);
        uint32_t half = mant >> shift;
        const uint32_t rest = mant & ((1u << shift) - 1);
        const uint32_t mid = 1u << (shift - 1);
        if (rest > mid || (rest == mid && (half & 1u))) ++half;
        return static_cast<uint16_t>(sign | half);
    }
    if (exp >= 31) return static_cast<uint16_t>(sign | 0x7c00u);
    uint32_t half = sign | (static_cast<uint32_t>(exp) << 10) | (mant >> 13);
    const uint32_t rest = mant & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) ++half;
    return static_cast<uint16_t>(half);
}

float HalfToFloat(uint16_t h)
{
    const uint32_t sign = (h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    uint32_t x;
    if (exp == 0) {
        if (mant == 0) {
            x = sign;
        } else {
            exp = 127 - 15 + 1;
            while (!(mant & 0x400u)) {
                mant <<= 1;
                --exp;
            }
            x = sign | (exp << 23) | ((mant & 0x3ffu) << 13);
        }
    } else if (exp == 31) {
        x = sign | 0x7f800000u | (mant << 13);
    } else {
        x = sign | ((exp + 127 - 15) << 23) | (mant << 13);
    }
    float f;
    std::memcpy(&f, &x, 4);
    return f;
}

uint16_t FloatToBf16(float f)
{
    uint32_t x;
    std::memcpy(&x, &f, 4);
    return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

float Bf16ToFloat(uint16_t b)
{
    const uint32_t x = static_cast<uint32_t>(b) << 16;
    float f;
    std::memcpy(&f, &x, 4);
    return f;
}

uint16_t Encode(float f) { return AOE_INPUT_BF16 ? FloatToBf16(f) : FloatToHalf(f); }
float Decode(uint16_t v) { return AOE_INPUT_BF16 ? Bf16ToFloat(v) : HalfToFloat(v); }

// Deterministic inputs: multiples of 1/64 in [-1, 1].
struct Lcg {
    uint64_t state;
    uint32_t Next()
    {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        return static_cast<uint32_t>(state >> 33);
    }
    float Value() { return (static_cast<int32_t>(Next() % 129u) - 64) / 64.0f; }
};

struct Problem {
    uint32_t m, k, n, ldc, mPad, nPad;
    std::vector<float> a, b;          // row-major values, for the reference
    std::vector<uint16_t> aDev, bDev;  // as the kernel reads them (row_major or z_major)
};

Problem MakeProblem(uint32_t m, uint32_t k, uint32_t n)
{
    Problem p{m, k, n, RoundUp(n, AOE_OUTPUT_ALIGN ? 512u / 2u : 1u), RoundUp(m, FRACTAL),
              RoundUp(n, FRACTAL), {}, {}, {}, {}};
    Lcg rng{0x5eedull + m * 31ull + k * 17ull + n};
    p.a.resize(static_cast<size_t>(m) * k);
    p.b.resize(static_cast<size_t>(k) * n);
    for (float &v : p.a) v = rng.Value();
    for (float &v : p.b) v = rng.Value();
    if (!AOE_LAYOUT_Z) {
        p.aDev.resize(p.a.size());
        p.bDev.resize(p.b.size());
        for (size_t i = 0; i < p.a.size(); ++i) p.aDev[i] = Encode(p.a[i]);
        for (size_t i = 0; i < p.b.size(); ++i) p.bDev[i] = Encode(p.b[i]);
        return p;
    }
    // z_major: A as [K/16][mPad][16], B as [nPad/16][K][16], zero padded.
    p.aDev.assign(static_cast<size_t>(k) * p.mPad, 0);
    p.bDev.assign(static_cast<size_t>(k) * p.nPad, 0);
    for (uint32_t r = 0; r < m; ++r)
        for (uint32_t c = 0; c < k; ++c)
            p.aDev[(static_cast<size_t>(c / FRACTAL) * p.mPad + r) * FRACTAL + c % FRACTAL] =
                Encode(p.a[static_cast<size_t>(r) * k + c]);
    for (uint32_t r = 0; r < k; ++r)
        for (uint32_t c = 0; c < n; ++c)
            p.bDev[(static_cast<size_t>(c / FRACTAL) * k + r) * FRACTAL + c % FRACTAL] =
                Encode(p.b[static_cast<size_t>(r) * n + c]);
    return p;
}

struct Check {
    uint64_t checked = 0, bad = 0;
    double maxAbsErr = 0.0;
    uint32_t firstBadRow = 0, firstBadCol = 0;
    double firstBadGot = 0.0, firstBadWant = 0.0;
};

void CheckOne(const Problem &p, const std::vector<uint16_t> &c, uint32_t r, uint32_t col,
              Check &out)
{
    double want = 0.0;
    for (uint32_t i = 0; i < p.k; ++i)
        want += static_cast<double>(p.a[static_cast<size_t>(r) * p.k + i]) *
                p.b[static_cast<size_t>(i) * p.n + col];
    const double got = Decode(c[static_cast<size_t>(r) * p.ldc + col]);
    const double err = std::fabs(got - want);
    out.maxAbsErr = std::max(out.maxAbsErr, err);
    ++out.checked;
    if (!(err <= AOE_RTOL * std::fabs(want) + 1e-6)) {  // also catches NaN
        if (out.bad == 0) {
            out.firstBadRow = r;
            out.firstBadCol = col;
            out.firstBadGot = got;
            out.firstBadWant = want;
        }
        ++out.bad;
    }
}

// Every entry of small outputs; of large ones the corners, tile edges and 4096 random ones.
Check CheckResult(const Problem &p, const std::vector<uint16_t> &c)
{
    Check out;
    if (static_cast<uint64_t>(p.m) * p.n <= 65536) {
        for (uint32_t r = 0; r < p.m; ++r)
            for (uint32_t col = 0; col < p.n; ++col) CheckOne(p, c, r, col, out);
        return out;
    }
    const uint32_t edges[] = {0, AOE_TILE_M - 1, AOE_TILE_M, p.m - 1};
    const uint32_t cols[] = {0, AOE_TILE_N - 1, AOE_TILE_N, p.n - 1};
    for (uint32_t r : edges)
        for (uint32_t col : cols)
            if (r < p.m && col < p.n) CheckOne(p, c, r, col, out);
    Lcg rng{0xc0ffeeull};
    for (int i = 0; i < 4096; ++i) CheckOne(p, c, rng.Next() % p.m, rng.Next() % p.n, out);
    return out;
}

void PrintResult(const char *status, const Problem &p, uint32_t blockDim,
                 const std::vector<double> &samples, uint32_t launches, int warmupBatches,
                 int device, const Check &chk)
{
    std::printf("AOE_RESULT {\"status\": \"%s\", \"mode\": \"%s\", \"soc\": \"%s\", "
                "\"m\": %u, \"k\": %u, \"n\": %u, \"block_dim\": %u, \"launches\": %u, "
                "\"warmup_batches\": %d, \"device\": %d, \"samples_s\": [",
                status, AOE_RUN_MODE, AOE_SOC_VERSION, p.m, p.k, p.n, blockDim, launches,
                warmupBatches, device);
    for (size_t i = 0; i < samples.size(); ++i)
        std::printf("%s%.9e", i ? ", " : "", samples[i]);
    std::printf("], \"checked\": %llu, \"bad\": %llu, \"max_abs_err\": %.6e",
                static_cast<unsigned long long>(chk.checked),
                static_cast<unsigned long long>(chk.bad), chk.maxAbsErr);
    if (chk.bad)
        std::printf(", \"first_bad\": {\"row\": %u, \"col\": %u, \"got\": %.6e, \"want\": %.6e}",
                    chk.firstBadRow, chk.firstBadCol, chk.firstBadGot, chk.firstBadWant);
    std::printf("}\n");
}

int Usage(const char *why)
{
    std::printf("AOE_RESULT {\"status\": \"usage\", \"reason\": \"%s\"}\n", why);
    std::fprintf(stderr, "usage: gemm_bench M K N warmup launches min_samples max_samples "
                         "rel_precision max_seconds device (%s)\n", why);
    return EXIT_USAGE;
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
    if (kArg % FRACTAL) return Usage("K must be a multiple of 16 for this kernel");
    if (warmup < 0 || launches < 1 || minSamples < 1 || maxSamples < minSamples || device < 0)
        return Usage("bad timing arguments");

    Problem p = MakeProblem(static_cast<uint32_t>(mArg), static_cast<uint32_t>(kArg),
                            static_cast<uint32_t>(nArg));
    const uint32_t tiles = ((p.m + AOE_TILE_M - 1) / AOE_TILE_M) *
                           ((p.n + AOE_TILE_N - 1) / AOE_TILE_N);
    const uint32_t blockDim = std::min<uint32_t>(AOE_CUBE_CORES, tiles);
    const uint32_t shape[3] = {p.m, p.k, p.n};
    const size_t aBytes = p.aDev.size() * 2, bBytes = p.bDev.size() * 2;
    const size_t cBytes = static_cast<size_t>(p.m) * p.ldc * 2;
    std::vector<uint16_t> cHost(static_cast<size_t>(p.m) * p.ldc, 0);
    std::vector<double> samples;
    int warmupBatches = 0;

#ifdef ASCENDC_CPU_DEBUG
    uint8_t *a = static_cast<uint8_t *>(AscendC::GmAlloc(aBytes));
    uint8_t *b = static_cast<uint8_t *>(AscendC::GmAlloc(bBytes));
    uint8_t *c = static_cast<uint8_t *>(AscendC::GmAlloc(cBytes));
    uint8_t *ws = static_cast<uint8_t *>(AscendC::GmAlloc(WORKSPACE_BYTES));
    uint8_t *tiling = static_cast<uint8_t *>(AscendC::GmAlloc(sizeof(shape)));
    std::memcpy(a, p.aDev.data(), aBytes);
    std::memcpy(b, p.bDev.data(), bBytes);
    std::memset(c, 0, cBytes);
    std::memcpy(tiling, shape, sizeof(shape));
    AscendC::SetKernelMode(KernelMode::AIC_MODE);
    for (int i = 0; i < warmup; ++i) ICPU_RUN_KF(gemm_kernel, blockDim, a, b, c, ws, tiling);
    auto batch = [&]() {
        const auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < launches; ++i)
            ICPU_RUN_KF(gemm_kernel, blockDim, a, b, c, ws, tiling);
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    };
    warmupBatches = TimeSamples(batch, launches, minSamples, maxSamples, relPrecision,
                                maxSeconds, samples);
    std::memcpy(cHost.data(), c, cBytes);
    AscendC::GmFree(a);
    AscendC::GmFree(b);
    AscendC::GmFree(c);
    AscendC::GmFree(ws);
    AscendC::GmFree(tiling);
#else
    CHECK_ACL(aclInit(nullptr));
    CHECK_ACL(aclrtSetDevice(device));
    aclrtStream stream = nullptr;
    CHECK_ACL(aclrtCreateStream(&stream));
    void *a = nullptr, *b = nullptr, *c = nullptr, *ws = nullptr, *tiling = nullptr;
    CHECK_ACL(aclrtMalloc(&a, aBytes, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK_ACL(aclrtMalloc(&b, bBytes, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK_ACL(aclrtMalloc(&c, cBytes, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK_ACL(aclrtMalloc(&ws, WORKSPACE_BYTES, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK_ACL(aclrtMalloc(&tiling, sizeof(shape), ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK_ACL(aclrtMemcpy(a, aBytes, p.aDev.data(), aBytes, ACL_MEMCPY_HOST_TO_DEVICE));
    CHECK_ACL(aclrtMemcpy(b, bBytes, p.bDev.data(), bBytes, ACL_MEMCPY_HOST_TO_DEVICE));
    CHECK_ACL(aclrtMemset(c, cBytes, 0, cBytes));
    CHECK_ACL(aclrtMemcpy(tiling, sizeof(shape), shape, sizeof(shape),
                          ACL_MEMCPY_HOST_TO_DEVICE));
    auto launch = [&]() {
        aoe_launch_gemm_kernel(blockDim, stream, static_cast<uint8_t *>(a),
                               static_cast<uint8_t *>(b), static_cast<uint8_t *>(c),
                               static_cast<uint8_t *>(ws), static_cast<uint8_t *>(tiling));
    };
    for (int i = 0; i < warmup; ++i) launch();
    CHECK_ACL(aclrtSynchronizeStream(stream));
    warmupBatches = aoe_bench::TimeOnStream(
        stream, launch, launches, minSamples, maxSamples, relPrecision, maxSeconds, samples);
    CHECK_ACL(aclrtSynchronizeStream(stream));
    CHECK_ACL(aclrtMemcpy(cHost.data(), cBytes, c, cBytes, ACL_MEMCPY_DEVICE_TO_HOST));
    CHECK_ACL(aclrtFree(a));
    CHECK_ACL(aclrtFree(b));
    CHECK_ACL(aclrtFree(c));
    CHECK_ACL(aclrtFree(ws));
    CHECK_ACL(aclrtFree(tiling));
    CHECK_ACL(aclrtDestroyStream(stream));
    CHECK_ACL(aclrtResetDevice(device));
    CHECK_ACL(aclFinalize());
#endif

    const Check chk = CheckResult(p, cHost);
    const bool ok = chk.bad == 0;
    PrintResult(ok ? "ok" : "accuracy", p, blockDim, samples, static_cast<uint32_t>(launches),
                warmupBatches, device, chk);
    return ok ? 0 : EXIT_WRONG_RESULT;
}
