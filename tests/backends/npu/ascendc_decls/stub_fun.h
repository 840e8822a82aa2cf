/*
 * stub_fun.h: this project's declarations of the CCE intrinsics (the AI core's low-level
 * functions) for checking Ascend C kernels with a host compiler in CPU-debug mode.
 *
 * The Ascend C headers (asc-devkit, asc-tools) include "stub_fun.h" under
 * ASCENDC_CPU_DEBUG; the toolkit's own file is not open source, so this one is written
 * from the public CCE intrinsic API reference (hiascend.com, "CCE Intrinsic API",
 * CANN 8.3/8.5, cceapi_00xx pages named at each declaration) and the enumerations of
 * the Ascend C API reference in asc-devkit's docs/. It only declares: nothing here is
 * defined, so it serves -fsyntax-only (and clang/g++ -c), never a link.
 *
 * Two tiers:
 *  - TYPED: the intrinsics the kernels reach (pipes, events, the GM->L1 copies, the
 *    L1->L0 loads, mmad, the L0C->GM fixpipe copy, block index/count), each overload
 *    with its documented parameter types, so that a call with the wrong element type
 *    (fp32 L1 data into an fp16 L0A, the fp32 accumulator where A belongs), a missing
 *    argument or an event where a pipe belongs has no viable overload and fails to
 *    compile. CPU-debug mode defines the address spaces (__ca__, __cb__, __cbuf__, ...)
 *    away, so an L0A/L0B mix-up of one element type is beyond this check.
 *  - UNTYPED: every other intrinsic the headers mention in code a GEMM kernel never
 *    instantiates (vector unit, atomics, AIPP, conversions, ...). They are declared as
 *    variadic templates so the headers parse; tests/backends/npu/test_ascendc_compile.py
 *    compiles each kernel to an object and fails when it references one of them, so a
 *    kernel cannot come to rely on an untyped declaration unnoticed.
 */
#ifndef AOE_CCE_STUB_FUN_H
#define AOE_CCE_STUB_FUN_H
#include <cstddef>
#include <cstdint>

// ---- enumerations ----------------------------------------------------------------------
// pipe_barrier (cceapi_0105): the pipe_t table (S, V, M, MTE1..3, ALL, FIX); the other
// enumerators the headers name take distinct values the reference does not give.
enum pipe_t : uint8_t {
    PIPE_S = 0, PIPE_V = 1, PIPE_M = 2, PIPE_MTE1 = 3, PIPE_MTE2 = 4, PIPE_MTE3 = 5,
    PIPE_ALL = 6, PIPE_MTE4 = 7, PIPE_MTE5 = 8, PIPE_V2 = 9, PIPE_FIX = 10, VIRTUAL_PIPE = 11,
    PIPE_NUM = 12,
    AIC_PIPE = 13, AIV_PIPE = 14,  // cross-core sync targets (ffts_cross_core_sync)
};
// set_flag & wait_flag (cceapi_0106): 3-bit event ids.
enum event_t : uint8_t {
    EVENT_ID0 = 0, EVENT_ID1, EVENT_ID2, EVENT_ID3, EVENT_ID4, EVENT_ID5, EVENT_ID6, EVENT_ID7,
};
// copy_gm_to_cbuf's padMode (cceapi "通用搬运").
enum pad_t : uint8_t {
    PAD_NONE = 0, PAD_MODE1, PAD_MODE2, PAD_MODE3, PAD_MODE4, PAD_MODE5, PAD_MODE6, PAD_MODE7,
    PAD_MODE8,
};
// load_cbuf_to_ca/cb's addr_cal_mode (cceapi_0076): increasing or decreasing addresses.
enum addr_cal_mode_t : uint8_t { inc = 0, dec = 1 };
// Field QuantPRE of copy_matrix_cc_to_gm: the 5-bit codes its page lists; the modes of
// later chips that page does not list take distinct values from 32 on.
enum QuantMode_t : uint64_t {
    NoQuant = 0, F322F16 = 1, VREQ8 = 8, REQ8 = 9, VDEQF16 = 10, DEQF16 = 11, VDEQS16 = 12,
    DEQS16 = 13, F322BF16 = 16, VQF162B8_PRE = 17, QF162B8_PRE = 18, VQF162S4_PRE = 19,
    QF162S4_PRE = 20, VREQ4 = 21, REQ4 = 22, VQF322B8_PRE = 23, QF322B8_PRE = 24,
    VQF162S16_PRE = 32, QF162S16_PRE, QF322FP8_PRE, VQF322FP8_PRE, QF322HIF8_PRE, VQF322HIF8_PRE,
    QF322HIF8_PRE_HYBRID, VQF322HIF8_PRE_HYBRID, QS322BF16_PRE, VQS322BF16_PRE, QF322F16_PRE,
    VQF322F16_PRE, QF322BF16_PRE, VQF322BF16_PRE, QF322F32_PRE, VQF322F32_PRE
};
// Cache operands as asc-devkit's CacheLine/DcciDst number them (impl/basic_api/
// kernel_reg.h). The rest (barrier scope, memory, sort order, vector address registers,
// atomics) only name what untyped intrinsics take: their values are placeholders.
enum dcci_dst_t : uint8_t { CACHELINE_ALL = 0, CACHELINE_UB, CACHELINE_OUT, CACHELINE_ATOMIC };
enum cache_line_t : uint8_t { SINGLE_CACHE_LINE = 0, ENTIRE_DATA_CACHE };
enum mem_dsb_t : uint8_t { DSB_ALL = 0, DSB_DDR, DSB_UB, DSB_SEQ };
enum mem_t : uint8_t { L1 = 0, L0A, L0B, L0C, UB, BT };
enum Order_t : uint8_t { VALUE_INDEX = 0, INDEX_VALUE, ONLY_VALUE, ONLY_INDEX };
enum ub_addr8_t : uint8_t { VA0 = 0, VA1, VA2, VA3, VA4, VA5, VA6, VA7 };
enum vpart_t : uint8_t { L128 = 0, H128 };
enum atomic_type_t : uint8_t { ATOMIC_NONE_TYPE = 0 };
enum atomic_op_t : uint8_t { ATOMIC_NONE_OP = 0 };

