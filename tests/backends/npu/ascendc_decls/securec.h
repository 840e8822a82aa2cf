/*
 * securec.h: declarations of the bounds-checked memory functions of libboundscheck
 * (openEuler's "securec", the C11 Annex K style API) that the CPU-debug framework
 * headers call. Declarations only, for compile checks; a link needs the real library.
 */
#ifndef AOE_SECUREC_H
#define AOE_SECUREC_H
#include <cstddef>

typedef int errno_t;
#ifndef EOK
#define EOK 0
#endif

errno_t memcpy_s(void *dest, size_t destMax, const void *src, size_t count);
errno_t memset_s(void *dest, size_t destMax, int c, size_t count);
errno_t strcpy_s(char *strDest, size_t destMax, const char *strSrc);

#endif  // AOE_SECUREC_H
