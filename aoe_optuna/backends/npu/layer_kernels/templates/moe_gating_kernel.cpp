/*
 * moe_gating_kernel.cpp: the MoE router's gating (softmax over the experts, then the top
 * k weights and expert indices of each token) in Ascend C for the AI vector cores of
 * Atlas A2 (Ascend 910B, dav-c220): logits in GM as InputT, fp32 arithmetic in UB.
 *
 * NEVER BUILT BY BISHENG HERE. This repository's machines have no CANN toolkit and no
 * NPU; docs/NPU.md says what the rendered kernels are checked for.
 *
 * Tunable values, one plain declaration each right below (aoe_optuna/backends/npu/
 * layer_kernels/moe_gating_kernel.py renders them from a tuned config; aoe-tune export
 * writes it):
 *   TILE_ROWS   rows of one UB pass (tile_rows; CANN's ubFormer)
 *   COL_TILE    experts of one UB piece (col_tile); shorter than the row, a row is read
 *               twice: its max and sum first (online), then its weights and top k
 *   CORES       vector cores the host launches (cores): core b takes rows
 *               [b * ceil(rows / CORES), (b + 1) * ceil(rows / CORES))
 *   BUFFER_NUM  2 with double_buffer (the next piece's copy-in under this one's
 *               compute: TQue depth 2), else 1
 * and the problem: EXPERTS, TOP_K, InputT (half or bfloat16_t).
 *
 * Outputs, as CANN's MoeGatingTopKSoftmax writes them: y[row][j] the j-th largest
 * softmax weight (InputT), expert_idx[row][j] its expert, row_idx[row][j] = j * rows +
 * row (where the dispatch finds the token's j-th copy).
 */
#include "kernel_operator.h"

constexpr uint32_t TILE_ROWS = 1;
constexpr uint32_t COL_TILE = 128;
constexpr uint32_t CORES = 1;
constexpr uint32_t BUFFER_NUM = 2;
constexpr uint32_t EXPERTS = 128;
constexpr uint32_t TOP_K = 8;
using InputT = half;

constexpr uint32_t PIECE = COL_TILE < EXPERTS ? COL_TILE : EXPERTS;
constexpr uint32_t PIECES = (EXPERTS + PIECE - 1) / PIECE;
constexpr uint32_t K_ALIGN = (TOP_K + 7) / 8 * 8;  // 32 bytes of int32 / fp32
constexpr float NEG_INF = -3.0e38f;
static_assert(BUFFER_NUM == 1 || BUFFER_NUM == 2, "BUFFER_NUM: 1 or 2");
static_assert(TOP_K >= 1 && TOP_K <= EXPERTS, "TOP_K: 1 to EXPERTS");
static_assert(EXPERTS % (32 / sizeof(InputT)) == 0 && PIECE % (32 / sizeof(InputT)) == 0,
              "EXPERTS and COL_TILE: whole 32-byte bursts");

namespace aoe_gating {

__aicore__ inline void WaitVectorForScalar()
{
    AscendC::SetFlag<AscendC::HardEvent::V_S>(EVENT_ID0);
    AscendC::WaitFlag<AscendC::HardEvent::V_S>(EVENT_ID0);
}

__aicore__ inline void WaitScalarForCopyOut()
{
    AscendC::SetFlag<AscendC::HardEvent::S_MTE3>(EVENT_ID0);
    AscendC::WaitFlag<AscendC::HardEvent::S_MTE3>(EVENT_ID0);
}

class GatingKernel {
public:
    __aicore__ inline GatingKernel() {}

    __aicore__ inline void Init(GM_ADDR logits, GM_ADDR y, GM_ADDR expertIdx, GM_ADDR rowIdx,
                                uint32_t rows)
    {
        rows_ = rows;
        logits_.SetGlobalBuffer((__gm__ InputT *)logits);
        y_.SetGlobalBuffer((__gm__ InputT *)y);
        expertIdx_.SetGlobalBuffer((__gm__ int32_t *)expertIdx);
        rowIdx_.SetGlobalBuffer((__gm__ int32_t *)rowIdx);
        pipe_.InitBuffer(inQueue_, BUFFER_NUM, TILE_ROWS * PIECE * sizeof(InputT));
        pipe_.InitBuffer(x_, PIECE * sizeof(float));
        pipe_.InitBuffer(scratch_, PIECE * sizeof(float));
        pipe_.InitBuffer(yOut_, K_ALIGN * sizeof(InputT) < 32 ? 32 : K_ALIGN * sizeof(InputT));
        pipe_.InitBuffer(idxOut_, K_ALIGN * sizeof(int32_t));
        pipe_.InitBuffer(rowOut_, K_ALIGN * sizeof(int32_t));
    }

