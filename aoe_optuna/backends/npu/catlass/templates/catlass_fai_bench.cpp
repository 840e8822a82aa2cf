/*
 * catlass_fai_bench.cpp: host program of a catlass flash-attention-infer instantiation
 * (aoe_catlass_fai.h, rendered per tuned attention config). Launches the kernel through
 * its own entry point below, times `launches` launches between two ACL events per
 * sample with the GEMM's timing rules (aoe_bench_common.h: warm-up batches until two
 * agree, samples until the median is known to rel_precision) and prints the result line
 * the GEMM programs print:
 *
 *   AOE_RESULT {"status": "ok", "samples_s": [...], "checked": 1, ...}
 *
 * NOT COMPILED HERE: no machine of this repository has CANN, and catlass does not
 * compile with a host compiler (docs/NPU.md, "Compile check"). Host tiling is catlass's
 * own (fai_tiling.cpp, included from the example directory), so the task split and the
 * workspace sizes are the ones catlass computes. Its inputs and fp16/bf16 conversions are
 * aoe_host_numbers.h's, its device, stream, buffers and timing aoe_bench_common.h's (as
 * catlass_mla_bench.cpp's).
 * usage: fai_bench batch q_seqlen kv_seqlen q_heads kv_heads warmup launches min_samples
 *                  max_samples rel_precision max_seconds device
 * O is checked against a host reference (fp32 softmax(Q K^T / sqrt(d) + mask) V) to a
 * relative 2^-6 (fp16) / 2^-5 (bf16) of max |O|: P is rounded to the element type (to
 * nearest even) before P V, as catlass's online softmax does.
 */
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "acl/acl.h"
#include "aoe_bench_common.h"
#include "aoe_catlass_fai.h"
#include "aoe_host_numbers.h"
#include "fai_tiling.cpp"
#include "tiling/platform/platform_ascendc.h"

extern "C" CATLASS_GLOBAL void aoe_fai_kernel(uint64_t sync, GM_ADDR q, GM_ADDR k, GM_ADDR v,
                                              GM_ADDR mask, GM_ADDR blockTables, GM_ADDR o,
                                              GM_ADDR qSeq, GM_ADDR kvSeq, GM_ADDR s, GM_ADDR p,
                                              GM_ADDR oTemp, GM_ADDR oUpdate, GM_ADDR tiling)
{
    AscendC::SetSyncBaseAddr(sync);
    FAIKernelParams params{q, k, v, mask, blockTables, qSeq, kvSeq, o, s, p, oTemp, oUpdate, tiling};
    aoe_catlass_fai::FaiKernel kernel;
    kernel(params);
}

namespace {

constexpr bool BF16 = AOE_INPUT_BF16 != 0;

uint16_t Encode(float f) { return aoe_numbers::Encode(f, BF16); }
float Decode(uint16_t v) { return aoe_numbers::Decode(v, BF16); }

}  // namespace