// ---- TYPED: what the kernels reach -----------------------------------------------------
// Synchronisation (cceapi_0105, cceapi_0106).
void pipe_barrier(pipe_t pipe);
void set_flag(pipe_t pipe, pipe_t tpipe, event_t pipeID);
void set_flag(pipe_t pipe, pipe_t tpipe, uint64_t pipeID);
void wait_flag(pipe_t pipe, pipe_t tpipe, event_t pipeID);
void wait_flag(pipe_t pipe, pipe_t tpipe, uint64_t pipeID);
void dsb(mem_dsb_t mode);

// Block index and count of the running core (system variables).
int64_t get_block_idx();
int64_t get_block_num();

// GM -> L1 (PIPE_MTE2): plain bursts (copy_gm_to_cbuf) and ND -> Nz
// (copy_gm_to_cbuf_multi_nd2nz, cceapi_0096; the b16 forms; xm/xt: the packed registers).
void copy_gm_to_cbuf(__cbuf__ void *dst, __gm__ void *src, uint8_t sid, uint16_t nBurst,
                     uint16_t lenBurst, uint16_t srcGap, uint16_t dstGap, pad_t padMode);
#define AOE_CCE_ND2NZ(T)                                                                       \
    void copy_gm_to_cbuf_multi_nd2nz_b16(__cbuf__ T *dst, __gm__ T *src, uint8_t sid,          \
        uint16_t ndNum, uint16_t nValue, uint16_t dValue, uint16_t srcNdMatrixStride,          \
        uint16_t srcDValue, uint16_t dstNzC0Stride, uint16_t dstNzNStride,                     \
        uint16_t dstNzMatrixStride);                                                           \
    void copy_gm_to_cbuf_multi_nd2nz_b16(__cbuf__ T *dst, __gm__ T *src, uint64_t xm, uint64_t xt);
AOE_CCE_ND2NZ(half)
AOE_CCE_ND2NZ(bfloat16_t)
AOE_CCE_ND2NZ(int16_t)
AOE_CCE_ND2NZ(uint16_t)
#undef AOE_CCE_ND2NZ