    __aicore__ inline void Process()
    {
        const uint32_t share = (rows_ + CORES - 1) / CORES;
        const uint32_t first = AscendC::GetBlockIdx() * share;
        const uint32_t last = first + share < rows_ ? first + share : rows_;
        for (uint32_t row = first; row < last; row += TILE_ROWS) {
            const uint32_t n = last - row < TILE_ROWS ? last - row : TILE_ROWS;
            float maxes[TILE_ROWS];
            float sums[TILE_ROWS];
            for (uint32_t r = 0; r < n; ++r) {
                maxes[r] = NEG_INF;
                sums[r] = 0.0f;
            }
            if constexpr (PIECES > 1) {  // the first read: each row's max and sum, online
                for (uint32_t p = 0; p < PIECES; ++p) {
                    LoadPiece(row, n, p);
                    AscendC::LocalTensor<InputT> tile = inQueue_.DeQue<InputT>();
                    for (uint32_t r = 0; r < n; ++r) {
                        const float m = PieceMax(tile, r);
                        const float top = m > maxes[r] ? m : maxes[r];
                        sums[r] = sums[r] * Exp(maxes[r] - top) + ExpSum(top);
                        maxes[r] = top;
                    }
                    inQueue_.FreeTensor(tile);
                }
            }
            float weights[TILE_ROWS][TOP_K];
            int32_t experts[TILE_ROWS][TOP_K];
            for (uint32_t r = 0; r < n; ++r) {
                for (uint32_t j = 0; j < TOP_K; ++j) {
                    weights[r][j] = NEG_INF;
                    experts[r][j] = -1;
                }
            }
            for (uint32_t p = 0; p < PIECES; ++p) {  // the weights' read: top k of each piece
                LoadPiece(row, n, p);
                AscendC::LocalTensor<InputT> tile = inQueue_.DeQue<InputT>();
                for (uint32_t r = 0; r < n; ++r) {
                    if constexpr (PIECES == 1) {
                        maxes[r] = PieceMax(tile, r);
                        sums[r] = ExpSum(maxes[r]);
                    } else {
                        PieceMax(tile, r);  // casts the piece into x_
                    }
                    MergeTopK(p * PIECE, weights[r], experts[r]);
                }
                inQueue_.FreeTensor(tile);
            }
            for (uint32_t r = 0; r < n; ++r) {
                Store(row + r, weights[r], experts[r], maxes[r], sums[r]);
            }
        }
    }

private:
    // Piece p of rows [row, row + n) into the input queue, one row after another.
    __aicore__ inline void LoadPiece(uint32_t row, uint32_t n, uint32_t p)
    {
        AscendC::LocalTensor<InputT> tile = inQueue_.AllocTensor<InputT>();
        if constexpr (PIECES == 1) {
            AscendC::DataCopy(tile, logits_[static_cast<uint64_t>(row) * EXPERTS], n * EXPERTS);
        } else {
            for (uint32_t r = 0; r < n; ++r) {
                AscendC::DataCopy(tile[r * PIECE],
                                  logits_[static_cast<uint64_t>(row + r) * EXPERTS + p * PIECE],
                                  PIECE);
            }
        }
        inQueue_.EnQue(tile);
    }

    // Row r of the tile cast into x_; its largest logit.
    __aicore__ inline float PieceMax(AscendC::LocalTensor<InputT> &tile, uint32_t r)
    {
        AscendC::LocalTensor<float> x = x_.Get<float>();
        AscendC::LocalTensor<float> s = scratch_.Get<float>();
        AscendC::Cast(x, tile[r * PIECE], AscendC::RoundMode::CAST_NONE, PIECE);
        AscendC::ReduceMax(s, x, s, static_cast<int32_t>(PIECE), false);
        WaitVectorForScalar();
        return s.GetValue(0);
    }

    // The sum of exp(x - top) over the piece in x_ (x_ is kept).
    __aicore__ inline float ExpSum(float top)
    {
        AscendC::LocalTensor<float> x = x_.Get<float>();
        AscendC::LocalTensor<float> s = scratch_.Get<float>();
        AscendC::Adds(s, x, -top, static_cast<int32_t>(PIECE));
        AscendC::Exp(s, s, static_cast<int32_t>(PIECE));
        AscendC::ReduceSum(s, s, s, static_cast<int32_t>(PIECE));
        WaitVectorForScalar();
        return s.GetValue(0);
    }

