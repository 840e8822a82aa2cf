"""SoC profiles (data files, each figure with its source) and the capacity rules
that turn a profile into tiling constraints."""
