/* aoe_optuna cpu backend: a tiled GEMM whose structure is fixed by the config.
 *
 * C[M, N] = A[M, K] @ B[K, N]; A and B are elem_t (float, or int8 when quantized,
 * then accumulated in int32 within a K block and scaled back to float).
 * Rendered by aoe_optuna/backends/cpu_kernel.py: only the integers below are
 * filled in, each validated against the parameter's known choices first.
 *
 * Blocking mirrors the Ascend cube's buffers: a packed TILE_M x TILE_K block of A
 * (L0A), a packed TILE_K x TILE_N block of B (L0B) and MR x TILE_N accumulators
 * (L0C); loop order jj (N blocks) > kk (K blocks) > ii (M blocks), so one packed
 * B block serves a whole column of A blocks.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define TILE_M ${tile_m}
#define TILE_N ${tile_n}
#define TILE_K ${tile_k}
#define PIPELINE ${pipeline}         /* 0 no packing, 1 packed panels, 2 double-buffered B packing */
#define L1_PREFETCH ${l1_prefetch}   /* software prefetch of the next A block */
#define OUTPUT_ALIGN ${output_align} /* C rows 64-byte aligned (ldc % 16 == 0), aligned stores */
#define LAYOUT ${layout}             /* 0 row-major, 1 column-major, 2 blocked ("z") */
#define UNROLL ${unroll_factor}      /* unroll of the inner K loop, 0: compiler's choice */
#define QUANTIZED ${quantization}    /* int8 inputs, int32 accumulation */

#define MR 4 /* rows of C computed together in the packed micro-kernel */
#define CACHE_LINE 64

#if QUANTIZED
typedef int8_t elem_t;
typedef int32_t acc_t;
#else
typedef float elem_t;
typedef float acc_t;
#endif

#define PRAGMA_(x) _Pragma(#x)
#define PRAGMA(x) PRAGMA_(x)
#if UNROLL > 0
#define UNROLL_K PRAGMA(GCC unroll UNROLL)
#else
#define UNROLL_K
#endif

#if OUTPUT_ALIGN
#define C_ROW(p) ((float *)__builtin_assume_aligned((p), CACHE_LINE))
#else
#define C_ROW(p) (p)
#endif

/* Address of A(i, k) and B(k, j) in the stored layout. The blocked layout stores
 * TILE_M x TILE_K (resp. TILE_K x TILE_N) blocks contiguously, block rows in
 * order, zero-padded to whole blocks (the driver converts before timing). */
static inline const elem_t *a_ptr(const elem_t *A, long i, long k, long M, long K) {
#if LAYOUT == 0
    (void)M;
    return A + i * K + k;
#elif LAYOUT == 1
    (void)K;
    return A + k * M + i;
#else
    (void)M;
    long kb = (K + TILE_K - 1) / TILE_K;
    return A + ((i / TILE_M) * kb + k / TILE_K) * (TILE_M * TILE_K)
             + (i % TILE_M) * TILE_K + k % TILE_K;
#endif
}

static inline const elem_t *b_ptr(const elem_t *B, long k, long j, long K, long N) {
#if LAYOUT == 0
    (void)K;
    return B + k * N + j;
#elif LAYOUT == 1
    (void)N;
    return B + j * K + k;
#else
    (void)K;
    long nb = (N + TILE_N - 1) / TILE_N;
    return B + ((k / TILE_K) * nb + j / TILE_N) * (TILE_K * TILE_N)
             + (k % TILE_K) * TILE_N + j % TILE_N;
#endif
}

/* C row segment (+)= acc, scaled back to float when quantized. */
static inline void store_row(float *c, const acc_t *acc, long n, int first, float scale) {
#if !QUANTIZED
    (void)scale;
#endif
    if (first) {
        for (long j = 0; j < n; ++j)
#if QUANTIZED
            c[j] = (float)acc[j] * scale;
#else
            c[j] = acc[j];
#endif
    } else {
        for (long j = 0; j < n; ++j)
#if QUANTIZED
            c[j] += (float)acc[j] * scale;
#else
            c[j] += acc[j];
#endif
    }
}

