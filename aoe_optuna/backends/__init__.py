"""Backends measure one config of one problem: the simulator (the AI Core's models),
the cpu (a real C kernel), the npu (Ascend C kernels built with CANN and timed on the
chip) and replay (recorded spaces). ``base`` declares the interface every backend
implements, ``registry`` maps a spec's backend name to its class; ``timing``,
``build_time`` and ``kernel_build`` are the parts they share."""