// L1 -> L0A / L0B (PIPE_MTE1; cceapi_0076, cceapi_0077): one overload per element type;
// config: the packed register form.
#define AOE_CCE_LOAD2D(NAME, Q, T)                                                             \
    void NAME(Q T *dst, __cbuf__ T *src, uint16_t baseIdx, uint8_t repeat, uint16_t srcStride,  \
              uint16_t dstGap, uint8_t sid, bool transpose, addr_cal_mode_t addr_cal_mode);    \
    void NAME(Q T *dst, __cbuf__ T *src, uint64_t config, bool transpose,                      \
              addr_cal_mode_t addr_cal_mode);                                                  \
    void NAME(Q T *dst, __cbuf__ T *src, uint64_t config, bool transpose);
#define AOE_CCE_LOAD2D_TYPES(NAME, Q)                                                          \
    AOE_CCE_LOAD2D(NAME, Q, half) AOE_CCE_LOAD2D(NAME, Q, bfloat16_t)                         \
    AOE_CCE_LOAD2D(NAME, Q, float) AOE_CCE_LOAD2D(NAME, Q, int32_t)                           \
    AOE_CCE_LOAD2D(NAME, Q, uint32_t) AOE_CCE_LOAD2D(NAME, Q, int8_t)                         \
    AOE_CCE_LOAD2D(NAME, Q, uint8_t) AOE_CCE_LOAD2D(NAME, Q, int16_t)                         \
    AOE_CCE_LOAD2D(NAME, Q, uint16_t)
AOE_CCE_LOAD2D_TYPES(load_cbuf_to_ca, __ca__)
AOE_CCE_LOAD2D_TYPES(load_cbuf_to_cb, __cb__)
#undef AOE_CCE_LOAD2D_TYPES
#undef AOE_CCE_LOAD2D

// Cube MMAD (PIPE_M; cceapi_0063): c[m, n] (+)= a[m, k] * b[k, n] for the documented
// (C, A, B) type triples; config: the packed register form.
#define AOE_CCE_MAD(C, A, B)                                                                   \
    void mad(__cc__ C *c, __ca__ A *a, __cb__ B *b, uint16_t m, uint16_t k, uint16_t n,        \
             uint8_t unitFlag, bool kDirectionAlign, bool cmatrixSource, bool cmatrixInitVal); \
    void mad(__cc__ C *c, __ca__ A *a, __cb__ B *b, uint64_t bt_addr, uint16_t m, uint16_t k,  \
             uint16_t n, uint8_t unitFlag, bool kDirectionAlign, bool cmatrixSource,           \
             bool cmatrixInitVal);                                                             \
    void mad(__cc__ C *c, __ca__ A *a, __cb__ B *b, uint64_t config);
AOE_CCE_MAD(float, half, half)
AOE_CCE_MAD(float, bfloat16_t, bfloat16_t)
AOE_CCE_MAD(float, float, float)
AOE_CCE_MAD(int32_t, int8_t, int8_t)
#undef AOE_CCE_MAD

// L0C -> GM (PIPE_FIX; cceapi_0101, the copy_matrix_cc_to_gm form of dav-c220): NSize,
// MSize in elements, dstStride in elements with NZ2ND, srcStride a multiple of 16.
#define AOE_CCE_FIXPIPE(D, S)                                                                  \
    void copy_matrix_cc_to_gm(__gm__ D *dst, __cc__ S *src, uint8_t sid, uint16_t NSize,       \
        uint16_t MSize, uint32_t dstStride_dst_D, uint16_t srcStride, uint8_t UnitFlagMode,    \
        QuantMode_t QuantPRE, uint8_t ReLUPRE, bool channelSplit, bool NZ2ND_EN);              \
    void copy_matrix_cc_to_gm(__gm__ D *dst, __cc__ S *src, uint64_t xm, uint64_t xt);
AOE_CCE_FIXPIPE(half, float)
AOE_CCE_FIXPIPE(bfloat16_t, float)
AOE_CCE_FIXPIPE(float, float)
AOE_CCE_FIXPIPE(int32_t, int32_t)
AOE_CCE_FIXPIPE(half, int32_t)
AOE_CCE_FIXPIPE(int8_t, int32_t)
AOE_CCE_FIXPIPE(uint8_t, int32_t)
AOE_CCE_FIXPIPE(int8_t, float)
AOE_CCE_FIXPIPE(uint8_t, float)
AOE_CCE_FIXPIPE(int16_t, int32_t)
#undef AOE_CCE_FIXPIPE

