"""Pretrain a ReinforceSampler policy on the simulator, across GEMM shapes and SoCs.

The policy learns what good tilings look like as a function of the operator
features (shape, dtype, SoC figures), so a study of a new shape starts near
its optimum instead of from a uniform policy. Training uses the vectorised
simulator as the reward oracle (no Optuna in the loop): each step picks a
task (a workload on a SoC), draws a batch of feasible configs from the masked
policy, and takes one REINFORCE step with the batch mean as baseline.

Held-out tasks are never trained on: by default every Qwen2.5-7B decode
workload on the 910B2 (batch 1-16 all pad M to one fractal, so they are one
landscape) and every single GEMM with those K x N and M <= 16 on the 910B2,
and the same on any SoC with identical figures (the 910B1, as profiled).

Example::

    aoe-tune pretrain-policy --output policy.safetensors --spec studies/qwen25_7b_decode_910b2.json
    aoe-tune --config studies/qwen25_7b_decode_910b2.json --sampler reinforce \\
        --sampler-kwargs '{"policy": "policy.safetensors"}'
"""

from __future__ import annotations

import argparse
import copy
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from aoe_optuna.samplers.reinforce._features import FEATURE_NAMES, workload_features
from aoe_optuna.samplers.reinforce._learner import log_probs_and_entropy
from aoe_optuna.samplers.reinforce._masking import ChoiceMasker
from aoe_optuna.samplers.reinforce._policy import AutoregressivePolicy, PolicyMismatchError
from aoe_optuna.samplers.reinforce._policy_file import convert_pickled_policy, save_policy
from aoe_optuna.samplers.reinforce._propose import draw_batch
from aoe_optuna.samplers.torch_threads import one_torch_thread as one_thread
from aoe_optuna.space.search_space import SearchSpace
from aoe_optuna.workload.gemm import Workload

DEFAULT_SPEC = "studies/qwen25_7b_decode_910b2.json"
DEFAULT_SOCS = ("Ascend910B1", "Ascend910B2", "Ascend910B3", "Ascend910B4")
DEFAULT_HOLD_OUT = ("qwen2.5-7b:decode:Ascend910B2",)
_DIMS = (512, 896, 1024, 1536, 2048, 3072, 3584, 4096, 4608, 6144, 8192, 11008, 14336, 18944)
_MS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192)


@dataclass
class Task:
    """One tuning problem to practise on: a space, its features and a throughput oracle."""

    name: str
    space: SearchSpace
    masker: ChoiceMasker
    features: torch.Tensor
    throughput: Callable[[np.ndarray], np.ndarray]  # index rows -> tokens/s (nan: none)


def _task_from_document(document: dict[str, Any], name: str) -> Task:
    from aoe_optuna.aicore.gemm.model import GemmModel
    from aoe_optuna.spec.loader import spec_from_dict

    spec = spec_from_dict(document, source=f"<pretraining task {name}>")
    sim = GemmModel(spec.profile)
    workload: Workload = spec.workload
    space = spec.space

    def throughput(rows: np.ndarray) -> np.ndarray:
        cols = space.columns(rows)
        step = np.full(rows.shape[0], workload.fixed_s)
        for g in workload.gemms:
            step = step + g.count * np.asarray(sim.latency(cols, g), dtype=float)
        return workload.tokens_per_step / step

    feats = torch.as_tensor(workload_features(workload, spec.profile))[None, :]
    return Task(name, space, ChoiceMasker(space), feats, throughput)


def same_chip(soc_a: str, soc_b: str) -> bool:
    """Two SoC names whose profiles give the same figures (910B1 and 910B2 do, as modelled)."""
    from dataclasses import replace

    from aoe_optuna.hardware.profile import load_profile

    a, b = load_profile(soc_a), load_profile(soc_b)
    return replace(a, soc="") == replace(b, soc="")


def held_out(hold_out: Sequence[str], soc: str, workload_doc: dict[str, Any]) -> bool:
    """Whether a task is a held-out (model:phase:SoC) workload, or one of its GEMMs.

    A SoC whose figures equal the held-out one's is the same landscape under
    another name, so it is held out too.
    """
    from aoe_optuna.workload.models import MODELS

    for item in hold_out:
        model, phase, h_soc = item.split(":")
        if not same_chip(h_soc, soc):
            continue
        if workload_doc.get("model") == model and workload_doc.get("phase") == phase:
            return True
        g = workload_doc.get("gemm")
        if g and phase == "decode" and g["M"] <= 16 and model in MODELS:
            cfg = MODELS[model]
            h, inter = cfg["hidden"], cfg["intermediate"]
            qd, kvd = cfg["q_heads"] * cfg["head_dim"], cfg["kv_heads"] * cfg["head_dim"]
            kn = {(h, qd + 2 * kvd), (qd, h), (h, 2 * inter), (inter, h), (h, cfg["vocab"])}
            if (g["K"], g["N"]) in kn:
                return True
    return False


