/*
 * vector_kernel.cpp: the vector-core kernels of a decoder layer (RMSNorm, residual add +
 * RMSNorm, SwiGLU, rotary embedding) in Ascend C for the AI vector cores of Atlas A2
 * (Ascend 910B, dav-c220), fp16/bf16 in GM, fp32 arithmetic in UB.
 *
 * NEVER BUILT BY BISHENG HERE. This repository's machines have no CANN toolkit and no
 * NPU; the rendered variants compile with g++ against the open-source Ascend C headers
 * in CPU-debug mode (tests/backends/npu/test_ascendc_compile.py). docs/NPU.md, "Vector
 * kernels", says what that checks and what it does not.
 *
 * Tunable values, one plain declaration each right below (aoe_optuna/backends/npu/
 * layer_kernels/vector_kernel.py renders them from a tuned config; aoe-tune export
 * writes the result):
 *   TILE_LEN    elements of one UB tile per tensor (tile_len)
 *   CORES       vector cores the host launches (cores): the block dim
 *   BUFFER_NUM  2 with double_buffer (the next tile's copy-in overlaps this tile's
 *               compute: TQue depth 2), else 1
 *   FUSED       add_rmsnorm: the add and the norm in one pass (else the host launches
 *               aoe_vector_add first and this kernel normalises its sum)
 * and the problem: KIND, WIDTH (the row; SwiGLU's output row), HEAD_DIM (rope),
 * UB_BYTES (one vector core's UB, the SoC profile's), InputT (half or bfloat16_t).
 *
 * Work split (the simulator's model, aoe_optuna/aicore/vector/vector_ops.py): a
 * norm row belongs to one core (rows dealt cyclically: row = block, block + CORES, ...);
 * SwiGLU's tiles of TILE_LEN elements and rope's row pieces of TILE_LEN (one token's
 * cos/sin each) are dealt the same way. A row wider
 * than TILE_LEN is walked in pieces; a norm then reads it twice (sum of squares, then
 * scale). Rows arrive at run time (`rows`); WIDTH and TILE_LEN are multiples of 16
 * elements (32-byte DataCopy bursts), which the renderer checks.
 */
#include "kernel_operator.h"

constexpr uint32_t TILE_LEN = 4096;
constexpr uint32_t CORES = 40;
constexpr uint32_t BUFFER_NUM = 2;
constexpr bool FUSED = true;
constexpr int32_t KIND = 0;
constexpr uint32_t WIDTH = 4096;
constexpr uint32_t HEAD_DIM = 128;
constexpr uint32_t UB_BYTES = 196608;
using InputT = half;

constexpr int32_t KIND_RMSNORM = 0;
constexpr int32_t KIND_ADD_RMSNORM = 1;
constexpr int32_t KIND_SWIGLU = 2;
constexpr int32_t KIND_ROPE = 3;
constexpr float EPSILON = 1e-6f;
constexpr uint32_t ALIGN_ELEMS = 32 / sizeof(InputT);  // one 32-byte burst
constexpr uint32_t COS_SIN_STEP = 64;  // rope: cos/sin floats cast at a time

// The UB one core takes: the queues' tiles x buffers plus two fp32 tiles, within what
// vector_space.py's capacity rule allows (it counts every GM row tensor, reads + writes:
// add_rmsnorm's two outputs share one queue). ReduceSum's scratch, the rstd scalar and
// rope's cos/sin live in an output tile while it is free, so nothing else takes UB.
constexpr bool SECOND_INPUT = KIND == KIND_ADD_RMSNORM || KIND == KIND_SWIGLU;
constexpr uint32_t QUEUES = SECOND_INPUT ? 3 : 2;
constexpr uint32_t UB_NEEDED = TILE_LEN * (QUEUES * sizeof(InputT) * BUFFER_NUM +
                                           2 * sizeof(float));