    __aicore__ inline float Exp(float v)
    {
        AscendC::LocalTensor<float> s = scratch_.Get<float>();
        AscendC::Duplicate(s, v, 8);
        AscendC::Exp(s, s, 8);
        WaitVectorForScalar();
        return s.GetValue(0);
    }

    // The k largest logits of the piece in x_ merged into the row's running top k (kept
    // as logits: the softmax is monotonic, the weights are taken at the end).
    __aicore__ inline void MergeTopK(uint32_t offset, float *weights, int32_t *experts)
    {
        AscendC::LocalTensor<float> x = x_.Get<float>();
        AscendC::LocalTensor<float> s = scratch_.Get<float>();
        for (uint32_t j = 0; j < TOP_K; ++j) {
            AscendC::ReduceMax(s, x, s, static_cast<int32_t>(PIECE), true);
            WaitVectorForScalar();
            const float value = s.GetValue(0);
            const float bits = s.GetValue(1);
            const uint32_t at = *reinterpret_cast<const uint32_t *>(&bits);
            if (value <= weights[TOP_K - 1]) {
                break;  // nothing left in this piece beats the running k-th
            }
            uint32_t slot = TOP_K - 1;
            while (slot > 0 && weights[slot - 1] < value) {
                weights[slot] = weights[slot - 1];
                experts[slot] = experts[slot - 1];
                --slot;
            }
            weights[slot] = value;
            experts[slot] = static_cast<int32_t>(offset + at);
            x.SetValue(at, NEG_INF);
        }
    }

    __aicore__ inline void Store(uint32_t row, const float *logits, const int32_t *experts,
                                 float top, float sum)
    {
        AscendC::LocalTensor<InputT> y = yOut_.Get<InputT>();
        AscendC::LocalTensor<int32_t> e = idxOut_.Get<int32_t>();
        AscendC::LocalTensor<int32_t> ri = rowOut_.Get<int32_t>();
        for (uint32_t j = 0; j < TOP_K; ++j) {
            y.SetValue(j, static_cast<InputT>(Exp(logits[j] - top) / sum));
            e.SetValue(j, experts[j]);
            ri.SetValue(j, static_cast<int32_t>(j * rows_ + row));
        }
        WaitScalarForCopyOut();
        const uint64_t at = static_cast<uint64_t>(row) * TOP_K;
        AscendC::DataCopyPad(y_[at], y, {1, TOP_K * sizeof(InputT), 0, 0, 0});
        AscendC::DataCopyPad(expertIdx_[at], e, {1, TOP_K * sizeof(int32_t), 0, 0, 0});
        AscendC::DataCopyPad(rowIdx_[at], ri, {1, TOP_K * sizeof(int32_t), 0, 0, 0});
    }

    AscendC::TPipe pipe_;
    AscendC::TQue<AscendC::QuePosition::VECIN, BUFFER_NUM> inQueue_;
    AscendC::TBuf<AscendC::TPosition::VECCALC> x_;
    AscendC::TBuf<AscendC::TPosition::VECCALC> scratch_;
    AscendC::TBuf<AscendC::TPosition::VECCALC> yOut_;
    AscendC::TBuf<AscendC::TPosition::VECCALC> idxOut_;
    AscendC::TBuf<AscendC::TPosition::VECCALC> rowOut_;
    AscendC::GlobalTensor<InputT> logits_;
    AscendC::GlobalTensor<InputT> y_;
    AscendC::GlobalTensor<int32_t> expertIdx_;
    AscendC::GlobalTensor<int32_t> rowIdx_;
    uint32_t rows_ = 0;
};

}  // namespace aoe_gating

extern "C" __global__ __aicore__ void aoe_moe_gating(GM_ADDR logits, GM_ADDR y,
                                                     GM_ADDR expertIdx, GM_ADDR rowIdx,
                                                     uint32_t rows)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);  // vector cores only
    aoe_gating::GatingKernel op;
    op.Init(logits, y, expertIdx, rowIdx, rows);
    op.Process();
}

#ifndef ASCENDC_CPU_DEBUG
// Host-side launch with the <<<>>> operator (compiled by bisheng with the kernel, as
// gemm_kernel.cpp's aoe_launch_gemm_kernel): nothing allocated per launch, so event
// timings hold kernel time only. gating_bench.cpp calls it.
extern "C" void aoe_launch_moe_gating(uint32_t blockDim, void *stream, uint8_t *logits, uint8_t *y,
                                      uint8_t *expertIdx, uint8_t *rowIdx, uint32_t rows)
{
    aoe_moe_gating<<<blockDim, nullptr, stream>>>(logits, y, expertIdx, rowIdx, rows);
}
#endif
