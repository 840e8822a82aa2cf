/*
 * vector_bench.cpp: host program of the vector kernels (vector_kernel.cpp: RMSNorm,
 * add + RMSNorm fused or unfused, SwiGLU, rope). Allocates the operands on the device
 * through ACL once, times `launches` calls between two ACL events per sample with the
 * timing rules of aoe_bench_common.h (timing.py's), copies the outputs back, checks
 * every entry against a host reference in double precision and prints the result line
 * the GEMM's main.cpp prints:
 *
 *   AOE_RESULT {"status": "ok", "samples_s": [...], "checked": ..., "bad": 0, ...}
 *
 * status: ok | accuracy (exit 3) | runtime (exit 4, an ACL call failed) | usage (exit 2).
 * One call is what the layer runs: the kernel, or for an unfused add + RMSNorm the add
 * kernel then the norm kernel on its sum (both inside the timed window).
 *
 * usage: vector_bench rows warmup launches min_samples max_samples rel_precision
 *                     max_seconds device
 * The kind, row width, head dim, cores and dtype are the kernel's, rendered into
 * aoe_vector_config.h by aoe_optuna/backends/npu/layer_kernels/vector_kernel.py.
 *
 * Tolerance: inputs are exact in the element type; the kernel computes in fp32, so the
 * output's rounding to the element type (AOE_RTOL, one unit in its last place) and a
 * small absolute floor for cancellation in rope (AOE_ATOL) bound a right result.
 */
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "acl/acl.h"
#include "aoe_bench_common.h"
#include "aoe_host_numbers.h"
#include "aoe_vector_config.h"

// Defined at the bottom of vector_kernel.cpp (compiled by bisheng with the kernels).
extern "C" void aoe_launch_vector_kernel(uint32_t blockDim, void *stream, uint8_t *in0,
                                         uint8_t *in1, uint8_t *side0, uint8_t *side1,
                                         uint8_t *out0, uint8_t *out1, uint32_t rows);
extern "C" void aoe_launch_vector_add(uint32_t blockDim, void *stream, uint8_t *a, uint8_t *b,
                                      uint8_t *out, uint32_t rows);

namespace {

using namespace aoe_bench;  // exit codes, CHECK_ACL, TimeSamples

constexpr int RMSNORM = 0, ADD_RMSNORM = 1, SWIGLU = 2, ROPE = 3;
constexpr double EPSILON = 1e-6;  // vector_kernel.cpp EPSILON
constexpr bool BF16 = AOE_INPUT_BF16 != 0;

std::vector<uint16_t> Inputs(size_t n, uint64_t seed)
{
    aoe_numbers::Lcg rng{seed};
    std::vector<uint16_t> v(n);
    for (uint16_t &x : v) x = aoe_numbers::Encode(rng.Value(), BF16);
    return v;
}

double At(const std::vector<uint16_t> &v, size_t i) { return aoe_numbers::Decode(v[i], BF16); }

struct Check {
    uint64_t checked = 0, bad = 0;
    double maxAbsErr = 0.0;
    uint64_t firstRow = 0, firstCol = 0;
    double firstGot = 0.0, firstWant = 0.0;
    const char *firstOutput = "";