static_assert(KIND >= KIND_RMSNORM && KIND <= KIND_ROPE, "KIND: rmsnorm, add_rmsnorm, swiglu, rope");
static_assert(BUFFER_NUM == 1 || BUFFER_NUM == 2, "BUFFER_NUM: 1 or 2");
static_assert(TILE_LEN % ALIGN_ELEMS == 0 && WIDTH % ALIGN_ELEMS == 0,
              "TILE_LEN and WIDTH: whole 32-byte bursts");
static_assert(UB_NEEDED <= UB_BYTES, "UB buffer overflow: TILE_LEN x tensors x BUFFER_NUM");
static_assert(KIND != KIND_ROPE || (TILE_LEN % HEAD_DIM == 0 && WIDTH % HEAD_DIM == 0 &&
                                    HEAD_DIM % (2 * ALIGN_ELEMS) == 0),
              "rope: whole heads per tile and row, half a head in whole bursts");
static_assert(KIND != KIND_ROPE ||
                  (2 * HEAD_DIM + COS_SIN_STEP * sizeof(float) / sizeof(InputT)) <= TILE_LEN,
              "rope: cos, sin and their fp32 step must fit one output tile");

namespace aoe_vector {

template <typename T>
__aicore__ inline T Min(T a, T b) { return a < b ? a : b; }

// The pipes between a GM->UB copy and the vector unit that reads it, and the vector unit
// and the UB->GM copy: queues do it for the row tensors; these do it for one-offs.
__aicore__ inline void WaitCopyIn()
{
    AscendC::SetFlag<AscendC::HardEvent::MTE2_V>(EVENT_ID0);
    AscendC::WaitFlag<AscendC::HardEvent::MTE2_V>(EVENT_ID0);
}

// A GM->UB copy into an output tile (gamma, cos/sin) must not overtake the UB->GM copy
// of what that tile held before.
__aicore__ inline void WaitCopyOut()
{
    AscendC::SetFlag<AscendC::HardEvent::MTE3_MTE2>(EVENT_ID0);
    AscendC::WaitFlag<AscendC::HardEvent::MTE3_MTE2>(EVENT_ID0);
}

__aicore__ inline void WaitVectorForScalar()
{
    AscendC::SetFlag<AscendC::HardEvent::V_S>(EVENT_ID0);
    AscendC::WaitFlag<AscendC::HardEvent::V_S>(EVENT_ID0);
}

class VectorKernel {
public:
    __aicore__ inline VectorKernel() {}

    __aicore__ inline void Init(GM_ADDR in0, GM_ADDR in1, GM_ADDR side0, GM_ADDR side1,
                                GM_ADDR out0, GM_ADDR out1, uint32_t rows)
    {
        rows_ = rows;
        in0_.SetGlobalBuffer((__gm__ InputT *)in0);
        in1_.SetGlobalBuffer((__gm__ InputT *)in1);
        side0_.SetGlobalBuffer((__gm__ InputT *)side0);
        side1_.SetGlobalBuffer((__gm__ InputT *)side1);
        out0_.SetGlobalBuffer((__gm__ InputT *)out0);
        out1_.SetGlobalBuffer((__gm__ InputT *)out1);
        pipe_.InitBuffer(inQueue_, BUFFER_NUM, TILE_LEN * sizeof(InputT));
        if constexpr (SECOND_INPUT) {
            pipe_.InitBuffer(in2Queue_, BUFFER_NUM, TILE_LEN * sizeof(InputT));
        }
        pipe_.InitBuffer(outQueue_, BUFFER_NUM, TILE_LEN * sizeof(InputT));
        pipe_.InitBuffer(workA_, TILE_LEN * sizeof(float));
        pipe_.InitBuffer(workB_, TILE_LEN * sizeof(float));
    }

