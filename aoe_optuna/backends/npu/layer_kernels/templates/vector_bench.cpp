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
 * Its command line, check and result line are aoe_layer_bench.h's, as gating_bench.cpp's.
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
#include "aoe_layer_bench.h"

// Defined at the bottom of vector_kernel.cpp (compiled by bisheng with the kernels).
extern "C" void aoe_launch_vector_kernel(uint32_t blockDim, void *stream, uint8_t *in0,
                                         uint8_t *in1, uint8_t *side0, uint8_t *side1,
                                         uint8_t *out0, uint8_t *out1, uint32_t rows);
extern "C" void aoe_launch_vector_add(uint32_t blockDim, void *stream, uint8_t *a, uint8_t *b,
                                      uint8_t *out, uint32_t rows);

namespace {

using namespace aoe_bench;  // exit codes, CHECK_ACL, the device and its timing
using aoe_layer::Check;

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
            if (AOE_VECTOR_KIND == ADD_RMSNORM) chk.Near("x+residual", r, c, At(sum, i), x[c]);
        }
        const double rstd = 1.0 / std::sqrt(squares / AOE_WIDTH + EPSILON);
        for (uint64_t c = 0; c < AOE_WIDTH; ++c)
            chk.Near("y", r, c, At(y, r * AOE_WIDTH + c), x[c] * rstd * At(op.side0, c));
    }
}

void CheckSwiGlu(const Operands &op, const std::vector<uint16_t> &out, uint64_t rows, Check &chk)
{
    for (uint64_t i = 0; i < rows * AOE_WIDTH; ++i) {
        const double g = At(op.in0, i), u = At(op.in1, i);
        chk.Near("out", i / AOE_WIDTH, i % AOE_WIDTH, At(out, i), g / (1.0 + std::exp(-g)) * u);
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
            chk.Near("out", r, c, At(out, row + c), want);
        }
}

uint8_t *Device(const std::vector<uint16_t> &host, size_t elements)
{
    return host.empty() ? aoe_layer::DeviceZeros(elements * 2)
                        : DeviceBytes(elements * 2, host.data());
}

}  // namespace

int main(int argc, char **argv)
{
    aoe_layer::Args args;
    if (const int usage = aoe_layer::ParseArgs(argc, argv, "vector_bench", args)) return usage;
    const uint64_t rows = args.rows;
    const size_t n = rows * AOE_WIDTH;
    const Operands op = MakeOperands(rows);

    aclrtStream stream = OpenStream(args.device);
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
    std::vector<double> samples;
    const int warmupBatches = WarmUpAndTime(stream, launch, args.warmup, args.launches,
                                            args.minSamples, args.maxSamples, args.relPrecision,
                                            args.maxSeconds, samples);
    std::vector<uint16_t> y(n), sum(AOE_VECTOR_KIND == ADD_RMSNORM ? n : 0);
    aoe_layer::ToHost(y, out0);
    if (AOE_VECTOR_KIND == ADD_RMSNORM) aoe_layer::ToHost(sum, out1);
    for (uint8_t *p : {in0, in1, side0, side1, out0, out1}) CHECK_ACL(aclrtFree(p));
    CloseStream(stream, args.device);

    Check chk;
    if (AOE_VECTOR_KIND == SWIGLU)
        CheckSwiGlu(op, y, rows, chk);
    else if (AOE_VECTOR_KIND == ROPE)
        CheckRope(op, y, rows, chk);
    else
        CheckNorm(op, y, sum, rows, chk);
    const bool ok = chk.bad == 0;
    char shape[32];
    std::snprintf(shape, sizeof shape, ", \"width\": %u", static_cast<unsigned>(AOE_WIDTH));
    aoe_layer::PrintResult(ok ? "ok" : "accuracy", "vector", rows, shape, samples, args.launches,
                           warmupBatches, args.device, chk);
    return ok ? 0 : EXIT_WRONG_RESULT;
}
