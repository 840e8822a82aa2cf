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
 * workspace sizes are the ones catlass computes.
 * usage: fai_bench batch q_seqlen kv_seqlen q_heads kv_heads warmup launches min_samples
 *                  max_samples rel_precision max_seconds device
 * O is checked against a host reference (fp32 softmax(Q K^T / sqrt(d) + mask) V) to a
 * relative 2^-6 (fp16) / 2^-5 (bf16) of max |O|: P is rounded to the element type
 * before P V, as catlass's online softmax does.
 */
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "acl/acl.h"
#include "aoe_bench_common.h"
#include "aoe_catlass_fai.h"
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

uint16_t Encode(float f)  // exact for multiples of 1/64 in [-1, 1]
{
    uint32_t x;
    std::memcpy(&x, &f, 4);
    if (AOE_INPUT_BF16) return static_cast<uint16_t>(x >> 16);
    if ((x & 0x7fffffffu) == 0) return static_cast<uint16_t>((x >> 16) & 0x8000u);
    const uint32_t sign = (x >> 16) & 0x8000u;
    const int32_t exp = static_cast<int32_t>((x >> 23) & 0xff) - 127 + 15;
    return static_cast<uint16_t>(sign | (exp << 10) | ((x & 0x7fffffu) >> 13));
}

float Decode(uint16_t v)
{
    uint32_t x;
    if (AOE_INPUT_BF16) {
        x = static_cast<uint32_t>(v) << 16;
    } else {
        const uint32_t sign = (v & 0x8000u) << 16, exp = (v >> 10) & 0x1f, mant = v & 0x3ff;
        if (exp == 0) return (sign ? -1.0f : 1.0f) * std::ldexp(static_cast<float>(mant), -24);
        x = sign | ((exp - 15 + 127) << 23) | (mant << 13);
    }
    float f;
    std::memcpy(&f, &x, 4);
    return f;
}

float Value(uint64_t i, uint64_t salt)
{
    const uint64_t h = (i * 0x9e3779b97f4a7c15ull) ^ (salt * 0x632be59bull);
    return (static_cast<int32_t>(h % 129u) - 64) / 64.0f;
}

void *Device(size_t bytes, const void *host = nullptr)
{
    void *p = nullptr;
    CHECK_ACL(aclrtMalloc(&p, std::max<size_t>(bytes, 32), ACL_MEM_MALLOC_HUGE_FIRST));
    if (host != nullptr) CHECK_ACL(aclrtMemcpy(p, bytes, host, bytes, ACL_MEMCPY_HOST_TO_DEVICE));
    return p;
}

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
    CHECK_ACL(aclInit(nullptr));
    CHECK_ACL(aclrtSetDevice(device));
    aclrtStream stream = nullptr;
    CHECK_ACL(aclrtCreateStream(&stream));

    // Q [batch * qLen, qHeads * d]; K, V [batch * kvStride, kvHeads * d] (BSND).
    std::vector<uint16_t> q(batch * qLen * qHeads * d), k(batch * pages * page * kvHeads * d), v(k.size());
    for (size_t i = 0; i < q.size(); ++i) q[i] = Encode(Value(i, 1));
    for (size_t i = 0; i < k.size(); ++i) k[i] = Encode(Value(i, 2));
    for (size_t i = 0; i < v.size(); ++i) v[i] = Encode(Value(i, 3));
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
    uint8_t *dq = static_cast<uint8_t *>(Device(q.size() * 2, q.data()));
    uint8_t *dk = static_cast<uint8_t *>(Device(k.size() * 2, k.data()));
    uint8_t *dv = static_cast<uint8_t *>(Device(v.size() * 2, v.data()));
    uint8_t *dmask = static_cast<uint8_t *>(Device(mask.size() * 2, mask.data()));
    uint8_t *dtable = static_cast<uint8_t *>(Device(table.size() * 4, table.data()));
    uint8_t *dqs = static_cast<uint8_t *>(Device(qSeq.size() * 8, qSeq.data()));
    uint8_t *dkvs = static_cast<uint8_t *>(Device(kvSeq.size() * 8, kvSeq.data()));
    uint8_t *dtiling = static_cast<uint8_t *>(Device(sizeof(tiling), &tiling));
    uint8_t *o = static_cast<uint8_t *>(Device(q.size() * 2));
    uint8_t *s = static_cast<uint8_t *>(Device(ws * 4)), *p = static_cast<uint8_t *>(Device(ws * 2));
    uint8_t *oTemp = static_cast<uint8_t *>(Device(ws * 4)), *oUp = static_cast<uint8_t *>(Device(ws * 4));
    uint64_t sync = 0;
    CHECK_ACL(aclrtGetHardwareSyncAddr(reinterpret_cast<void **>(&sync)));
    auto launch = [&]() {
        aoe_fai_kernel<<<cores, nullptr, stream>>>(sync, dq, dk, dv, dmask, dtable, o, dqs, dkvs, s,
                                                     p, oTemp, oUp, dtiling);
    };
    for (int i = 0; i < warmup; ++i) launch();
    CHECK_ACL(aclrtSynchronizeStream(stream));
    std::vector<double> times;
    const int warmupBatches = aoe_bench::TimeOnStream(
        stream, launch, launches, minSamples, maxSamples, relPrecision, maxSeconds, times);
    CHECK_ACL(aclrtSynchronizeStream(stream));

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
    CHECK_ACL(aclrtDestroyStream(stream));
    CHECK_ACL(aclrtResetDevice(device));
    CHECK_ACL(aclFinalize());
    return ok ? 0 : aoe_bench::EXIT_WRONG_RESULT;
}