    __aicore__ inline void Process()
    {
        const uint32_t block = AscendC::GetBlockIdx();
        if constexpr (KIND == KIND_SWIGLU) {
            const uint64_t total = static_cast<uint64_t>(rows_) * WIDTH;
            const uint64_t tiles = (total + TILE_LEN - 1) / TILE_LEN;
            for (uint64_t t = block; t < tiles; t += CORES) {
                const uint64_t start = t * TILE_LEN;
                SwiGluTile(start, static_cast<uint32_t>(Min<uint64_t>(TILE_LEN, total - start)));
            }
        } else if constexpr (KIND == KIND_ROPE) {  // pieces of rows: one token's cos/sin each
            constexpr uint32_t pieces = (WIDTH + TILE_LEN - 1) / TILE_LEN;
            const uint64_t units = static_cast<uint64_t>(rows_) * pieces;
            for (uint64_t u = block; u < units; u += CORES) {
                RopePiece(static_cast<uint32_t>(u / pieces),
                          static_cast<uint32_t>(u % pieces) * TILE_LEN);
            }
        } else {
            for (uint32_t row = block; row < rows_; row += CORES) {
                NormRow(row);
            }
        }
    }

    // aoe_vector_add: out0 = in0 + in1 over rows x WIDTH (an unfused add + RMSNorm's add).
    __aicore__ inline void ProcessAdd()
    {
        const uint64_t total = static_cast<uint64_t>(rows_) * WIDTH;
        const uint64_t tiles = (total + TILE_LEN - 1) / TILE_LEN;
        for (uint64_t t = AscendC::GetBlockIdx(); t < tiles; t += CORES) {
            const uint64_t start = t * TILE_LEN;
            const uint32_t n = static_cast<uint32_t>(Min<uint64_t>(TILE_LEN, total - start));
            CopyIn(inQueue_, in0_, start, n);
            CopyIn(in2Queue_, in1_, start, n);
            AscendC::LocalTensor<InputT> a = inQueue_.DeQue<InputT>();
            AscendC::LocalTensor<InputT> b = in2Queue_.DeQue<InputT>();
            AscendC::LocalTensor<float> fa = workA_.Get<float>();
            AscendC::LocalTensor<float> fb = workB_.Get<float>();
            AscendC::Cast(fa, a, AscendC::RoundMode::CAST_NONE, n);
            AscendC::Cast(fb, b, AscendC::RoundMode::CAST_NONE, n);
            inQueue_.FreeTensor(a);
            in2Queue_.FreeTensor(b);
            AscendC::Add(fa, fa, fb, static_cast<int32_t>(n));
            StoreFrom(fa, out0_, start, n);
        }
    }

private:
    template <class Queue>
    __aicore__ inline void CopyIn(Queue &queue, AscendC::GlobalTensor<InputT> &src, uint64_t at,
                                  uint32_t n)
    {
        AscendC::LocalTensor<InputT> tile = queue.template AllocTensor<InputT>();
        AscendC::DataCopy(tile, src[at], n);
        queue.EnQue(tile);
    }

    // Cast an fp32 tile to InputT in the output queue and copy it to GM.
    __aicore__ inline void StoreFrom(AscendC::LocalTensor<float> &src,
                                     AscendC::GlobalTensor<InputT> &dst, uint64_t at, uint32_t n)
    {
        AscendC::LocalTensor<InputT> out = outQueue_.AllocTensor<InputT>();
        AscendC::Cast(out, src, AscendC::RoundMode::CAST_RINT, n);
        outQueue_.EnQue(out);
        AscendC::LocalTensor<InputT> ready = outQueue_.DeQue<InputT>();
        AscendC::DataCopy(dst[at], ready, n);
        outQueue_.FreeTensor(ready);
    }

