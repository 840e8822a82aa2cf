/*
 * acl/acl.h: this project's own declarations of the AscendCL runtime calls the npu
 * backend's host programs make (templates/main.cpp, vector_bench.cpp, gating_bench.cpp),
 * so that g++ checks each call's argument types without the CANN toolkit, whose headers
 * are not open source. Written from the public AscendCL API reference (hiascend.com,
 * CANN 8.0 to 8.5: "aclInit", "aclrtSetDevice", "aclrtCreateStream", "aclrtMalloc",
 * "aclrtMemcpy", "aclrtMemset", "aclrtCreateEvent", "aclrtRecordEvent",
 * "aclrtEventElapsedTime" and their neighbours), with the types and enumerations those
 * pages give; enumerator values the pages list are kept, none is invented.
 * Declarations only, for compile checks: a link needs libascendcl.
 */
#ifndef AOE_ACL_DECLS_ACL_H
#define AOE_ACL_DECLS_ACL_H

#include <cstddef>
#include <cstdint>

typedef int aclError;  // acl_base.h: 0 is success, other values name the failure
static const int ACL_SUCCESS = 0;

typedef void *aclrtStream;  // acl_rt.h: opaque handles
typedef void *aclrtEvent;

typedef enum aclrtMemMallocPolicy {
    ACL_MEM_MALLOC_HUGE_FIRST,
    ACL_MEM_MALLOC_HUGE_ONLY,
    ACL_MEM_MALLOC_NORMAL_ONLY,
} aclrtMemMallocPolicy;

typedef enum aclrtMemcpyKind {
    ACL_MEMCPY_HOST_TO_HOST,
    ACL_MEMCPY_HOST_TO_DEVICE,
    ACL_MEMCPY_DEVICE_TO_HOST,
    ACL_MEMCPY_DEVICE_TO_DEVICE,
} aclrtMemcpyKind;

extern "C" {
aclError aclInit(const char *configPath);
aclError aclFinalize();

aclError aclrtSetDevice(int32_t deviceId);
aclError aclrtResetDevice(int32_t deviceId);

aclError aclrtCreateStream(aclrtStream *stream);
aclError aclrtDestroyStream(aclrtStream stream);
aclError aclrtSynchronizeStream(aclrtStream stream);

aclError aclrtMalloc(void **devPtr, size_t size, aclrtMemMallocPolicy policy);
aclError aclrtFree(void *devPtr);
aclError aclrtMallocHost(void **hostPtr, size_t size);
aclError aclrtFreeHost(void *hostPtr);
aclError aclrtMemcpy(void *dst, size_t destMax, const void *src, size_t count,
                     aclrtMemcpyKind kind);
aclError aclrtMemset(void *devPtr, size_t maxCount, int32_t value, size_t count);

aclError aclrtCreateEvent(aclrtEvent *event);
aclError aclrtDestroyEvent(aclrtEvent event);
aclError aclrtRecordEvent(aclrtEvent event, aclrtStream stream);
aclError aclrtSynchronizeEvent(aclrtEvent event);
aclError aclrtEventElapsedTime(float *ms, aclrtEvent startEvent, aclrtEvent endEvent);
}

#endif  // AOE_ACL_DECLS_ACL_H
