"""What an npu timing depends on beyond the config: the toolkit, driver, firmware and card.

A knowledge base entry is stamped with it, so ``aoe-tune recheck`` knows which
entries were measured under another CANN, driver or firmware, or on another card.
The driver and firmware state their versions in ``version.info`` files of the
Ascend install (``Version=24.1.rc2``); the card is what ``npu-smi info -t board``
names (its SoC and board id).
"""

from __future__ import annotations

import re
from pathlib import Path

from aoe_optuna.backends.npu.requirements import Runner, run_quietly, soc_name

ASCEND_ROOT = Path("/usr/local/Ascend")
_VERSION = re.compile(r"^\s*Version\s*=\s*(\S+)", re.MULTILINE)
_BOARD_ID = re.compile(r"^\s*Board ID\s*:\s*(\S+)", re.MULTILINE)


def installed_version(path: Path) -> str:
    """The ``Version=`` of a ``version.info`` file, or ``"unknown"``."""
    try:
        m = _VERSION.search(path.read_text(errors="replace"))
    except OSError:
        return "unknown"
    return m.group(1) if m else "unknown"


def npu_environment(cann_version: str, soc: str, device: int, root: Path = ASCEND_ROOT,
                    run: Runner = run_quietly) -> dict[str, str]:
    """The npu backend's stamp: CANN version, driver, firmware, the spec's SoC, the card."""
    board = run(["npu-smi", "info", "-t", "board", "-i", str(device), "-c", "0"]) or ""
    card_soc = soc_name(board) or "unknown"
    board_id = _BOARD_ID.search(board)
    card = f"{card_soc} board {board_id.group(1)}" if board_id else card_soc
    return {"backend": "npu", "cann": cann_version,
            "driver": installed_version(root / "driver" / "version.info"),
            "firmware": installed_version(root / "firmware" / "version.info"),
            "soc": soc, "card": card}