    // One row piece in fp32 in workA_: x, or x + residual (add_rmsnorm), the sum also
    // written to out1 when this kernel does the add (FUSED).
    __aicore__ inline void LoadRowPiece(uint64_t at, uint32_t n, bool writeSum)
    {
        AscendC::LocalTensor<float> x = workA_.Get<float>();
        CopyIn(inQueue_, in0_, at, n);
        constexpr bool adds = KIND == KIND_ADD_RMSNORM && FUSED;
        if constexpr (adds) {
            CopyIn(in2Queue_, in1_, at, n);
        }
        AscendC::LocalTensor<InputT> a = inQueue_.DeQue<InputT>();
        AscendC::Cast(x, a, AscendC::RoundMode::CAST_NONE, n);
        inQueue_.FreeTensor(a);
        if constexpr (adds) {
            AscendC::LocalTensor<InputT> r = in2Queue_.DeQue<InputT>();
            AscendC::LocalTensor<float> fr = workB_.Get<float>();
            AscendC::Cast(fr, r, AscendC::RoundMode::CAST_NONE, n);
            in2Queue_.FreeTensor(r);
            AscendC::Add(x, x, fr, static_cast<int32_t>(n));
            if (writeSum) {
                StoreFrom(x, out1_, at, n);
            }
        }
    }

    // ReduceSum's scratch (n / 64 floats rounded up to 8, the dst overlapping it, as its
    // reference allows) is a free output tile: TILE_LEN / 2 floats.
    __aicore__ inline float SumOfSquares(uint32_t n)
    {
        AscendC::LocalTensor<float> x = workA_.Get<float>();
        AscendC::LocalTensor<float> sq = workB_.Get<float>();
        AscendC::LocalTensor<InputT> tile = outQueue_.AllocTensor<InputT>();
        AscendC::LocalTensor<float> sum = tile.ReinterpretCast<float>();
        AscendC::Mul(sq, x, x, static_cast<int32_t>(n));
        AscendC::ReduceSum(sum, sq, sum, static_cast<int32_t>(n));
        WaitVectorForScalar();
        const float value = sum.GetValue(0);
        outQueue_.FreeTensor(tile);
        return value;
    }

    // y = x * rstd * gamma for the piece held in workA_ (gamma: side0).
    __aicore__ inline void ScalePiece(uint64_t at, uint32_t col, uint32_t n, float rstd)
    {
        AscendC::LocalTensor<float> x = workA_.Get<float>();
        AscendC::LocalTensor<float> g = workB_.Get<float>();
        AscendC::LocalTensor<InputT> out = outQueue_.AllocTensor<InputT>();
        WaitCopyOut();
        AscendC::DataCopy(out, side0_[col], n);  // gamma through the output buffer
        WaitCopyIn();
        AscendC::Cast(g, out, AscendC::RoundMode::CAST_NONE, n);
        AscendC::Muls(x, x, rstd, static_cast<int32_t>(n));
        AscendC::Mul(x, x, g, static_cast<int32_t>(n));
        AscendC::Cast(out, x, AscendC::RoundMode::CAST_RINT, n);
        outQueue_.EnQue(out);
        AscendC::LocalTensor<InputT> ready = outQueue_.DeQue<InputT>();
        AscendC::DataCopy(out0_[at], ready, n);
        outQueue_.FreeTensor(ready);
    }

    __aicore__ inline float Rstd(float sumSquares)
    {
        AscendC::LocalTensor<InputT> tile = outQueue_.AllocTensor<InputT>();
        AscendC::LocalTensor<float> s = tile.ReinterpretCast<float>();
        AscendC::Duplicate(s, sumSquares / WIDTH + EPSILON, 8);
        AscendC::Sqrt(s, s, 8);
        WaitVectorForScalar();
        const float root = s.GetValue(0);
        outQueue_.FreeTensor(tile);
        return 1.0f / root;
    }