// Other data moves and scalar/register intrinsics the basic API's tensor and queue code
// reaches in every kernel (cceapi "通用搬运", copy_gm_to_ubuf_align cceapi_0093, the
// register setters of the "系统控制" pages: one packed uint64_t each).
void copy_ubuf_to_gm(__gm__ void *dst, __ubuf__ void *src, uint8_t sid, uint16_t nBurst,
                     uint16_t lenBurst, uint16_t srcGap, uint16_t dstGap);
void copy_gm_to_ubuf(__ubuf__ void *dst, __gm__ void *src, uint8_t sid, uint16_t nBurst,
                     uint16_t lenBurst, uint16_t srcGap, uint16_t dstGap);
void copy_gm_to_ubuf_align_b16(__ubuf__ void *dst, __gm__ void *src, uint8_t sid, uint16_t nBurst,
                               uint32_t lenBurst, uint8_t leftPaddingNum, uint8_t rightPaddingNum,
                               uint32_t srcGap, uint32_t dstGap);
void copy_gm_to_ubuf_align_b32(__ubuf__ void *dst, __gm__ void *src, uint8_t sid, uint16_t nBurst,
                               uint32_t lenBurst, uint8_t leftPaddingNum, uint8_t rightPaddingNum,
                               uint32_t srcGap, uint32_t dstGap);
// Its UB -> GM twin (copy_ubuf_to_gm_align, the same page's parameters): DataCopyPad out.
void copy_ubuf_to_gm_align_b16(__gm__ void *dst, __ubuf__ void *src, uint8_t sid, uint16_t nBurst,
                               uint32_t lenBurst, uint8_t leftPaddingNum, uint8_t rightPaddingNum,
                               uint32_t srcGap, uint32_t dstGap);
void copy_ubuf_to_gm_align_b32(__gm__ void *dst, __ubuf__ void *src, uint8_t sid, uint16_t nBurst,
                               uint32_t lenBurst, uint8_t leftPaddingNum, uint8_t rightPaddingNum,
                               uint32_t srcGap, uint32_t dstGap);
// dcci: the headers pass the cache_line_t / dcci_dst_t codes as uint64_t.
void dcci(__gm__ void *dst, uint64_t entire, uint64_t type);
void dcci(__gm__ void *dst, uint64_t entire);
void set_nd_para(uint64_t config);
void set_padding(uint64_t config);
void set_quant_pre(uint64_t config);
void set_l1_3d_size(uint64_t config);
void set_mov_pad_val(uint64_t config);
void set_vector_mask(uint64_t m1, uint64_t m0);
void set_mask_norm();
void set_mask_count();
void set_atomic_none();
void set_ffts_base_addr(uint64_t config);
int64_t sff0(uint64_t in);
uint64_t sbitset0(uint64_t in, int64_t idx);
uint64_t sbitset1(uint64_t in, int64_t idx);

// Scalar conversions the headers return from (kernel_scalar.h: CastF322F16Impl and the
// float -> int32 casts with rounding a/c/f/r); the types are those of that use.
half conv_f322f16o(float in);
int32_t conv_f322s32a(float in);
int32_t conv_f322s32c(float in);
int32_t conv_f322s32f(float in);
int32_t conv_f322s32r(float in);

