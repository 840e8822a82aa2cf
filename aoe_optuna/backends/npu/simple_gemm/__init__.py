"""The simple kernel, this project's Ascend C GEMM: its source and declarations
(``kernel``), the CMake project of one candidate (``render``), what it refuses as rules
of a study's space (``rules``) and the shapes it takes (``limits``); ``templates/``
holds the kernel and its host program ``main.cpp``."""