    __aicore__ inline void NormRow(uint32_t row)
    {
        const uint64_t base = static_cast<uint64_t>(row) * WIDTH;
        if constexpr (WIDTH <= TILE_LEN) {  // the row stays in UB between the two passes
            LoadRowPiece(base, WIDTH, true);
            ScalePiece(base, 0, WIDTH, Rstd(SumOfSquares(WIDTH)));
        } else {  // two reads of the row: sum of squares, then scale
            float sum = 0.0f;
            for (uint32_t col = 0; col < WIDTH; col += TILE_LEN) {
                const uint32_t n = Min(TILE_LEN, WIDTH - col);
                LoadRowPiece(base + col, n, true);
                sum += SumOfSquares(n);
            }
            const float rstd = Rstd(sum);
            for (uint32_t col = 0; col < WIDTH; col += TILE_LEN) {
                const uint32_t n = Min(TILE_LEN, WIDTH - col);
                LoadRowPiece(base + col, n, false);
                ScalePiece(base + col, col, n, rstd);
            }
        }
    }

    // silu(g) * u = g / (1 + exp(-g)) * u over one tile (gate: in0, up: in1).
    __aicore__ inline void SwiGluTile(uint64_t at, uint32_t n)
    {
        CopyIn(inQueue_, in0_, at, n);
        CopyIn(in2Queue_, in1_, at, n);
        AscendC::LocalTensor<InputT> gate = inQueue_.DeQue<InputT>();
        AscendC::LocalTensor<InputT> up = in2Queue_.DeQue<InputT>();
        AscendC::LocalTensor<float> g = workA_.Get<float>();
        AscendC::LocalTensor<float> e = workB_.Get<float>();
        AscendC::Cast(g, gate, AscendC::RoundMode::CAST_NONE, n);
        inQueue_.FreeTensor(gate);
        AscendC::Muls(e, g, -1.0f, static_cast<int32_t>(n));
        AscendC::Exp(e, e, static_cast<int32_t>(n));
        AscendC::Adds(e, e, 1.0f, static_cast<int32_t>(n));
        AscendC::Div(g, g, e, static_cast<int32_t>(n));
        AscendC::Cast(e, up, AscendC::RoundMode::CAST_NONE, n);
        in2Queue_.FreeTensor(up);
        AscendC::Mul(g, g, e, static_cast<int32_t>(n));
        StoreFrom(g, out0_, at, n);
    }

    // Rotate-half rotary embedding of one token's Q and K heads (x: in0; cos, sin of the
    // token: side0, side1, HEAD_DIM each): out = x * cos + rotate_half(x) * sin, where
    // rotate_half(x) = [-x2, x1] for the halves x1, x2 of a head.
    __aicore__ inline void RopePiece(uint32_t row, uint32_t col)
    {
        constexpr uint32_t half = HEAD_DIM / 2;
        const uint64_t base = static_cast<uint64_t>(row) * WIDTH;
        AscendC::LocalTensor<float> x = workA_.Get<float>();
        AscendC::LocalTensor<float> r = workB_.Get<float>();
        {
            const uint32_t n = Min(TILE_LEN, WIDTH - col);
            CopyIn(inQueue_, in0_, base + col, n);
            // cos and sin of the token, and an fp32 step of them, in a free output tile
            AscendC::LocalTensor<InputT> trig = outQueue_.AllocTensor<InputT>();
            WaitCopyOut();
            AscendC::DataCopy(trig, side0_[static_cast<uint64_t>(row) * HEAD_DIM], HEAD_DIM);
            AscendC::DataCopy(trig[HEAD_DIM], side1_[static_cast<uint64_t>(row) * HEAD_DIM],
                              HEAD_DIM);
            AscendC::LocalTensor<float> cosSin = trig[2 * HEAD_DIM].ReinterpretCast<float>();
            AscendC::LocalTensor<InputT> a = inQueue_.DeQue<InputT>();
            AscendC::Cast(x, a, AscendC::RoundMode::CAST_NONE, n);
            inQueue_.FreeTensor(a);
            WaitCopyIn();
            for (uint32_t head = 0; head < n; head += HEAD_DIM) {
                // r = rotate_half(x) for this head, then x*cos + r*sin, in half-head steps
                AscendC::Muls(r[head], x[head + half], -1.0f, static_cast<int32_t>(half));
                AscendC::Muls(r[head + half], x[head], 1.0f, static_cast<int32_t>(half));
            }
            for (uint32_t part = 0; part < 2; ++part) {  // cos, then sin, HEAD_DIM at a time
                for (uint32_t d = 0; d < HEAD_DIM; d += COS_SIN_STEP) {
                    const uint32_t m = Min(COS_SIN_STEP, HEAD_DIM - d);
                    AscendC::Cast(cosSin, trig[part * HEAD_DIM + d],
                                  AscendC::RoundMode::CAST_NONE, m);
                    for (uint32_t head = 0; head < n; head += HEAD_DIM) {
                        AscendC::LocalTensor<float> dst = part == 0 ? x[head + d] : r[head + d];
                        AscendC::Mul(dst, dst, cosSin, static_cast<int32_t>(m));
                    }
                }
            }
            outQueue_.FreeTensor(trig);
            AscendC::Add(x, x, r, static_cast<int32_t>(n));
            StoreFrom(x, out0_, base + col, n);
        }
    }

