"""The NPU backend: the Ascend C kernel and its ACL host program rendered per config,
built with the CANN toolkit, timed with ACL events or msprof."""
