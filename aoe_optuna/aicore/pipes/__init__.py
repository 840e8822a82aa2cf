"""The pipes every AI Core kernel model shares: the data movers and GM streaming
(``transfer``), the cube's MMAD timing (``cube``), one vector core's instructions and
DataCopy runs (``vector_pipe``), and what a kernel pays to start and to hand work
between its cube and vector cores (``launch``)."""