    AscendC::TPipe pipe_;
    AscendC::TQue<AscendC::QuePosition::VECIN, BUFFER_NUM> inQueue_;
    AscendC::TQue<AscendC::QuePosition::VECIN, BUFFER_NUM> in2Queue_;
    AscendC::TQue<AscendC::QuePosition::VECOUT, BUFFER_NUM> outQueue_;
    AscendC::TBuf<AscendC::QuePosition::VECCALC> workA_;
    AscendC::TBuf<AscendC::QuePosition::VECCALC> workB_;
    AscendC::GlobalTensor<InputT> in0_, in1_, side0_, side1_, out0_, out1_;
    uint32_t rows_ = 0;
};

}  // namespace aoe_vector

// rmsnorm: in0 x, side0 gamma, out0 y. add_rmsnorm: in0 x, in1 residual, side0 gamma,
// out0 y, out1 x + residual (FUSED; unfused, in0 already holds the sum from
// aoe_vector_add). swiglu: in0 gate, in1 up, out0. rope: in0 x, side0 cos, side1 sin,
// out0. Unused pointers may be null.
extern "C" __global__ __aicore__ void aoe_vector_kernel(GM_ADDR in0, GM_ADDR in1, GM_ADDR side0,
                                                        GM_ADDR side1, GM_ADDR out0,
                                                        GM_ADDR out1, uint32_t rows)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    aoe_vector::VectorKernel op;
    op.Init(in0, in1, side0, side1, out0, out1, rows);
    op.Process();
}

extern "C" __global__ __aicore__ void aoe_vector_add(GM_ADDR a, GM_ADDR b, GM_ADDR out,
                                                     uint32_t rows)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    aoe_vector::VectorKernel op;
    op.Init(a, b, a, a, out, out, rows);
    op.ProcessAdd();
}

#ifndef ASCENDC_CPU_DEBUG
// Host-side launches with the <<<>>> operator (compiled by bisheng with the kernels, as
// gemm_kernel.cpp's aoe_launch_gemm_kernel): arguments by value, nothing allocated per
// launch, so event timings hold kernel time only. vector_bench.cpp calls them.
extern "C" void aoe_launch_vector_kernel(uint32_t blockDim, void *stream, uint8_t *in0,
                                         uint8_t *in1, uint8_t *side0, uint8_t *side1,
                                         uint8_t *out0, uint8_t *out1, uint32_t rows)
{
    aoe_vector_kernel<<<blockDim, nullptr, stream>>>(in0, in1, side0, side1, out0, out1, rows);
}

extern "C" void aoe_launch_vector_add(uint32_t blockDim, void *stream, uint8_t *a, uint8_t *b,
                                      uint8_t *out, uint32_t rows)
{
    aoe_vector_add<<<blockDim, nullptr, stream>>>(a, b, out, rows);
}
#endif
