"""``aoe-tune recheck KB --config SPEC``: re-time the knowledge base's entries measured
under another environment than this machine's, on the spec's backend, and update them.

One line per entry: ``current`` (measured here: left alone), ``held`` (its winner holds;
figure and stamp updated), ``changed`` (old and new winner), ``could not build`` (the
entry is kept as it was), ``skipped`` (not a GEMM shape's own figure, or another SoC).
Exit 0; 3 when an entry could not be built; 2 for bad input, with nothing written.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from aoe_optuna.cli.common import UsageError, user_errors

EXAMPLE = """\
example:
  # tune on the cpu backend into a knowledge base; after a compiler upgrade, re-check it
  aoe-tune --config studies/cpu_gemm.json --kb aoe_kb.json; then \\
      aoe-tune recheck aoe_kb.json --config studies/cpu_gemm.json"""
EXIT_NOT_BUILT = 3


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{message} (see {self.prog} --help)")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="aoe-tune recheck", description=__doc__.split("\n\n")[0],
                epilog=EXAMPLE, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("kb", help="the knowledge base JSON to re-check (updated in place)")
    p.add_argument("--config", required=True,
                   help="the study spec whose backend re-times the entries")
    p.add_argument("--header", default=None,
                   help="also write the updated knowledge base as a C header")
    return p


def main(argv: list[str]) -> int:
    try:
        return _recheck(argv)
    except UsageError as exc:
        print(f"aoe-tune recheck: error: {exc}", file=sys.stderr)
        return 2


def _recheck(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    errors = user_errors()
    try:
        from aoe_optuna.export.destinations import check_knowledge_base, check_output_file
        from aoe_optuna.export.kb import KnowledgeBase
        from aoe_optuna.export.kb_store import update_knowledge_base
        from aoe_optuna.export.recheck import recheck
        from aoe_optuna.spec.backend import make_backend
        from aoe_optuna.spec.loader import load_spec
        from aoe_optuna.study.create import environment_stamp

        if not Path(args.kb).is_file():
            raise UsageError(f"{args.kb}: expected an existing knowledge base file")
        check_knowledge_base(args.kb)
        if args.header is not None:
            check_output_file(args.header, "--header")
        entries = KnowledgeBase.load(args.kb).entries()
        spec = load_spec(args.config)
        backend = make_backend(spec)
        stamp = environment_stamp(backend.environment())
        done = []
        for r in recheck(entries, spec, backend, stamp):
            print(r.line, flush=True)
            done.append(r)
        changed = [r for r in done if r.new is not None]
        if changed:
            kept = update_knowledge_base(
                args.kb, lambda kb: [kb.put_rechecked(r.held, r.new) for r in changed],
                args.header)
            for r, ok in zip(changed, kept, strict=True):
                if not ok:
                    print(f"not written: {r.line.split(':', 1)[0]}: another writer replaced "
                          "the entry while it was re-timed", file=sys.stderr)
            n = sum(kept)
            print(f"wrote {args.kb}: {n} {'entry' if n == 1 else 'entries'} re-timed")
        return EXIT_NOT_BUILT if any(r.verdict == "could not build" for r in done) else 0
    except errors as exc:
        print(f"aoe-tune recheck: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
