// Deliberate misuses of the intrinsics stub_fun.h types: each call below has no viable
// overload there, so the compile check must fail on every one of them
// (tests/backends/npu/test_ascendc_compile.py). Not a kernel to run.
#include "kernel_operator.h"

extern "C" __global__ __aicore__ void gemm_kernel(GM_ADDR gm)
{
    __cbuf__ float *l1 = nullptr;
    __ca__ half *l0a = nullptr;
    __cb__ half *l0b = nullptr;
    __cc__ float *l0c = nullptr;
    // fp32 data through the 16-bit ND -> Nz copy.
    copy_gm_to_cbuf_multi_nd2nz_b16(l1, reinterpret_cast<__gm__ float *>(gm), 0, 1, 16, 16, 0,
                                    16, 16, 1, 0);
    // An L1 -> L0A load from fp32 into fp16.
    load_cbuf_to_ca(l0a, l1, 0, 1, 1, 0, 0, false, inc);
    // mad without its unit flag and C-matrix controls.
    mad(l0c, l0a, l0b, 16, 16, 16);
    // An event id where a pipe belongs.
    pipe_barrier(EVENT_ID0);
}
