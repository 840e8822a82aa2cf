"""catlass (Huawei's Ascend C template library) on the npu backend: a GEMM config as
template arguments (``args``), the instantiation header (``render``), its build against
a checkout (``build``), what it refuses as rules of a study's space (``rules``), and the
attention kernels of catlass's examples: flash-attention-infer (``fai``) and MLA decode
(``mla``). ``templates/`` holds their host programs and CMake templates."""