#if PIPELINE == 0
/* No packing: read A and B where they are stored, one row of C at a time. */
void aoe_gemm(long M, long N, long K, const elem_t *A, const elem_t *B, float *C, long ldc,
              float scale) {
    acc_t acc[TILE_N] __attribute__((aligned(CACHE_LINE)));
    for (long jj = 0; jj < N; jj += TILE_N) {
        long nn = N - jj < TILE_N ? N - jj : TILE_N;
        for (long kk = 0; kk < K; kk += TILE_K) {
            long kn = K - kk < TILE_K ? K - kk : TILE_K;
            for (long ii = 0; ii < M; ii += TILE_M) {
                long mm = M - ii < TILE_M ? M - ii : TILE_M;
                for (long i = 0; i < mm; ++i) {
#if L1_PREFETCH
                    if (i + 1 < mm)
                        __builtin_prefetch(a_ptr(A, ii + i + 1, kk, M, K), 0, 3);
#endif
                    for (long j = 0; j < nn; ++j)
                        acc[j] = 0;
                    UNROLL_K
                    for (long k = 0; k < kn; ++k) {
                        acc_t a = *a_ptr(A, ii + i, kk + k, M, K);
                        for (long j = 0; j < nn; ++j)
                            acc[j] += a * (acc_t)*b_ptr(B, kk + k, jj + j, K, N);
                    }
                    store_row(C_ROW(C + (ii + i) * ldc + jj), acc, nn, kk == 0, scale);
                }
            }
        }
    }
}

#else
static elem_t a_pack[TILE_M * TILE_K] __attribute__((aligned(CACHE_LINE)));
static elem_t b_pack[PIPELINE == 2 ? 2 : 1][TILE_K * TILE_N] __attribute__((aligned(CACHE_LINE)));

/* Rows [k0, k1) of the B block at (kk, jj), zero-padded past K and N. */
static void pack_b_rows(elem_t *dst, const elem_t *B, long kk, long jj, long k0, long k1, long K,
                        long N) {
    for (long k = k0; k < k1; ++k) {
        elem_t *row = dst + k * TILE_N;
        if (kk + k >= K) {
            memset(row, 0, sizeof(elem_t) * TILE_N);
            continue;
        }
#if LAYOUT == 1
        for (long j = 0; j < TILE_N; ++j)
            row[j] = jj + j < N ? *b_ptr(B, kk + k, jj + j, K, N) : 0;
#else
        long nn = N - jj < TILE_N ? N - jj : TILE_N;
#if LAYOUT == 2
        nn = TILE_N; /* blocked storage is padded */
#endif
        memcpy(row, b_ptr(B, kk + k, jj, K, N), sizeof(elem_t) * nn);
        if (nn < TILE_N)
            memset(row + nn, 0, sizeof(elem_t) * (TILE_N - nn));
#endif
    }
}

static void pack_a(elem_t *dst, const elem_t *A, long ii, long kk, long M, long K) {
#if LAYOUT == 2
    (void)M;
    memcpy(dst, a_ptr(A, ii, kk, M, K), sizeof(elem_t) * TILE_M * TILE_K);
#else
    for (long i = 0; i < TILE_M; ++i) {
        elem_t *row = dst + i * TILE_K;
        if (ii + i >= M) {
            memset(row, 0, sizeof(elem_t) * TILE_K);
            continue;
        }
#if LAYOUT == 0
        long kn = K - kk < TILE_K ? K - kk : TILE_K;
        memcpy(row, a_ptr(A, ii + i, kk, M, K), sizeof(elem_t) * kn);
        if (kn < TILE_K)
            memset(row + kn, 0, sizeof(elem_t) * (TILE_K - kn));
#else
        for (long k = 0; k < TILE_K; ++k)
            row[k] = kk + k < K ? *a_ptr(A, ii + i, kk + k, M, K) : 0;
#endif
    }
#endif
}