// ---- CPU-debug framework hooks ----------------------------------------------------------
// Not intrinsics: the CPU twin's bookkeeping of buffers, queues and blocks, which the
// open-source headers call under ASCENDC_CPU_DEBUG (asc-devkit impl/basic_api/
// kernel_tpipe_impl.h, kernel_tbuf_impl.h; asc-tools cpudebug/include/kern_fwk.h). No
// public reference documents them; the types are those of their call sites there.
void AscendCBufAbsAddr(uint8_t pos, uint64_t addr, uint64_t len);
void AscendCBufInit(uint8_t pos, uint8_t type, uint8_t num, uint64_t addr, uint64_t len);
void AscendCBufAlloc(uint8_t pos, uint8_t type, uint64_t addr, uint64_t len);
void AscendCBufFree(uint8_t pos, uint8_t type, uint64_t addr, uint64_t len);
void AscendCBufEnque(uint8_t src, uint8_t dst, uint8_t pos, uint64_t addr);
void AscendCBufDeque(uint8_t src, uint8_t dst, uint8_t pos, uint64_t addr);
void AscendCQueCreate(uint8_t src, uint8_t dst, uint8_t depth);
void AscendCTBufPoolResetCheck(uint8_t pos, uint64_t addr, uint64_t len, uint64_t handle);
void AscendCUpdateTbufPoolStatus(uint64_t handle, bool isReset);
void AscendCKernelBegin(const char *funcName, size_t argn, uint64_t *kargs);
void AscendCKernelEnd(const char *funcName, size_t argn, uint64_t *kargs);
void AscendCBlockBegin(int32_t blockIdx, const char *funcName, size_t argn, uint64_t *kargs);
void AscendCBlockEnd(int32_t blockIdx, const char *funcName, size_t argn, uint64_t *kargs);
int get_process_num();
void set_block_dim(int idx);
void set_core_type(int idx);