int main(int argc, char **argv)
{
    if (argc != 13) {
        std::printf("AOE_RESULT {\"status\": \"usage\", \"reason\": \"expected 12 arguments\"}\n");
        return aoe_bench::EXIT_USAGE;
    }
    const int64_t batch = std::atoll(argv[1]), qLen = std::atoll(argv[2]), kvLen = std::atoll(argv[3]);
    const int32_t qHeads = std::atoi(argv[4]), kvHeads = std::atoi(argv[5]);
    const int warmup = std::atoi(argv[6]), launches = std::atoi(argv[7]);
    const int minSamples = std::atoi(argv[8]), maxSamples = std::atoi(argv[9]);
    const double relPrecision = std::atof(argv[10]), maxSeconds = std::atof(argv[11]);
    const int device = std::atoi(argv[12]);
    if (batch < 1 || qLen < 1 || kvLen < qLen || qHeads < 1 || kvHeads < 1 || qHeads % kvHeads ||
        warmup < 0 || launches < 1 || minSamples < 1 || maxSamples < minSamples || device < 0) {
        std::printf("AOE_RESULT {\"status\": \"usage\", \"reason\": \"bad arguments\"}\n");
        return aoe_bench::EXIT_USAGE;
    }
    const int32_t d = AOE_FAI_HEAD_DIM, page = aoe_catlass_fai::kPageTokens;
    const int64_t pages = (kvLen + page - 1) / page;
    // K/V rows of sequence b start at b * kvStride: whole pages when paged (the block
    // table maps page i of b to page b * pages + i), kvLen tokens back to back when not.
    const int64_t kvStride = AOE_FAI_PAGED ? pages * page : kvLen;
    aclrtStream stream = aoe_bench::OpenStream(device);

    // Q [batch * qLen, qHeads * d]; K, V [batch * kvStride, kvHeads * d] (BSND).
    std::vector<uint16_t> q(batch * qLen * qHeads * d), k(batch * pages * page * kvHeads * d), v(k.size());
    for (size_t i = 0; i < q.size(); ++i) q[i] = Encode(aoe_numbers::Hashed(i, 1));
    for (size_t i = 0; i < k.size(); ++i) k[i] = Encode(aoe_numbers::Hashed(i, 2));
    for (size_t i = 0; i < v.size(); ++i) v[i] = Encode(aoe_numbers::Hashed(i, 3));
    std::vector<int32_t> table(batch * pages);
    for (size_t i = 0; i < table.size(); ++i) table[i] = static_cast<int32_t>(i);
    std::vector<int64_t> qSeq(batch, qLen), kvSeq(batch, kvLen);
    std::vector<uint16_t> mask(1024 * 1024, Encode(0.0f));
    for (int r = 0; r < 1024; ++r)
        for (int c = r + 1; c < 1024; ++c) mask[r * 1024 + c] = Encode(1.0f);

    // One task stream per cube core, as catlass's fai.cpp launches (blockDim = AIC cores).
    const uint32_t cores = platform_ascendc::PlatformAscendCManager::GetInstance()->GetCoreNumAic();
    FAInferTiling::FAInfo info;
    info.numTokens = static_cast<int32_t>(batch * qLen);
    info.numHeads = qHeads;
    info.embeddingSize = d;
    info.numBlocks = static_cast<int32_t>(batch * pages);
    info.blockSize = page;
    info.kvHeads = kvHeads;
    info.batch = static_cast<int32_t>(batch);
    info.qSeqlenList = qSeq.data();
    info.kvSeqlenList = kvSeq.data();
    info.maskType = static_cast<FAInferTiling::MaskType>(aoe_catlass_fai::kMaskType);
    FATilingData tiling;
    if (FAInferTiling::GetFATilingParam(info, cores, tiling) != 0) {
        std::printf("AOE_RESULT {\"status\": \"usage\", \"reason\": \"catlass tiling refused\"}\n");
        return aoe_bench::EXIT_USAGE;
    }
    const uint64_t ws = cores * static_cast<uint64_t>(FAInferTiling::WORKSPACE_BLOCK_SIZE_DB) * 3;
    uint8_t *dq = aoe_bench::DeviceBytes(q.size() * 2, q.data());
    uint8_t *dk = aoe_bench::DeviceBytes(k.size() * 2, k.data());
    uint8_t *dv = aoe_bench::DeviceBytes(v.size() * 2, v.data());
    uint8_t *dmask = aoe_bench::DeviceBytes(mask.size() * 2, mask.data());
    uint8_t *dtable = aoe_bench::DeviceBytes(table.size() * 4, table.data());
    uint8_t *dqs = aoe_bench::DeviceBytes(qSeq.size() * 8, qSeq.data());
    uint8_t *dkvs = aoe_bench::DeviceBytes(kvSeq.size() * 8, kvSeq.data());
    uint8_t *dtiling = aoe_bench::DeviceBytes(sizeof(tiling), &tiling);
    uint8_t *o = aoe_bench::DeviceBytes(q.size() * 2);
    uint8_t *s = aoe_bench::DeviceBytes(ws * 4), *p = aoe_bench::DeviceBytes(ws * 2);
    uint8_t *oTemp = aoe_bench::DeviceBytes(ws * 4), *oUp = aoe_bench::DeviceBytes(ws * 4);
    uint64_t sync = 0;
    CHECK_ACL(aclrtGetHardwareSyncAddr(reinterpret_cast<void **>(&sync)));
    auto launch = [&]() {
        aoe_fai_kernel<<<cores, nullptr, stream>>>(sync, dq, dk, dv, dmask, dtable, o, dqs, dkvs, s,
                                                     p, oTemp, oUp, dtiling);
    };
    std::vector<double> times;
    const int warmupBatches = aoe_bench::WarmUpAndTime(
        stream, launch, warmup, launches, minSamples, maxSamples, relPrecision, maxSeconds, times);

    std::vector<uint16_t> out(q.size());
    CHECK_ACL(aclrtMemcpy(out.data(), out.size() * 2, o, out.size() * 2, ACL_MEMCPY_DEVICE_TO_HOST));
    const int group = qHeads / kvHeads;
    const float scale = 1.0f / std::sqrt(static_cast<float>(d));
    double worst = 0.0, largest = 1e-30;
    std::vector<float> score(kvLen);
    for (int64_t b = 0; b < batch; ++b)
        for (int64_t t = 0; t < qLen; ++t)
            for (int32_t h = 0; h < qHeads; ++h) {
                const int32_t kh = h / group;
                const int64_t visible = AOE_FAI_MASK_TYPE ? kvLen - qLen + t + 1 : kvLen;
                float top = -INFINITY;
                for (int64_t j = 0; j < visible; ++j) {
                    const int64_t row = (b * kvStride + j) * kvHeads + kh;
                    float acc = 0.0f;
                    for (int32_t e = 0; e < d; ++e)
                        acc += Decode(q[((b * qLen + t) * qHeads + h) * d + e]) * Decode(k[row * d + e]);
                    score[j] = acc * scale;
                    top = std::max(top, score[j]);
                }
                double sum = 0.0;
                for (int64_t j = 0; j < visible; ++j) sum += std::exp(score[j] - top);
                for (int32_t e = 0; e < d; ++e) {
                    double acc = 0.0;
                    for (int64_t j = 0; j < visible; ++j) {
                        const float pj = Decode(Encode(static_cast<float>(std::exp(score[j] - top))));
                        acc += pj * Decode(v[((b * kvStride + j) * kvHeads + kh) * d + e]);
                    }
                    const double want = acc / sum;
                    const double got = Decode(out[((b * qLen + t) * qHeads + h) * d + e]);
                    worst = std::max(worst, std::fabs(got - want));
                    largest = std::max(largest, std::fabs(want));
                }
            }
    const double tolerance = (AOE_INPUT_BF16 ? std::ldexp(1.0, -5) : std::ldexp(1.0, -6)) * largest;
    const bool ok = worst <= tolerance;
    std::printf("AOE_RESULT {\"status\": \"%s\", \"kernel\": \"catlass_fai\", \"phase\": \"%s\", "
                "\"block_dim\": %u, \"launches\": %d, \"warmup_batches\": %d, \"device\": %d, "
                "\"output\": \"O\", \"checked\": 1, \"bad\": %d, \"max_abs_err\": %.6g, "
                "\"tolerance\": %.6g, \"samples_s\": [",
                ok ? "ok" : "accuracy", AOE_FAI_PHASE, cores, launches, warmupBatches, device,
                ok ? 0 : 1, worst, tolerance);
    for (size_t i = 0; i < times.size(); ++i) std::printf("%s%.9g", i ? ", " : "", times[i]);
    std::printf("]}\n");
    aoe_bench::CloseStream(stream, device);
    return ok ? 0 : aoe_bench::EXIT_WRONG_RESULT;
}
