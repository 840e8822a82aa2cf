/*
 * catlass_mla_bench.cpp: host program of catlass's MLA decode kernel (MLA<Dtype> of
 * examples/19_mla/mla_kernel.cpp, included through aoe_catlass_mla.h). Host tiling and
 * workspace sizes are catlass's own (mla_tiling.cpp, included from the example
 * directory, as the example's mla.cpp computes them). Times `launches` launches between
 * two ACL events per sample with the GEMM's timing rules (aoe_bench_common.h) and prints
 * the result line the GEMM programs print.
 *
 * NOT COMPILED HERE: no machine of this repository has CANN, and catlass does not
 * compile with a host compiler (docs/NPU.md, "Compile check"). Its inputs and fp16/bf16
 * conversions are aoe_host_numbers.h's, its device, stream, buffers and timing
 * aoe_bench_common.h's (as catlass_fai_bench.cpp's).
 * usage: mla_bench batch context q_heads warmup launches min_samples max_samples
 *                  rel_precision max_seconds device
 * One query token per sequence, one latent KV head, 128-token pages (block table b * pages
 * + i). O is checked against a host reference: softmax(Q [K_latent | K_rope]^T / sqrt(576))
 * K_latent in double, to 2^-6 (fp16) / 2^-5 (bf16) of max |O| (P is rounded to the element
 * type before PV in the kernel, as in the FAI program's check).
 */
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "acl/acl.h"
#include "aoe_bench_common.h"
#include "aoe_catlass_mla.h"
#include "aoe_host_numbers.h"
#include "mla_tiling.cpp"
#include "tiling/platform/platform_ascendc.h"

namespace {

constexpr bool BF16 = AOE_INPUT_BF16 != 0;

uint16_t Encode(float f) { return aoe_numbers::Encode(f, BF16); }
float Decode(uint16_t v) { return aoe_numbers::Decode(v, BF16); }

}  // namespace

