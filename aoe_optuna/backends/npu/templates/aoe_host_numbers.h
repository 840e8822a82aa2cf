/*
 * aoe_host_numbers.h: what the host programs that make their inputs and check their
 * outputs (the layer kernels' vector_bench.cpp and gating_bench.cpp, catlass attention's
 * catlass_fai_bench.cpp and catlass_mla_bench.cpp) share: fp16 and bf16 to and from
 * float (round to nearest even), and deterministic inputs that are exact in both types
 * (multiples of 1/64 in [-1, 1]: a generator, Lcg, and a hash of an index, Hashed), so
 * the only error a check sees is the kernel's own arithmetic and the rounding of its
 * output.
 */
#ifndef AOE_HOST_NUMBERS_H
#define AOE_HOST_NUMBERS_H

#include <cmath>
#include <cstdint>
#include <cstring>

namespace aoe_numbers {

inline uint16_t HalfBits(float f)
{
    uint32_t x;
    std::memcpy(&x, &f, 4);
    const uint32_t sign = (x >> 16) & 0x8000u;
    const int32_t exp = static_cast<int32_t>((x >> 23) & 0xffu) - 127 + 15;
    uint32_t mant = x & 0x7fffffu;
    if (exp <= 0) {  // subnormal or zero
        if (exp < -10) return static_cast<uint16_t>(sign);
        mant |= 0x800000u;
        const uint32_t shift = static_cast<uint32_t>(14 - exp);
        uint32_t half = mant >> shift;
        const uint32_t rest = mant & ((1u << shift) - 1);
        const uint32_t mid = 1u << (shift - 1);
        if (rest > mid || (rest == mid && (half & 1u))) ++half;
        return static_cast<uint16_t>(sign | half);
    }
    if (exp >= 31) return static_cast<uint16_t>(sign | 0x7c00u);
    uint32_t half = sign | (static_cast<uint32_t>(exp) << 10) | (mant >> 13);
    const uint32_t rest = mant & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) ++half;
    return static_cast<uint16_t>(half);
}

inline float HalfValue(uint16_t h)
{
    const uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
    const float sign = (h & 0x8000u) ? -1.0f : 1.0f;
    if (exp == 0) return sign * std::ldexp(static_cast<float>(mant), -24);
    if (exp == 31) return mant ? NAN : sign * INFINITY;
    return sign * std::ldexp(static_cast<float>(mant | 0x400u), static_cast<int>(exp) - 25);
}

inline uint16_t Bf16Bits(float f)
{
    uint32_t x;
    std::memcpy(&x, &f, 4);
    return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

inline float Bf16Value(uint16_t b)
{
    const uint32_t x = static_cast<uint32_t>(b) << 16;
    float f;
    std::memcpy(&f, &x, 4);
    return f;
}

inline uint16_t Encode(float f, bool bf16) { return bf16 ? Bf16Bits(f) : HalfBits(f); }
inline float Decode(uint16_t v, bool bf16) { return bf16 ? Bf16Value(v) : HalfValue(v); }

// Deterministic inputs: multiples of 1/64 in [-1, 1], exact in fp16 and bf16.
struct Lcg {
    uint64_t state;
    uint32_t Next()
    {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        return static_cast<uint32_t>(state >> 33);
    }
    float Value() { return (static_cast<int32_t>(Next() % 129u) - 64) / 64.0f; }
};

// The input at index i of the tensor `salt` names: a multiple of 1/64 in [-1, 1].
inline float Hashed(uint64_t i, uint64_t salt)
{
    const uint64_t h = (i * 0x9e3779b97f4a7c15ull) ^ (salt * 0x632be59bull);
    return (static_cast<int32_t>(h % 129u) - 64) / 64.0f;
}

// |got - want| within rtol |want| + atol; false for NaN.
inline bool Close(double got, double want, double rtol, double atol)
{
    return std::fabs(got - want) <= rtol * std::fabs(want) + atol;
}

}  // namespace aoe_numbers

#endif  // AOE_HOST_NUMBERS_H