#if L1_PREFETCH
/* Touch the source lines of row i of the next A block while this one computes. */
static inline void prefetch_a_row(const elem_t *A, long ii_next, long i, long kk, long M, long K) {
    if (ii_next + i >= M)
        return;
    for (long k = 0; k < TILE_K; k += CACHE_LINE / (long)sizeof(elem_t))
        if (kk + k < K)
            __builtin_prefetch(a_ptr(A, ii_next + i, kk + k, M, K), 0, 3);
}
#endif

/* MR rows of the C tile from packed blocks: each B row loaded once feeds MR rows. */
static inline void micro_kernel(const elem_t *restrict ap, const elem_t *restrict bp,
                                acc_t acc[MR][TILE_N]) {
    for (int r = 0; r < MR; ++r)
        for (long j = 0; j < TILE_N; ++j)
            acc[r][j] = 0;
    UNROLL_K
    for (long k = 0; k < TILE_K; ++k) {
        const elem_t *restrict brow = bp + k * TILE_N;
        for (int r = 0; r < MR; ++r) {
            acc_t a = ap[r * TILE_K + k];
            for (long j = 0; j < TILE_N; ++j)
                acc[r][j] += a * (acc_t)brow[j];
        }
    }
}

static void compute_block(const elem_t *A, const elem_t *bp, float *C, long ldc, long ii, long jj,
                          long kk, long M, long N, long K, float scale) {
    acc_t acc[MR][TILE_N] __attribute__((aligned(CACHE_LINE)));
    long mm = M - ii < TILE_M ? M - ii : TILE_M;
    long nn = N - jj < TILE_N ? N - jj : TILE_N;
    pack_a(a_pack, A, ii, kk, M, K);
    for (long i = 0; i < mm; i += MR) {
#if L1_PREFETCH
        for (int r = 0; r < MR; ++r)
            prefetch_a_row(A, ii + TILE_M, i + r, kk, M, K);
#else
        (void)K;
#endif
        micro_kernel(a_pack + i * TILE_K, bp, acc);
        for (int r = 0; r < MR && i + r < mm; ++r)
            store_row(C_ROW(C + (ii + i + r) * ldc + jj), acc[r], nn, kk == 0, scale);
    }
}

void aoe_gemm(long M, long N, long K, const elem_t *A, const elem_t *B, float *C, long ldc,
              float scale) {
#if PIPELINE == 1
    for (long jj = 0; jj < N; jj += TILE_N)
        for (long kk = 0; kk < K; kk += TILE_K) {
            pack_b_rows(b_pack[0], B, kk, jj, 0, TILE_K, K, N);
            for (long ii = 0; ii < M; ii += TILE_M)
                compute_block(A, b_pack[0], C, ldc, ii, jj, kk, M, N, K, scale);
        }
#else
    /* Double buffering: while the ii loop computes with one B block, the other
     * buffer is filled with the next block, a slice of rows per ii step. */
    long m_blocks = (M + TILE_M - 1) / TILE_M;
    long slice = (TILE_K + m_blocks - 1) / m_blocks;
    int cur = 0;
    pack_b_rows(b_pack[cur], B, 0, 0, 0, TILE_K, K, N);
    for (long jj = 0; jj < N; jj += TILE_N)
        for (long kk = 0; kk < K; kk += TILE_K) {
            long next_kk = kk + TILE_K < K ? kk + TILE_K : 0;
            long next_jj = kk + TILE_K < K ? jj : jj + TILE_N;
            int has_next = next_jj < N;
            long packed = 0;
            for (long ii = 0; ii < M; ii += TILE_M) {
                compute_block(A, b_pack[cur], C, ldc, ii, jj, kk, M, N, K, scale);
                if (has_next && packed < TILE_K) {
                    long upto = packed + slice < TILE_K ? packed + slice : TILE_K;
                    pack_b_rows(b_pack[1 - cur], B, next_kk, next_jj, packed, upto, K, N);
                    packed = upto;
                }
            }
            if (has_next && packed < TILE_K)
                pack_b_rows(b_pack[1 - cur], B, next_kk, next_jj, packed, TILE_K, K, N);
            cur = 1 - cur;
        }
#endif
}
#endif
