"""The npu backend: Ascend C kernels and their ACL host programs rendered per config,
built with the CANN toolkit, timed with ACL events or msprof.

Three kernel families, each a package with its own ``templates/``: ``simple_gemm`` (this
project's Ascend C GEMM, "the simple kernel"), ``catlass`` (catlass GEMM
instantiations, and its flash-attention-infer and MLA examples for attention) and
``layer_kernels`` (this project's Ascend C vector kernels and MoE gating). What they
share stays here: ``backend`` (the Backend), ``commands``, ``results``,
``kernel_program``, ``sources``, ``compile_flags``, ``ascendc_cmake``, ``cann`` and
``toolkit_layout``, ``requirements`` and ``dry_run`` (the doctor), and ``templates/``
(the host programs' common headers, the CMake template of the project's own kernels).
"""