def training_documents(
    base: dict[str, Any], socs: Sequence[str], hold_out: Sequence[str], n_gemms: int, seed: int
) -> list[tuple[str, dict[str, Any]]]:
    """Spec documents of the training tasks: model workloads and random GEMMs on each SoC."""
    rng = np.random.default_rng(seed)
    keep = {k: v for k, v in base.items() if k not in ("workload", "hardware", "baseline")}
    keep["backend"] = {"name": "simulator"}
    docs: list[tuple[str, dict[str, Any]]] = []
    workloads: list[dict[str, Any]] = []
    for phase, batches in (("decode", (1, 4, 16, 32)), ("prefill", (1,))):
        for batch in batches:
            for tp in (1, 2, 4):
                workloads.append({"model": "qwen2.5-7b", "phase": phase, "batch": batch,
                                  "seq_len": 1024, "tp": tp, "dtype": "fp16"})
    for _ in range(n_gemms):
        workloads.append({"gemm": {"M": int(rng.choice(_MS)), "K": int(rng.choice(_DIMS)),
                                   "N": int(rng.choice(_DIMS)), "dtype": "fp16"}})
    for soc in socs:
        for wl in workloads:
            if held_out(hold_out, soc, wl):
                continue
            doc = {**copy.deepcopy(keep), "hardware": {"soc": soc}, "workload": wl}
            what = "gemm {M}x{K}x{N}".format(**wl["gemm"]) if "gemm" in wl else (
                f"{wl['phase']} b{wl['batch']} tp{wl['tp']}")
            docs.append((f"{soc} {what}", doc))
    return docs


def pretrain_policy(
    base_document: dict[str, Any],
    *,
    socs: Sequence[str] = DEFAULT_SOCS,
    hold_out: Sequence[str] = DEFAULT_HOLD_OUT,
    steps: int = 2000,
    batch: int = 64,
    n_gemms: int = 24,
    hidden: int = 64,
    lr: float = 3e-3,
    entropy: float = 0.05,
    seed: int = 0,
    max_seconds: float | None = None,
    progress: Callable[[int, int, str, float], None] | None = None,
) -> tuple[AutoregressivePolicy, SearchSpace, dict[str, Any]]:
    """Train a policy on tasks built from ``base_document`` (its search_space and constraints)."""
    docs = training_documents(base_document, socs, hold_out, n_gemms, seed)
    tasks = [_task_from_document(doc, name) for name, doc in docs]
    if not tasks:
        raise ValueError("no training task left after the hold-out")
    shape = tasks[0].space.shape
    rng = np.random.default_rng(seed)
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        policy = AutoregressivePolicy(len(FEATURE_NAMES), shape, hidden)
    opt = torch.optim.Adam(policy.parameters(), lr=lr)
    start = time.monotonic()
    done = 0
    with one_thread():
        for step in range(steps):
            task = tasks[int(rng.integers(len(tasks)))]
            rows = draw_batch(policy, task.features, task.masker, rng, batch)
            with np.errstate(divide="ignore", invalid="ignore"):
                logv = np.log(task.throughput(rows))
            ok = np.isfinite(logv)
            if ok.sum() < 2:
                continue
            r = np.where(ok, logv, np.nanmin(logv[ok]))
            adv = torch.as_tensor((r - r.mean()) / (r.std() + 1e-9), dtype=torch.float32)
            logp, ent = log_probs_and_entropy(policy, task.features, rows, task.masker)
            loss = -(adv * logp).mean() - entropy * ent.mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            done = step + 1
            if progress is not None:
                progress(done, steps, task.name, float(np.exp(r.max() - r.mean())))
            if max_seconds is not None and time.monotonic() - start > max_seconds:
                break
    info = {
        "tasks": [t.name for t in tasks], "hold_out": list(hold_out), "socs": list(socs),
        "steps": done, "batch": batch, "seed": seed, "seconds": round(time.monotonic() - start, 1),
    }
    return policy, tasks[0].space, info