// ---- UNTYPED: mentioned by the headers, never reached by the kernels --------------------
#define AOE_CCE_UNTYPED_NAMES(X) \
    X(AscendCBufGet) \
    X(AscendCRecordPoolHierarchy) X(AscendCTBufPoolInit) \
    X(PingPongReleaseEvent) \
    X(__ib_set_stub) X(__ib_wait_stub) X(__sync_all_stub) X(bcnt0) X(bcnt1) X(clz) \
    \
    X(copy_cbuf_to_bt) X(copy_cbuf_to_fbuf) X(copy_cbuf_to_gm) X(copy_gm_to_cbuf_multi_nd2nz_b32s) \
    X(copy_gm_to_cbuf_multi_nd2nz_b8) \
    X(copy_ubuf_to_ubuf) X(create_cbuf_matrix) \
    X(dc_preload) X(ffts_cross_core_sync) X(get_acc_val) X(get_arch_ver) X(get_ctrl) \
    X(get_icache_prl_st) X(get_max_min_cnt) X(get_pc) X(get_rsvd_cnt) X(get_st_atomic_cfg) \
    X(get_vms4_sr) X(hset_flag) X(hwait_flag) X(img2colv2_cbuf_to_ca) X(img2colv2_cbuf_to_ca_s4) \
    X(img2colv2_cbuf_to_cb) X(ld_dev) X(load_cbuf_to_ca_s4) X(load_cbuf_to_cb_s4) \
    X(load_cbuf_to_cb_sp) X(load_cbuf_to_cb_transpose_s4) X(mad_sp) X(preload) \
    X(scatter_vnchwconv_b16) X(scatter_vnchwconv_b32) X(scatter_vnchwconv_b8) \
    X(set_aipp_spr_0) X(set_aipp_spr_1) X(set_aipp_spr_18) X(set_aipp_spr_19) X(set_aipp_spr_2) \
    X(set_aipp_spr_20) X(set_aipp_spr_21) X(set_aipp_spr_3) X(set_aipp_spr_4) X(set_aipp_spr_5) \
    X(set_aipp_spr_6) X(set_aipp_spr_7) X(set_aipp_spr_8) X(set_aipp_spr_9) X(set_atomic_add) \
    X(set_atomic_bf16) X(set_atomic_f16) X(set_atomic_f32) X(set_atomic_max) X(set_atomic_min) \
    X(set_atomic_s16) X(set_atomic_s32) X(set_atomic_s8) X(set_cmpmask) \
    X(set_ctrl) X(set_data_exp_0) X(set_data_exp_1) X(set_data_exp_2) X(set_data_exp_3) \
    X(set_deqscale) X(set_fmatrix) X(set_fmatrix_b) X(set_fpc) \
    X(set_l3d_rpt) \
    X(set_st_atomic_cfg) X(set_va_reg_sb) \
    X(sff1) X(sflbits) X(st_dev) X(trap) X(vabs) X(vadd) X(vadds) \
    X(vand) X(vbrcb) X(vcadd) X(vcgadd) X(vcgmax) X(vcmax) X(vcmin) X(vcmpv_eq) X(vcmpv_ge) X(vcmpv_gt) \
    X(vcmpv_le) X(vcmpv_lt) X(vcmpv_ne) X(vcmpvs_eq) X(vcmpvs_ge) X(vcmpvs_gt) X(vcmpvs_le) \
    X(vcmpvs_lt) X(vcmpvs_ne) X(vconv_bf162f32) X(vconv_bf162s32a) X(vconv_bf162s32c) \
    X(vconv_bf162s32f) X(vconv_bf162s32r) X(vconv_bf162s32z) X(vconv_deq) X(vconv_f162f32) \
    X(vconv_f162s16a) X(vconv_f162s16c) X(vconv_f162s16f) X(vconv_f162s16r) X(vconv_f162s16z) \
    X(vconv_f162s32a) X(vconv_f162s32c) X(vconv_f162s32f) X(vconv_f162s32r) X(vconv_f162s32z) \
    X(vconv_f162s4) X(vconv_f162s4a) X(vconv_f162s4c) X(vconv_f162s4f) X(vconv_f162s4r) \
    X(vconv_f162s4z) X(vconv_f162s8) X(vconv_f162s8a) X(vconv_f162s8c) X(vconv_f162s8f) \
    X(vconv_f162s8r) X(vconv_f162s8z) X(vconv_f162u8) X(vconv_f162u8a) X(vconv_f162u8c) \
    X(vconv_f162u8f) X(vconv_f162u8r) X(vconv_f162u8z) X(vconv_f322bf16a) X(vconv_f322bf16c) \
    X(vconv_f322bf16f) X(vconv_f322bf16r) X(vconv_f322bf16z) X(vconv_f322f16) X(vconv_f322f16a) \
    X(vconv_f322f16c) X(vconv_f322f16f) X(vconv_f322f16o) X(vconv_f322f16r) X(vconv_f322f16z) \
    X(vconv_f322f32a) X(vconv_f322f32c) X(vconv_f322f32f) X(vconv_f322f32r) X(vconv_f322f32z) \
    X(vconv_f322s16a) X(vconv_f322s16c) X(vconv_f322s16f) X(vconv_f322s16r) X(vconv_f322s16z) \
    X(vconv_f322s32a) X(vconv_f322s32c) X(vconv_f322s32f) X(vconv_f322s32r) X(vconv_f322s32z) \
    X(vconv_f322s64a) X(vconv_f322s64c) X(vconv_f322s64f) X(vconv_f322s64r) X(vconv_f322s64z) \
    X(vconv_s162f16) X(vconv_s162f16a) X(vconv_s162f16c) X(vconv_s162f16f) X(vconv_s162f16r) \
    X(vconv_s162f16z) X(vconv_s162f32) X(vconv_s322f32) X(vconv_s322f32a) X(vconv_s322f32c) \
    X(vconv_s322f32f) X(vconv_s322f32r) X(vconv_s322f32z) X(vconv_s322s16) X(vconv_s322s64) \
    X(vconv_s42f16) X(vconv_s642f32a) X(vconv_s642f32c) X(vconv_s642f32f) X(vconv_s642f32r) \
    X(vconv_s642f32z) X(vconv_s642s32) X(vconv_s82f16) X(vconv_u82f16) X(vcopy) X(vdiv) \
    X(vector_dup) X(vexp) X(vgather) X(vld_va_reg) X(vln) X(vmax) X(vmaxs) X(vmin) X(vmins) \
    X(vmul) X(vmulconv_f162s8) X(vmulconv_f162u8) X(vmuls) X(vnot) X(vor) X(vrec) X(vreducev2) \
    X(vsel) X(vshr) X(vsqrt) X(vsub) X(vtranspose) X(wait_flag_dev)
// In an inline namespace: found by plain name lookup, but a reference to one of them in an
// object file names aoe_untyped::, which the compile check looks for.
inline namespace aoe_untyped {
#define AOE_CCE_DECLARE_UNTYPED(name) template <typename... Args> int64_t name(Args...);
AOE_CCE_UNTYPED_NAMES(AOE_CCE_DECLARE_UNTYPED)
#undef AOE_CCE_DECLARE_UNTYPED
}  // namespace aoe_untyped

#endif  // AOE_CCE_STUB_FUN_H