    void One(const char *output, uint64_t row, uint64_t col, double got, double want)
    {
        maxAbsErr = std::max(maxAbsErr, std::fabs(got - want));
        ++checked;
        if (!aoe_numbers::Close(got, want, AOE_RTOL, AOE_ATOL)) {
            if (bad++ == 0) {
                firstRow = row;
                firstCol = col;
                firstGot = got;
                firstWant = want;
                firstOutput = output;
            }
        }
    }
};

struct Operands {
    std::vector<uint16_t> in0, in1, side0, side1;
};

// The layer's tensors of one call: what each kind reads (vector_kernel.cpp's entry comment).
Operands MakeOperands(uint64_t rows)
{
    const uint64_t n = rows * AOE_WIDTH;
    Operands op;
    op.in0 = Inputs(n, 0x5eed01 + rows);
    if (AOE_VECTOR_KIND == ADD_RMSNORM || AOE_VECTOR_KIND == SWIGLU)
        op.in1 = Inputs(n, 0x5eed02 + rows);
    if (AOE_VECTOR_KIND == RMSNORM || AOE_VECTOR_KIND == ADD_RMSNORM)
        op.side0 = Inputs(AOE_WIDTH, 0x5eed03);  // gamma
    if (AOE_VECTOR_KIND == ROPE) {
        op.side0 = Inputs(rows * AOE_HEAD_DIM, 0x5eed04);  // cos of each token
        op.side1 = Inputs(rows * AOE_HEAD_DIM, 0x5eed05);  // sin of each token
    }
    return op;
}

void CheckNorm(const Operands &op, const std::vector<uint16_t> &y, const std::vector<uint16_t> &sum,
               uint64_t rows, Check &chk)
{
    std::vector<double> x(AOE_WIDTH);
    for (uint64_t r = 0; r < rows; ++r) {
        double squares = 0.0;
        for (uint64_t c = 0; c < AOE_WIDTH; ++c) {
            const size_t i = r * AOE_WIDTH + c;
            x[c] = At(op.in0, i) + (AOE_VECTOR_KIND == ADD_RMSNORM ? At(op.in1, i) : 0.0);
            squares += x[c] * x[c];
            if (AOE_VECTOR_KIND == ADD_RMSNORM) chk.One("x+residual", r, c, At(sum, i), x[c]);
        }
        const double rstd = 1.0 / std::sqrt(squares / AOE_WIDTH + EPSILON);
        for (uint64_t c = 0; c < AOE_WIDTH; ++c)
            chk.One("y", r, c, At(y, r * AOE_WIDTH + c), x[c] * rstd * At(op.side0, c));
    }
}

void CheckSwiGlu(const Operands &op, const std::vector<uint16_t> &out, uint64_t rows, Check &chk)
{
    for (uint64_t i = 0; i < rows * AOE_WIDTH; ++i) {
        const double g = At(op.in0, i), u = At(op.in1, i);
        chk.One("out", i / AOE_WIDTH, i % AOE_WIDTH, At(out, i), g / (1.0 + std::exp(-g)) * u);
    }
}

// out = x * cos + rotate_half(x) * sin per head, rotate_half(x) = [-x2, x1].
void CheckRope(const Operands &op, const std::vector<uint16_t> &out, uint64_t rows, Check &chk)
{
    const uint64_t half = AOE_HEAD_DIM / 2;
    for (uint64_t r = 0; r < rows; ++r)
        for (uint64_t c = 0; c < AOE_WIDTH; ++c) {
            const uint64_t head = c / AOE_HEAD_DIM * AOE_HEAD_DIM, d = c % AOE_HEAD_DIM;
            const size_t row = r * AOE_WIDTH;
            const double rotated = d < half ? -At(op.in0, row + head + d + half)
                                            : At(op.in0, row + head + d - half);
            const double want = At(op.in0, row + c) * At(op.side0, r * AOE_HEAD_DIM + d) +
                                rotated * At(op.side1, r * AOE_HEAD_DIM + d);
            chk.One("out", r, c, At(out, row + c), want);
        }
}

void PrintResult(const char *status, uint64_t rows, const std::vector<double> &samples,
                 int launches, int warmupBatches, int device, const Check &chk)
{
    std::printf("AOE_RESULT {\"status\": \"%s\", \"kernel\": \"vector\", \"mode\": \"%s\", "
                "\"soc\": \"%s\", \"rows\": %llu, \"width\": %u, \"block_dim\": %u, "
                "\"launches\": %d, \"warmup_batches\": %d, \"device\": %d, \"samples_s\": [",
                status, AOE_RUN_MODE, AOE_SOC_VERSION, static_cast<unsigned long long>(rows),
                static_cast<unsigned>(AOE_WIDTH), static_cast<unsigned>(AOE_CORES), launches,
                warmupBatches, device);
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
    std::fprintf(stderr, "usage: vector_bench rows warmup launches min_samples max_samples "
                         "rel_precision max_seconds device (%s)\n", why);
    return EXIT_USAGE;
}

uint8_t *Device(const std::vector<uint16_t> &host, size_t elements)
{
    void *p = nullptr;
    const size_t bytes = std::max<size_t>(elements * 2, 32);  // never a null pointer
    CHECK_ACL(aclrtMalloc(&p, bytes, ACL_MEM_MALLOC_HUGE_FIRST));
    if (!host.empty())
        CHECK_ACL(aclrtMemcpy(p, bytes, host.data(), host.size() * 2, ACL_MEMCPY_HOST_TO_DEVICE));
    else
        CHECK_ACL(aclrtMemset(p, bytes, 0, bytes));
    return static_cast<uint8_t *>(p);
}

std::vector<uint16_t> Host(uint8_t *device, size_t elements)
{
    std::vector<uint16_t> v(elements);
    CHECK_ACL(aclrtMemcpy(v.data(), elements * 2, device, elements * 2, ACL_MEMCPY_DEVICE_TO_HOST));
    return v;
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
    const size_t n = rows * AOE_WIDTH;
    const Operands op = MakeOperands(rows);

    CHECK_ACL(aclInit(nullptr));
    CHECK_ACL(aclrtSetDevice(device));
    aclrtStream stream = nullptr;
    CHECK_ACL(aclrtCreateStream(&stream));
    uint8_t *in0 = Device(op.in0, n), *in1 = Device(op.in1, n);
    uint8_t *side0 = Device(op.side0, op.side0.size()), *side1 = Device(op.side1, op.side1.size());
    uint8_t *out0 = Device({}, n), *out1 = Device({}, n);
    const uint32_t r32 = static_cast<uint32_t>(rows);
    auto launch = [&]() {
        if (AOE_VECTOR_KIND == ADD_RMSNORM && !AOE_FUSED) {  // the add, then the norm of its sum
            aoe_launch_vector_add(AOE_CORES, stream, in0, in1, out1, r32);
            aoe_launch_vector_kernel(AOE_CORES, stream, out1, in1, side0, side1, out0, out1, r32);
        } else {
            aoe_launch_vector_kernel(AOE_CORES, stream, in0, in1, side0, side1, out0, out1, r32);
        }
    };
    for (int i = 0; i < warmup; ++i) launch();
    CHECK_ACL(aclrtSynchronizeStream(stream));
    std::vector<double> samples;
    const int warmupBatches = aoe_bench::TimeOnStream(
        stream, launch, launches, minSamples, maxSamples, relPrecision, maxSeconds, samples);
    CHECK_ACL(aclrtSynchronizeStream(stream));
    const std::vector<uint16_t> y = Host(out0, n);
    const std::vector<uint16_t> sum =
        AOE_VECTOR_KIND == ADD_RMSNORM ? Host(out1, n) : std::vector<uint16_t>();
    for (uint8_t *p : {in0, in1, side0, side1, out0, out1}) CHECK_ACL(aclrtFree(p));
    CHECK_ACL(aclrtDestroyStream(stream));
    CHECK_ACL(aclrtResetDevice(device));
    CHECK_ACL(aclFinalize());

    Check chk;
    if (AOE_VECTOR_KIND == SWIGLU)
        CheckSwiGlu(op, y, rows, chk);
    else if (AOE_VECTOR_KIND == ROPE)
        CheckRope(op, y, rows, chk);
    else
        CheckNorm(op, y, sum, rows, chk);
    const bool ok = chk.bad == 0;
    PrintResult(ok ? "ok" : "accuracy", rows, samples, launches, warmupBatches, device, chk);
    return ok ? 0 : EXIT_WRONG_RESULT;
}
