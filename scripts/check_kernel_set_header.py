"""Compile a kernel set's dispatch header with gcc and check it for every M.

For each kernel-set operator of the knowledge base (the entries with ``m_range``), a C
driver calls ``aoe_ks_dispatch()`` for every M from the first range's low - 1 (not
below 1) to the last range's high + 1 and this script checks each answer against the
knowledge base: the kernel of the range that holds M (its config fields), and
``in_range`` 0 exactly outside the ranges.

    .venv/bin/python scripts/check_kernel_set_header.py kb.json aoe_kernel_set.h
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from aoe_optuna.space.params import to_code

FIELDS = ("tile_m", "tile_n", "tile_k", "pipeline")
DRIVER = """#include <stdio.h>
#include "{header}"
int main(void) {{
    uint32_t m;
    for (m = {low}; m <= {high}; ++m) {{
        int in_range = -1;
        const aoe_ks_kernel_t *e = aoe_ks_dispatch("{soc}", "{op}", "{dtype}", {k}, {n}, m,
                                                   &in_range);
        if (e == NULL) return 1;
        printf("%u %d {fmt}\\n", m, in_range, {fields});
    }}
    return 0;
}}
"""


def main(kb_path: str, header: str) -> int:
    cc = shutil.which("gcc")
    if cc is None:
        print("check_kernel_set_header: gcc not found on PATH", file=sys.stderr)
        return 2
    entries = [e for e in json.loads(Path(kb_path).read_text())["entries"] if "m_range" in e]
    groups: dict[tuple, list[dict]] = {}
    for e in entries:
        groups.setdefault((e["soc"], e["op"], e["dtype"], e["K"], e["N"]), []).append(e)
    checked = 0
    with tempfile.TemporaryDirectory() as tmp:
        for (soc, op, dtype, k, n), group in groups.items():
            group.sort(key=lambda e: e["m_range"][0])
            low, high = max(1, group[0]["m_range"][0] - 1), group[-1]["m_range"][1] + 1
            src = Path(tmp) / "driver.c"
            src.write_text(DRIVER.format(
                header=Path(header).resolve(), low=low, high=high, soc=soc, op=op,
                dtype=dtype, k=k, n=n, fmt=" ".join(["%d"] * len(FIELDS)),
                fields=", ".join(f"e->{f}" for f in FIELDS)))
            subprocess.run([cc, "-std=c99", "-Wall", "-Wextra", "-pedantic", "-Werror",
                            str(src), "-o", str(Path(tmp) / "driver")], check=True)
            out = subprocess.run([str(Path(tmp) / "driver")], capture_output=True, text=True,
                                 check=True).stdout
            for line in out.splitlines():
                m, inside, *got = map(int, line.split())
                span = next((e for e in group if e["m_range"][0] <= m <= e["m_range"][1]),
                            group[0] if m < group[0]["m_range"][0] else group[-1])
                want = [to_code(f, span["config"][f]) for f in FIELDS]
                holds = group[0]["m_range"][0] <= m <= group[-1]["m_range"][1]
                if got != want or inside != int(holds):
                    print(f"{op} {dtype} K={k} N={n} M={m}: dispatch gave {got} in_range "
                          f"{inside}, the knowledge base says {want} in_range {int(holds)}")
                    return 1
                checked += 1
            print(f"{soc} {op} {dtype} K={k} N={n}: M {low}..{high} ({len(group)} ranges) "
                  "dispatched as the knowledge base says")
    print(f"{checked} values of M checked")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[0], "usage: KB HEADER", file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1], sys.argv[2]))