int main(int argc, char **argv)
{
    if (argc != 11) {
        std::printf("AOE_RESULT {\"status\": \"usage\", \"reason\": \"expected 10 arguments\"}\n");
        return aoe_bench::EXIT_USAGE;
    }
    const int32_t batch = std::atoi(argv[1]), context = std::atoi(argv[2]), heads = std::atoi(argv[3]);
    const int warmup = std::atoi(argv[4]), launches = std::atoi(argv[5]);
    const int minSamples = std::atoi(argv[6]), maxSamples = std::atoi(argv[7]);
    const double relPrecision = std::atof(argv[8]), maxSeconds = std::atof(argv[9]);
    const int device = std::atoi(argv[10]);
    if (batch < 1 || context < 1 || heads < 1 || warmup < 0 || launches < 1 || minSamples < 1 ||
        maxSamples < minSamples || device < 0) {
        std::printf("AOE_RESULT {\"status\": \"usage\", \"reason\": \"bad arguments\"}\n");
        return aoe_bench::EXIT_USAGE;
    }
    const int32_t latent = AOE_MLA_LATENT, rope = AOE_MLA_ROPE;
    const int32_t page = aoe_catlass_mla::kPageTokens, pages = (context + page - 1) / page;
    aclrtStream stream = aoe_bench::OpenStream(device);

    // Q [batch, heads, latent], Q_rope [batch, heads, rope]; the cache [pages, page, 1, latent]
    // and its rope part [pages, page, 1, rope]; page i of sequence b is page b * pages + i.
    const size_t tokens = static_cast<size_t>(batch) * pages * page;
    std::vector<uint16_t> q(static_cast<size_t>(batch) * heads * latent), qRope(q.size() / latent * rope);
    std::vector<uint16_t> k(tokens * latent), kRope(tokens * rope);
    for (size_t i = 0; i < q.size(); ++i) q[i] = Encode(aoe_numbers::Hashed(i, 1));
    for (size_t i = 0; i < qRope.size(); ++i) qRope[i] = Encode(aoe_numbers::Hashed(i, 2));
    for (size_t i = 0; i < k.size(); ++i) k[i] = Encode(aoe_numbers::Hashed(i, 3));
    for (size_t i = 0; i < kRope.size(); ++i) kRope[i] = Encode(aoe_numbers::Hashed(i, 4));
    std::vector<int32_t> table(static_cast<size_t>(batch) * pages);
    for (size_t i = 0; i < table.size(); ++i) table[i] = static_cast<int32_t>(i);
    std::vector<int32_t> qSeq(batch, 1), kvSeq(batch, context);

    const uint32_t cores = platform_ascendc::PlatformAscendCManager::GetInstance()->GetCoreNumAic();
    uint32_t blockDim = cores;
    MLATiling::MLAInfo info;
    info.numTokens = batch;
    info.numHeads = heads;
    info.embeddingSize = latent;
    info.embeddingSizeRope = rope;
    info.numBlocks = batch * pages;
    info.blockSize = page;
    info.maxKvSeqlen = context;
    info.kvHeads = 1;
    info.batch = batch;
    info.qSeqLen = qSeq.data();
    info.kvSeqLen = kvSeq.data();
    std::vector<uint32_t> tiling(MLATiling::TILING_HEAD_SIZE + batch * MLATiling::TILING_PARA_SIZE, 0);
    if (MLATiling::GetMLATilingParam(info, blockDim, tiling.data()) != 0) {
        std::printf("AOE_RESULT {\"status\": \"usage\", \"reason\": \"catlass tiling refused\"}\n");
        return aoe_bench::EXIT_USAGE;
    }
    const uint64_t splits = tiling[MLATiling::TILING_KVCORENUM];
    const uint64_t ws = static_cast<uint64_t>(cores) * MLATiling::WORKSPACE_BLOCK_SIZE_DB;
    uint8_t *dq = aoe_bench::DeviceBytes(q.size() * 2, q.data()), *dqRope = aoe_bench::DeviceBytes(qRope.size() * 2, qRope.data());
    uint8_t *dk = aoe_bench::DeviceBytes(k.size() * 2, k.data()), *dkRope = aoe_bench::DeviceBytes(kRope.size() * 2, kRope.data());
    uint8_t *dtable = aoe_bench::DeviceBytes(table.size() * 4, table.data());
    uint8_t *dtiling = aoe_bench::DeviceBytes(tiling.size() * 4, tiling.data());
    uint8_t *o = aoe_bench::DeviceBytes(q.size() * 2);
    uint8_t *s = aoe_bench::DeviceBytes(ws * 4 * 2), *p = aoe_bench::DeviceBytes(ws * 2 * 2), *oTmp = aoe_bench::DeviceBytes(ws * 4 * 2);
    uint8_t *oUpdate = aoe_bench::DeviceBytes(ws * 4);
    uint8_t *oCore = aoe_bench::DeviceBytes(static_cast<uint64_t>(latent) * heads * batch * std::max<uint64_t>(splits, 1) * 4);
    uint8_t *l = aoe_bench::DeviceBytes(static_cast<uint64_t>(batch) * heads * std::max<uint64_t>(splits, 1) * 4);
    uint64_t sync = 0;
    CHECK_ACL(aclrtGetHardwareSyncAddr(reinterpret_cast<void **>(&sync)));
    auto launch = [&]() {
        MLA<aoe_catlass_mla::Element><<<blockDim, nullptr, stream>>>(
            sync, dq, dqRope, dk, dkRope, dtable, o, s, p, oTmp, oUpdate, oCore, l, dtiling);
    };
    std::vector<double> times;
    const int warmupBatches = aoe_bench::WarmUpAndTime(
        stream, launch, warmup, launches, minSamples, maxSamples, relPrecision, maxSeconds, times);
    std::vector<uint16_t> out(q.size());
    CHECK_ACL(aclrtMemcpy(out.data(), out.size() * 2, o, out.size() * 2, ACL_MEMCPY_DEVICE_TO_HOST));

    const double scale = 1.0 / std::sqrt(static_cast<double>(latent + rope));
    double worst = 0.0, largest = 1e-30;
    std::vector<double> score(context);
    for (int32_t b = 0; b < batch; ++b)
        for (int32_t h = 0; h < heads; ++h) {
            const size_t qRow = static_cast<size_t>(b) * heads + h;
            double top = -INFINITY;
            for (int32_t j = 0; j < context; ++j) {
                const size_t kRow = static_cast<size_t>(b) * pages * page + j;
                double acc = 0.0;
                for (int32_t e = 0; e < latent; ++e) acc += Decode(q[qRow * latent + e]) * Decode(k[kRow * latent + e]);
                for (int32_t e = 0; e < rope; ++e)
                    acc += Decode(qRope[qRow * rope + e]) * Decode(kRope[kRow * rope + e]);
                score[j] = acc * scale;
                top = std::max(top, score[j]);
            }
            double sum = 0.0;
            for (int32_t j = 0; j < context; ++j) sum += std::exp(score[j] - top);
            for (int32_t e = 0; e < latent; ++e) {
                double acc = 0.0;
                for (int32_t j = 0; j < context; ++j) {
                    const size_t kRow = static_cast<size_t>(b) * pages * page + j;
                    acc += std::exp(score[j] - top) * Decode(k[kRow * latent + e]);
                }
                const double want = acc / sum, got = Decode(out[qRow * latent + e]);
                worst = std::max(worst, std::fabs(got - want));
                largest = std::max(largest, std::fabs(want));
            }
        }
    const double tolerance = (AOE_INPUT_BF16 ? std::ldexp(1.0, -5) : std::ldexp(1.0, -6)) * largest;
    const bool ok = worst <= tolerance;
    std::printf("AOE_RESULT {\"status\": \"%s\", \"kernel\": \"catlass_mla\", \"block_dim\": %u, "
                "\"launches\": %d, \"warmup_batches\": %d, \"device\": %d, \"output\": \"O\", "
                "\"checked\": 1, \"bad\": %d, \"max_abs_err\": %.6g, \"tolerance\": %.6g, "
                "\"samples_s\": [", ok ? "ok" : "accuracy", blockDim, launches, warmupBatches,
                device, ok ? 0 : 1, worst, tolerance);
    for (size_t i = 0; i < times.size(); ++i) std::printf("%s%.9g", i ? ", " : "", times[i]);
    std::printf("]}\n");
    aoe_bench::CloseStream(stream, device);
    return ok ? 0 : aoe_bench::EXIT_WRONG_RESULT;
}
