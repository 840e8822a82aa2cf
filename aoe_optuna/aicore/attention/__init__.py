"""Fused attention kernels on the AI cores: decode (GQA/MQA, ``decode_attention``), MLA
decode (``mla_attention``) and prefill (``prefill_attention``), and the steps they
share (``steps``: a step's stages, their overlap, the online softmax, the combine)."""