EXAMPLES = """\
examples:
  # a policy trained on the simulator, the held-out Qwen2.5-7B decode shapes left out
  aoe-tune pretrain-policy --output policy.safetensors \\
      --spec studies/qwen25_7b_decode_910b2.json --steps 2000
  # a study of a held-out shape that starts from it
  aoe-tune --config studies/qwen25_7b_decode_910b2.json --sampler reinforce \\
      --sampler-kwargs '{"policy": "policy.safetensors"}'
"""


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="aoe-tune pretrain-policy",
        description="Pretrain a ReinforceSampler policy on the simulator across GEMM shapes "
        "and SoCs, holding out the shapes you will tune.",
        epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--output", required=True,
                   help="policy file to write (safetensors weights + JSON metadata)")
    p.add_argument("--convert", metavar="OLD.pt", default=None,
                   help="instead of training, rewrite a pickled (torch.save) policy of an "
                   "earlier version as --output; read with torch's weights-only unpickler")
    p.add_argument("--spec", default=DEFAULT_SPEC,
                   help="study spec whose search_space (parameters, choices, constraints) the "
                   "policy is trained on; its workload and SoC are not used (default %(default)s)")
    p.add_argument("--socs", default=",".join(DEFAULT_SOCS), help="comma-separated SoCs")
    p.add_argument("--hold-out", action="append", default=None, metavar="MODEL:PHASE:SOC",
                   help="tasks never trained on (repeatable; default "
                   f"{DEFAULT_HOLD_OUT[0]}; 'none' for none)")
    p.add_argument("--steps", type=int, default=2000, help="policy-gradient steps")
    p.add_argument("--batch", type=int, default=64, help="configs drawn per step")
    p.add_argument("--gemms", type=int, default=24, help="random GEMM shapes per SoC")
    p.add_argument("--entropy", type=float, default=0.05,
                   help="entropy bonus: higher keeps the policy a broader prior")
    p.add_argument("--lr", type=float, default=3e-3, help="Adam learning rate")
    p.add_argument("--max-minutes", type=float, default=10.0, help="stop after this long")
    p.add_argument("--seed", type=int, default=0)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.convert is not None:
        try:
            meta = convert_pickled_policy(args.convert, args.output)
        except PolicyMismatchError as exc:
            print(exc, file=sys.stderr)
            return 2
        print(f"wrote {args.output}: {len(meta['params'])} parameters, "
              f"features v{meta['feature_version']}")
        return 0
    from aoe_optuna.spec.format import SpecError, read_document

    hold = [] if args.hold_out == ["none"] else (args.hold_out or list(DEFAULT_HOLD_OUT))
    for item in hold:
        if item.count(":") != 2:
            print(f"--hold-out {item!r}: expected MODEL:PHASE:SOC", file=sys.stderr)
            return 2
    try:
        document = read_document(args.spec)
    except SpecError as exc:
        print(exc, file=sys.stderr)
        return 2
    if args.steps < 1 or args.batch < 2:
        print("--steps: expected >= 1 and --batch >= 2", file=sys.stderr)
        return 2
    from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

    with Progress(TextColumn("pretraining"), BarColumn(), TextColumn("{task.completed}/"
                  "{task.total}"), TimeRemainingColumn(), TextColumn("{task.description}"),
                  transient=False) as bar:
        job = bar.add_task("", total=args.steps)

        def show(done: int, total: int, name: str, spread: float) -> None:
            if done % 25 == 0 or done == total:
                bar.update(job, completed=done, description=name)

        try:
            policy, space, info = pretrain_policy(
                document, socs=[s for s in args.socs.split(",") if s], hold_out=hold,
                steps=args.steps, batch=args.batch, n_gemms=args.gemms, seed=args.seed,
                entropy=args.entropy, lr=args.lr,
                max_seconds=args.max_minutes * 60, progress=show,
            )
        except (SpecError, ValueError) as exc:
            print(f"{args.spec}: {exc}", file=sys.stderr)
            return 2
    info["spec"] = str(args.spec)
    save_policy(Path(args.output), policy, space, info)
    print(f"wrote {args.output}: {info['steps']} steps on {len(info['tasks'])} tasks in "
          f"{info['seconds']} s (held out: {', '.join(hold) or 'none'})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
